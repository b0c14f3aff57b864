"""The quality tests' people and set: three annotators, an adjudicator and a manager."""

import pytest

from goldenset.models import Membership
from goldenset.services import membership_grant


@pytest.fixture
def people(make_user):
    return {name: make_user(name) for name in ("ann", "bob", "cid", "judge", "boss")}


@pytest.fixture
def golden_set(golden_set, people):
    """The shared tiny set (tests/support/fixtures.py), boss its manager, the others its annotators and adjudicator."""
    membership_grant(user=people["boss"], golden_set=golden_set, role=Membership.Role.MANAGER)
    for name in ("ann", "bob", "cid"):
        membership_grant(user=people[name], golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    membership_grant(user=people["judge"], golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    return golden_set
