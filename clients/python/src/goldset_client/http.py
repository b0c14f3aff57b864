"""HTTP to Goldset's API: the token, retries with backoff, and the API's error shape.

What is retried, and why only that:
- 429 (throttled) and 503 (the database is away for a moment): the server did nothing with
  the request, so any method is sent again, after the answer's Retry-After when it has one.
- other 5xx and connection failures: only for GET, which changes nothing. An upload whose
  answer was lost may have been stored; sending it again would store a second run.
Waits grow exponentially (base * 2**attempt, capped) with full jitter, so many jobs throttled
at once do not come back at once; a Retry-After is honoured as a floor.
"""

from __future__ import annotations

import email.utils
import random
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import requests

from goldset_client.errors import GoldsetAPIError, GoldsetClientError, GoldsetConnectionError, GoldsetTimeout, GoldsetTLSError

RETRY_ANY_METHOD = frozenset({429, 503})
RETRY_IDEMPOTENT = frozenset({500, 502, 504})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass
class RetryPolicy:
    """How often and how long to wait. Times are seconds."""

    attempts: int = 6  # the first try included
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    # A Retry-After longer than this is not waited for: the error is raised instead.
    retry_after_max: float = 300.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    jitter: Callable[[float, float], float] = field(default=random.uniform, repr=False)

    def backoff(self, attempt: int) -> float:
        """The wait before retry number `attempt` (0 for the first retry), jittered."""
        ceiling = min(self.backoff_max, self.backoff_base * (2**attempt))
        return self.jitter(0.0, ceiling)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds: a number of seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def api_error(response: requests.Response) -> GoldsetAPIError:
    """The GoldsetAPIError an error answer stands for, read from the API's error shape."""
    method = response.request.method if response.request is not None else ""
    try:
        body = response.json()
        error = body["error"]
        return GoldsetAPIError(
            response.status_code,
            str(error["code"]),
            str(error["message"]),
            problems=[str(p) for p in error.get("problems") or []],
            field=error.get("field"),
            method=method or "",
            url=response.url,
        )
    except (ValueError, KeyError, TypeError):
        text = response.text.strip()[:300] or response.reason or "no message"
        return GoldsetAPIError(response.status_code, f"http_{response.status_code}", text, method=method or "", url=response.url)


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and what it wraps: requests wraps urllib3's error (its `reason`), which wraps
    the socket's."""
    seen: list[BaseException] = []
    unvisited: list[BaseException | None] = [exc]
    while unvisited:
        found = unvisited.pop()
        if found is None or any(found is known for known in seen):
            continue
        seen.append(found)
        reason = getattr(found, "reason", None)
        unvisited += [found.__cause__, found.__context__, reason if isinstance(reason, BaseException) else None]
        unvisited += [arg for arg in found.args if isinstance(arg, BaseException)]
    return seen


def connection_error(exc: requests.RequestException, method: str, url: str, timeout: float) -> GoldsetConnectionError:
    """The client's error for a request that got no answer, with a short reason instead of
    requests' nested reprs."""
    causes = _causes(exc)
    # Timeout first: requests' ConnectTimeout is a ConnectionError too.
    if isinstance(exc, requests.Timeout):
        return GoldsetTimeout(f"{method} {url}: no answer from Goldset within {timeout:g} s", method=method, url=url, reason="timed out")
    if isinstance(exc, requests.exceptions.SSLError):
        detail = next((str(c) for c in causes if isinstance(c, ssl.SSLError)), "TLS handshake failed")
        return GoldsetTLSError(f"{method} {url}: TLS failed ({detail})", method=method, url=url, reason=detail)
    if any(isinstance(c, ConnectionRefusedError) for c in causes):
        reason = "connection refused"
    elif any(isinstance(c, socket.gaierror) or type(c).__name__ == "NameResolutionError" for c in causes):
        reason = "the host name did not resolve"
    elif any(isinstance(c, ConnectionResetError) for c in causes):
        reason = "connection reset"
    else:
        reason = type(exc).__name__
    return GoldsetConnectionError(f"{method} {url}: could not reach Goldset ({reason})", method=method, url=url, reason=reason)


class Transport:
    """A requests.Session with the token and base URL, sending with the retry policy."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        session: requests.Session | None = None,
        user_agent: str = "goldset-client",
    ) -> None:
        if not base_url:
            raise GoldsetClientError("no Goldset URL: pass base_url or set GOLDSET_URL (e.g. https://goldset.example.com)")
        if not base_url.startswith(("http://", "https://")):
            # requests would say MissingSchema on the first call; say it here, naming the setting.
            raise GoldsetClientError(f"the Goldset URL {base_url!r} must start with http:// or https:// (base_url or GOLDSET_URL)")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.page_size = 1000  # the API's largest page
        self.session = session or requests.Session()
        self.session.headers["User-Agent"] = user_agent
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def url(self, path: str) -> str:
        """An absolute URL for an API path (`/api/v1/...`); an absolute URL is kept as it is."""
        return path if path.startswith(("http://", "https://")) else self.base_url + path

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        ok: tuple[int, ...] = (200,),
        body: Callable[[], dict[str, Any]] | None = None,
        stream: bool = False,
    ) -> requests.Response:
        """Send, retrying as the module says; the answer when its status is in `ok`, else
        GoldsetAPIError. `body()` gives the keyword arguments of each attempt's body
        (files are reopened or rewound for every attempt)."""
        method = method.upper()
        url = self.url(path)
        for attempt in range(self.retry.attempts):
            last = attempt == self.retry.attempts - 1
            try:
                response = self.session.request(
                    method,
                    url,
                    params=params,
                    headers=dict(headers or {}),
                    timeout=self.timeout,
                    stream=stream,
                    **(body() if body else {}),
                )
            except (requests.Timeout, requests.ConnectionError) as exc:
                # Nothing was answered: safe to send again only when nothing changes.
                if last or method not in IDEMPOTENT_METHODS:
                    raise connection_error(exc, method, url, self.timeout) from exc
                self.retry.sleep(self.retry.backoff(attempt))
                continue
            if response.status_code in ok:
                return response
            retryable = response.status_code in RETRY_ANY_METHOD or (
                response.status_code in RETRY_IDEMPOTENT and method in IDEMPOTENT_METHODS
            )
            if not retryable or last:
                raise api_error(response)
            wait = self.retry.backoff(attempt)
            asked = retry_after_seconds(response.headers.get("Retry-After"))
            if asked is not None:
                if asked > self.retry.retry_after_max:
                    raise api_error(response)
                # The server's wait is a floor; the jitter on top keeps throttled jobs apart.
                wait = asked + self.retry.jitter(0.0, min(1.0, asked * 0.1 + 0.1))
            response.close()
            self.retry.sleep(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def get_json(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self.request("GET", path, params=params).json()

    def paged(self, path: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        """Every item of a paged list, following `next` until the end."""
        items: list[Any] = []
        page = self.get_json(path, {**(params or {}), "limit": self.page_size})
        while True:
            items.extend(page["results"])
            if not page.get("next"):
                return items
            page = self.get_json(page["next"])
