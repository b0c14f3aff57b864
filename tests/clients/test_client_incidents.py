"""The Python client's incident methods against a live server: list, read, acknowledge,
mute, assign, resolve and reopen; a reader's token is refused a change."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from evaluation.alerts.incidents import incident_alert_add
from evaluation.models import Alert
from evaluation.services import evaluation_compute, run_import
from goldset_client import GoldsetAPIError
from tests.api import RUN, SLUG

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def incident(golden_set, version, manager):
    run = run_import(golden_set=golden_set, lines=RUN.splitlines(keepends=True), source_name="run.txt", system="bm25", stage="first_stage")
    evaluation_compute(run=run, version=version)  # the upload's own scoring may have raised alerts already
    alert = Alert.objects.create(
        golden_set=golden_set, version=version, run=run, kind=Alert.Kind.SLICE_UNDER_FLOOR, metric="recall@10",
        slice="query:lang=xx", value=0.5, reference=0.75, message="recall@10 in slice query:lang=xx is 0.500",
    )  # fmt: skip
    with transaction.atomic():  # as the rules do: in the transaction that stores the alert
        return incident_alert_add(alert)


def test_the_client_reads_and_triages_incidents(client, incident):
    [listed] = client.incidents(SLUG)
    assert (listed["id"], listed["state"]) == (incident.pk, "open")
    assert "query:lang=xx" in {alert["slice"] for alert in client.incident(SLUG, incident.pk)["alerts"]}
    assert client.incident_acknowledge(SLUG, incident.pk)["state"] == "acknowledged"
    assert client.incident_mute(SLUG, incident.pk, until=timezone.now() + timedelta(hours=1))["state"] == "muted"
    assert client.incident_update(SLUG, incident.pk, owner="manager")["owner"] == "manager"
    assert client.incident_resolve(SLUG, incident.pk)["state"] == "resolved"
    assert client.incidents(SLUG, state="open") == []
    assert client.incident_reopen(SLUG, incident.pk)["state"] == "open"


def test_a_read_token_cannot_change_an_incident(make_client, token, golden_set, incident):
    reader = make_client(token("read", golden_set))
    with pytest.raises(GoldsetAPIError) as raised:
        reader.incident_resolve(SLUG, incident.pk)
    assert raised.value.status == 403
