"""Numbers read from a page's query string or form, the one way every page reads them.

`str.isdigit()` is true of "²" and "൧", which `int()` refuses, so a check with it let
`?version=²` through to a 500. Only ASCII digits are taken here, up to the largest value
a database integer holds, and anything else raises ParameterError: Django answers it 400
(goldset.errors.bad_request shows its message, which names the parameter).
"""

import re

from django.core.exceptions import BadRequest

_NUMBER = re.compile(r"[0-9]+")
# The largest value of a PostgreSQL integer: a larger id or version number cannot exist.
MAX_NUMBER = 2_147_483_647


class ParameterError(BadRequest):
    """A request parameter that is not of its form; the message names it and is shown as is."""

    def __init__(self, parameter: str, message: str):
        super().__init__(message)
        self.parameter = parameter
        self.message = message


def _number(parameter: str, raw: str, minimum: int, what: str) -> int:
    if not _NUMBER.fullmatch(raw) or len(raw) > len(str(MAX_NUMBER)) or not minimum <= int(raw) <= MAX_NUMBER:
        raise ParameterError(parameter, f"{parameter} must be {what} of ASCII digits from {minimum} to {MAX_NUMBER}, got {raw[:40]!r}")
    return int(raw)


def number_param(params, parameter: str, *, minimum: int = 0, default: int | None = None) -> int | None:
    """The whole number in `params[parameter]` (a QueryDict; surrounding spaces ignored),
    or `default` when it is absent or blank. ParameterError when it is anything else."""
    raw = params.get(parameter, "").strip()
    if not raw:
        return default
    return _number(parameter, raw, minimum, "a number")


def version_param(params, parameter: str = "version", *, default: int | None = None) -> int | None:
    """A version number (1 or more) in `params[parameter]`, else `default`; see number_param."""
    return number_param(params, parameter, minimum=1, default=default)


def ids_param(params, parameter: str) -> set[int]:
    """The ids (1 or more) listed in `params[parameter]`, comma separated; none when it is
    absent or blank. ParameterError naming the parameter for anything else."""
    raw = params.get(parameter, "").strip()
    if not raw:
        return set()
    return {_number(parameter, part.strip(), 1, "a comma-separated list of ids, each") for part in raw.split(",")}
