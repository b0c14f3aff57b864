"""The slice coverage page: who may open it and act on it, what it shows, what it costs.

Small sets are made through the real services: each query qN has one relevant page dNa
(doc type tK) and one judged non-relevant page dNb; every third query's relevant page is
new (published 5 days before the version), the others are a year old. The run finds
every old relevant page at rank 1 and no new one, so the age slice 0-30d has recall 0:
the seed's story in miniature. The demo test at the end compares the page with the
figures the evaluation engine stored for the demo's latest version.
"""

import re

import pytest
from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluation import scoring_inputs
from evaluation.canaries import canary_add
from evaluation.models import Canary, Completeness, EvaluationSettings, Score
from evaluation.services import evaluation_compute
from evaluation.settings_service import evaluation_settings_update
from goldenset.models import Judgment, Membership, Page, PublishJob, Query, Version, VersionLabel
from goldenset.services import judgment_record, membership_grant, version_publish
from goldset.demo.generate import DEFAULT_SEED
from goldset.demo.services import demo_golden_set_load, demo_runs_load
from labeling.coverage.selectors import coverage_report
from labeling.models import JudgingTask, Pool, PoolJob
from labeling.pools.selectors import pool_pairs
from labeling.pools.services import pool_build
from tests.support import factories
from tests.support.factories import sliced_run as upload
from tests.support.factories import sliced_set as make_sliced_set
from tests.support.fixtures import kept_for_the_module

pytestmark = pytest.mark.django_db

PAGES = ["coverage"]
ACTIONS = ["coverage_publish", "coverage_pool", "coverage_canary_add", "coverage_stale_queue"]


@pytest.fixture
def golden_set(owner):
    return make_sliced_set(manager=owner)


def url(name: str, slug: str = "sliced") -> str:
    return reverse(name, kwargs={"slug": slug})


def row_html(body: str, slice_name: str) -> str:
    found = re.search(r'<tr [^>]*data-slice="' + re.escape(slice_name) + r'">(.*?)</tr>', body, re.S)
    assert found, f"no row for {slice_name}"
    return found.group(0)


# --- permissions ------------------------------------------------------------------------


@pytest.mark.parametrize("name", PAGES + ACTIONS)
def test_anonymous_visitors_are_sent_to_log_in(client, golden_set, name):
    response = client.post(url(name)) if name in ACTIONS else client.get(url(name))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("name", PAGES + ACTIONS)
def test_a_stranger_gets_not_found(client, golden_set, stranger, name):
    client.force_login(stranger)
    response = client.post(url(name)) if name in ACTIONS else client.get(url(name))
    assert response.status_code == 404


@pytest.mark.parametrize("role", [Membership.Role.ANNOTATOR, Membership.Role.ADJUDICATOR])
@pytest.mark.parametrize("name", PAGES + ACTIONS)
def test_annotators_and_adjudicators_get_not_found(client, golden_set, teammate, role, name):
    membership_grant(user=teammate, golden_set=golden_set, role=role)
    client.force_login(teammate)
    response = client.post(url(name), {"depth": 5, "strategy": "depth"}) if name in ACTIONS else client.get(url(name))
    assert response.status_code == 404
    assert Version.objects.filter(golden_set=golden_set).count() == 1 and not Pool.objects.exists()
    assert not Canary.objects.exists()


def test_managers_and_staff_can_open_it(client, golden_set, owner, make_user):
    client.force_login(owner)
    assert client.get(url("coverage")).status_code == 200
    client.force_login(make_user("staff", is_staff=True))
    assert client.get(url("coverage")).status_code == 200


def test_an_unknown_set_is_not_found_even_for_staff(client, make_user):
    client.force_login(make_user("staff", is_staff=True))
    assert client.get(url("coverage", "nope")).status_code == 404
    assert client.post(url("coverage_publish", "nope")).status_code == 404


def test_the_actions_take_posts_only(client, golden_set, owner):
    client.force_login(owner)
    assert client.get(url("coverage_publish")).status_code == 405
    assert client.get(url("coverage_pool")).status_code == 405


# --- what it shows ------------------------------------------------------------------------


def test_it_suggests_the_newest_relevant_pages_of_each_page_slice_as_canaries_and_adds_one(client, golden_set, owner):
    version = golden_set.latest_version()
    report = coverage_report(golden_set, version)
    suggestions = report.canary_suggestions
    first = suggestions[0]
    # The age slice comes first, with the newest of its relevant pages (every third query's is 5 days old).
    new_relevant = {f"d{n}a" for n in range(3, 31, 3)}
    assert first.slice == "page:age=0-30d" and first.doc_id in new_relevant and first.query_id == first.doc_id[:-1].replace("d", "q")
    assert len({s.doc_id for s in suggestions}) == len(suggestions)  # a page once, whatever its slices
    client.force_login(owner)
    body = client.get(url("coverage")).content.decode()
    assert "Pages worth watching" in body and first.doc_id in body
    response = client.post(url("coverage_canary_add"), {"query_id": first.query_id, "doc_id": first.doc_id, "why": "newest"})
    assert response.status_code == 302
    canary = Canary.objects.get()
    assert (canary.query.query_id, canary.page.doc_id) == (first.query_id, first.doc_id)
    assert first.doc_id not in {s.doc_id for s in coverage_report(golden_set, version).canary_suggestions}
    # A bad pair is refused with a message, nothing written.
    client.post(url("coverage_canary_add"), {"query_id": "nope", "doc_id": first.doc_id})
    assert Canary.objects.count() == 1


@pytest.mark.parametrize("per_slice", [1, 2, 5])
def test_the_suggestions_are_those_a_plain_reading_of_every_relevant_page_gives(golden_set, per_slice):
    """The numpy pick over the slices' dates against the plainest reading: every relevant
    dated page from the database, newest first (then doc id), a page once across slices."""
    from goldenset.models import VersionPage
    from labeling.coverage.selectors import canary_suggestions

    version = golden_set.latest_version()
    qrels, slices = scoring_inputs.get_or_build(version)
    relevant = set(qrels.doc_keys[qrels.grades >= version.relevance_threshold].tolist())
    dated = {
        page_id: (published_at, doc_id)
        for page_id, published_at, doc_id in VersionPage.objects.filter(version=version, published_at__isnull=False).values_list(
            "page_id", "published_at", "page__doc_id"
        )
        if page_id in relevant
    }
    expected, taken = [], set()
    for name in sorted(slices.page, key=lambda name: (not name.startswith("page:age="), name)):
        ranked = sorted((k for k in slices.page[name].tolist() if k in dated and k not in taken), key=dated.get, reverse=True)
        for key in ranked[:per_slice]:
            taken.add(key)
            expected.append((name, dated[key][1]))
    found = canary_suggestions(version, qrels, slices, per_slice=per_slice)
    assert [(s.slice, s.doc_id) for s in found] == expected and len(expected) > per_slice


def test_it_flags_the_new_pages_slice_with_the_figures_the_evaluation_stored(client, golden_set, owner):
    client.force_login(owner)
    response = client.get(url("coverage"))
    report = response.context["report"]
    new = next(one for one in report.slices if one.name == "page:age=0-30d")
    assert new.flagged and (new.queries, new.averaged, new.judged_pairs, new.no_relevant) == (10, 10, 10, 0)
    score = Score.objects.get(evaluation__run__name="bm25 first_stage", slice="page:age=0-30d", metric="recall@10")
    assert new.runs[0].recall_first == score.value == 0.0 and score.queries_averaged == new.averaged
    assert any("under the recall floor of 0.75" in flag for flag in new.flags)
    assert any("10 queries with a relevant page, under the minimum of 30" in flag for flag in new.flags)
    row = row_html(response.content.decode(), "page:age=0-30d")
    assert "flagged" in row and "0.000" in row
    assert "10 queries &lt; 30" in row and "recall &lt; 0.75 (1 of 1 runs)" in row


def test_it_counts_queries_pairs_and_relevant_pages_per_query_slice(golden_set):
    report = coverage_report(golden_set, golden_set.latest_version())
    l1 = next(one for one in report.slices if one.name == "query:lang=l1")
    assert (l1.queries, l1.judged_pairs, l1.relevant_min, l1.relevant_median, l1.no_relevant) == (10, 20, 1, 1.0, 0)
    assert (report.overall.queries, report.overall.judged_pairs) == (30, 60)
    # Old pages are all found: the 31-365d bucket is empty, 366d+ holds the old ones and every b page.
    old = next(one for one in report.slices if one.name == "page:age=366d+")
    assert old.runs[0].recall_first == 1.0 and not any("recall" in flag for flag in old.flags)
    judged = Completeness.objects.get(evaluation__run__name="bm25 first_stage", slice="query:lang=l1").judged_at_k_final
    assert l1.runs[0].judged_final == judged


def test_a_query_with_no_relevant_page_is_a_gap_not_an_average(owner):
    golden_set = factories.golden_set(
        "gappy",
        manager=owner,
        qrels={("q1", "d1"): 2, ("q2", "d2"): 0, ("q3", "d3"): 0},
        queries=factories.queries("q1", "q2", "q3", lang="en"),
        query_slice_fields=["lang"],
    )
    version = version_publish(golden_set=golden_set)
    report = coverage_report(golden_set, version)
    en = report.slices[0]
    assert (en.name, en.queries, en.averaged, en.no_relevant, en.relevant_min, en.relevant_median) == ("query:lang=en", 3, 1, 2, 0, 0.0)
    assert report.runs == [] and en.flags == ["1 query with a relevant page, under the minimum of 30"]


def test_a_label_on_a_page_changed_since_it_was_judged_is_stale_until_judged_again(client, golden_set, owner):
    Page.objects.filter(corpus=golden_set.corpus, doc_id="d3a").update(content_hash="changed")
    report = coverage_report(golden_set, golden_set.latest_version())
    assert report.stale_total == 1
    stale = {one.name for one in report.slices if one.stale_labels}
    assert stale == {"query:lang=l0", "page:doc_type=t0", "page:age=0-30d"}
    client.force_login(owner)
    assert "<strong>1</strong> stale label " in client.get(url("coverage")).content.decode()

    judgment_record(
        query=Query.objects.get(golden_set=golden_set, query_id="q3"), page=Page.objects.get(doc_id="d3a"), grade=2, annotator=owner
    )
    assert coverage_report(golden_set, golden_set.latest_version()).stale_total == 0


def test_the_targets_come_from_the_evaluation_settings(client, golden_set, owner):
    evaluation_settings_update(golden_set=golden_set, user=owner, min_queries_per_slice=5, alert_slice_floor=0.0, judged_floor=0.0)
    report = coverage_report(golden_set, golden_set.latest_version())
    assert report.flagged == []
    client.force_login(owner)
    body = client.get(url("coverage")).content.decode()
    assert "at least <strong>5</strong> queries" in body and reverse("evaluation_settings", kwargs={"slug": "sliced"}) in body


def test_the_settings_page_edits_the_minimum_of_queries_per_slice(client, golden_set, owner):
    client.force_login(owner)
    form = client.get(url("evaluation_settings")).context["form"]
    data = {name: value for name, value in form.initial.items() if value is not None}
    data["min_queries_per_slice"] = "12"
    response = client.post(url("evaluation_settings"), data)
    assert response.status_code == 302
    assert EvaluationSettings.objects.get(golden_set=golden_set).min_queries_per_slice == 12
    data["min_queries_per_slice"] = "0"
    body = client.post(url("evaluation_settings"), data).content.decode()
    assert "Ensure this value is greater than or equal to 1" in body
    assert EvaluationSettings.objects.get(golden_set=golden_set).min_queries_per_slice == 12


def test_a_set_without_a_version_says_so(client, owner):
    factories.golden_set("unpublished", manager=owner)
    client.force_login(owner)
    body = client.get(url("coverage", "unpublished")).content.decode()
    assert "has no version yet" in body


def test_an_older_version_can_be_chosen(client, golden_set, owner):
    judgment_record(
        query=Query.objects.get(golden_set=golden_set, query_id="q1"), page=Page.objects.get(doc_id="d2a"), grade=1, annotator=owner
    )
    version_publish(golden_set=golden_set, note="one more pair")
    client.force_login(owner)
    assert client.get(url("coverage") + "?version=1").context["report"].version.number == 1
    assert client.get(url("coverage")).context["report"].version.number == 2
    assert client.get(url("coverage") + "?version=9").status_code == 404
    assert client.get(url("coverage") + "?version=x").status_code == 400  # not a version number: lib.params


def test_the_page_links_the_qrels_exports_and_the_actions(client, golden_set, owner):
    client.force_login(owner)
    body = client.get(url("coverage")).content.decode()
    for fmt in ("trec", "json", "beir", "csv"):
        assert reverse("version_export", kwargs={"slug": "sliced", "number": 1, "fmt": fmt}) in body
    assert url("coverage_publish") in body and url("coverage_pool") in body


# --- actions ------------------------------------------------------------------------------


def test_a_manager_publishes_a_version_from_the_page(client, golden_set, owner):
    client.force_login(owner)
    response = client.post(url("coverage_publish"), {"note": "nothing new"}, follow=True)
    assert "Not published: nothing changed since version 1" in response.content.decode()
    judgment_record(
        query=Query.objects.get(golden_set=golden_set, query_id="q1"), page=Page.objects.get(doc_id="d2a"), grade=1, annotator=owner
    )
    with TestCase.captureOnCommitCallbacks(execute=True):  # the publish job, in-process here
        response = client.post(url("coverage_publish"), {"note": "round 2"})
    job = PublishJob.objects.get()
    assert response["Location"] == reverse("publish_job", kwargs={"slug": golden_set.slug, "job_id": job.pk})
    version = golden_set.latest_version()
    assert (version.number, version.note, version.author) == (2, "round 2", owner)
    assert "Published <a" in client.get(response["Location"]).content.decode()


def test_a_manager_pools_the_flagged_slices_with_the_latest_runs(client, golden_set, owner):
    later = upload(golden_set, 30, name="bm25 v2")
    evaluation_compute(run=later, version=golden_set.latest_version())
    client.force_login(owner)
    with TestCase.captureOnCommitCallbacks(execute=True):  # the job's task, in-process here
        response = client.post(url("coverage_pool"), {"version": "1", "depth": "2", "strategy": "depth"})
    assert response["Location"] == reverse("completeness", kwargs={"slug": golden_set.slug}) + "#jobs"
    job = PoolJob.objects.get()
    assert (job.kind, job.status, job.arguments) == (
        "flagged",
        "done",
        {"version": 1, "pool": None, "depth": 2, "strategy": "depth", "budget": None},
    )
    response = client.get(response["Location"])
    pool = Pool.objects.get()
    assert (pool.depth, pool.strategy, pool.created_by) == (2, "depth", owner)
    assert list(pool.runs.values_list("name", flat=True)) == ["bm25 v2"]  # the system's latest run only
    body = response.content.decode()
    flagged = set(coverage_report(golden_set, golden_set.latest_version()).flagged_query_ids())
    pooled = set(JudgingTask.objects.filter(pool=pool).values_list("query__query_id", flat=True))
    assert pooled and pooled <= flagged  # the flagged slices' queries, no other
    assert "flagged slice(s)" in body and f"the pool covers their {len(flagged)} queries only" in body


def test_a_manager_extends_a_pool_with_the_flagged_slices(client, golden_set, owner):
    later = upload(golden_set, 30, name="bm25 v2")
    evaluation_compute(run=later, version=golden_set.latest_version())
    flagged = set(coverage_report(golden_set, golden_set.latest_version()).flagged_query_ids())
    # A pool of the same run at the same depth, over a few of the set's queries only.
    few = list(Query.objects.filter(golden_set=golden_set).order_by("id")[:3])
    earlier = pool_build(golden_set=golden_set, runs=[later], depth=2, strategy="mtf", budget=500, queries=few).pool
    before = set(task_pairs(earlier))
    client.force_login(owner)
    assert f'<option value="{earlier.pk}">pool {earlier.pk} (mtf, depth 2)</option>' in client.get(url("coverage")).content.decode()
    data = {"version": "1", "pool": str(earlier.pk), "depth": "2", "strategy": "depth"}
    with TestCase.captureOnCommitCallbacks(execute=True):
        client.post(url("coverage_pool"), data)
    job = PoolJob.objects.get()
    assert job.status == "done", job.error
    earlier.refresh_from_db()
    assert (Pool.objects.count(), earlier.strategy, earlier.budget) == (1, "mtf", 500)  # extended, not a new pool
    assert earlier.pool_runs.get().depth == 2
    added = set(task_pairs(earlier)) - before
    # The flagged queries' pairs, no other, none pooled before.
    assert added and {query_id for query_id, _ in added} <= flagged - {query.query_id for query in few}
    # A budget belongs to a new pool: refused at once for an extension.
    refused = client.post(url("coverage_pool"), {**data, "budget": "10"}, follow=True)
    assert "Not pooled: a budget is set when a pool is built" in refused.content.decode()


def task_pairs(pool) -> list[tuple[str, str]]:
    """The pool's pairs as (query id, doc id), tasks yet or not."""
    pairs = pool_pairs(pool)
    query_ids = dict(Query.objects.filter(pk__in=pairs.query_pks.tolist()).values_list("pk", "query_id"))
    doc_ids = dict(Page.objects.filter(pk__in=pairs.page_pks.tolist()).values_list("pk", "doc_id"))
    return [(query_ids[q], doc_ids[p]) for q, p in zip(pairs.query_pks.tolist(), pairs.page_pks.tolist())]


def test_pooling_refuses_a_bad_depth_and_writes_nothing(client, golden_set, owner):
    client.force_login(owner)
    response = client.post(url("coverage_pool"), {"depth": "0", "strategy": "depth"}, follow=True)
    assert "Not pooled: depth" in response.content.decode()
    assert not Pool.objects.exists()


def test_pooling_with_nothing_flagged_says_so(client, golden_set, owner):
    evaluation_settings_update(golden_set=golden_set, user=owner, min_queries_per_slice=1, alert_slice_floor=0.0, judged_floor=0.0)
    client.force_login(owner)
    response = client.post(url("coverage_pool"), {"depth": "5", "strategy": "depth"}, follow=True)
    assert "is under its targets: nothing to pool" in response.content.decode()
    assert not Pool.objects.exists()


# --- cost -----------------------------------------------------------------------------------


def _render_queries(client, slug: str) -> int:
    # The scoring inputs of a version are kept per process: start cold, the worst case.
    scoring_inputs.forget()
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url("coverage", slug)).status_code == 200
    return len(captured.captured_queries)


# Session, user, the set, the caller's roles, the version, the settings (read three times:
# here and by the evaluation's selectors), the labels, the version's queries (2) and pages,
# stale labels, the latest evaluations, their scores and completeness, the canaries, the
# runs and their stored canary ranks, the version numbers, the set's pools (the pool
# form's choices), the canaries and the dated pages the canary suggestions read: 23 on a cold start.
COVERAGE_QUERY_BOUND = 23


def test_the_page_costs_a_bounded_number_of_queries_whatever_the_size_of_the_set(client, owner, django_assert_max_num_queries):
    for slug, queries, values in (("small", 12, 2), ("large", 240, 25)):
        golden_set = make_sliced_set(slug, queries=queries, langs=values, doc_types=values, manager=owner)
        for n in (1, 2, 3):
            canary_add(
                golden_set=golden_set,
                query=Query.objects.get(golden_set=golden_set, query_id=f"q{n}"),
                page=Page.objects.get(corpus=golden_set.corpus, doc_id=f"d{n}a"),
            )
        evaluation_compute(run=golden_set.runs.get(), version=golden_set.latest_version())  # stores the canaries' ranks
    client.force_login(owner)
    small = _render_queries(client, "small")
    large = _render_queries(client, "large")
    assert small == large
    scoring_inputs.forget()
    with django_assert_max_num_queries(COVERAGE_QUERY_BOUND):
        response = client.get(url("coverage", "large"))
    report = response.context["report"]
    assert len(report.slices) == 25 + 25 + 2 and len(report.canary_rows) == 3


# --- the demo -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(request, django_db_setup, django_db_blocker):
    """The demo with its runs scored, loaded once for the module. Its dates are moved to
    today, so that the new runbooks are in the 0-30d bucket of the versions published now."""

    def build():
        result = demo_golden_set_load(seed=DEFAULT_SEED)
        demo_runs_load(golden_set=result.golden_set, seed=DEFAULT_SEED)
        return result

    yield from kept_for_the_module(request, django_db_blocker, build)


@pytest.mark.whole_system
def test_on_the_demo_the_new_pages_are_flagged_with_the_engines_figures(demo, client):
    manager = demo.golden_set.memberships.get(role=Membership.Role.MANAGER).user
    client.force_login(manager)
    response = client.get(url("coverage", demo.golden_set.slug))
    report = response.context["report"]
    version = demo.versions[-1]
    assert report.version == version
    new = next(one for one in report.slices if one.name == "page:age=0-30d")
    assert new.flagged
    body = response.content.decode()
    row = row_html(body, "page:age=0-30d")
    assert "flagged" in row

    # Every figure of every slice is the one the engine stored for the same (run, version).
    assert [r.run.name for r in report.runs] == ["bm25 first stage", "hybrid-2026-11 first stage", "hybrid-2026-11 reranked"]
    first, final = f"recall@{version.k_first}", f"recall@{version.k_final}"
    for one in [report.overall, *report.slices]:
        for run, figures in zip(report.runs, one.runs):
            scores = {s.metric: s for s in Score.objects.filter(evaluation=run.evaluation, slice=one.name, metric__in=[first, final])}
            assert figures.recall_first == scores[first].value and figures.recall_final == scores[final].value
            assert one.averaged == scores[first].queries_averaged
            if one.kind != "page":
                completeness = Completeness.objects.get(evaluation=run.evaluation, slice=one.name)
                assert figures.judged_final == completeness.judged_at_k_final

    # The seed's story: the latest hybrid first stage finds about 0.41 of the new pages.
    hybrid = report.runs[1]
    recall_new = Score.objects.get(evaluation=hybrid.evaluation, slice="page:age=0-30d", metric=first).value
    assert recall_new < 0.6 and f"{recall_new:.3f}" in row
    assert f"{first} of hybrid-2026-11 first stage is {recall_new:.3f}, under the recall floor of 0.75" in new.flags
    assert report.overall.runs[1].recall_first > 0.85


@pytest.mark.whole_system
def test_on_the_demo_relevant_pages_per_query_match_the_labels(demo, db):
    version = demo.versions[-1]
    report = coverage_report(demo.golden_set, version)
    de = next(one for one in report.slices if one.name == "query:lang=de")
    per_query = {}
    for query_id, grade in VersionLabel.objects.filter(version=version, query__metadata__lang="de").values_list("query_id", "grade"):
        per_query[query_id] = per_query.get(query_id, 0) + (grade >= version.relevance_threshold)
    counts = sorted(per_query.values())
    assert de.queries == len(counts) and de.relevant_min == counts[0]
    assert de.judged_pairs == VersionLabel.objects.filter(version=version, query__metadata__lang="de").count()
    assert Judgment.objects.filter(query__golden_set=demo.golden_set).exists()
