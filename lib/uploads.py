"""Uploaded files and request bodies as lines of text for the import services."""

from collections.abc import Iterable, Iterator

from lib.errors import GoldsetError


def text_lines(chunks: Iterable[bytes], name: str, what: str) -> Iterator[str]:
    """The lines of `chunks` (an uploaded file, iterated by line) decoded as UTF-8.

    A line that is not UTF-8 stops the import with GoldsetError naming it: "name:12".
    `what` says what was being imported, for the message.
    """
    for number, raw in enumerate(chunks, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise GoldsetError(
                f"cannot import {what} {name}: it is not UTF-8 text; nothing was stored",
                problems=[f"{name}:{number}: bytes that are not UTF-8 ({exc.reason})"],
                field="file",
            ) from exc
