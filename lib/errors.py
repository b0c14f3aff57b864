"""The one application error type, shared by services, commands and the API."""


def _encodable(text: str) -> str:
    """`text` with any lone surrogate written as its escape (\\ud800): a message quoting a
    refused id read from JSON must still encode as UTF-8 when it is answered."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class GoldsetError(Exception):
    """Bad input or a forbidden action, with a message a person can act on.

    `problems` lists every fault found (each naming its line, field or id), so a
    file with ten bad lines is reported once, not ten times in ten attempts.
    `code` and `http_status` say how the API answers it: 422, a request that fits the
    schema (malformed ones are 400, refused before any service runs) whose content is
    refused: a bad line, an unknown id. Subclasses name other answers.
    """

    code = "invalid"
    http_status = 422

    def __init__(self, message: str, *, problems: list[str] | None = None, field: str | None = None):
        message = _encodable(message)
        super().__init__(message)
        self.message = message
        self.problems = [_encodable(problem) for problem in problems or []]
        self.field = field

    def __str__(self) -> str:
        if not self.problems:
            return self.message
        shown = self.problems[:20]
        more = len(self.problems) - len(shown)
        lines = [self.message, *("  " + p for p in shown)]
        if more:
            lines.append(f"  ... and {more} more")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"message": self.message, "problems": self.problems, "field": self.field}


class ConflictError(GoldsetError):
    """The request is sound but clashes with what is stored: a name taken, nothing new to
    publish. Answered 409; sending it again unchanged gets the same answer."""

    code = "conflict"
    http_status = 409


class TooLargeError(GoldsetError):
    """The input is past a size limit (what a compressed file expands to, a parquet file's
    rows): 413. The message names the limit and the setting that raises it."""

    code = "too_large"
    http_status = 413


class ForbiddenError(GoldsetError):
    """The action is not this person's to take (a pair that was not handed to them): 403.
    Sending it again unchanged gets the same answer."""

    code = "permission_denied"
    http_status = 403


class ProblemCollector:
    """Gathers problems while a file is read, then raises them together."""

    def __init__(self, limit: int = 1000):
        self.problems: list[str] = []
        self.limit = limit

    def add(self, problem: str) -> None:
        if len(self.problems) < self.limit:
            self.problems.append(problem)

    def __bool__(self) -> bool:
        return bool(self.problems)

    def raise_if_any(self, message: str) -> None:
        if self.problems:
            raise GoldsetError(message, problems=self.problems)
