"""The unreliable-scores warning said once a page: one line for the page and one per series
whose runs are under the Judged@k floor, the runs behind a fold with their figures and pool
links, and a mark (†) on each of their rows; nothing when every run passes.

Four queries, k_final = 2: a "judged" ranking puts only labelled pages in its top 2
(Judged@2 = 1.0), a "thin" one a single labelled page (0.5, under the default floor 0.9).
Two uploaded runs (one of each), three nights of series prod-hybrid (thin, thin, judged) and
two of series canary (both judged)."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluation.models import Run
from evaluation.reports.unreliable import golden_set_unreliable_summary
from evaluation.services import evaluation_compute, run_archive, run_import
from evaluation.settings_service import evaluation_settings_update
from goldenset.services import version_publish
from tests.browser import login
from tests.support import factories

SLUG = "said-once"
QUERIES = ["q1", "q2", "q3", "q4"]
QRELS = {(q, f"{prefix}{n}"): grade for n, q in enumerate(QUERIES, start=1) for prefix, grade in (("r", 2), ("z", 0))}
JUDGED = {q: [f"r{n}", f"z{n}"] for n, q in enumerate(QUERIES, start=1)}
THIN = {q: [f"r{n}", f"u{n}"] for n, q in enumerate(QUERIES, start=1)}
NIGHT = datetime(2026, 11, 1, 2, tzinfo=UTC)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.golden_set(
        SLUG,
        manager="owner",
        qrels=QRELS,
        pages=factories.pages(*(f"{prefix}{n}" for prefix in "rzu" for n in range(1, 5))),
        queries=factories.queries(*QUERIES),
        k_first=4,
        k_final=2,
    ),
]


def lines(ranking):
    return [f"{q} Q0 {doc} {rank} {10 - rank} t\n" for q, docs in ranking.items() for rank, doc in enumerate(docs, start=1)]


def upload(golden_set, name, ranking, *, series="", night=0):
    return run_import(
        golden_set=golden_set,
        lines=lines(ranking),
        source_name=f"{name}.run",
        system=series or name,
        stage="first_stage",
        name=name,
        series=series,
        measured_at=NIGHT + timedelta(days=night) if series else None,
    )


@pytest.fixture
def golden_set(golden_set):
    upload(golden_set, "judged", JUDGED)
    upload(golden_set, "thin run", THIN)
    for night, ranking in enumerate([THIN, THIN, JUDGED]):
        upload(golden_set, f"prod-hybrid night {night}", ranking, series="prod-hybrid", night=night)
    for night in range(2):
        upload(golden_set, f"canary night {night}", JUDGED, series="canary", night=night)
    version = version_publish(golden_set=golden_set)
    for run in Run.objects.filter(golden_set=golden_set):
        evaluation_compute(run=run, version=version)
    return golden_set


def get(client, owner, name) -> str:
    client.force_login(owner)
    return client.get(reverse(name, kwargs={"slug": SLUG})).content.decode()


def summary_of(body: str) -> str:
    """The page's one unreliable-scores block."""
    assert body.count('<div class="unreliable-summary"') == 1
    start = body.index('<div class="unreliable-summary"')
    return body[start : body.index("</div>", start)]


def run_id(name: str) -> int:
    return Run.objects.get(name=name).id


def test_the_completeness_page_says_once_how_many_runs_are_under_the_floor_and_once_per_series(client, golden_set, owner):
    summary = summary_of(get(client, owner, "completeness"))
    assert "<p>3 of 7 runs have Judged@2 under 0.90 on v1: their scores are unreliable.</p>" in summary
    # One line per series with a run under the floor, the runs outside a series first; none for canary.
    folds = summary.split("<details>")[1:]
    assert [fold[: fold.index(" — ")] for fold in folds] == [
        "<summary>1 of 2 runs outside a series has Judged@2 under 0.90",
        "<summary>2 of 3 nights of prod-hybrid have Judged@2 under 0.90",
    ]
    assert "canary" not in summary


def test_each_series_line_leads_to_the_runs_it_concerns_and_pools_them(client, golden_set, owner):
    summary = summary_of(get(client, owner, "completeness"))
    nights = summary[summary.index("nights of prod-hybrid") :]
    for night in (0, 1):
        run = run_id(f"prod-hybrid night {night}")
        assert f'<a href="/sets/{SLUG}/runs/{run}/">prod-hybrid night {night}</a>: <span class="unreliable-note">Judged@2 = 0.50' in nights
    assert "prod-hybrid night 2" not in nights  # the night that passes is not listed
    pool = f"/sets/{SLUG}/completeness/?run={run_id('prod-hybrid night 0')}&amp;run={run_id('prod-hybrid night 1')}&amp;depth=100#pool-form"
    assert f'<a href="{pool}">Pool these 2 runs</a>' in nights
    # The pool form opens with both nights chosen.
    client.force_login(owner)
    form = client.get(pool.replace("&amp;", "&")).content.decode()
    form = form[form.index('id="pool-form"') :]
    assert form.count("checked") == 2


def test_rows_carry_a_mark_with_the_finding_not_the_warning(client, golden_set, owner):
    body = get(client, owner, "runs")
    assert "warning-row" not in body
    table = body[body.index("<table") : body.index("</table>")]
    rows = {
        name: next(row for row in table.split("<tr") if f">{name}</a>" in row) for name in ("thin run", "judged", "prod-hybrid night 1")
    }
    assert 'class="unreliable-mark" title="Judged@2 = 0.50 &lt; 0.90 on v1: scores are unreliable"' in rows["thin run"]
    assert 'class="unreliable-mark"' in rows["prod-hybrid night 1"] and "unreliable" not in rows["judged"]
    assert "unreliable-note" not in table  # the sentence is said above, once
    assert "† Judged@2 under 0.90 on v1: scores unreliable" in summary_of(body)  # the mark's legend, once


def test_the_results_page_says_it_once_and_its_chart_legends_carry_only_the_mark(client, golden_set, owner):
    # The leaderboard shows each series' latest night, here the passing one: the uploaded thin run is left.
    body = get(client, owner, "results")
    summary = summary_of(body)
    assert "1 of 4 runs has Judged@2 under 0.90 on v1: its scores are unreliable" in summary
    assert "thin run †" in body and "(unreliable)" not in body
    # The charts' legend line says once what the mark means.
    assert '<p class="hint unreliable-legend">† Judged@2 under 0.90 on v1: scores unreliable (said once above the runs).</p>' in body
    assert "see the warning above" not in body


def test_the_monitoring_page_says_it_once_per_series_of_the_nights_it_shows(client, golden_set, owner):
    summary = summary_of(get(client, owner, "monitoring"))
    # Only the nights: the uploaded runs outside a series are not on this page.
    assert "<p>2 of 5 runs have Judged@2 under 0.90 on v1: their scores are unreliable.</p>" in summary
    assert "<summary>2 of 3 nights of prod-hybrid have Judged@2 under 0.90 — " in summary
    assert "canary" not in summary and "thin run" not in summary and "†" not in summary


def test_a_page_whose_runs_all_pass_the_floor_says_nothing(client, golden_set, owner):
    evaluation_settings_update(golden_set=golden_set, user=owner, judged_floor=0.5)
    for name in ("completeness", "runs", "results", "monitoring"):
        body = get(client, owner, name)
        assert "unreliable-summary" not in body and "unreliable-mark" not in body and "scores are unreliable" not in body
    assert not golden_set_unreliable_summary(golden_set)


def test_a_set_whose_runs_never_pass_the_floor_says_so_once(client, golden_set, owner):
    for run in Run.objects.filter(golden_set=golden_set, name__in=["judged", "prod-hybrid night 2", "canary night 0", "canary night 1"]):
        run_archive(run=run, user=owner)
    summary = golden_set_unreliable_summary(golden_set)
    assert summary.every_run and (summary.shown, summary.under) == (3, 3)
    line = "None of the 3 runs reaches Judged@2 of 0.90 on v1 (the best has 0.50): every score is unreliable"
    assert summary.line.startswith(line)
    body = get(client, owner, "completeness")
    assert body.count(line) == 1
    assert body.count('class="unreliable-note"') == 3  # each run's finding once, behind the folds


def test_the_summary_costs_no_query_a_run(client, golden_set, owner):
    client.force_login(owner)
    url = reverse("completeness", kwargs={"slug": SLUG})
    with CaptureQueriesContext(connection) as seven_runs:
        client.get(url)
    for night in range(3, 9):
        run = upload(golden_set, f"prod-hybrid night {night}", THIN, series="prod-hybrid", night=night)
        evaluation_compute(run=run, version=golden_set.versions.get())
    with CaptureQueriesContext(connection) as thirteen_runs:
        body = client.get(url).content.decode()
    assert "8 of 9 nights of prod-hybrid have Judged@2 under 0.90" in body
    assert len(thirteen_runs.captured_queries) == len(seven_runs.captured_queries)


ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_in_a_browser_the_warning_is_one_short_block_and_the_runs_unfold(browser_page, live_server, golden_set):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser_page
    login(page, live_server, "owner", "pw-owner")
    page.goto(f"{live_server.url}/sets/{SLUG}/completeness/")
    block = page.locator(".unreliable-summary")
    assert block.count() == 1
    # The runs stay folded: the block is a few lines, not a box per run.
    assert not block.get_by_role("link", name="prod-hybrid night 0").is_visible()
    assert block.bounding_box()["height"] < 200
    assert page.locator(".unreliable-mark").count() == 3
    page.screenshot(path=str(ARTIFACTS / "unreliable-completeness.png"), full_page=True)
    block.get_by_text("2 of 3 nights of prod-hybrid").click()
    assert block.get_by_role("link", name="prod-hybrid night 0").is_visible()
    assert block.get_by_role("link", name="Pool these 2 runs").is_visible()
    block.screenshot(path=str(ARTIFACTS / "unreliable-completeness-unfolded.png"))
    page.goto(f"{live_server.url}/sets/{SLUG}/results/")
    assert page.locator(".unreliable-summary").count() == 1
    page.screenshot(path=str(ARTIFACTS / "unreliable-results.png"), full_page=True)


def test_a_series_name_is_text_in_the_line_not_markup(client, golden_set, owner):
    run = upload(golden_set, "hostile night", THIN, series="<b>evil</b>", night=0)
    evaluation_compute(run=run, version=golden_set.versions.get())
    summary = summary_of(get(client, owner, "completeness"))
    assert "1 of 1 night of &lt;b&gt;evil&lt;/b&gt; has Judged@2 under 0.90" in summary and "<b>evil" not in summary
