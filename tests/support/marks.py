"""Marks that several test modules share."""

import pytest

# ranx holds its qrels and runs in numba's typed dicts and lists, whose functions numba
# compiles in every process that first uses them and cannot cache on disk (seconds of CPU
# each time). The tests that hold Goldset's numbers to ranx form one xdist group, so that
# one process of the suite compiles them (the Makefile runs xdist with --dist loadgroup).
RANX = pytest.mark.xdist_group("ranx")
