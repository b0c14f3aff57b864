"""The audit trail: a scripted manager session leaves one record per action, with the values
before and after and no secret anywhere; nothing can change a record (model, queryset, raw
SQL against the triggers); a rolled-back action records nothing; `audit_log` prints them."""

import json

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from api.services import api_token_create, api_token_revoke
from evaluation.alerts.incidents import incident_act
from evaluation.alerts.rules import alerts_check
from evaluation.models import Incident
from evaluation.services import run_archive
from evaluation.settings_service import evaluation_settings_update
from goldenset.audit import audit_record, masked
from goldenset.models import AuditRecord, Membership
from goldenset.services import membership_grant, membership_revoke, qrels_import, version_publish
from goldenset.tags import tag_move
from lib.errors import GoldsetError
from monitoring.endpoints.services import endpoint_add
from tests.evaluation.alerts.test_incident_messages import BAD_NIGHT
from tests.support.factories import ALERTING_QUERIES
from tests.support.factories import alerting_run as upload
from tests.support.factories import score as evaluate

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("alerting", factory="alerting_set", manager="owner")]

ENV_SECRET = "env-value-never-recorded"
SESSION = [
    "version.publish",
    "settings.update",
    "endpoint.add",
    "token.create",
    "token.revoke",
    "member.grant",
    "run.archive",
    "incident.acknowledge",
    "tag.move",
]


@pytest.fixture
def scene(golden_set):
    """The set with a first version, two nights (monday fine, tuesday bad: one incident)."""
    v1 = version_publish(golden_set=golden_set, note="first labels")
    monday = upload(golden_set, "monday")
    evaluate(monday, v1)
    alerts_check(evaluation=evaluate(upload(golden_set, "tuesday", ranks=BAD_NIGHT), v1))
    return monday, Incident.objects.get()


@pytest.fixture
def session(golden_set, scene, owner, teammate, monkeypatch):
    """A manager's session through the services the pages and the API call; returns the
    secrets it handled and the records it left."""
    monkeypatch.setenv("SEARCH_TOKEN", ENV_SECRET)
    monday, incident = scene
    before = AuditRecord.objects.order_by("-id").values_list("id", flat=True).first() or 0
    qrels_import(golden_set_slug="alerting", lines=[f"{ALERTING_QUERIES[0]} 0 x1 1\n"], source_name="more")
    v2 = version_publish(golden_set=golden_set, user=owner, note="second labels")
    settings = evaluation_settings_update(
        golden_set=golden_set, user=owner, alert_drop_points=4, webhook_url="https://hooks.example.com/goldset"
    )
    endpoint_add(
        golden_set=golden_set,
        name="prod",
        system="prod",
        stage="first_stage",
        preset="goldset",
        url="https://search.example.com/goldset",
        headers="Authorization: Bearer ${SEARCH_TOKEN}",
        user=owner,
    )
    token, token_secret = api_token_create(owner=owner, scope="read", golden_set=golden_set, created_by=owner)
    api_token_revoke(token=token, user=owner)
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR, by=owner)
    run_archive(run=monday, user=owner)
    incident_act(incident=incident, user=owner, action="acknowledge")
    tag_move(golden_set=golden_set, name="prod", version=v2, user=owner, note="ship it")
    records = list(AuditRecord.objects.filter(id__gt=before).order_by("id"))
    return records, [settings.webhook_secret, token_secret, ENV_SECRET]


def test_a_manager_session_leaves_one_record_per_action_naming_who_and_what(session, owner, golden_set):
    records, _ = session
    assert [record.action for record in records] == SESSION
    assert {(record.user_id, record.username, record.golden_set_id) for record in records} == {(owner.pk, "owner", golden_set.pk)}
    by_action = {record.action: record for record in records}
    assert (by_action["version.publish"].before, by_action["version.publish"].after["version"]) == ({"version": 1}, 2)
    assert by_action["settings.update"].after["alert_drop_points"] == 4
    assert by_action["tag.move"].after == {"version": 2, "note": "ship it"} and by_action["tag.move"].before == {"version": None}
    assert by_action["member.grant"].after == {"user": "teammate", "role": "annotator"}
    assert by_action["run.archive"].before["archived_at"] is None and by_action["run.archive"].after["archived_by"] == "owner"
    assert by_action["incident.acknowledge"].before["state"] == "open"
    assert by_action["incident.acknowledge"].after["state"] == "acknowledged"
    assert by_action["endpoint.add"].object_label == "prod" and by_action["endpoint.add"].object_type == "endpoint"


def test_no_secret_is_recorded_and_env_headers_keep_their_names(session):
    records, secrets = session
    text = json.dumps([record.to_dict() for record in records])
    for secret in secrets:
        assert secret and secret not in text
    by_action = {record.action: record for record in records}
    assert by_action["settings.update"].after["webhook_secret"] == "***"
    assert by_action["endpoint.add"].after["headers"] == [["Authorization", "${SEARCH_TOKEN}"]]


def test_an_action_that_rolls_back_records_nothing(golden_set, owner, teammate):
    count = AuditRecord.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR, by=owner)
        raise RuntimeError("the request failed after the grant")
    assert AuditRecord.objects.count() == count


def test_an_action_that_is_refused_records_nothing(golden_set, owner):
    count = AuditRecord.objects.count()
    with pytest.raises(GoldsetError):
        membership_revoke(user=owner, golden_set=golden_set, role=Membership.Role.MANAGER, by=owner)
    assert AuditRecord.objects.count() == count


def test_a_record_cannot_be_changed_or_deleted_through_the_model_or_queryset(golden_set, owner):
    with transaction.atomic():
        record = audit_record(user=owner, action="settings.update", golden_set=golden_set, after={"k_final": 3})
    record.action = "nothing.happened"
    with pytest.raises(GoldsetError):
        record.save()
    with pytest.raises(GoldsetError):
        record.delete()
    with pytest.raises(GoldsetError):
        AuditRecord.objects.filter(pk=record.pk).update(action="nothing.happened")
    with pytest.raises(GoldsetError):
        AuditRecord.objects.filter(pk=record.pk).delete()
    assert AuditRecord.objects.get(pk=record.pk).action == "settings.update"


@pytest.mark.parametrize("statement", ["UPDATE goldenset_auditrecord SET action = 'x'", "DELETE FROM goldenset_auditrecord"])
def test_the_database_refuses_raw_updates_and_deletes(golden_set, owner, statement):
    with transaction.atomic():
        record = audit_record(user=owner, action="settings.update", golden_set=golden_set)
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement + " WHERE id = %s", [record.pk])
    assert AuditRecord.objects.get(pk=record.pk).action == "settings.update"


def test_secrets_are_masked_by_their_field_name_at_any_depth():
    assert masked("webhook_secret", "abc") == "***"
    assert masked("options", {"api_key": "abc", "depth": 3}) == {"api_key": "***", "depth": 3}
    assert masked("headers", {"X-Key": "literal", "Authorization": "Bearer ${TOKEN}"}) == {"X-Key": "***", "Authorization": "${TOKEN}"}
    assert masked("password", "") == ""


def test_audit_log_prints_each_record_with_who_when_action_and_object(session, capsys):
    call_command("audit_log", "alerting", "--format", "json")
    printed = json.loads(capsys.readouterr().out)
    assert [record["action"] for record in printed][: len(SESSION)] == SESSION[::-1]
    assert {"user", "at", "action", "object"} <= set(printed[0]) and printed[0]["object"]["label"] == "prod"
    call_command("audit_log", "alerting", "--action", "token", "--user", "owner")
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[2] for line in lines] == ["token.revoke", "token.create"]


def test_audit_log_names_an_unknown_set():
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="no golden set 'nope'"):
        call_command("audit_log", "nope")


@pytest.mark.django_db(transaction=True)
def test_a_test_that_commits_records_is_flushed_clean_after(golden_set, owner):
    # The flush after this test deletes the record the trigger guards (tests/conftest.py).
    with transaction.atomic():
        audit_record(user=owner, action="settings.update", golden_set=golden_set)
    assert AuditRecord.objects.filter(action="settings.update").exists()


@pytest.mark.django_db(transaction=True)
def test_the_next_test_starts_with_no_record(golden_set):
    assert not AuditRecord.objects.filter(action="settings.update").exists()


def test_an_endpoint_change_records_the_changed_fields_only_and_its_deletion(golden_set, owner):
    from monitoring.endpoints.services import endpoint_delete, endpoint_update

    endpoint = endpoint_add(
        golden_set=golden_set,
        name="prod",
        system="prod",
        stage="first_stage",
        preset="goldset",
        url="https://search.example.com/a",
        user=owner,
    )
    endpoint_update(endpoint=endpoint, user=owner, url="https://search.example.com/b")
    endpoint_delete(endpoint=endpoint, user=owner)
    update, delete = AuditRecord.objects.filter(action__in=["endpoint.update", "endpoint.delete"]).order_by("id")
    assert (update.before, update.after) == ({"url": "https://search.example.com/a"}, {"url": "https://search.example.com/b"})
    assert (delete.action, delete.object_label, delete.username) == ("endpoint.delete", "prod", "owner")


def test_a_slice_muted_and_unmuted_is_recorded_each_time(golden_set, owner):
    from datetime import timedelta

    from django.utils import timezone

    from evaluation.alerts.incidents import slice_mute

    slice_mute(golden_set=golden_set, user=owner, slice_name="query:lang=de", until=timezone.now() + timedelta(days=1))
    slice_mute(golden_set=golden_set, user=owner, slice_name="query:lang=de", until=None)
    slice_mute(golden_set=golden_set, user=owner, slice_name="query:lang=de", until=None)  # muted no more: nothing
    actions = list(AuditRecord.objects.filter(action__startswith="slice.").order_by("id").values_list("action", "object_label"))
    assert actions == [("slice.mute", "query:lang=de"), ("slice.unmute", "query:lang=de")]
