"""Filters that print the figures of the result pages: fractions, differences in points
(hundredths) and p-values. A figure that is not there (None) prints "–"."""

from django import template

register = template.Library()

MISSING = "–"


@register.filter
def fraction(value: float | None) -> str:
    """A fraction in [0, 1] with three decimals: 0.62 -> '0.620'."""
    return MISSING if value is None else f"{value:.3f}"


@register.filter
def points(value: float | None) -> str:
    """A difference already in points, with one decimal and no sign: '10.0'."""
    return MISSING if value is None else f"{value:.1f}"


@register.filter
def detectable_points(value: float) -> str:
    """A slice's minimum detectable drop: '4.2 points', and past 100 points, which no drop of
    a figure between 0 and 1 can reach, 'none: over 100 points' rather than '281.5 points'."""
    return "none: over 100 points" if value > 100 else f"{value:.1f} points"


@register.filter
def signed_points(value: float | None) -> str:
    """A difference already in points, signed: '+3.1', '-0.4', and '0.0' for none at all."""
    if value is None:
        return MISSING
    text = f"{value:+.1f}"
    return "0.0" if text in ("+0.0", "-0.0") else text


@register.filter
def p_value(value: float | None) -> str:
    """A p-value with three decimals, '< 0.001' under that."""
    if value is None:
        return MISSING
    return "< 0.001" if value < 0.001 else f"{value:.3f}"
