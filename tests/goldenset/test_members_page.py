"""The members page of a golden set, through the test client: a manager grants and revokes
roles; anonymous visitors go to the login page, everyone else gets 404, so nobody learns
which sets exist."""

import pytest
from django.urls import reverse

from goldenset.models import GoldenSet, Membership
from goldenset.services import membership_grant
from tests.labeling.judging.judging_data import annotator_of, pooled_set

pytestmark = pytest.mark.django_db


@pytest.fixture
def golden_set():
    return pooled_set(guidelines="Grade 3 only when the page answers the question fully.").golden_set


@pytest.fixture
def manager(golden_set, owner, client):
    membership_grant(user=owner, golden_set=golden_set, role=Membership.Role.MANAGER)
    client.force_login(owner)
    return owner


def test_a_manager_grants_and_revokes_roles_on_the_members_page(client, golden_set, manager, teammate):
    url = reverse("golden_set_members", args=[golden_set.slug])
    response = client.post(url, {"action": "grant", "username": "teammate", "role": "annotator"}, follow=True)
    assert "teammate is now annotator" in response.content.decode()
    membership = Membership.objects.get(user=teammate, golden_set=golden_set)
    assert membership.role == "annotator"
    response = client.post(url, {"action": "revoke", "membership": membership.pk}, follow=True)
    assert "teammate is no longer annotator" in response.content.decode()
    assert not Membership.objects.filter(user=teammate).exists()


def test_the_members_page_names_unknown_users_and_roles(client, golden_set, manager, teammate):
    url = reverse("golden_set_members", args=[golden_set.slug])
    assert "no user &#x27;nobody&#x27;" in client.post(url, {"username": "nobody", "role": "annotator"}, follow=True).content.decode()
    assert "unknown role &#x27;boss&#x27;" in client.post(url, {"username": "teammate", "role": "boss"}, follow=True).content.decode()
    assert not Membership.objects.filter(user=teammate).exists()


def test_the_last_manager_cannot_be_revoked(client, golden_set, manager):
    membership = Membership.objects.get(user=manager, golden_set=golden_set, role="manager")
    url = reverse("golden_set_members", args=[golden_set.slug])
    response = client.post(url, {"action": "revoke", "membership": membership.pk}, follow=True)
    assert "last manager" in response.content.decode()
    assert Membership.objects.filter(pk=membership.pk).exists()


def test_the_members_page_lists_members_in_few_queries(client, golden_set, manager, make_user, django_assert_max_num_queries):
    for n in range(10):
        annotator_of(golden_set, make_user, f"member{n}")
    with django_assert_max_num_queries(10):
        response = client.get(reverse("golden_set_members", args=[golden_set.slug]))
    assert response.content.decode().count("revoke</button>") == 11
    assert GoldenSet.objects.count() == 1


@pytest.mark.parametrize("method", ["get", "post"])
def test_the_members_page_sends_anonymous_visitors_to_log_in(client, golden_set, method):
    response = getattr(client, method)(reverse("golden_set_members", args=[golden_set.slug]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("role", [None, Membership.Role.ANNOTATOR, Membership.Role.ADJUDICATOR])
@pytest.mark.parametrize("method", ["get", "post"])
def test_the_members_page_is_404_to_all_but_managers(client, golden_set, teammate, stranger, role, method):
    if role is not None:
        membership_grant(user=teammate, golden_set=golden_set, role=role)
    client.force_login(teammate)
    data = {"action": "grant", "username": "stranger", "role": "manager"}
    response = client.post(reverse("golden_set_members", args=[golden_set.slug]), data) if method == "post" else client.get(
        reverse("golden_set_members", args=[golden_set.slug])
    )
    assert response.status_code == 404
    assert not Membership.objects.filter(user=stranger).exists()
