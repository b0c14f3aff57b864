"""The one `golden_set` fixture, registered for every test by tests/conftest.py."""

import copy

import pytest

from tests.support import factories


@pytest.fixture
def golden_set(request, db):
    """A golden set made by `factories.golden_set`, with the options of the `golden_set` marker.

    Without a marker it is the tiny set: slug "tiny", queries q1-q3 over pages d1-d5, labels
    q1-d1 2, q1-d2 0, q2-d3 1, no manager. A marker on the test, its class or its module
    (`pytestmark`) passes keyword options through to the factory::

        pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("forms", manager="owner", qrels={("q1", "d1"): 2})]

        @pytest.mark.golden_set(queries=factories.queries("q1", "q2", "q3", lang="en"), query_slice_fields=["lang"])
        def test_...(golden_set): ...

    - The first positional argument, or `slug=`, is the set's slug.
    - `manager="owner"` names a fixture: that fixture's user is made manager of the set.
    - `factory="alerting_set"` (or "sliced_set") builds with that factory of
      tests.support.factories instead, passing it the other options.
    - Any other option (`qrels`, `pages`, `queries`, `k_first`, `query_slice_fields`, ...) goes
      to the factory as it is; each test gets its own copy, so a test that changes one leaves
      the next test's set as written.

    Markers nearer the test win option by option: a test's marker overrides its module's.

    A module that needs more (runs, a published version) overrides it under the same name and
    adds to it: `def golden_set(golden_set): version_publish(golden_set=golden_set); return golden_set`.
    """
    options: dict = {}
    for marker in reversed(list(request.node.iter_markers("golden_set"))):  # module first, the test last
        if marker.args:
            (options["slug"],) = marker.args
        options.update(marker.kwargs)
    options = copy.deepcopy(options)
    make = getattr(factories, options.pop("factory", "golden_set"))
    manager = options.pop("manager", None)
    if isinstance(manager, str):
        manager = request.getfixturevalue(manager)
    return make(manager=manager, **options)
