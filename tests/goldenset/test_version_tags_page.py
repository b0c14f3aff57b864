"""The set's page shows its tags beside the versions, a form for managers to move one, and
the tags' history; only managers move them."""

import pytest
from django.urls import reverse

from goldenset.models import Membership, VersionTag, VersionTagMove
from goldenset.services import membership_grant, qrels_import, version_publish
from goldenset.tags import tag_move
from tests.support import factories

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("tiny", manager="owner")]

MOVE = reverse("version_tag_move", kwargs={"slug": "tiny"})
PAGE = reverse("golden_set", kwargs={"slug": "tiny"})


@pytest.fixture
def golden_set(golden_set, owner):
    version_publish(golden_set=golden_set, note="first labels")
    qrels_import(golden_set_slug="tiny", lines=["q1 0 d1 3\n"], source_name="f")
    version_publish(golden_set=golden_set, note="regraded d1")
    return golden_set


def test_a_manager_moves_a_tag_and_the_page_shows_it_and_its_history(client, golden_set, owner, django_assert_max_num_queries):
    client.force_login(owner)
    response = client.post(MOVE, {"name": "prod", "version": "1", "note": "first <b>release</b>"})
    assert response.status_code == 302 and response["Location"].endswith("#tags")
    client.post(MOVE, {"name": "prod", "version": "2", "note": "second"})
    with django_assert_max_num_queries(16):  # as tests/goldenset/test_pages.py counts them
        body = client.get(PAGE).content.decode()
    assert '<span class="tag">prod</span>' in body and "Move the tag" in body
    assert "first &lt;b&gt;release&lt;/b&gt;" in body  # user text escaped
    assert [(m.from_version and m.from_version.number, m.to_version.number) for m in VersionTagMove.objects.order_by("id")] == [
        (None, 1),
        (1, 2),
    ]


def test_a_bad_name_is_refused_with_a_message_naming_the_rule(client, golden_set, owner):
    client.force_login(owner)
    body = client.post(MOVE, {"name": "42", "version": "1"}, follow=True).content.decode()
    assert "tag name &#x27;42&#x27; is not allowed" in body and not VersionTag.objects.exists()
    body = client.post(MOVE, {"name": "prod", "version": "9"}, follow=True).content.decode()
    assert "has no version 9" in body


def test_an_adjudicator_sees_the_tags_but_cannot_move_them(client, golden_set, owner, teammate):
    tag_move(golden_set=golden_set, name="prod", version=golden_set.versions.get(number=1), user=owner)
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    client.force_login(teammate)
    body = client.get(PAGE).content.decode()
    assert '<span class="tag">prod</span>' in body and "Move the tag" not in body
    assert client.post(MOVE, {"name": "prod", "version": "2"}).status_code == 403
    assert VersionTag.objects.get().version.number == 1


def test_an_annotator_anonymous_and_another_sets_manager_cannot_move_a_tag(client, golden_set, teammate, make_user):
    assert client.post(MOVE, {"name": "prod", "version": "1"}).status_code == 302  # to the login page
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    client.force_login(teammate)
    assert client.post(MOVE, {"name": "prod", "version": "1"}).status_code == 404
    other_manager = make_user("elsewhere")
    factories.golden_set("other", manager=other_manager)
    client.force_login(other_manager)
    assert client.post(MOVE, {"name": "prod", "version": "1"}).status_code == 404
    assert not VersionTag.objects.exists()
