"""When to try an HTTP request again: exponential backoff with jitter, or the server's
Retry-After when it asks for longer. One rule for every outbound client (the retrieval
endpoint client of monitoring, the model judge); each passes its own caps, since a nightly
run must not stall for one query while a judge job can wait out a hosted API's minute."""

import time
from email.utils import parsedate_to_datetime


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A Retry-After header in seconds (delta-seconds or an HTTP date), None if unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - (time.time() if now is None else now))


def backoff_delay(
    retry: int,
    random_part: float,
    retry_after: float | None,
    *,
    base: float,
    cap: float,
    retry_after_cap: float,
) -> float:
    """Seconds before retry number `retry` (1 for the first): half of base * 2**(retry-1)
    (capped at `cap`) plus `random_part` (0-1) of the other half, so clients do not retry in
    step; the server's Retry-After instead when longer; never more than `retry_after_cap`."""
    ceiling = min(cap, base * 2 ** (retry - 1))
    delay = ceiling / 2 + random_part * ceiling / 2
    if retry_after is not None:
        delay = max(delay, retry_after)
    return min(delay, retry_after_cap)
