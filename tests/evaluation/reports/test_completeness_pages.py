"""Completeness on the pages: Judged@k beside every score, leave-one-run-out on the run and
results pages, and the unreliable-scores warning wherever a run's scores appear.

Two systems answer four queries (k_final = 2, k_first = 4): "judged" puts only labelled
pages in its top 2 (Judged@2 = 1.0), "thin" only one labelled page in each top 2 (0.5,
under the default floor of 0.9). Each query has three relevant pages: r found by both, s
by "judged" alone, t by "thin" alone, so leaving either out costs it 1/6 of recall@4.
"""

import re

import pytest
from django.urls import reverse

from evaluation.models import Completeness, Run
from evaluation.services import evaluation_compute, run_import
from goldenset.services import qrels_import, version_publish
from tests.support import factories

SLUG = "judging"
QUERIES = ["q1", "q2", "q3", "q4"]
QRELS = {}
for n, query_id in enumerate(QUERIES, start=1):
    QRELS[(query_id, f"r{n}")] = 2  # relevant, found by both systems
    QRELS[(query_id, f"s{n}")] = 1  # relevant, found by "judged" alone
    QRELS[(query_id, f"t{n}")] = 1  # relevant, found by "thin" alone
    QRELS[(query_id, f"z{n}")] = 0  # judged not relevant
JUDGED = {q: [f"r{n}", f"z{n}", f"s{n}", f"u{n}"] for n, q in enumerate(QUERIES, start=1)}
THIN = {q: [f"r{n}", f"u{n}", f"t{n}", f"w{n}"] for n, q in enumerate(QUERIES, start=1)}


def lines(ranking):
    return [f"{q} Q0 {doc} {rank} {10 - rank} t\n" for q, docs in ranking.items() for rank, doc in enumerate(docs, start=1)]


pytestmark = [
    pytest.mark.django_db,
    pytest.mark.golden_set(
        SLUG,
        manager="owner",
        qrels=QRELS,
        pages=factories.pages(*(f"{prefix}{n}" for prefix in "rsztuw" for n in range(1, 5))),
        queries=factories.queries(*QUERIES, lang="en"),
        k_first=4,
        k_final=2,
        query_slice_fields=["lang"],
        page_slice_fields=[],
    ),
]


@pytest.fixture
def golden_set(golden_set):
    run_import(golden_set=golden_set, lines=lines(JUDGED), source_name="j.run", system="judged", stage="first_stage", name="judged")
    run_import(golden_set=golden_set, lines=lines(THIN), source_name="t.run", system="thin", stage="first_stage", name="thin run")
    version = version_publish(golden_set=golden_set)
    for run in Run.objects.filter(golden_set=golden_set):
        evaluation_compute(run=run, version=version)
    return golden_set


# The finding, then a link to the completeness page's pool form filled in with the run and
# the depth (the command line is the link's title).
WARNING = (
    '<span class="unreliable-note">Judged@2 = 0.50 &lt; 0.90 on v1: scores are unreliable; '
    '<a href="/sets/judging/completeness/?run={run}&amp;depth=100#pool-form" '
    'title="build_pool judging --runs &#x27;thin run&#x27; --depth 100">pool this run</a></span>'
)


def get(client, owner, name, **kwargs) -> str:
    client.force_login(owner)
    query = kwargs.pop("query", "")
    return client.get(reverse(name, kwargs={"slug": SLUG, **kwargs}) + query).content.decode()


def run_id(name: str) -> int:
    return Run.objects.get(name=name).id


def table_row(body: str, table_class: str, run_name: str) -> str:
    table = body[body.index(f'<table class="{table_class}">') :]
    table = table[: table.index("</table>")]
    return next(row for row in table.split("<tr") if f">{run_name}</a>" in row)


# The mark a row carries instead of the warning: the finding is its title and, for screen
# readers, its text.
MARK = (
    '<span class="unreliable-mark" title="Judged@2 = 0.50 &lt; 0.90 on v1: scores are unreliable">'
    '<span aria-hidden="true">†</span><span class="sr-only"> (scores unreliable)</span></span>'
)


def test_the_results_page_warns_once_about_a_run_under_the_floor_and_not_about_one_above(client, golden_set, owner):
    body = get(client, owner, "results")
    thin, judged = table_row(body, "grid results", "thin run"), table_row(body, "grid results", "judged")
    assert 'class="unreliable"' in thin and MARK in thin
    assert "unreliable" not in judged
    # Said once, above the table, with the run behind the fold: no warning row under each run.
    summary = body[body.index('<div class="unreliable-summary"') : body.index('<table class="grid results">')]
    assert "1 of 2 runs has Judged@2 under 0.90 on v1: its scores are unreliable" in summary
    assert WARNING.format(run=run_id("thin run")) in summary
    assert "warning-row" not in body and "unreliable-note" not in thin
    assert "--runs judged" not in body


def test_the_results_table_shows_judged_at_k_final_and_k_first_beside_the_scores(client, golden_set, owner):
    body = get(client, owner, "results")
    assert '>Judged@2<br><span class="muted">v1</span>' in body and '>Judged@4<br><span class="muted">v1</span>' in body
    thin, judged = table_row(body, "grid results", "thin run"), table_row(body, "grid results", "judged")
    assert 'title="Judged@2 on v1">0.500</td>' in thin and 'title="Judged@4 on v1">0.500</td>' in thin
    assert 'title="Judged@2 on v1">1.000</td>' in judged and 'title="Judged@4 on v1">0.750</td>' in judged


def test_the_completeness_section_shows_leave_one_run_out(client, golden_set, owner):
    # Without the s pages only it found, "judged" finds r of {r, t}: recall@4 from 2/3 to 1/2.
    body = get(client, owner, "results")
    judged = table_row(body, "grid compact completeness", "judged")
    cells = re.findall(r'<td class="num[^"]*"[^>]*>([^<]+)</td>', judged)
    assert cells[:4] == ["1.000", "0.750", "0.500", "-16.7"] and cells[6:8] == ["4", "0"]
    assert "1 run of other systems, top 100" in judged
    thin = table_row(body, "grid compact completeness", "thin run")
    assert re.findall(r'<td class="num[^"]*"[^>]*>([^<]+)</td>', thin)[:4] == ["0.500", "0.500", "0.500", "-16.7"]


def test_the_funnel_marks_the_unreliable_first_stage(client, golden_set, owner):
    body = get(client, owner, "results")
    funnels = body[body.index('<div class="funnels">') : body.index('id="sweep"')]
    thin = funnels[funnels.index("<h3>thin</h3>") :]
    assert MARK in thin[: thin.index("</article>")]
    judged = funnels[funnels.index("<h3>judged</h3>") :]
    assert "unreliable" not in judged[: judged.index("</article>")]


def test_the_run_page_shows_judged_at_k_and_the_warning_beside_each_versions_scores(client, golden_set, owner):
    body = get(client, owner, "run", run_id=run_id("thin run"))
    assert WARNING.format(run=run_id("thin run")) in body
    assert 'title="Judged@2 on v1">0.500 <span class="muted">@2</span>' in body
    assert '<h2 id="completeness">Completeness</h2>' in body and "1 run of other systems, top 100" in body
    body = get(client, owner, "run", run_id=run_id("judged"))
    assert "unreliable" not in body and 'title="Judged@2 on v1">1.000' in body


def test_the_compare_page_names_the_run_whose_scores_are_unreliable(client, golden_set, owner):
    body = get(client, owner, "compare", query=f"?a={run_id('judged')}&b={run_id('thin run')}")
    assert f"<li>b = thin run: {WARNING.format(run=run_id('thin run'))}</li>" in body and "<li>a = " not in body
    assert "Judged@2: a 1.000, b 0.500" in body


def test_the_runs_page_the_drilldown_and_the_version_move_carry_the_warning(client, golden_set, owner):
    warning = WARNING.format(run=run_id("thin run"))
    assert warning in get(client, owner, "runs")
    assert warning in get(client, owner, "run_query", run_id=run_id("thin run"), query_id="q1")
    assert "unreliable" not in get(client, owner, "run_query", run_id=run_id("judged"), query_id="q1")
    qrels_import(golden_set_slug=SLUG, lines=["q1 0 u1 1\n"], source_name="more")
    version = version_publish(golden_set=golden_set)
    evaluation_compute(run=Run.objects.get(name="thin run"), version=version)
    body = get(client, owner, "run_versions", run_id=run_id("thin run"), query="?from=1&to=2")
    assert warning in body and "Judged@2 = 0.62 &lt; 0.90 on v2" in body


def test_pool_this_run_opens_the_pool_form_filled_in(client, golden_set, owner):
    body = get(client, owner, "completeness", query=f"?run={run_id('thin run')}&depth=100")
    form = body[body.index('id="pool-form"') :]
    assert f'value="{run_id("thin run")}" id="run-{run_id("thin run")}" checked' in form
    assert f'value="{run_id("judged")}" id="run-{run_id("judged")}">' in form  # the other run is not chosen
    assert re.search(r'name="depth" value="100"', form)
    # Junk in the link is left out, not an error.
    assert get(client, owner, "completeness", query="?run=x&depth=-3").count("checked") == 0


def test_a_floor_lowered_in_the_settings_lifts_the_warning(client, golden_set, owner):
    client.force_login(owner)
    data = {
        "metrics": "",
        "run_depth_cap": "1000",
        "alert_drop_points": "3",
        "alert_slice_floor": "0.75",
        "alert_rerank_loss_points": "10",
        "age_buckets": "",
        "alert_emails": "",
        "webhook_url": "",
        "completeness_depth": "50",
        "judged_floor": "0.5",
    }
    assert client.post(reverse("evaluation_settings", kwargs={"slug": SLUG}), data).status_code == 302
    body = get(client, owner, "evaluation_settings")
    assert 'name="completeness_depth" value="50"' in body and 'name="judged_floor" value="0.5"' in body
    assert "scores are unreliable" not in get(client, owner, "results")
    data["judged_floor"] = "9"
    body = client.post(reverse("evaluation_settings", kwargs={"slug": SLUG}), data).content.decode()
    assert "judged_floor is a fraction from 0 to 1 (0.9, not 90), got 9" in body


def test_a_floor_just_above_a_figure_is_told_apart_from_it(client, golden_set, owner):
    from evaluation.settings_service import evaluation_settings_update

    evaluation_settings_update(golden_set=golden_set, user=owner, judged_floor=0.502)
    assert "Judged@2 = 0.500 &lt; 0.502 on v1" in get(client, owner, "results")


def test_an_evaluation_scored_before_completeness_was_kept_shows_dashes_and_no_warning(client, golden_set, owner):
    Completeness.objects.all().delete()
    body = get(client, owner, "results")
    assert "scores are unreliable" not in body
    assert 'title="Judged@2 on v1">–</td>' in table_row(body, "grid results", "thin run")
    assert "not computed: scored before completeness was kept" in body


def test_the_results_and_run_pages_fetch_completeness_in_bulk(client, golden_set, owner, django_assert_max_num_queries):
    for n in range(5):
        run_import(
            golden_set=golden_set, lines=lines(THIN), source_name="x.run", system=f"extra{n}", stage="first_stage", name=f"extra {n}"
        )
    for n in range(2):
        qrels_import(golden_set_slug=SLUG, lines=[f"q1 0 w1 {n}\n"], source_name=f"more {n}")
        version_publish(golden_set=golden_set)
    for version in golden_set.versions.all():
        for run in Run.objects.filter(golden_set=golden_set):
            evaluation_compute(run=run, version=version)
    client.force_login(owner)
    with django_assert_max_num_queries(16):
        body = client.get(reverse("results", kwargs={"slug": SLUG})).content.decode()
    assert body.count("scores are unreliable") >= 6
    url = reverse("run", kwargs={"slug": SLUG, "run_id": run_id("thin run")})
    with django_assert_max_num_queries(10):
        body = client.get(url).content.decode()
    # one warning a version, and one over the weakest queries of the newest
    assert body.count("scores are unreliable") == 4
