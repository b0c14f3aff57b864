"""Identifiers are opaque strings: kept byte for byte, never split or normalised.

The single thing a TREC file cannot carry is whitespace, so an id with whitespace
(or an empty one) is refused where it enters.
"""

import re

_WHITESPACE = re.compile(r"\s")
MAX_ID_LENGTH = 255  # matches the CharField max_length of doc_id and query_id


def id_problem(value: object, what: str) -> str | None:
    """Return why `value` cannot be an id (naming `what`), or None if it can."""
    if not isinstance(value, str):
        return f"{what} must be a string, got {type(value).__name__} {value!r}"
    if value == "":
        return f"{what} is empty"
    if _WHITESPACE.search(value):
        return f"{what} {value!r} contains whitespace, which TREC files cannot carry"
    if len(value) > MAX_ID_LENGTH:
        return f"{what} {value[:40]!r}... is longer than {MAX_ID_LENGTH} characters"
    return None


def natural_key(value: str) -> tuple:
    """Sort key that orders "q2" before "q10" while keeping ids opaque."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", value))
