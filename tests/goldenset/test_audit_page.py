"""The audit trail's page of a set and its admin: managers and staff read it, filtered and
newest first; anonymous visitors go to log in, everyone else gets 404; the admin shows
records and refuses to add, change or delete one."""

import pytest
from django.urls import reverse

from goldenset.models import AuditRecord, Membership
from goldenset.services import membership_grant, membership_revoke
from tests.api import make_set

pytestmark = pytest.mark.django_db


@pytest.fixture
def golden_set(owner, teammate):
    golden_set = make_set("tiny", owner)
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR, by=owner)
    membership_revoke(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR, by=owner)
    return golden_set


def url(**params) -> str:
    query = "&".join(f"{name}={value}" for name, value in params.items())
    return reverse("audit", args=["tiny"]) + (f"?{query}" if query else "")


def test_a_manager_reads_the_records_newest_first(client, golden_set, owner):
    client.force_login(owner)
    page = client.get(url()).content.decode()
    assert page.index("member.revoke") < page.index("member.grant")
    assert "teammate (annotator)" in page


def test_the_page_filters_by_action_user_and_days(client, golden_set, owner):
    client.force_login(owner)
    page = client.get(url(action="member.revoke", user="owner", since="2000-01-01", until="2999-12-31")).content.decode()
    assert "member.revoke" in page and "member.grant" not in page
    assert "No record matches" in client.get(url(user="nobody")).content.decode()
    assert "No record matches" in client.get(url(until="2000-01-01")).content.decode()


def test_a_day_that_is_none_is_refused_naming_the_parameter(client, golden_set, owner):
    client.force_login(owner)
    response = client.get(url(since="yesterday"))
    assert response.status_code == 400 and "since" in response.content.decode()


def test_user_text_is_escaped(client, golden_set, owner):
    membership_grant(user=owner, golden_set=golden_set, role=Membership.Role.ANNOTATOR, by=owner)
    client.force_login(owner)
    page = client.get(url(action="<script>")).content.decode()
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_the_set_menu_links_the_page_for_managers_only(client, golden_set, owner, teammate):
    client.force_login(owner)
    assert reverse("audit", args=["tiny"]) in client.get(reverse("golden_set_members", args=["tiny"])).content.decode()
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    client.force_login(teammate)
    assert reverse("audit", args=["tiny"]) not in client.get(reverse("runs", args=["tiny"])).content.decode()


def test_anonymous_visitors_are_sent_to_log_in(client, golden_set):
    response = client.get(url())
    assert response.status_code == 302 and reverse("login") in response["Location"]


@pytest.mark.parametrize("role", [Membership.Role.ANNOTATOR, Membership.Role.ADJUDICATOR])
def test_annotators_and_adjudicators_find_nothing(client, golden_set, teammate, role):
    membership_grant(user=teammate, golden_set=golden_set, role=role)
    client.force_login(teammate)
    assert client.get(url()).status_code == 404


def test_the_manager_of_another_set_finds_nothing(client, golden_set, stranger):
    make_set("theirs", stranger)
    client.force_login(stranger)
    assert client.get(url()).status_code == 404


def test_staff_read_every_set(client, golden_set, make_user):
    client.force_login(make_user("admin", is_staff=True))
    assert client.get(url()).status_code == 200


# --- the admin ---------------------------------------------------------------------------


@pytest.fixture
def admin_client(client, make_user):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    return client


def test_the_admin_shows_records_and_refuses_to_add_change_or_delete(admin_client, golden_set):
    record = AuditRecord.objects.filter(golden_set=golden_set).first()
    assert admin_client.get(reverse("admin:goldenset_auditrecord_changelist")).status_code == 200
    change = reverse("admin:goldenset_auditrecord_change", args=[record.pk])
    assert admin_client.get(change).status_code == 200  # view only
    assert admin_client.post(change, {"action": "nothing.happened"}).status_code == 403
    assert admin_client.post(reverse("admin:goldenset_auditrecord_delete", args=[record.pk]), {"post": "yes"}).status_code == 403
    assert admin_client.get(reverse("admin:goldenset_auditrecord_add")).status_code == 403
    assert AuditRecord.objects.get(pk=record.pk).action == record.action


def test_an_admins_membership_add_and_delete_are_recorded(admin_client, golden_set, stranger):
    response = admin_client.post(
        reverse("admin:goldenset_membership_add"), {"user": stranger.pk, "golden_set": golden_set.pk, "role": "adjudicator"}
    )
    assert response.status_code == 302
    membership = Membership.objects.get(user=stranger)
    added = AuditRecord.objects.get(action="membership.add")
    assert (added.username, added.golden_set_id, added.after["role"]) == ("root", golden_set.pk, "adjudicator")
    admin_client.post(reverse("admin:goldenset_membership_delete", args=[membership.pk]), {"post": "yes"})
    deleted = AuditRecord.objects.get(action="membership.delete")
    assert (deleted.username, deleted.object_id, deleted.golden_set_id) == ("root", str(membership.pk), golden_set.pk)


def test_an_action_through_a_page_records_the_address_it_came_from(client, golden_set, owner, stranger):
    client.force_login(owner)
    client.post(reverse("golden_set_members", args=["tiny"]), {"action": "grant", "username": "stranger", "role": "annotator"})
    record = AuditRecord.objects.get(action="member.grant", object_label="stranger (annotator)")
    assert (record.username, record.ip) == ("owner", "127.0.0.1")
