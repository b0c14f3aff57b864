"""The number filters of the pages (goldset/templatetags/number_format.py)."""

from goldset.templatetags.number_format import detectable_points, points, signed_points


def test_a_detectable_drop_past_100_points_says_no_drop_can_be_detected():
    # A figure between 0 and 1 cannot drop more than 100 points: 281.5 would read as a number to act on.
    assert detectable_points(4.25) == "4.2 points"
    assert detectable_points(100.0) == "100.0 points"
    assert detectable_points(281.5) == "none: over 100 points"


def test_points_and_signed_points():
    assert points(None) != "0.0" and points(3.14) == "3.1"
    assert signed_points(-0.04) == "0.0" and signed_points(2.0) == "+2.0"
