"""The alerts page, the evaluation settings page and its service: who may see them, what they show."""

import pytest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from evaluation.alerts.rules import alerts_check
from evaluation.alerts.selectors import alerts_latest
from evaluation.models import Alert, EvaluationSettings, Incident, IncidentMessage
from evaluation.selectors import evaluation_settings
from evaluation.settings_service import evaluation_settings_update
from goldenset.models import Membership
from goldenset.services import membership_grant, version_publish
from lib.errors import GoldsetError
from tests.support.factories import alerting_run as upload
from tests.support.factories import score as evaluate

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("alerting", factory="alerting_set", manager="owner")]

PAGES = ["alerts", "evaluation_settings"]


@pytest.fixture
def alerted(golden_set):
    """v1 with two runs of bm25: Monday's perfect; Tuesday's recall@1 and recall@3 down, weak in German."""
    v1 = version_publish(golden_set=golden_set, note="first labels")
    evaluate(upload(golden_set, "monday"), v1)
    alerts_check(evaluation=evaluate(upload(golden_set, "tuesday", ranks={"q1": 2, "q17": 4, "q18": 4}), v1))
    return golden_set


def url(name: str, slug: str = "alerting") -> str:
    return reverse(name, kwargs={"slug": slug})


# --- permissions ------------------------------------------------------------------------


@pytest.mark.parametrize("name", PAGES)
def test_anonymous_visitors_are_sent_to_log_in(client, golden_set, name):
    response = client.get(url(name))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("name", PAGES)
def test_a_stranger_gets_not_found(client, golden_set, stranger, name):
    client.force_login(stranger)
    assert client.get(url(name)).status_code == 404


@pytest.mark.parametrize("name", PAGES)
def test_an_annotator_gets_not_found(client, golden_set, teammate, name):
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    client.force_login(teammate)
    assert client.get(url(name)).status_code == 404


@pytest.mark.parametrize("name", PAGES)
def test_managers_and_staff_can_open_it(client, golden_set, owner, make_user, name):
    client.force_login(owner)
    assert client.get(url(name)).status_code == 200
    client.force_login(make_user("staff", is_staff=True))
    assert client.get(url(name)).status_code == 200


@pytest.mark.parametrize("name", PAGES)
def test_an_unknown_set_is_not_found_even_for_staff(client, make_user, name):
    client.force_login(make_user("staff", is_staff=True))
    assert client.get(url(name, "nope")).status_code == 404


def test_an_adjudicator_reads_alerts_but_not_the_settings(client, golden_set, teammate):
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    client.force_login(teammate)
    assert client.get(url("alerts")).status_code == 200
    assert "Change thresholds" not in client.get(url("alerts")).content.decode()
    assert client.get(url("evaluation_settings")).status_code == 404


def test_an_adjudicator_cannot_change_the_settings(client, golden_set, teammate):
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    client.force_login(teammate)
    response = client.post(url("evaluation_settings"), form_data(alert_slice_floor="0"))
    assert response.status_code == 404
    assert not EvaluationSettings.objects.filter(golden_set=golden_set).exists()


# --- the alerts page --------------------------------------------------------------------


def test_the_alerts_page_lists_alerts_newest_first_with_figures_and_delivery(client, alerted, owner):
    client.force_login(owner)
    body = client.get(url("alerts")).content.decode()
    alerts = list(Alert.objects.order_by("-created_at", "-id"))
    assert len(alerts) == 3
    listed = body[body.index("<h2>Alerts</h2>") :]  # the incidents above name their worst alert
    positions = [listed.index(escape(alert.message)) for alert in alerts]
    assert positions == sorted(positions)
    # recall@1 went 1.000 -> 0.850 (q1, q17 and q18 lost rank 1): fractions, the delta in points.
    assert "1.000" in body and "0.850" in body and "-15.0" in body
    assert "query:lang=de" in body and "0.500" in body and "0.750" in body and "-25.0" in body
    incident = Incident.objects.get()
    assert f"#{incident.pk}" in body and "gathering" in body
    assert reverse("version", kwargs={"slug": "alerting", "number": 1}) in body
    assert url("evaluation_settings") in body


def test_the_alerts_page_shows_a_failing_webhook(client, alerted, owner):
    evaluation_settings_update(golden_set=alerted, user=owner, webhook_url="https://hooks.example.com/goldset")
    IncidentMessage.objects.update(
        closed_at=timezone.now(), webhook_attempts=3, webhook_error="HTTP 502 Bad Gateway", next_attempt_at=timezone.now()
    )
    client.force_login(owner)
    body = client.get(url("alerts")).content.decode()
    assert "failing after 3 attempts: HTTP 502 Bad Gateway" in body


def test_the_alerts_page_costs_the_same_queries_for_many_alerts(client, alerted, owner, django_assert_max_num_queries):
    version = alerted.versions.get()
    for n in range(5):
        alerts_check(evaluation=evaluate(upload(alerted, f"extra {n}", system=f"s{n}", ranks={"q17": 4, "q18": 4}), version))
    assert Alert.objects.count() == 8
    client.force_login(owner)
    # The incidents, their messages, who may own one and the muted slices add one query each.
    with django_assert_max_num_queries(12):
        response = client.get(url("alerts"))
    assert response.content.decode().count("query:lang=de") >= 6


def test_a_set_without_alerts_says_so(client, golden_set, owner):
    client.force_login(owner)
    assert "No alert yet" in client.get(url("alerts")).content.decode()


def test_the_summary_partial_shows_the_latest_alerts_and_links_to_all(alerted):
    latest = alerts_latest(alerted, limit=2)
    html = render_to_string("evaluation/_alerts_summary.html", {"golden_set": alerted, "alerts": latest})
    assert [alert.id for alert in latest] == list(Alert.objects.order_by("-created_at", "-id").values_list("id", flat=True)[:2])
    assert url("alerts") in html and html.count("<tr title=") == 2
    assert all(alert.metric in html for alert in latest)
    empty = render_to_string("evaluation/_alerts_summary.html", {"golden_set": alerted, "alerts": []})
    assert "No alert" in empty


# --- the settings page ------------------------------------------------------------------


def form_data(**changes) -> dict:
    data = {
        "metrics": "",
        "run_depth_cap": "1000",
        "alert_drop_points": "3",
        "alert_slice_floor": "0.75",
        "alert_rerank_loss_points": "10",
        "age_buckets": "",
        "alert_emails": "",
        "webhook_url": "",
    }
    return {**data, **changes}


def test_the_settings_page_shows_the_seed_defaults_and_this_sets_default_metrics(client, golden_set, owner):
    client.force_login(owner)
    body = client.get(url("evaluation_settings")).content.decode()
    # k_first 3 and k_final 1 for this set.
    assert "recall@5, recall@1, recall@10, recall@20, recall@50, recall@3, ndcg@10, mrr, hit_rate@1, precision@1" in body
    assert 'value="3.0"' in body and 'value="0.75"' in body and 'value="10.0"' in body and 'value="1000"' in body
    assert "hundredths" in body


def test_a_manager_saves_the_settings(client, golden_set, owner):
    client.force_login(owner)
    response = client.post(
        url("evaluation_settings"),
        form_data(
            metrics="recall@3, recall@1, ndcg@10",
            run_depth_cap="200",
            alert_drop_points="2.5",
            alert_slice_floor="0.8",
            alert_rerank_loss_points="12",
            age_buckets="365, 30",
            alert_emails="oncall@example.com,\nlead@example.com",
            webhook_url="https://hooks.example.com/goldset",
        ),
    )
    # Turning the webhook on makes its signing secret, shown in this answer (not a redirect).
    saved = evaluation_settings(golden_set)
    assert response.status_code == 200 and saved.webhook_secret in response.content.decode()
    assert saved.metrics == ["recall@3", "recall@1", "ndcg@10"]
    assert (saved.run_depth_cap, saved.alert_drop_points, saved.alert_slice_floor, saved.alert_rerank_loss_points) == (200, 2.5, 0.8, 12.0)
    assert saved.age_buckets == [30, 365]
    assert saved.alert_emails == ["oncall@example.com", "lead@example.com"]
    assert saved.webhook_url == "https://hooks.example.com/goldset"
    assert "Evaluation settings saved" in response.content.decode()
    body = client.get(url("evaluation_settings")).content.decode()
    assert "recall@3, recall@1, ndcg@10" in body and saved.webhook_secret not in body


def test_staff_may_save_the_settings(client, golden_set, make_user):
    client.force_login(make_user("staff", is_staff=True))
    assert client.post(url("evaluation_settings"), form_data(alert_slice_floor="0.6")).status_code == 302
    assert evaluation_settings(golden_set).alert_slice_floor == 0.6


def test_a_bad_metric_is_named_in_the_field_errors_and_nothing_is_saved(client, golden_set, owner):
    client.force_login(owner)
    response = client.post(url("evaluation_settings"), form_data(metrics="recall@3, recal@1, ndcg@010, recall@1"))
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert list(errors) == ["metrics"]
    text = " ".join(errors["metrics"])
    assert "'recal@1'" in text and "'ndcg@010'" in text
    body = response.content.decode()
    assert "unknown metric &#x27;recal@1&#x27;" in body
    assert not EvaluationSettings.objects.filter(golden_set=golden_set).exists()


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("metrics", "ndcg@10, mrr", "keep recall@3 and recall@1"),
        ("run_depth_cap", "2", "from k_first (3"),
        ("alert_drop_points", "150", "points"),
        ("alert_slice_floor", "75", "0.75, not 75"),
        ("age_buckets", "30, soon", "'soon' is not a whole number of days"),
        ("age_buckets", "30, 30", "must differ"),
        ("alert_emails", "oncall@example.com, not-an-address", "'not-an-address' is not an e-mail address"),
        ("webhook_url", "ftp://hooks.example.com/x", "not an http:// or https:// URL"),
    ],
)
def test_bad_settings_are_refused_with_the_reason_beside_the_field(client, golden_set, owner, field, value, words):
    client.force_login(owner)
    response = client.post(url("evaluation_settings"), form_data(**{field: value}))
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert list(errors) == [field] and words in " ".join(errors[field])


def test_the_service_refuses_every_bad_field_at_once_and_saves_nothing(golden_set, owner):
    with pytest.raises(GoldsetError) as refused:
        evaluation_settings_update(golden_set=golden_set, user=owner, alert_slice_floor=2.0, metrics=["recall@x"], colour="red")
    assert refused.value.field == "alert_slice_floor"
    assert [problem.split(":")[0] for problem in refused.value.problems] == ["alert_slice_floor", "metrics", "colour"]
    assert not EvaluationSettings.objects.filter(golden_set=golden_set).exists()


def test_the_service_keeps_fields_it_was_not_given(golden_set, owner):
    evaluation_settings_update(golden_set=golden_set, user=owner, alert_drop_points=4.0)
    evaluation_settings_update(golden_set=golden_set, user=owner, alert_emails=["a@example.com"])
    saved = evaluation_settings(golden_set)
    assert (saved.alert_drop_points, saved.alert_emails, saved.alert_slice_floor) == (4.0, ["a@example.com"], 0.75)
