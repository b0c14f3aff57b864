"""Progress reporting for long work: services take a `Progress` and commands pass a bar."""

from collections.abc import Callable, Iterable

# Wraps an iterable to show progress (a tqdm bar in commands); the identity by default.
Progress = Callable[[Iterable, str], Iterable]


def no_progress(iterable: Iterable, description: str) -> Iterable:
    return iterable
