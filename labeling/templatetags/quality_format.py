"""Filters for the quality pages: undefined statistics read "n/a", never 0."""

import math

from django import template

register = template.Library()

NOT_AVAILABLE = "n/a"


def _missing(value) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


@register.filter
def stat(value, digits: int = 3) -> str:
    """A statistic such as kappa or alpha: '0.712', '-0.050', or 'n/a'."""
    if _missing(value):
        return NOT_AVAILABLE
    return f"{value:.{int(digits)}f}"


@register.filter
def percent(value, digits: int = 1) -> str:
    """A fraction in [0, 1] as a percentage: 0.8333 -> '83.3 %', or 'n/a'."""
    if _missing(value):
        return NOT_AVAILABLE
    return f"{value * 100:.{int(digits)}f} %"


@register.filter
def seconds(value) -> str:
    """Seconds as '42 s', '3 min 05 s' or '2 h 10 min', or 'n/a'."""
    if _missing(value):
        return NOT_AVAILABLE
    value = round(float(value))
    if value < 60:
        return f"{value} s"
    if value < 3600:
        return f"{value // 60} min {value % 60:02d} s"
    return f"{value // 3600} h {value % 3600 // 60:02d} min"


@register.filter
def share_of(count, total) -> str:
    """The CSS alpha (0 to 0.6) that shades a confusion-matrix cell holding `count` of `total`."""
    if not total:
        return "0"
    return f"{0.6 * count / total:.3f}"
