"""The quality tests' people and set: three annotators, an adjudicator and a manager."""

import pytest

from goldenset.models import Membership
from goldenset.services import membership_grant
from tests.support import factories


@pytest.fixture
def people(make_user):
    return {name: make_user(name) for name in ("ann", "bob", "cid", "judge", "boss")}


@pytest.fixture
def golden_set(people):
    golden_set = factories.golden_set(manager=people["boss"])
    for name in ("ann", "bob", "cid"):
        membership_grant(user=people[name], golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    membership_grant(user=people["judge"], golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    return golden_set
