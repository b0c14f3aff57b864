"""Request body parsers beyond DRF's own: every API body is read by one of these
(settings.REST_FRAMEWORK's DEFAULT_PARSER_CLASSES and the views' parser_classes)."""

from rest_framework import exceptions, parsers
from rest_framework.parsers import BaseParser

# No body of this API nests deeper than 3 ({"labels": [{...}]}); 64 leaves room for any
# client's wrapping while keeping far below the depth at which Python's json recurses out.
JSON_MAX_DEPTH = 64


def _nested_deeper_than(data, limit: int) -> bool:
    """Whether `data` (as json.load gives it) has containers nested more than `limit` deep.
    Walked with a stack of its own, so no depth of input can exhaust Python's."""
    if not isinstance(data, (dict, list)):
        return False
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        for child in value.values() if isinstance(value, dict) else value:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, refusing (400, parse_error) a body nested past JSON_MAX_DEPTH.

    Python's json module recurses once per level: a body nested about 1,000 deep raised
    RecursionError, a 500. That is answered like any other malformed body here, and
    shallower bodies that are still absurdly deep are refused by the walk after parsing.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        too_deep = exceptions.ParseError(f"JSON parse error - the body is nested more than {JSON_MAX_DEPTH} levels deep")
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise too_deep from None
        if _nested_deeper_than(data, JSON_MAX_DEPTH):
            raise too_deep
        return data


class PlainTextParser(BaseParser):
    """A text/plain body as one str (UTF-8), without NUL: no line of a text format holds
    one, and PostgreSQL text cannot store one."""

    media_type = "text/plain"

    def parse(self, stream, media_type=None, parser_context=None) -> str:
        data = stream.read() if stream is not None else b""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise exceptions.ParseError(f"the body is not UTF-8 text (byte {exc.start}: {exc.reason})") from exc
        nul = text.find("\x00")
        if nul != -1:
            line = text.count("\n", 0, nul) + 1
            raise exceptions.ParseError(f"the body is not text: line {line} holds a NUL character (U+0000)")
        return text
