"""What the answers commands read from their options alike: how a model is asked and what it
costs (the same options for a generator and an answer judge), prices and text files."""

from decimal import Decimal, InvalidOperation
from pathlib import Path

from django.core.management.base import CommandError

from goldenset.management.progress import user_by_name
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


def add_call_arguments(parser, who: str) -> None:
    """The options of how a model's API is asked and what it costs, and who records it."""
    parser.add_argument("--max-in-flight", type=int, default=4, metavar="N", help="requests open at once (default 4)")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds an attempt may take (default 60)")
    parser.add_argument("--retries", type=int, default=3, metavar="N", help="attempts after a failed one (default 3)")
    parser.add_argument("--price-in", metavar="P", help="your price per million input tokens, to count the cost")
    parser.add_argument("--price-out", metavar="P", help="your price per million output tokens")
    parser.add_argument("--user", help=f"username recorded as the {who}'s creator")


def call_fields(options: dict) -> dict:
    """add_call_arguments' options as the generator and answer judge services take them."""
    return {
        "max_in_flight": options["max_in_flight"],
        "timeout_seconds": options["timeout"],
        "retries": options["retries"],
        "price_in": price(options["price_in"], "--price-in"),
        "price_out": price(options["price_out"], "--price-out"),
        "user": user_by_name(options["user"]),
    }
