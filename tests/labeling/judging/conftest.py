"""The judging tests' pool: a small pooled set (judging_data.pooled_set) and its golden set.
A test module with a pool of its own (the pages' guidelines) defines `pool` again."""

import pytest

from tests.labeling.judging.judging_data import pooled_set


@pytest.fixture
def pool():
    return pooled_set()


@pytest.fixture
def golden_set(pool):
    return pool.golden_set
