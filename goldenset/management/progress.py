"""Progress bars for management commands (on stderr, so stdout stays clean for data)."""

import sys
from collections.abc import Iterable

from tqdm import tqdm


def tqdm_progress(verbosity: int = 1):
    """A `Progress` callable for services: wraps iterables in a tqdm bar unless quiet."""

    def progress(iterable: Iterable, description: str) -> Iterable:
        if verbosity < 1:
            return iterable
        total = len(iterable) if hasattr(iterable, "__len__") else None
        unit = "lines" if total is None else "rows"
        return tqdm(iterable, desc=description, total=total, unit=unit, file=sys.stderr, leave=False, mininterval=0.5)

    return progress


def user_by_name(username: str | None):
    """The user named by a --user option, or None; CommandError when there is no such user."""
    if not username:
        return None
    from django.contrib.auth import get_user_model
    from django.core.management.base import CommandError

    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"no user {username!r}")
    return user
