"""Path converters of the API's URLs."""

from monitoring.endpoints.services import NAME


class VersionNumberConverter:
    """A version number, or `latest` (which the endpoints redirect to the number)."""

    # Non-capturing, so that the pattern drf-spectacular anchors (^...$) keeps its meaning.
    regex = "(?:[0-9]+|latest)"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value) -> str:
        return str(value)


class SeriesNameConverter:
    """A series name as stored: up to 200 characters, spaces and slashes included (sent
    URL-encoded, `bm25%20nightly`), never NUL, which PostgreSQL text cannot hold."""

    regex = "[^\\x00]{1,200}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value) -> str:
        return str(value)


class EndpointNameConverter:
    """An endpoint name as endpoint_add allows it (monitoring.endpoints.services.NAME)."""

    regex = NAME.pattern.removeprefix("^").removesuffix("$")

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value) -> str:
        return str(value)
