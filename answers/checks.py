"""The checks that every model Goldset asks for answers shares (a generator of kind openai,
an answer judge): name, base URL, model, key variable, bounds and prices, each fault
naming its field. One place, so that a generator and a judge refuse the same things alike."""

from decimal import Decimal

from lib.errors import ProblemCollector
from lib.llm_judging import api_key_env_problem
from lib.outbound import url_problem

MAX_NAME = 100
MAX_MODEL = 200
MAX_IN_FLIGHT = 64
MAX_RETRIES = 10
MAX_TIMEOUT_SECONDS = 600.0


def name_problem(name: str) -> str | None:
    if not name or not name.strip() or len(name) > MAX_NAME or not name.isprintable():
        return f"name: 1 to {MAX_NAME} printable characters"
    return None


def base_url_problems(problems: ProblemCollector, base_url: str, what: str) -> None:
    problem = url_problem(base_url or "", what=what)
    if problem:
        problems.add(f"base_url: {problem}")
    elif base_url.rstrip("/").endswith("/chat/completions"):
        problems.add("base_url: give the API's base URL, ending in /v1 as OpenAI clients take it; /chat/completions is added")


def limits_problems(
    problems: ProblemCollector,
    *,
    model: str,
    api_key_env: str,
    max_in_flight: int,
    timeout_seconds: float,
    retries: int,
    price_in: Decimal | None,
    price_out: Decimal | None,
) -> None:
    """A chat model's name, its key's variable (JUDGE_...: lib.llm_judging.api_key_env_problem),
    the bounds and the prices, each fault added to `problems` naming its field."""
    if not model or not model.strip() or len(model) > MAX_MODEL or not model.isprintable():
        problems.add(f"model: the model's name must be 1 to {MAX_MODEL} printable characters")
    problem = api_key_env_problem(api_key_env or "")
    if problem:
        problems.add(f"api_key_env: {problem}")
    if isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int) or not 1 <= max_in_flight <= MAX_IN_FLIGHT:
        problems.add(f"max_in_flight: a whole number of requests from 1 to {MAX_IN_FLIGHT}, got {max_in_flight!r}")
    if (
        isinstance(timeout_seconds, bool)
        or not isinstance(timeout_seconds, int | float)
        or not 0.1 <= timeout_seconds <= MAX_TIMEOUT_SECONDS
    ):
        problems.add(f"timeout_seconds: from 0.1 to {MAX_TIMEOUT_SECONDS:g} seconds, got {timeout_seconds!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
        problems.add(f"retries: a whole number from 0 to {MAX_RETRIES}, got {retries!r}")
    prices_problems(problems, price_in=price_in, price_out=price_out)


def prices_problems(problems: ProblemCollector, *, price_in: Decimal | None, price_out: Decimal | None) -> None:
    for field, price in (("price_in", price_in), ("price_out", price_out)):
        if price is not None and (not isinstance(price, Decimal) or not price.is_finite() or price < 0):
            problems.add(f"{field}: a price per million tokens is a number of at least 0, got {price!r}")
