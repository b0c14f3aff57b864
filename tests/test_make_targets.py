"""The Makefile's test targets select what the README says they do: `make test` (which
.ci/run calls) runs every test exactly once over its steps, whatever its marks, and
`make test-fast` leaves out only the browser, worker and whole-system tests (pytest.ini).
A mark added to a step's `-m` expression by mistake would otherwise drop tests from CI
without a failure."""

import itertools
import re
from pathlib import Path

from _pytest.mark.expression import Expression

ROOT = Path(__file__).resolve().parent.parent
# The marks that decide which step of `make test` runs a test (pytest.ini).
SELECTING = ("browser", "worker", "whole_system")


def recipe_selections(target: str) -> list[str]:
    """The `-m` expression of each pytest command in `target`'s recipe, in order ("" where a
    command selects by no mark)."""
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    start = next(number for number, line in enumerate(lines) if line.startswith(f"{target}:"))
    recipe = list(itertools.takewhile(lambda line: line.startswith("\t"), lines[start + 1 :]))
    selections = []
    for line in recipe:
        if "-m pytest" not in line:
            continue
        found = re.search(r' -m "([^"]*)"', line)
        selections.append(found.group(1) if found else "")
    return selections


def selects(expression: str, marks: set[str]) -> bool:
    """Whether `-m expression` selects a test carrying `marks`, by pytest's own evaluator of
    `-m` (it has no public name)."""
    return not expression or Expression.compile(expression).evaluate(lambda name, **_: name in marks)


def every_combination():
    for size in range(len(SELECTING) + 1):
        for marks in itertools.combinations(SELECTING, size):
            yield set(marks)


def test_make_test_runs_every_test_once_whatever_its_marks():
    steps = recipe_selections("test")
    assert len(steps) == 3, steps
    for marks in every_combination():
        running = [step for step in steps if selects(step, marks)]
        assert len(running) == 1, f"a test marked {sorted(marks) or 'nothing'} runs in {len(running)} steps of make test: {running}"


def test_make_test_fast_leaves_out_only_the_browser_worker_and_whole_system_tests():
    [step] = recipe_selections("test-fast")
    for marks in every_combination():
        assert selects(step, marks) == (not marks), f"make test-fast and a test marked {sorted(marks)}"


def test_make_test_sqlite_runs_every_database_test_but_the_browser_and_worker_ones():
    [step] = recipe_selections("test-sqlite")
    for marks in every_combination():
        expected = not marks & {"browser", "worker"}
        assert selects(step, marks | {"database"}) == expected, f"make test-sqlite and a database test marked {sorted(marks)}"
        assert not selects(step, marks), "make test-sqlite runs a test that reaches no database"
