"""Uploaded files and request bodies as lines of text for the import services."""

import gzip
import io
import zlib
from collections.abc import Iterable, Iterator
from typing import BinaryIO

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


def ungzipped_lines(data: BinaryIO, name: str, what: str) -> Iterator[str]:
    """The UTF-8 lines of a binary stream, gunzipped first when it opens with gzip's magic
    bytes (a `.qrels.gz` from another tool); text_lines's errors, and GoldsetError for a
    broken gzip stream."""
    stream = io.BufferedReader(data) if not hasattr(data, "peek") else data
    if stream.peek(2)[:2] == b"\x1f\x8b":
        stream = io.BufferedReader(gzip.GzipFile(fileobj=stream, mode="rb"))
    try:
        yield from text_lines(stream, name, what)
    except (OSError, EOFError, zlib.error) as exc:
        raise GoldsetError(f"cannot import {what} {name}: {exc}; nothing was stored", problems=[f"{name}: {exc}"], field="file") from exc
