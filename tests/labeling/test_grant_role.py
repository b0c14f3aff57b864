"""`manage.py grant_role USER ROLE --golden-set SLUG`: a thin shell over the membership services."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from goldenset.models import Membership

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("tiny")]


def grant(*args) -> str:
    from io import StringIO

    out = StringIO()
    call_command("grant_role", *args, stdout=out)
    return out.getvalue()


def test_it_grants_a_role(golden_set, teammate):
    assert grant("teammate", "annotator", "--golden-set", "tiny").strip() == "teammate is annotator of tiny"
    assert list(Membership.objects.filter(user=teammate).values_list("role", flat=True)) == ["annotator"]


def test_granting_twice_keeps_one_membership(golden_set, teammate):
    grant("teammate", "adjudicator", "--golden-set", "tiny")
    grant("teammate", "adjudicator", "--golden-set", "tiny")
    assert Membership.objects.filter(user=teammate).count() == 1


def test_it_revokes_a_role(golden_set, teammate):
    grant("teammate", "annotator", "--golden-set", "tiny")
    assert "no longer annotator" in grant("teammate", "annotator", "--golden-set", "tiny", "--revoke")
    assert not Membership.objects.filter(user=teammate).exists()
    assert "nothing changed" in grant("teammate", "annotator", "--golden-set", "tiny", "--revoke")


def test_it_will_not_revoke_the_last_manager(golden_set, owner):
    grant("owner", "manager", "--golden-set", "tiny")
    with pytest.raises(CommandError, match="last manager"):
        grant("owner", "manager", "--golden-set", "tiny", "--revoke")


def test_it_names_an_unknown_user(golden_set):
    with pytest.raises(CommandError, match="no user 'ghost'"):
        grant("ghost", "annotator", "--golden-set", "tiny")


def test_it_names_an_unknown_golden_set_and_lists_the_known_ones(golden_set, teammate):
    with pytest.raises(CommandError, match=r"no golden set 'nope' \(golden sets: tiny\)"):
        grant("teammate", "annotator", "--golden-set", "nope")


def test_it_names_an_unknown_role(golden_set, teammate):
    with pytest.raises(CommandError, match="unknown role 'boss'; choose one of annotator, adjudicator, manager"):
        grant("teammate", "boss", "--golden-set", "tiny")
    assert not Membership.objects.exists()


def test_the_golden_set_is_required(golden_set, teammate):
    with pytest.raises(CommandError, match="--golden-set"):
        grant("teammate", "annotator")
