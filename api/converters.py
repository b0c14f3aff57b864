"""Path converters of the API's URLs."""


class VersionNumberConverter:
    """A version number, or `latest` (which the endpoints redirect to the number)."""

    # Non-capturing, so that the pattern drf-spectacular anchors (^...$) keeps its meaning.
    regex = "(?:[0-9]+|latest)"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value) -> str:
        return str(value)
