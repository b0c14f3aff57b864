"""Path converters of the API's URLs."""

from goldenset.tags import TAG_PATTERN
from monitoring.endpoints.services import NAME


class VersionNumberConverter:
    """A version number, `latest` or a tag's name (goldenset.tags), which the endpoints
    redirect to the number they name at the moment of the request."""

    # Non-capturing, so that the pattern drf-spectacular anchors (^...$) keeps its meaning.
    # `latest` is one of the names the tag pattern matches (and no tag may take it).
    regex = f"(?:[0-9]+|{TAG_PATTERN})"

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
