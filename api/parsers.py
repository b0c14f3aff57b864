"""Request body parsers beyond DRF's own."""

from rest_framework import exceptions
from rest_framework.parsers import BaseParser


class PlainTextParser(BaseParser):
    """A text/plain body as one str (UTF-8)."""

    media_type = "text/plain"

    def parse(self, stream, media_type=None, parser_context=None) -> str:
        data = stream.read() if stream is not None else b""
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise exceptions.ParseError(f"the body is not UTF-8 text (byte {exc.start}: {exc.reason})") from exc
