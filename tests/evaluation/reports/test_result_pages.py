"""The results pages: who may see them, the upload form, and what each page shows.

Data is made through the real services; evaluations are computed in the test's own
process with evaluation_compute (the on-commit task would do the same after a commit).
"""

import re
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evaluation.models import Evaluation, Run, RunData, Score
from evaluation.services import evaluation_compute, evaluations_schedule, run_import
from goldenset.models import GoldenSet, Membership
from goldenset.services import golden_set_import_beir, membership_grant, qrels_import, version_publish
from lib.formats import JsonRecord
from tests.support import factories

SLUG = "wiki"
QUERY_IDS = ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "doc/faq#8:de"]
# Two relevant pages a query: d<n> (a doc) and f<n> (a FAQ page), plus one non-relevant.
QRELS = {}
for n, query_id in enumerate(QUERY_IDS, start=1):
    QRELS[(query_id, f"d{n}")] = 2
    QRELS[(query_id, f"f{n}")] = 1
    QRELS[(query_id, f"d{n + 10}")] = 0
pytestmark = [
    pytest.mark.django_db,
    pytest.mark.golden_set(
        SLUG,
        manager="owner",
        qrels=QRELS,
        pages=factories.pages(*[f"d{i}" for i in range(1, 50)], kind="doc") + factories.pages(*[f"f{i}" for i in range(1, 9)], kind="faq"),
        queries=factories.queries(*QUERY_IDS[:4], lang="en") + factories.queries(*QUERY_IDS[4:], lang="de"),
        k_first=10,
        k_final=3,
        query_slice_fields=["lang"],
        page_slice_fields=["kind"],
    ),
]


def run_lines(ranking: dict[str, list[str]]) -> list[str]:
    return [f"{q} Q0 {doc} {rank} {100 - rank} sys\n" for q, docs in ranking.items() for rank, doc in enumerate(docs, start=1)]


def fillers(n: int, count: int) -> list[str]:
    return [f"d{20 + (n + i) % 30}" for i in range(count)]


# A first stage that finds both relevant pages within the top 10 for every query, the
# FAQ page deep (rank 9); a reranker that lifts only the doc page into the top 3; a weak
# first stage that finds the doc page alone, at rank 6.
FIRST = {q: [f"d{n}"] + fillers(n, 7) + [f"f{n}", f"d{n + 10}"] for n, q in enumerate(QUERY_IDS, start=1)}
RERANKED = {q: [f"d{n}"] + fillers(n, 2) + [f"f{n}"] for n, q in enumerate(QUERY_IDS, start=1)}
WEAK = {q: fillers(n, 5) + [f"d{n}"] for n, q in enumerate(QUERY_IDS, start=1)}


def upload(golden_set, ranking, *, name, system, stage):
    return run_import(golden_set=golden_set, lines=run_lines(ranking), source_name=f"{name}.run", system=system, stage=stage, name=name)


def score_everything(golden_set) -> None:
    for version in golden_set.versions.all():
        for run in Run.objects.filter(golden_set=golden_set):
            evaluation_compute(run=run, version=version)


@pytest.fixture
def golden_set(golden_set):
    """The marker's set, published as v1, with three runs scored on it."""
    version_publish(golden_set=golden_set, note="first labels")
    upload(golden_set, FIRST, name="hybrid first", system="hybrid", stage="first_stage")
    upload(golden_set, RERANKED, name="hybrid reranked", system="hybrid", stage="reranked")
    upload(golden_set, WEAK, name="bm25", system="bm25", stage="first_stage")
    score_everything(golden_set)
    return golden_set


def run_id(name: str) -> int:
    return Run.objects.get(name=name).id


def page_urls() -> list[str]:
    first, weak = run_id("hybrid first"), run_id("bm25")
    return [
        reverse("results", kwargs={"slug": SLUG}),
        reverse("results_progress", kwargs={"slug": SLUG}),
        reverse("runs", kwargs={"slug": SLUG}),
        reverse("run", kwargs={"slug": SLUG, "run_id": first}),
        reverse("run_versions", kwargs={"slug": SLUG, "run_id": first}),
        reverse("run_query", kwargs={"slug": SLUG, "run_id": first, "query_id": "q1"}),
        reverse("run_query_jump", kwargs={"slug": SLUG, "run_id": first}) + "?query=q1",
        reverse("compare", kwargs={"slug": SLUG}) + f"?a={weak}&b={first}",
    ]


def upload_post(client, name="new run", text="q1 Q0 d1 1 2.0 sys\nq2 Q0 d2 1 1.0 sys\n"):
    file = SimpleUploadedFile(f"{name}.run", text.encode(), content_type="text/plain")
    return client.post(reverse("runs", kwargs={"slug": SLUG}), {"file": file, "system": "dense", "stage": "first_stage", "name": name})


# --- permissions ---------------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_log_in_from_every_page(client, golden_set):
    for url in page_urls():
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url
    response = upload_post(client)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_a_stranger_gets_not_found_everywhere(client, golden_set, stranger):
    client.force_login(stranger)
    for url in page_urls():
        assert client.get(url).status_code == 404, url
    assert upload_post(client).status_code == 404


def test_an_annotator_never_sees_system_names_or_scores(client, golden_set, teammate):
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    client.force_login(teammate)
    for url in page_urls():
        assert client.get(url).status_code == 404, url
    assert upload_post(client).status_code == 404
    assert not Run.objects.filter(name="new run").exists()


def test_managers_and_staff_can_read_every_page(client, golden_set, owner, make_user):
    for user in (owner, make_user("staff", is_staff=True)):
        client.force_login(user)
        for url in page_urls():
            response = client.get(url)
            assert response.status_code in (200, 302), url
            if "queries/?" in url:
                assert response["Location"] == reverse(
                    "run_query", kwargs={"slug": SLUG, "run_id": run_id("hybrid first"), "query_id": "q1"}
                )


def test_an_adjudicator_reads_but_cannot_upload(client, golden_set, teammate):
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    client.force_login(teammate)
    for url in page_urls():
        assert client.get(url).status_code in (200, 302), url
    assert "Upload a run" not in client.get(reverse("runs", kwargs={"slug": SLUG})).content.decode()
    assert upload_post(client).status_code == 404
    assert not Run.objects.filter(name="new run").exists()


def test_managers_and_staff_can_upload_a_run(client, golden_set, owner, make_user):
    client.force_login(owner)
    response = upload_post(client, name="from the manager")
    run = Run.objects.get(name="from the manager")
    assert response.status_code == 302 and response["Location"] == reverse("run", kwargs={"slug": SLUG, "run_id": run.id})
    assert (run.system, run.stage, run.query_count, run.entry_count, run.uploaded_by) == ("dense", "first_stage", 2, 2, owner)
    client.force_login(make_user("staff", is_staff=True))
    assert upload_post(client, name="from staff").status_code == 302
    assert Run.objects.filter(name="from staff").exists()


# --- upload --------------------------------------------------------------------------------


def test_an_upload_with_a_bad_line_shows_the_line_number_and_stores_nothing(client, golden_set, owner):
    client.force_login(owner)
    before = (Run.objects.count(), RunData.objects.count())
    response = upload_post(client, name="broken", text="q1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2 high sys\nq9 Q0 d3 1 1.0 sys\n")
    body = response.content.decode()
    assert response.status_code == 400
    assert "broken.run:2: score &#x27;high&#x27; is not a finite number" in body
    assert "broken.run:3: query id &#x27;q9&#x27; is not in the golden set" in body
    assert (Run.objects.count(), RunData.objects.count()) == before


def test_an_upload_that_is_not_utf8_names_its_line(client, golden_set, owner):
    client.force_login(owner)
    file = SimpleUploadedFile("latin.run", b"q1 Q0 d1 1 2.0 sys\nq2 Q0 caf\xe9 1 1.0 sys\n")
    response = client.post(reverse("runs", kwargs={"slug": SLUG}), {"file": file, "system": "s", "stage": "first_stage"})
    assert response.status_code == 400 and "latin.run:2: bytes that are not UTF-8" in response.content.decode()
    assert not Run.objects.filter(system="s").exists()


def test_an_upload_under_a_taken_name_is_refused_beside_the_name_field(client, golden_set, owner):
    client.force_login(owner)
    response = upload_post(client, name="bm25")
    assert response.status_code == 400
    assert "already has a run named &#x27;bm25&#x27;" in response.content.decode()
    assert Run.objects.filter(name="bm25").count() == 1


# --- the results page ----------------------------------------------------------------------


def test_the_results_page_lists_runs_best_first_with_version_and_k(client, golden_set, owner, django_assert_max_num_queries):
    client.force_login(owner)
    with django_assert_max_num_queries(16):
        body = client.get(reverse("results", kwargs={"slug": SLUG})).content.decode()
    assert "Runs, best first by recall@3 on v1" in body
    table = body[body.index('<table class="grid results">') :]
    table = table[: table.index("</table>")]
    # recall@3: reranked 0.5 (the doc page), first 0.5 too but ranked after by name, bm25 0
    names = re.findall(r'<a href="/sets/wiki/runs/\d+/">([^<]+)</a>', table)
    assert names == ["hybrid first", "hybrid reranked", "bm25"]
    assert 'title="recall@10 on v1"' in table and 'title="recall@3 on v1"' in table
    assert '>recall@10</a><br><span class="muted">v1</span>' in table


def test_ordering_by_another_metric_puts_its_best_run_first(client, golden_set, owner):
    client.force_login(owner)
    body = client.get(reverse("results", kwargs={"slug": SLUG}) + "?order=recall@10").content.decode()
    table = body[body.index('<table class="grid results">') :]
    names = re.findall(r'<a href="/sets/wiki/runs/\d+/">([^<]+)</a>', table[: table.index("</table>")])
    assert names[0] == "hybrid first" and names[-1] == "bm25"


def test_the_results_page_stays_within_its_query_budget_however_many_runs(client, golden_set, owner, django_assert_max_num_queries):
    for n in range(6):
        upload(golden_set, WEAK, name=f"extra {n}", system=f"extra{n}", stage="first_stage")
    score_everything(golden_set)
    client.force_login(owner)
    with django_assert_max_num_queries(16):
        assert client.get(reverse("results", kwargs={"slug": SLUG})).status_code == 200


def test_the_results_page_shows_the_funnel_with_its_diagnosis_and_counts(client, golden_set, owner):
    client.force_login(owner)
    body = client.get(reverse("results", kwargs={"slug": SLUG})).content.decode()
    funnels = body[body.index('<div class="funnels">') : body.index('id="sweep"')]
    # hybrid: recall@10 = 1.0, recall@3 of the reranked run = 0.5, a loss of 50 points
    assert "recall@10 = <strong>1.000</strong> on v1" in funnels
    assert "recall@3 = <strong>0.500</strong> on v1" in funnels
    assert "Rerank loss: <strong>50.0 points</strong>" in funnels
    assert "Reranker depth or model" in funnels
    # bm25 has no reranked run and finds half the pages: fix the first stage
    assert "Fix the first stage" in funnels and "no reranked run" in funnels
    assert "8 queries averaged, 0 unanswered (scored 0), 0 with no relevant page (left out)" in funnels


def test_the_sweep_summary_gives_each_system_its_cheapest_k_meeting_the_target_at_the_sets_figures(client, golden_set, owner):
    client.force_login(owner)
    body = client.get(reverse("results", kwargs={"slug": SLUG})).content.decode()
    sweep = body[body.index('id="sweep"') :]
    sweep = sweep[: sweep.index("</section>")]
    rows = {re.sub(r"<[^>]+>", " ", row).split()[0]: " ".join(re.sub(r"<[^>]+>", " ", row).split()) for row in sweep.split("<tr>")[2:]}
    # hybrid's reranked run returns 4 pages a query and finds both relevant pages by k = 4:
    # 4 x 400 tokens at $3 per million, a million queries a month.
    assert rows["hybrid"].startswith("hybrid hybrid reranked 0.500 k = 4 (1.000) $4,800")
    # bm25 finds half the pages at k = 6, its depth, and never meets 0.80.
    assert "not within k = 6" in rows["bm25"]
    run = run_id("hybrid reranked")
    assert reverse("run_sweep", kwargs={"slug": SLUG, "run_id": run}) + "?version=1" in sweep
    # The set's own figures price it.
    GoldenSet.objects.filter(slug=SLUG).update(price_per_million_input=6, monthly_queries=10)
    body = client.get(reverse("results", kwargs={"slug": SLUG})).content.decode()
    assert "$6 per million input tokens, 10 queries a month" in body


def test_the_sweep_summary_says_a_run_returning_only_k_final_pages_has_no_price_per_point(client, golden_set, owner):
    upload(golden_set, FIRST, name="short first", system="short", stage="first_stage")
    upload(golden_set, {q: docs[:3] for q, docs in RERANKED.items()}, name="short reranked", system="short", stage="reranked")
    score_everything(golden_set)
    client.force_login(owner)
    body = client.get(reverse("results", kwargs={"slug": SLUG})).content.decode()
    sweep = body[body.index('id="sweep"') :]
    row = sweep[sweep.index("<td>short</td>") :]
    assert "the run returns no more than k_final = 3 pages a query: no price per point" in row[: row.index("</tr>")]


def test_charts_are_inline_svg_that_need_no_network(client, golden_set, owner):
    client.force_login(owner)
    body = client.get(reverse("results", kwargs={"slug": SLUG})).content.decode()
    assert body.count("<svg") == 4  # recall curves, slices, and the two trends
    assert "<polyline" in body and "0.75 slice floor" in body
    external = [url for url in re.findall(r'(?:src|href)="(https?://[^"]+)"', body)]
    assert external == []
    # Every script comes from our own static files (the CSRF token is random text, so the
    # check looks at script sources, not at the whole page).
    scripts = re.findall(r'<script[^>]*\ssrc="([^"]+)"', body)
    assert scripts and all(src.startswith("/static/") for src in scripts)


def test_the_slice_chart_has_a_bar_per_run_and_slice(client, golden_set, owner):
    client.force_login(owner)
    body = client.get(reverse("results", kwargs={"slug": SLUG}) + "?slice_metric=recall@3").content.decode()
    assert "hybrid reranked, pages kind = faq: recall@3 = 0.000 on v1 (8 queries averaged, 0 with no relevant page left out)" in body
    assert "hybrid reranked, queries lang = de: recall@3 = 0.500 on v1" in body


def test_the_trend_marks_a_new_version_because_its_labels_changed(client, golden_set, owner):
    qrels_import(golden_set_slug=SLUG, lines=["q1 0 d20 2\n"], source_name="more")
    version_publish(golden_set=golden_set, note="one more relevant page")
    score_everything(golden_set)
    client.force_login(owner)
    body = client.get(reverse("results", kwargs={"slug": SLUG})).content.decode()
    assert "v2 was published: the labels changed (24 → 25 labels, 16 → 17 relevant, 8 → 8 queries)" in body
    # q1 gains a relevant page the first stage never retrieved: (7 + 2/3) / 8
    assert "hybrid first: recall@10 = 1.000 on v1" in body and "hybrid first: recall@10 = 0.958 on v2" in body


# --- progress ------------------------------------------------------------------------------


def test_progress_polls_while_runs_are_being_scored_and_stops_when_all_are_done(client, golden_set, owner):
    qrels_import(golden_set_slug=SLUG, lines=["q1 0 d20 2\n"], source_name="more")
    version = version_publish(golden_set=golden_set, note="v2")
    evaluations_schedule(version=version)
    first = Run.objects.get(name="hybrid first")
    evaluation_compute(run=first, version=version)
    client.force_login(owner)
    url = reverse("results_progress", kwargs={"slug": SLUG}) + "?version=2"

    body = client.get(url).content.decode()
    assert "1 of 3 runs scored" in body and 'hx-trigger="every 2s"' in body
    page = client.get(reverse("results", kwargs={"slug": SLUG})).content.decode()
    assert "1 of 3 runs scored" in page and 'hx-get="/sets/wiki/results/progress/?version=2"' in page

    score_everything(golden_set)
    response = client.get(url, headers={"HX-Request": "true"})
    body = response.content.decode()
    assert "3 of 3 runs scored on v2" in body and "hx-trigger" not in body and "hx-get" not in body
    assert response["HX-Refresh"] == "true"


def test_a_failed_evaluation_is_counted_and_does_not_keep_polling(client, golden_set, owner):
    version = golden_set.versions.get()
    Evaluation.objects.filter(run__name="bm25").update(status=Evaluation.Status.FAILED, error="the worker ran out of memory")
    client.force_login(owner)
    body = client.get(reverse("results_progress", kwargs={"slug": SLUG}) + f"?version={version.number}").content.decode()
    assert "2 of 3 runs scored" in body and "1 failed" in body and "hx-trigger" not in body


# --- runs and one run ----------------------------------------------------------------------


def test_the_runs_page_stays_within_its_query_budget(client, golden_set, owner, django_assert_max_num_queries):
    for n in range(6):
        upload(golden_set, WEAK, name=f"extra {n}", system=f"extra{n}", stage="first_stage")
    score_everything(golden_set)
    client.force_login(owner)
    # Two of them, once whatever the runs, are for the upload form: the corpus's chunkings (its
    # choices) and the uploads a worker is still reading (linked above it).
    with django_assert_max_num_queries(12):
        body = client.get(reverse("runs", kwargs={"slug": SLUG})).content.decode()
    assert body.count('href="/sets/wiki/runs/') >= 9


def test_the_run_page_shows_the_upload_facts_and_each_versions_scores(client, golden_set, owner):
    run_import(
        golden_set=golden_set, lines=run_lines({"q1": ["d1", "elsewhere#1"]}), source_name="ext.run", system="x", stage="other", name="ext"
    )
    client.force_login(owner)
    body = client.get(reverse("run", kwargs={"slug": SLUG, "run_id": run_id("ext")})).content.decode()
    assert "<dt>Queries</dt><dd>1</dd>" in body and "<dt>Entries kept</dt><dd>2</dd>" in body
    assert "1000 entries a query; 0 entries past it were dropped" in body
    assert "<dt>Doc ids outside the corpus</dt><dd>1 distinct" in body
    body = client.get(reverse("run", kwargs={"slug": SLUG, "run_id": run_id("hybrid first")})).content.decode()
    assert 'title="recall@10 on v1">1.000' in body


# --- comparisons ---------------------------------------------------------------------------


def test_compare_shows_deltas_equal_to_the_stored_scores_and_flags_the_better_run(client, golden_set, owner):
    client.force_login(owner)
    weak, first = run_id("bm25"), run_id("hybrid first")
    body = client.get(reverse("compare", kwargs={"slug": SLUG}) + f"?a={weak}&b={first}&version=1").content.decode()
    version = golden_set.versions.get()
    stored = dict(Score.objects.filter(evaluation__version=version, slice="", evaluation__run_id=weak).values_list("metric", "value"))
    better = dict(Score.objects.filter(evaluation__version=version, slice="", evaluation__run_id=first).values_list("metric", "value"))
    row = re.search(r"<td>recall@10</td>(.*?)</tr>", body, re.S).group(1)
    delta = f"{(better['recall@10'] - stored['recall@10']) * 100:+.1f}"
    assert delta == "+50.0" and delta in row and "b is better" in row
    assert "Per slice, v1" in body and "queries lang = de" in body and "pages kind = faq" in body


def test_compare_lists_the_queries_each_run_wins_largest_difference_first(client, golden_set, owner):
    """On recall@3 (k_final): "mixed" finds both relevant pages of q1-q3 at the top and
    nothing else; "hybrid first" finds one of two everywhere."""
    mixed = {q: [f"d{n}", f"f{n}"] for n, q in enumerate(QUERY_IDS[:3], start=1)}
    run = upload(golden_set, mixed, name="mixed", system="mixed", stage="first_stage")
    evaluation_compute(run=run, version=golden_set.versions.get())
    client.force_login(owner)
    first = run_id("hybrid first")
    body = client.get(reverse("compare", kwargs={"slug": SLUG}), {"a": run.id, "b": first, "version": 1}).content.decode()
    assert "Query by query: recall@3" in body and "a wins 3 queries, b wins 5, 0 tie" in body
    a_side = body[body.index('class="grid compact duel duel-a"') :]
    a_side = a_side[: a_side.index("</table>")]
    assert re.findall(r"<code>([^<]+)</code>", a_side) == ["q1", "q2", "q3"]
    assert a_side.count('<td class="num">50.0</td>') == 3
    b_side = body[body.index('class="grid compact duel duel-b"') :]
    b_side = b_side[: b_side.index("</table>")]
    assert re.findall(r"<code>([^<]+)</code>", b_side) == ["doc/faq#8:de", "q4", "q5", "q6", "q7"]  # ties by natural id order
    # Each query opens its drill-down, for either run, even an id with / and #.
    for href in re.findall(r'href="([^"]+/queries/[^"]+)"', b_side):
        assert client.get(href.replace("&amp;", "&")).status_code == 200, href
    assert "question q4" in b_side
    # Another metric: on recall@10 both find everything of q1-q3.
    body = client.get(
        reverse("compare", kwargs={"slug": SLUG}), {"a": run.id, "b": first, "version": 1, "duel": "recall@10"}
    ).content.decode()
    assert "Query by query: recall@10" in body and "a wins 0 queries, b wins 5, 3 tie" in body


def test_compare_says_how_many_of_each_side_it_lists_when_it_cuts_them(client, golden_set, owner, monkeypatch):
    """Issue 30 item 2: the summary always read "the first 0 of each" (a template took the
    length of a number)."""
    from evaluation.reports import compare

    monkeypatch.setattr(compare, "DUELS_SHOWN", 2)
    mixed = {q: [f"d{n}", f"f{n}"] for n, q in enumerate(QUERY_IDS[:3], start=1)}
    run = upload(golden_set, mixed, name="mixed", system="mixed", stage="first_stage")
    evaluation_compute(run=run, version=golden_set.versions.get())
    client.force_login(owner)
    body = client.get(reverse("compare", kwargs={"slug": SLUG}), {"a": run.id, "b": run_id("hybrid first"), "version": 1}).content.decode()
    assert "a wins 3 queries, b wins 5, 0 tie; largest difference first, the first 2 of each." in body


def test_compare_needs_two_different_runs(client, golden_set, owner):
    client.force_login(owner)
    first = run_id("hybrid first")
    body = client.get(reverse("compare", kwargs={"slug": SLUG}) + f"?a={first}&b={first}").content.decode()
    assert "choose two different runs" in body


@pytest.mark.shared_data
def test_on_cranfield_compare_flags_a_clearly_better_run_and_not_a_tie(client, shared_data: Path, owner):
    golden_set_import_beir(directory=shared_data / "cranfield", slug="cran", user=owner)
    golden_set = GoldenSet.objects.get(slug="cran")
    version = version_publish(golden_set=golden_set, note="cranfield")
    runs = {}
    for name in ("stevinjs_custom_bm25", "stevinjs_english_bm25", "stevinjs_standard_bm25", "stevinjs_standard_classic"):
        path = shared_data / "cranfield" / "runs" / f"{name}.run"
        with path.open(encoding="utf-8") as lines:
            runs[name] = run_import(golden_set=golden_set, lines=lines, source_name=path.name, system=name, stage="first_stage", name=name)
        evaluation_compute(run=runs[name], version=version)
    client.force_login(owner)
    url = reverse("compare", kwargs={"slug": "cran"})

    body = client.get(url + f"?a={runs['stevinjs_custom_bm25'].id}&b={runs['stevinjs_english_bm25'].id}").content.decode()
    stored = {
        name: dict(Score.objects.filter(evaluation__run=runs[name], slice="").values_list("metric", "value"))
        for name in ("stevinjs_custom_bm25", "stevinjs_english_bm25")
    }
    for metric in ("recall@10", "ndcg@10", "mrr"):
        row = re.search(rf"<td>{re.escape(metric)}</td>(.*?)</tr>", body, re.S).group(1)
        delta = (stored["stevinjs_english_bm25"][metric] - stored["stevinjs_custom_bm25"][metric]) * 100
        assert f"{delta:+.1f}" in row and "b is better" in row, metric
    # the two standard runs tie on ndcg@10 (0.3135 each in trec_eval): no verdict
    body = client.get(url + f"?a={runs['stevinjs_standard_bm25'].id}&b={runs['stevinjs_standard_classic'].id}").content.decode()
    row = re.search(r"<td>ndcg@10</td>(.*?)</tr>", body, re.S).group(1)
    assert "no significant difference" in row


def test_one_run_across_two_versions_shows_how_much_the_labels_moved_it(client, golden_set, owner):
    # one more relevant page for q1, which the first stage does not retrieve
    qrels_import(golden_set_slug=SLUG, lines=["q1 0 d49 2\n"], source_name="more")
    version_publish(golden_set=golden_set, note="v2")
    score_everything(golden_set)
    client.force_login(owner)
    url = reverse("run_versions", kwargs={"slug": SLUG, "run_id": run_id("hybrid first")})
    body = client.get(url + "?from=1&to=2").content.decode()
    # recall@10 of q1 falls from 1 to 2/3: the mean moves by -1/3 / 8 = -4.2 points, all of it on shared queries
    row = re.search(r"<td>recall@10</td>(.*?)</tr>", body, re.S).group(1)
    assert "<strong>-4.2</strong>" in row and row.count("-4.2") == 2 and "0.0" in row
    assert "every move below is the labels' doing" in body
    assert "<strong>1</strong> pairs added" in body
    assert f'href="/sets/wiki/runs/{run_id("hybrid first")}/queries/q1/?version=2"' in body
    # the defaults are the two latest versions it was scored on
    assert "<strong>-4.2</strong>" in client.get(url).content.decode()


# --- the drill-down ------------------------------------------------------------------------


def test_the_drilldown_lists_the_relevant_pages_the_run_missed(client, golden_set, owner):
    client.force_login(owner)
    query_id = "doc/faq#8:de"
    url = reverse("run_query", kwargs={"slug": SLUG, "run_id": run_id("bm25"), "query_id": query_id}) + "?version=1"
    assert "%23" in url and "doc/faq" in url
    body = client.get(url).content.decode()
    missed = body[body.index("Relevant pages the run missed") : body.index("The run's top")]
    assert "Relevant pages the run missed (1)" in missed
    assert "<code>f8</code>" in missed and "not retrieved" in missed
    assert "<code>d8</code>" not in missed
    top = body[body.index("The run's top") :]
    assert re.search(r'<tr class="relevant">\s*<td class="num">6</td>', top)
    assert "recall@10 = 0.500 on v1" in body and "recall@3 = 0.000 on v1" in body


def test_the_drilldown_shows_a_relevant_page_ranked_below_k_first(client, golden_set, owner):
    deep = {"q1": fillers(1, 10) + ["f1", "d1"]}
    run = upload(golden_set, deep, name="deep", system="deep", stage="first_stage")
    client.force_login(owner)
    body = client.get(reverse("run_query", kwargs={"slug": SLUG, "run_id": run.id, "query_id": "q1"})).content.decode()
    assert "rank 11, below k_first = 10" in body and "rank 12, below k_first = 10" in body


def test_the_drilldown_escapes_page_text_and_refuses_script_links(client, owner):
    pages = [JsonRecord(line=1, id="d1", title="<script>alert(1)</script>", text="t", url="javascript:alert(2)")]
    golden_set = factories.golden_set("esc", manager=owner, qrels={("q1", "d1"): 1}, pages=pages)
    version_publish(golden_set=golden_set)
    run = run_import(golden_set=golden_set, lines=["q1 Q0 d1 1 1.0 s\n"], source_name="r", system="s", stage="first_stage")
    client.force_login(owner)
    body = client.get(reverse("run_query", kwargs={"slug": "esc", "run_id": run.id, "query_id": "q1"})).content.decode()
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "javascript:" not in body


def test_the_drilldown_of_a_query_outside_the_version_is_not_found(client, golden_set, owner):
    client.force_login(owner)
    url = reverse("run_query", kwargs={"slug": SLUG, "run_id": run_id("bm25"), "query_id": "nope"})
    assert client.get(url).status_code == 404
    assert client.get(reverse("results", kwargs={"slug": SLUG}) + "?version=abc").status_code == 400  # not a version number: lib.params
    assert client.get(reverse("results", kwargs={"slug": SLUG}) + "?version=7").status_code == 404


def test_a_run_of_another_set_is_not_found_under_this_one(client, golden_set, owner):
    other = factories.golden_set("other", manager=owner)
    version_publish(golden_set=other)
    run = run_import(golden_set=other, lines=["q1 Q0 d1 1 1.0 s\n"], source_name="r", system="s", stage="first_stage")
    client.force_login(owner)
    assert client.get(reverse("run", kwargs={"slug": SLUG, "run_id": run.id})).status_code == 404
