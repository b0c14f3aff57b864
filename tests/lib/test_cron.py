"""Cron lines: the slots the schedules make, and the errors a manager reads."""

from datetime import UTC, datetime

import pytest

from lib.cron import CronError, cron_parse


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_nightly_fires_at_two_every_day():
    nightly = cron_parse("0 2 * * *")
    assert nightly.previous_fire(at("2026-12-02 07:13:45")) == at("2026-12-02 02:00")
    assert nightly.previous_fire(at("2026-12-02 01:59")) == at("2026-12-01 02:00")
    assert nightly.previous_fire(at("2026-12-02 02:00:30")) == at("2026-12-02 02:00")
    assert nightly.next_fire(at("2026-12-02 02:00")) == at("2026-12-03 02:00")


def test_every_five_minutes_takes_the_slot_a_late_tick_still_belongs_to():
    probes = cron_parse("*/5 * * * *")
    assert probes.previous_fire(at("2026-12-02 07:14:59")) == at("2026-12-02 07:10")
    assert probes.next_fire(at("2026-12-02 07:14:59")) == at("2026-12-02 07:15")
    assert probes.next_fire(at("2026-12-31 23:58")) == at("2027-01-01 00:00")


def test_ranges_lists_and_weekdays():
    weekdays = cron_parse("30 6,18 * * 1-5")
    # 2026-12-05 is a Saturday: the last fire before Monday morning is Friday evening.
    assert weekdays.previous_fire(at("2026-12-07 06:00")) == at("2026-12-04 18:30")
    assert cron_parse("0 0 * * 7").previous_fire(at("2026-12-02 00:00")) == at("2026-11-29 00:00")  # 7 is Sunday too


def test_both_day_fields_restricted_match_either_as_in_cron():
    line = cron_parse("0 0 1 * 1")  # the 1st of the month or any Monday
    assert line.previous_fire(at("2026-12-02 12:00")) == at("2026-12-01 00:00")
    assert line.next_fire(at("2026-12-02 12:00")) == at("2026-12-07 00:00")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("0 2 * *", "has 4"),
        ("61 * * * *", "minute: '61' is outside 0-59"),
        ("0 2 * * */0", "day of week: step must be 1 or more"),
        ("0 5-2 * * *", "hour: range '5-2' runs backwards"),
        ("x 2 * * *", "minute: 'x' is not"),
        ("0 0 30 2 *", "never fires"),
    ],
)
def test_a_bad_line_names_the_field_at_fault(line, message):
    with pytest.raises(CronError, match=message.replace("*", r"\*")):
        cron_parse(line)
