"""The one write path of a golden set's prompt-cost settings: the figures the depth-and-cost
sweep prices a context with (the seed's maths: tokens a page, dollars per million input
tokens, queries a month) and the context's token budget the oracle experiment cuts to.

They price pages and answers; they never change a label, a version or a score, so an edit
applies at once to every page that shows a cost.
"""

from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction

from goldenset.models import GoldenSet
from lib.errors import GoldsetError

MAX_MONTHLY_QUERIES = 10**12
MAX_TOKENS_PER_PAGE = 1_000_000
MAX_CONTEXT_TOKENS = 10_000_000
# The column's bounds: 12 digits, 4 of them after the point.
MAX_PRICE = Decimal("99999999.9999")


def _whole(value: Any, field: str, low: int, high: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise GoldsetError(f"{field} must be a whole number of {what}, got {value!r}", field=field)
    if not low <= value <= high:
        raise GoldsetError(f"{field} must be from {low:,} to {high:,} {what}, got {value:,}", field=field)
    return value


def _price(value: Any) -> Decimal:
    field = "price_per_million_input"
    try:
        price = Decimal(str(value)) if not isinstance(value, bool) else None
    except InvalidOperation:
        price = None
    if price is None or not price.is_finite():
        raise GoldsetError(f"{field} must be a number of dollars per million input tokens, got {value!r}", field=field)
    if not Decimal(0) <= price <= MAX_PRICE:
        raise GoldsetError(f"{field} must be from 0 to {MAX_PRICE} dollars per million input tokens, got {price}", field=field)
    if price != price.quantize(Decimal("0.0001")):
        raise GoldsetError(f"{field} takes at most 4 decimal places (dollars per million tokens), got {price}", field=field)
    return price


def golden_set_prompt_cost_update(
    *,
    golden_set: GoldenSet,
    monthly_queries: int,
    price_per_million_input: Decimal | float | str,
    tokens_per_page: int,
    context_token_budget: int | None,
) -> GoldenSet:
    """Set the four figures after checking every one; GoldsetError naming the field at
    fault, nothing written. `context_token_budget` None means k_final whole pages."""
    checked = {
        "monthly_queries": _whole(monthly_queries, "monthly_queries", 0, MAX_MONTHLY_QUERIES, "queries a month"),
        "price_per_million_input": _price(price_per_million_input),
        "tokens_per_page": _whole(tokens_per_page, "tokens_per_page", 1, MAX_TOKENS_PER_PAGE, "tokens"),
        "context_token_budget": None,
    }
    if context_token_budget is not None:
        budget = _whole(context_token_budget, "context_token_budget", 1, MAX_CONTEXT_TOKENS, "tokens")
        if budget < checked["tokens_per_page"]:
            raise GoldsetError(
                f"context_token_budget ({budget} tokens) holds no page of {checked['tokens_per_page']} tokens: "
                f"raise it to at least tokens_per_page, or leave it empty for k_final whole pages",
                field="context_token_budget",
            )
        checked["context_token_budget"] = budget
    with transaction.atomic():
        locked = GoldenSet.objects.select_for_update().get(pk=golden_set.pk)
        for name, value in checked.items():
            setattr(locked, name, value)
            setattr(golden_set, name, value)
        locked.save(update_fields=list(checked))
    return golden_set
