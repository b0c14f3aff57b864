"""Traffic-weighted figures wired end to end: a version whose queries were drawn from a log
(weights frozen at publish) gets, for each run, the Hajek estimate with its interval overall
and per stratum, from the evaluation's per-query values, on `evaluate --format json`, the
results page and the API; queries added by hand are counted apart, a drawn query with no
relevant page is out of the domain, and a version with no drawn query shows no weighted
figure at all.

Nine queries, k_first = 4, k_final = 2: six drawn (head: d1-d3, p = 0.5, 100 events each;
tail: d4-d6, p = 0.1, 5 events each), one drawn with no relevant page (n1, tail), two added
by hand (h1, h2). The run finds the relevant page of d1, d2, d4 and h1 and misses the rest.
"""

import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse

from api.services import api_token_create
from evaluation.models import Evaluation
from evaluation.services import evaluation_compute
from evaluation.weighted import evaluations_weighted
from goldenset.models import Query
from goldenset.services import version_publish
from lib.survey import hajek_estimate
from tests.api import client_for
from tests.browser import axe_violations, login
from tests.support import factories

SLUG = "drawn"
DRAWN = {"d1": ("head", 0.5, 100), "d2": ("head", 0.5, 100), "d3": ("head", 0.5, 100)}
DRAWN |= {q: ("tail", 0.1, 5) for q in ("d4", "d5", "d6", "n1")}
QUERIES = [*DRAWN, "h1", "h2"]
WITH_RELEVANT = [q for q in QUERIES if q != "n1"]
FOUND = {"d1", "d2", "d4", "h1"}
QRELS = {(q, f"r-{q}"): 2 for q in WITH_RELEVANT} | {(q, f"z-{q}"): 0 for q in QUERIES}

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.golden_set(
        SLUG,
        manager="owner",
        qrels=QRELS,
        pages=factories.pages(*(f"{prefix}-{q}" for q in QUERIES for prefix in "rz")),
        queries=factories.queries(*QUERIES),
        k_first=4,
        k_final=2,
    ),
]


@pytest.fixture
def owner(make_user):
    return make_user("owner")


def draw(golden_set):
    for query_id, (stratum, probability, count) in DRAWN.items():
        Query.objects.filter(golden_set=golden_set, query_id=query_id).update(
            inclusion_probability=probability, stratum=stratum, traffic_count=count
        )


def score(golden_set):
    ranking = {q: [f"r-{q}", f"z-{q}"] if q in FOUND else [f"z-{q}"] for q in QUERIES}
    run = factories.run(golden_set, "bm25", ranking)
    version = version_publish(golden_set=golden_set)
    return evaluation_compute(run=run, version=version)


@pytest.fixture
def drawn_evaluation(golden_set):
    draw(golden_set)
    return score(golden_set)


def expected(metric_found=FOUND, queries=None):
    """The estimator on the design's arrays, by hand: what every surface must show."""
    queries = [q for q in DRAWN if q in (queries or DRAWN)]
    return hajek_estimate(
        np.array([1.0 if q in metric_found else 0.0 for q in queries]),
        np.array([DRAWN[q][1] for q in queries]),
        np.array([DRAWN[q][2] for q in queries]),
        np.array([DRAWN[q][0] for q in queries]),
        np.array([q != "n1" for q in queries]),
    )


def test_the_weighted_recall_is_the_estimator_on_the_drawn_queries_with_hand_added_ones_apart(drawn_evaluation):
    figures = evaluations_weighted([drawn_evaluation])[drawn_evaluation.pk]
    found = figures.metrics["recall@2"]
    want = expected()
    assert (found.estimate, found.low, found.high, found.queries) == pytest.approx((want.estimate, want.low, want.high, 6))
    # (100 + 100) / 0.5 + 5 / 0.1 events found out of 3 * 100 / 0.5 + 3 * 5 / 0.1
    assert found.estimate == pytest.approx(450 / 750)
    assert figures.unweighted_queries == 2
    assert figures.unweighted_note == "2 queries added by hand are not in the weighted estimate"
    assert figures.out_of_domain == 1
    assert list(figures.metrics) == ["recall@4", "recall@2", "ndcg@10", "mrr"]
    assert figures.strata["head"]["recall@2"].estimate == pytest.approx(2 / 3)
    assert figures.strata["tail"]["recall@2"].estimate == pytest.approx(1 / 3)
    assert figures.strata["tail"]["recall@2"].queries == 3


def test_the_frozen_weights_stay_with_the_version_when_the_queries_change(golden_set, drawn_evaluation):
    Query.objects.filter(golden_set=golden_set).update(inclusion_probability=None, traffic_count=None)
    figures = evaluations_weighted([Evaluation.objects.get(pk=drawn_evaluation.pk)])[drawn_evaluation.pk]
    assert figures.metrics["recall@2"].estimate == pytest.approx(450 / 750)


def test_evaluate_json_rows_carry_the_weighted_estimates_on_the_overall_row(drawn_evaluation):
    out = io.StringIO()
    call_command("evaluate", SLUG, "--format", "json", stdout=out)
    rows = json.loads(out.getvalue())
    overall = next(row for row in rows if row["slice"] is None and row["level"] == "document")
    want = expected()
    assert overall["weighted"]["recall@2"] == {
        "estimate": round(want.estimate, 6),
        "low": round(want.low, 6),
        "high": round(want.high, 6),
        "queries": 6,
    }
    assert set(overall["weighted"]) == {"recall@4", "recall@2", "ndcg@10", "mrr"}
    assert overall["unweighted_queries"] == 2
    assert set(overall["weighted_strata"]) == {"head", "tail"}
    # The plain average stays what it was: all eight queries with a relevant page, unweighted.
    assert overall["metrics"]["recall@2"] == pytest.approx(4 / 8)


def test_evaluate_table_says_the_traffic_figures_and_the_queries_left_apart(drawn_evaluation):
    out = io.StringIO()
    call_command("evaluate", SLUG, stdout=out)
    assert "bm25: for the traffic (95% interval, 6 drawn queries): recall@4 0.6000 [" in out.getvalue()
    assert "2 queries added by hand are not in the weighted estimate" in out.getvalue()


def test_a_version_with_no_drawn_query_has_no_weighted_figures(client, golden_set, owner):
    evaluation = score(golden_set)
    assert evaluations_weighted([evaluation]) == {}
    out = io.StringIO()
    call_command("evaluate", SLUG, "--format", "json", stdout=out)
    assert all("weighted" not in row for row in json.loads(out.getvalue()))
    client.force_login(owner)
    assert 'id="traffic"' not in client.get(reverse("results", kwargs={"slug": SLUG})).content.decode()


def test_the_weighted_figures_cost_two_queries_however_many_runs(golden_set, django_assert_num_queries):
    draw(golden_set)
    first = score(golden_set)
    others = [evaluation_compute(run=factories.run(golden_set, f"run-{n}", {"d1": ["r-d1"]}), version=first.version) for n in range(3)]
    evaluations = list(Evaluation.objects.filter(pk__in=[first.pk] + [e.pk for e in others]).select_related("version").defer("per_query"))
    with django_assert_num_queries(2):
        assert len(evaluations_weighted(evaluations)) == 4


def test_the_results_page_shows_the_estimate_beside_the_plain_average_and_each_stratum_in_a_fold(client, owner, drawn_evaluation):
    client.force_login(owner)
    body = client.get(reverse("results", kwargs={"slug": SLUG})).content.decode()
    section = body[body.index('id="traffic"') :]
    want = expected()
    assert (
        f'<strong title="the traffic\'s recall@2 on v1, over 6 drawn queries with a relevant page">{want.estimate:.3f}</strong>' in section
    )
    assert f"[{want.low:.3f}, {want.high:.3f}]" in section
    assert "plain 0.500" in section
    assert "bm25: 2 queries added by hand are not in the weighted estimate." in section
    assert "<summary>bm25 per stratum (2)</summary>" in section


def test_the_api_evaluations_carry_the_weighted_estimates(golden_set, owner, drawn_evaluation):
    _, secret = api_token_create(owner=owner, scope="read", golden_set=golden_set)
    body = client_for(secret).get(f"/api/v1/golden-sets/{SLUG}/evaluations/").json()
    evaluation = body["results"][0]
    want = expected()
    assert evaluation["weighted"]["recall@2"] == pytest.approx(
        {"estimate": want.estimate, "low": want.low, "high": want.high, "queries": 6}, abs=1e-6
    )
    assert evaluation["unweighted_queries"] == 2
    assert evaluation["weighted_strata"]["tail"]["recall@2"]["queries"] == 3
    run_body = client_for(secret).get(f"/api/v1/golden-sets/{SLUG}/runs/{drawn_evaluation.run_id}/evaluations/").json()
    assert run_body["results"][0]["weighted"] == evaluation["weighted"]


def test_a_stratum_name_is_text_on_the_page_not_markup(client, golden_set, owner):
    draw(golden_set)
    Query.objects.filter(golden_set=golden_set, stratum="tail").update(stratum="<b>evil</b>")
    score(golden_set)
    client.force_login(owner)
    body = client.get(reverse("results", kwargs={"slug": SLUG})).content.decode()
    assert "&lt;b&gt;evil&lt;/b&gt;" in body and "<b>evil" not in body


ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_in_a_browser_the_traffic_figures_stand_beside_the_plain_ones_and_the_strata_unfold(browser_page, live_server, drawn_evaluation):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser_page
    login(page, live_server, "owner", "pw-owner")
    page.goto(f"{live_server.url}/sets/{SLUG}/results/")
    section = page.locator("table.weighted")
    assert section.is_visible()
    assert "plain 0.500" in section.inner_text()
    fold = page.locator("details.weighted-strata")
    assert not fold.get_by_role("rowheader", name="head").is_visible()
    page.screenshot(path=str(ARTIFACTS / "weighted-results.png"), full_page=True)
    fold.get_by_text("bm25 per stratum (2)").click()
    assert fold.get_by_role("rowheader", name="head").is_visible()
    page.locator("#traffic").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "weighted-results-strata.png"))
    assert axe_violations(page) == []
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator("#traffic").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "weighted-results-phone.png"))
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


@pytest.mark.django_db(transaction=True)
def test_the_client_reads_the_weighted_estimates_and_its_scores_command_prints_them(
    live_server, golden_set, owner, drawn_evaluation, tmp_path, monkeypatch, capsys
):
    from goldset_client.cli import main

    _, secret = api_token_create(owner=owner, scope="read", golden_set=golden_set)
    monkeypatch.setenv("GOLDSET_URL", live_server.url)
    monkeypatch.setenv("GOLDSET_TOKEN", secret)
    monkeypatch.setenv("GOLDSET_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["scores", SLUG, "--json"]) == 0
    (evaluation,) = json.loads(capsys.readouterr().out)
    assert evaluation["weighted"]["recall@2"]["estimate"] == pytest.approx(0.6)
    assert evaluation["unweighted_queries"] == 2
    assert main(["scores", SLUG]) == 0
    lines = capsys.readouterr().out.splitlines()
    want = expected()
    assert lines[-1].startswith(f"# bm25 for the traffic (95% interval): recall@4 0.6000 [{want.low:.4f}, {want.high:.4f}]")
    assert lines[-1].endswith("; 2 queries added by hand are not in it")
