"""Where noise-aware drops show: the monitoring page's series cards list each slice's
detectable drop and mark underpowered slices with the queries they would need; the results
page does the same per run; within-noise alerts carry a badge on the monitoring page's night
alerts and on the alerts page. The alerting set: 20 queries, 4 German; k_first 3, k_final 1.
No page is new: the pages' own permission tests (tests/monitoring/test_pages.py,
tests/evaluation/reports/test_result_pages.py, tests/evaluation/alerts/test_alert_pages.py)
cover who may read them; the annotator test here checks the figures do not leak."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from evaluation.alerts.rules import alerts_check
from evaluation.models import Alert
from evaluation.services import run_import
from goldenset.models import Membership
from goldenset.services import membership_grant, version_publish
from tests.support.factories import ALERTING_QUERIES as QUERIES
from tests.support.factories import alerting_run_lines
from tests.support.factories import score as evaluate

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set(factory="alerting_set", manager="owner")]


def night(golden_set, number: int, ranks: dict | None = None):
    run = run_import(
        golden_set=golden_set,
        lines=alerting_run_lines(ranks),
        source_name=f"night{number}.run",
        system="bm25",
        stage="first_stage",
        name=f"night {number}",
        series="bm25 nightly",
        measured_at=datetime(2026, 11, 1, 2, tzinfo=UTC) + timedelta(days=number),
    )
    alerts_check(evaluation=evaluate(run, golden_set.versions.get()))
    return run


@pytest.fixture
def nights(golden_set):
    """Two nights: the first misses q3's page, the second q1's and q2's (5 points overall,
    within noise)."""
    version_publish(golden_set=golden_set, note="v1")
    night(golden_set, 1, ranks={"q3": 4})
    return night(golden_set, 2, ranks={"q1": 4, "q2": 4})


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_monitoring_page_marks_underpowered_slices_with_the_queries_they_would_need(client, owner, golden_set, nights):
    client.force_login(owner)
    body = client.get(reverse("monitoring", args=[golden_set.slug])).content.decode()
    table = body[body.index('<table class="grid compact slice-power">') :]
    table = text_of(table[: table.index("</table>")])
    assert "Drops each slice can detect" in table
    # 20 and 4 queries cannot see 3 points: each is underpowered and says how many it needs.
    assert re.search(r"overall 20 [\d.]+ points underpowered would need \d+ queries", table)
    # The German queries found their pages both nights: nothing to judge a spread by.
    assert "query:lang=de 4 no spread yet" in table
    assert "α′ = 0.0063" in text_of(body)  # 0.05 over 2 × (2 recalls + 2 slices)


def test_a_within_noise_drop_is_badged_on_the_monitoring_page_and_the_alerts_page(client, owner, golden_set, nights):
    drop = Alert.objects.get(run=nights, kind=Alert.Kind.DROP_VS_PREVIOUS_NIGHT, slice="", metric="recall@1")
    assert drop.within_noise
    client.force_login(owner)
    monitoring = client.get(reverse("monitoring", args=[golden_set.slug])).content.decode()
    assert (
        'title="past the threshold, but the paired test cannot tell it from chance: recorded, not sent">within noise</span>' in monitoring
    )
    alerts = client.get(reverse("alerts", args=[golden_set.slug])).content.decode()
    assert "within noise, not sent" in alerts and "within noise: p = " in alerts


def test_the_results_page_gives_each_runs_detectable_drop_per_slice(client, owner, golden_set):
    version = version_publish(golden_set=golden_set, note="v1")
    run = run_import(
        golden_set=golden_set,
        lines=alerting_run_lines({q: 4 for q in QUERIES[:5]}),
        source_name="a.run",
        system="bm25",
        stage="first_stage",
        name="upload",
    )
    evaluate(run, version)
    client.force_login(owner)
    body = client.get(reverse("results", args=[golden_set.slug])).content.decode()
    table = body[body.index('<h3 id="slice-power">') :]
    table = text_of(table[: table.index("</table>")])
    assert re.search(r"overall [\d.]+ points \* underpowered would need \d+ queries", table)
    assert "as if two independent runs were compared" in text_of(body)


def test_an_annotator_sees_none_of_it(client, make_user, golden_set, nights):
    annotator = make_user("annotator")
    membership_grant(user=annotator, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    client.force_login(annotator)
    assert client.get(reverse("monitoring", args=[golden_set.slug])).status_code == 404
    assert client.get(reverse("results", args=[golden_set.slug])).status_code == 404
