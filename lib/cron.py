"""Cron lines ("0 2 * * *"): parsed once, asked for the fire times around a moment.

Five fields, in UTC: minute, hour, day of month, month, day of week (0 or 7 is Sunday).
Each field is `*`, a number, a range `a-b`, a step `*/n` or `a-b/n`, or a comma list of
those; three-letter month and day names are not taken (a number says the same). As in
cron, when both day fields are restricted a day matches either of them.

Goldset's schedules work by slots: a scheduled job's slot is the latest fire time not after
now (`previous_fire`), and a slot is made once (monitoring.schedules), so a tick that comes
late or twice still makes one run per fire time, and `next_fire` tells people when the next
one comes.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

# A day-of-month and month that rarely meet (the 29th of February on a given weekday) can
# be years apart; past this many days the line is taken as never firing.
SEARCH_DAYS = 366 * 8

_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12), ("day of week", 0, 7))


class CronError(ValueError):
    """A cron line that cannot be read; the message names the field at fault."""


@dataclass(frozen=True)
class Cron:
    line: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday ... 6 = Saturday
    days_restricted: bool
    weekdays_restricted: bool

    def _day_matches(self, moment: datetime) -> bool:
        if moment.month not in self.months:
            return False
        weekday = (moment.weekday() + 1) % 7  # Python's Monday = 0; cron's Sunday = 0
        by_day, by_weekday = moment.day in self.days, weekday in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return by_day or by_weekday
        return by_day and by_weekday

    def previous_fire(self, moment: datetime) -> datetime | None:
        """The latest fire time at or before `moment` (to the minute), None if none in SEARCH_DAYS."""
        moment = moment.replace(second=0, microsecond=0)
        day = moment.replace(hour=0, minute=0)
        for back in range(SEARCH_DAYS):
            if self._day_matches(day):
                last_hour = moment.hour if back == 0 else 23
                for hour in sorted((h for h in self.hours if h <= last_hour), reverse=True):
                    last_minute = moment.minute if back == 0 and hour == moment.hour else 59
                    minutes = [m for m in self.minutes if m <= last_minute]
                    if minutes:
                        return day.replace(hour=hour, minute=max(minutes))
            day -= timedelta(days=1)
        return None

    def shortest_gap(self, start: datetime, *, fires: int = 400) -> timedelta | None:
        """The shortest time between two of the next `fires` fire times after `start`, or
        None when it fires at most once in SEARCH_DAYS."""
        shortest = None
        previous = self.next_fire(start)
        for _ in range(fires):
            following = self.next_fire(previous) if previous else None
            if following is None:
                break
            gap = following - previous
            shortest = gap if shortest is None else min(shortest, gap)
            if shortest <= timedelta(minutes=1):
                break  # no gap is shorter than a minute
            previous = following
        return shortest

    def next_fire(self, moment: datetime) -> datetime | None:
        """The first fire time strictly after `moment`, None if none in SEARCH_DAYS."""
        start = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
        day = start.replace(hour=0, minute=0)
        for ahead in range(SEARCH_DAYS):
            if self._day_matches(day):
                first_hour = start.hour if ahead == 0 else 0
                for hour in sorted(h for h in self.hours if h >= first_hour):
                    first_minute = start.minute if ahead == 0 and hour == start.hour else 0
                    minutes = [m for m in self.minutes if m >= first_minute]
                    if minutes:
                        return day.replace(hour=hour, minute=min(minutes))
            day += timedelta(days=1)
        return None


def _field(text: str, name: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        span, _, step_text = part.partition("/")
        try:
            step = int(step_text) if step_text else 1
        except ValueError:
            raise CronError(f"{name}: step {step_text!r} is not a number") from None
        if step < 1:
            raise CronError(f"{name}: step must be 1 or more, not {step}")
        if span == "*":
            first, last = low, high
        else:
            first_text, dash, last_text = span.partition("-")
            try:
                first = int(first_text)
                last = int(last_text) if dash else (high if step_text else first)
            except ValueError:
                raise CronError(f"{name}: {part!r} is not *, a number, a range a-b or a step */n") from None
            if not (low <= first <= high and low <= last <= high):
                raise CronError(f"{name}: {part!r} is outside {low}-{high}")
            if first > last:
                raise CronError(f"{name}: range {part!r} runs backwards")
        values.update(range(first, last + 1, step))
    return frozenset(values)


def cron_parse(line: str) -> Cron:
    """The Cron of `line`; CronError naming the field for anything cron would not take."""
    parts = (line or "").split()
    if len(parts) != 5:
        raise CronError(f"a cron line has 5 fields (minute hour day-of-month month day-of-week), {line!r} has {len(parts)}")
    minutes, hours, days, months, weekdays = (_field(text, *spec) for text, spec in zip(parts, _FIELDS))
    weekdays = frozenset(day % 7 for day in weekdays)
    cron = Cron(
        line=" ".join(parts),
        minutes=minutes,
        hours=hours,
        days=days,
        months=months,
        weekdays=weekdays,
        days_restricted=parts[2] != "*",
        weekdays_restricted=parts[4] != "*",
    )
    probe = datetime(2000, 1, 1)
    if cron.next_fire(probe) is None:
        raise CronError(f"{line!r} never fires (no day matches both its day of month and month)")
    return cron
