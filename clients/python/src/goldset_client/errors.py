"""The client's exceptions: one base class, so a job can catch everything the client raises."""

from __future__ import annotations


class GoldsetClientError(Exception):
    """Anything the client refuses or cannot do, with a message a person can act on."""


class GoldsetAPIError(GoldsetClientError):
    """The API answered with an error status.

    `status` is the HTTP status; `code`, `message`, `problems` and `field` are the API's one
    error shape (`{"error": {"code", "message", "problems", "field"}}`). An answer that is not
    in that shape (a proxy's HTML page) gets code `http_<status>` and the start of its text.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        problems: list[str] | None = None,
        field: str | None = None,
        method: str = "",
        url: str = "",
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.problems = list(problems or [])
        self.field = field
        self.method = method
        self.url = url
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f" ({self.method} {self.url})" if self.url else ""
        lines = [f"{self.status} {self.code}: {self.message}{where}"]
        shown = self.problems[:20]
        lines += [f"  {problem}" for problem in shown]
        if len(self.problems) > len(shown):
            lines.append(f"  ... and {len(self.problems) - len(shown)} more")
        return "\n".join(lines)


class GoldsetConnectionError(GoldsetClientError):
    """Goldset could not be reached: the connection was refused or cut, the host name did not
    resolve. Nothing was answered, so there is no status; `url` is what the client asked for,
    `method` its method and `reason` a few words on what failed (connection refused, ...).
    Retried for GET only (goldset_client.http); raised once the retries are spent."""

    def __init__(self, message: str, *, method: str = "", url: str = "", reason: str = "") -> None:
        self.method = method
        self.url = url
        self.reason = reason
        super().__init__(message)


class GoldsetTimeout(GoldsetConnectionError):
    """No connection, or no answer, within the client's `timeout` seconds. A write that timed
    out may still have been stored: look before sending it again."""


class GoldsetTLSError(GoldsetConnectionError):
    """The TLS handshake failed: a certificate not trusted or not for the host, or a server
    that does not speak TLS on that port (an http:// server asked with https://)."""


class QrelsIntegrityError(GoldsetClientError):
    """The qrels answered are not those of the version asked for: their ETag is not the
    version's content hash (or the hash the caller pinned)."""


class EvaluationFailed(GoldsetClientError):
    """Goldset could not score the run on the version; `error` is the reason it stored."""

    def __init__(self, message: str, *, error: str = "") -> None:
        self.error = error
        super().__init__(message)


class WaitTimeout(GoldsetClientError):
    """The scores were not done before the wait's timeout; `last_status` is the last seen
    (None when no evaluation of the run on that version existed yet)."""

    def __init__(self, message: str, *, last_status: str | None = None) -> None:
        self.last_status = last_status
        super().__init__(message)


class PublishFailed(GoldsetClientError):
    """The publish job ended without a version; `error` is the reason Goldset stored (for
    example nothing changed since the latest version)."""

    def __init__(self, message: str, *, error: str = "") -> None:
        self.error = error
        super().__init__(message)
