"""The members page of a golden set, through the test client: a manager grants and revokes
roles; anonymous visitors go to the login page, everyone else gets 404, so nobody learns
which sets exist."""

import re

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
    response = (
        client.post(reverse("golden_set_members", args=[golden_set.slug]), data)
        if method == "post"
        else client.get(reverse("golden_set_members", args=[golden_set.slug]))
    )
    assert response.status_code == 404
    assert not Membership.objects.filter(user=stranger).exists()


def test_revoking_asks_first_and_only_the_confirmation_takes_the_role(client, golden_set, manager, teammate):
    """Issue 30 item 7: revoking a member acted at once, without a confirmation."""
    membership = membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    page = client.get(reverse("golden_set_members", args=[golden_set.slug])).content.decode()
    confirm_url = reverse("golden_set_member_revoke", args=[golden_set.slug, membership.pk])
    assert f'action="{confirm_url}"' in page and 'method="get"' in page
    asked = client.get(confirm_url).content.decode()
    assert "Take the annotator role from teammate?" in asked and Membership.objects.filter(pk=membership.pk).exists()
    done = client.post(
        reverse("golden_set_members", args=[golden_set.slug]), {"action": "revoke", "membership": membership.pk}, follow=True
    )
    assert "teammate is no longer annotator" in done.content.decode()


def test_a_manager_invites_someone_without_an_account_who_can_then_sign_in(client, golden_set, manager):
    """Issue 30 item 7: members could only be granted to existing usernames."""
    url = reverse("golden_set_members", args=[golden_set.slug])
    response = client.post(url, {"action": "invite", "username": "newcomer", "email": "new@example.org", "role": "annotator"})
    password = re.search(r'<code class="secret">([^<]+)</code>', response.content.decode()).group(1)
    from django.contrib.auth import get_user_model

    assert get_user_model().objects.get(username="newcomer").check_password(password)
    assert Membership.objects.filter(user__username="newcomer", golden_set=golden_set, role="annotator").exists()
    again = client.post(url, {"action": "invite", "username": "newcomer", "email": "", "role": "annotator"}, follow=True)
    assert "exists already" in again.content.decode()
    bad = client.post(url, {"action": "invite", "username": "no spaces", "email": "", "role": "annotator"}, follow=True)
    assert "is not a username" in bad.content.decode() and not Membership.objects.filter(user__username="no spaces").exists()
