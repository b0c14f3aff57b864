"""What the answers commands read from their options alike: prices and text files."""

from decimal import Decimal, InvalidOperation
from pathlib import Path

from django.core.management.base import CommandError

from lib.errors import GoldsetError


def price(text: str | None, option: str) -> Decimal | None:
    if text is None:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise CommandError(f"{option}: {text!r} is not a price (a number, per million tokens)") from None
    return value


def text_file(path: Path | None, option: str) -> str | None:
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"{option}: cannot read {path}: {exc}") from exc


def command_error(exc: GoldsetError) -> CommandError:
    """The service's refusal as the command's: its message, then each problem on a line."""
    return CommandError("\n".join([exc.message, *exc.problems]))
