"""The file arguments of management commands, where `-` means standard input or output."""

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

from django.core.management.base import CommandError

STDIO = "-"


def source_name(path: str) -> str:
    """The name an import's messages give the file: its base name, or "stdin"."""
    return "stdin" if path == STDIO else Path(path).name


@contextlib.contextmanager
def input_bytes(path: str) -> Iterator[BinaryIO]:
    """The bytes of `path`, or of standard input for `-` (sys.stdin.buffer: gzip, parquet and
    LZ4 come through it too), left open afterwards since it is not ours to close."""
    if path == STDIO:
        yield getattr(sys.stdin, "buffer", sys.stdin)
        return
    if not Path(path).is_file():
        raise CommandError(f"{path}: no such file")
    with open(path, "rb") as handle:
        yield handle


@contextlib.contextmanager
def output_text(path: str | None, stdout: TextIO) -> Iterator[TextIO]:
    """A text file to write `path` into (UTF-8, \\n line ends), or `stdout` for `-` or None."""
    if path in (None, "", STDIO):
        yield stdout
        return
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        yield handle
