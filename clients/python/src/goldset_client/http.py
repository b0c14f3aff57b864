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
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import requests

from goldset_client.errors import GoldsetAPIError, GoldsetClientError

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
            except requests.ConnectionError as exc:
                # A refused or dropped connection: safe to repeat only when nothing changes.
                if last or method not in IDEMPOTENT_METHODS:
                    raise GoldsetClientError(f"{method} {url}: could not reach Goldset ({exc})") from exc
                self.retry.sleep(self.retry.backoff(attempt))
                continue
            except requests.Timeout as exc:
                if last or method not in IDEMPOTENT_METHODS:
                    raise GoldsetClientError(f"{method} {url}: no answer within {self.timeout:g} s") from exc
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
