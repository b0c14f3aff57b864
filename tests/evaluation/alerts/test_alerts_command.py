"""The `alerts SLUG [--format json] [--state S]` command: every alert with its incident and
state, a within-noise alert with none, and a readable table."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from evaluation.alerts.incidents import incident_acknowledge, incident_alert_add
from evaluation.alerts.rules import alerts_check
from evaluation.models import Alert, Incident, Series
from goldenset.services import version_publish
from tests.evaluation.alerts.test_incident_messages import BAD_NIGHT
from tests.support.factories import alerting_run as upload
from tests.support.factories import score as evaluate

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("alerting", factory="alerting_set", manager="owner")]


@pytest.fixture
def alerted(golden_set):
    v1 = version_publish(golden_set=golden_set, note="first labels")
    evaluate(upload(golden_set, "monday"), v1)
    alerts_check(evaluation=evaluate(upload(golden_set, "tuesday", ranks=BAD_NIGHT), v1))  # three alerts past noise
    night = upload(golden_set, "nightly 12-01")
    series = Series.objects.create(golden_set=golden_set, name="bm25 nightly")
    night.series, night.measured_at = series, timezone.now() - timedelta(hours=3)
    night.save(update_fields=["series", "measured_at"])
    noise = Alert.objects.create(
        golden_set=golden_set, version=v1, run=night, kind=Alert.Kind.DROP_VS_PREVIOUS_NIGHT, metric="recall@3",
        slice="query:lang=de", value=0.5, reference=0.75, message="within noise", within_noise=True, p_value=0.3,
    )  # fmt: skip
    incident_alert_add(noise)
    return golden_set


def run(*args) -> str:
    out = StringIO()
    call_command("alerts", *args, stdout=out)
    return out.getvalue()


def test_json_lists_every_alert_with_its_incident_state_and_night(alerted):
    records = json.loads(run("alerting", "--format", "json"))
    assert len(records) == 4
    incident = Incident.objects.get()
    sent = [r for r in records if not r["within_noise"]]
    assert {(r["incident"], r["state"], r["run"]) for r in sent} == {(incident.pk, "open", "tuesday")}
    [noise] = [r for r in records if r["within_noise"]]
    assert (noise["incident"], noise["state"], noise["run"], noise["p_value"]) == (None, "within_noise", "nightly 12-01", 0.3)
    assert noise["night"] is not None
    assert {"kind", "metric", "slice", "value", "reference", "within_noise", "incident", "state", "run", "night"} <= set(noise)


def test_state_keeps_the_alerts_of_incidents_in_it(alerted, owner):
    assert json.loads(run("alerting", "--format", "json", "--state", "acknowledged")) == []
    incident_acknowledge(incident=Incident.objects.get(), user=owner)
    records = json.loads(run("alerting", "--format", "json", "--state", "acknowledged"))
    assert len(records) == 3 and {r["state"] for r in records} == {"acknowledged"}


def test_the_table_reads_as_one_line_per_alert(alerted):
    lines = run("alerting").splitlines()
    assert lines[1].split() == ["id", "kind", "metric", "slice", "value", "reference", "noise", "incident", "state", "run", "night"]
    assert len(lines) == 2 + 4
    assert any("within_noise" in line and "yes" in line for line in lines)
    assert "no alert in state resolved in alerting" in run("alerting", "--state", "resolved")


def test_an_unknown_set_or_state_is_named(golden_set):
    with pytest.raises(CommandError, match="no golden set 'nope'"):
        run("nope")
    with pytest.raises(CommandError, match="--state"):
        run("alerting", "--state", "sleeping")
