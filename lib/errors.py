"""The one application error type, shared by services, commands and the API."""


class GoldsetError(Exception):
    """Bad input or a forbidden action, with a message a person can act on.

    `problems` lists every fault found (each naming its line, field or id), so a
    file with ten bad lines is reported once, not ten times in ten attempts.
    `code` and `http_status` say how the API and the pages answer it: as bad input unless
    a subclass says otherwise.
    """

    code = "invalid"
    http_status = 400

    def __init__(self, message: str, *, problems: list[str] | None = None, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.problems = problems or []
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
