"""The completeness page: pools and their progress, Judged@k per run and slice,
leave-one-run-out, the sample estimate and the found-against-judged chart; and the
manager's forms that build or extend a pool and draw a sample.

Two systems answer four queries (k_final = 2, k_first = 4), as in
tests/evaluation/reports/test_completeness_pages.py: "judged" puts only labelled pages in its top 2,
"thin run" one unlabelled page (u) in each. Pooling both at depth 2 makes the four u pages
tasks; below it, the w pages "thin run" ranks 4th are unjudged and not tasks: a sample's
population.
"""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from evaluation.models import Run
from evaluation.services import evaluation_compute, run_import
from goldenset.model_labels import model_labels_import, prompt_hash_of
from goldenset.models import Membership
from goldenset.services import judgment_record, membership_grant, version_publish
from labeling.completeness.selectors import completeness_estimate, pools_judging
from labeling.completeness.services import completeness_sample_draw
from labeling.models import CompletenessSample, JudgingTask, Pool, PoolJob, PoolRun
from labeling.pools.selectors import pool_progress, pool_queue
from labeling.pools.services import pool_build, pool_task_judged
from lib.formats import ModelLabelLine
from tests.support import factories

SLUG = "judging"
QUERIES = ["q1", "q2", "q3", "q4"]
QRELS = {}
for n, query_id in enumerate(QUERIES, start=1):
    QRELS[(query_id, f"r{n}")] = 2
    QRELS[(query_id, f"s{n}")] = 1
    QRELS[(query_id, f"t{n}")] = 1
    QRELS[(query_id, f"z{n}")] = 0
JUDGED = {q: [f"r{n}", f"z{n}", f"s{n}", f"u{n}"] for n, q in enumerate(QUERIES, start=1)}
THIN = {q: [f"r{n}", f"u{n}", f"t{n}", f"w{n}"] for n, q in enumerate(QUERIES, start=1)}
EXTRA = {q: [f"v{n}", f"u{n}"] for n, q in enumerate(QUERIES, start=1)}


def lines(ranking):
    return [f"{q} Q0 {doc} {rank} {10 - rank} t\n" for q, docs in ranking.items() for rank, doc in enumerate(docs, start=1)]


def judge(task, grade: int, annotator):
    """What the annotator queue does: record the judgment, then close the task."""
    judgment_record(query=task.query, page=task.page, grade=grade, annotator=annotator)
    return pool_task_judged(task=task, grade=grade)


# The judging set, also of test_pool_summaries (which takes this module's golden_set fixture).
JUDGING_SET = pytest.mark.golden_set(
    SLUG,
    manager="owner",
    qrels=QRELS,
    pages=factories.pages(*(f"{prefix}{n}" for prefix in "rsztuwv" for n in range(1, 5))),
    queries=factories.queries(*QUERIES, lang="en"),
    k_first=4,
    k_final=2,
    query_slice_fields=["lang"],
    page_slice_fields=[],
)
pytestmark = [pytest.mark.django_db, JUDGING_SET]


@pytest.fixture
def golden_set(golden_set):
    run_import(golden_set=golden_set, lines=lines(JUDGED), source_name="j.run", system="judged", stage="first_stage", name="judged")
    run_import(golden_set=golden_set, lines=lines(THIN), source_name="t.run", system="thin", stage="reranked", name="thin run")
    version = version_publish(golden_set=golden_set)
    for run in Run.objects.filter(golden_set=golden_set):
        evaluation_compute(run=run, version=version)
    return golden_set


@pytest.fixture
def pool(golden_set, owner):
    """Both runs at depth 2 (the four u pages), two of them judged, one relevant; and a
    sample of three w pages, two judged, one relevant."""
    pool = pool_build(golden_set=golden_set, runs=list(Run.objects.order_by("name")), depth=2, strategy="depth", budget=3).pool
    judge(pool_queue(pool).first(), 2, owner)
    judge(pool_queue(pool).first(), 0, owner)
    sample = completeness_sample_draw(pool=pool, size=3, seed=4).sample
    for task, grade in zip(JudgingTask.objects.filter(sample=sample).select_related("query__golden_set", "page").order_by("id"), [1, 0]):
        judgment_record(query=task.query, page=task.page, grade=grade, annotator=owner)
    return pool


def url() -> str:
    return reverse("completeness", kwargs={"slug": SLUG})


def page(client, user) -> str:
    client.force_login(user)
    response = client.get(url())
    assert response.status_code == 200
    return response.content.decode()


def cell(body: str, row_id: str, css: str) -> str:
    row = body[body.index(f'<tr id="{row_id}">') :]
    row = row[: row.index("</tr>")]
    return re.search(rf'<td class="[^"]*\b{css}\b[^"]*"[^>]*>(.*?)</td>', row, re.S).group(1).strip()


def run_id(name: str) -> int:
    return Run.objects.get(name=name).id


# --- what the page shows ------------------------------------------------------------------------


def test_the_pool_figures_on_the_page_are_the_selectors(client, pool, owner):
    body = page(client, owner)
    progress = pool_progress(pool)
    row = f"pool-{pool.pk}"
    assert (progress.open, progress.done, progress.queued, progress.skipped, progress.relevant_found) == (2, 2, 2, 0, 1)
    assert cell(body, row, "pairs") == str(pool.pair_count) == "4"
    assert cell(body, row, "done") == str(progress.done)
    assert cell(body, row, "open") == str(progress.open)
    assert cell(body, row, "queued") == str(progress.queued)
    assert cell(body, row, "skipped") == str(progress.skipped)
    assert cell(body, row, "relevant") == str(progress.relevant_found)
    # A budget of 3 with 2 judged leaves room for one of the two open tasks.
    assert progress.left_out_by_budget == 1
    assert '3 judgments; <span class="left-out">1</span> open pair left out' in cell(body, row, "budget")
    assert "judged (2), thin run (2)" in body
    # Two judgments within the last day: 2 / 24 an hour; overall, 2 over the seconds between them.
    assert cell(body, row, "rate-recent") == "0.1"
    assert re.search(r'<span class="figure" id="pool-size">4</span>', body)
    assert re.search(r'<span class="figure" id="judged">2</span>', body) and re.search(
        r'<span class="figure" id="remaining">2</span>', body
    )
    assert "over the last 24 hours" in body and "from the first judgment to the last" in body


def test_judgments_per_hour_are_counted_from_done_at(client, pool, owner):
    now = timezone.now()
    first, second = JudgingTask.objects.filter(pool=pool, status="done").order_by("id")
    JudgingTask.objects.filter(pk=first.pk).update(done_at=now - timedelta(hours=30))
    JudgingTask.objects.filter(pk=second.pk).update(done_at=now - timedelta(hours=5))
    judging = pools_judging([pool], now=now)[pool.pk]
    assert judging.recent == 1 and judging.per_hour_recent == pytest.approx(1 / 24)
    assert judging.per_hour_overall == pytest.approx(2 / 25)  # two tasks in the 25 hours from the first to the last
    body = page(client, owner)
    assert cell(body, f"pool-{pool.pk}", "rate-recent") == "0.0" and cell(body, f"pool-{pool.pk}", "rate-overall") == "0.1"
    # A burst of judgments within the hour counts over one hour, not extrapolated.
    JudgingTask.objects.filter(pk=first.pk).update(done_at=now - timedelta(seconds=30))
    JudgingTask.objects.filter(pk=second.pk).update(done_at=now)
    assert pools_judging([pool], now=now)[pool.pk].per_hour_overall == 2.0


def test_the_page_shows_judged_at_k_per_run_and_slice_and_flags_the_run_to_pool(client, pool, owner):
    body = page(client, owner)
    runs = body[body.index('<table class="grid compact judged-runs">') :]
    runs = runs[: runs.index("</table>")]
    thin = next(row for row in runs.split("<tr") if ">thin run</a>" in row)
    judged = next(row for row in runs.split("<tr") if ">judged</a>" in row)
    assert 'title="Judged@2 on v1">0.500</td>' in thin and 'class="unreliable"' in thin
    assert 'title="Judged@2 on v1">1.000</td>' in judged and 'title="Judged@4 on v1">0.750</td>' in judged
    assert f"pool {pool.pk} (depth 2)" in thin
    # Said once above the table, the run behind the fold; the row carries the mark.
    assert "1 of 2 runs has Judged@2 under 0.90 on v1: its scores are unreliable" in body
    assert '>thin run</a>: <span class="unreliable-note">Judged@2 = 0.50 &lt; 0.90 on v1: scores are unreliable; <a href=' in body
    assert 'class="unreliable-mark" title="Judged@2 = 0.50 &lt; 0.90 on v1: scores are unreliable"' in thin
    assert "unreliable-mark" not in judged
    slices = body[body.index('<table class="grid compact judged-slices">') :]
    assert "<td>queries lang = en</td>" in slices and "1.000 / 0.750" in slices and "0.500 / 0.500" in slices


def test_the_page_shows_leave_one_run_out(client, pool, owner):
    body = page(client, owner)
    table = body[body.index('<table class="grid compact loro">') :]
    table = table[: table.index("</table>")]
    judged = next(row for row in table.split("<tr") if ">judged</a>" in row)
    cells = re.findall(r'<td class="num">([^<]+)</td>', judged)
    # recall@4 from 2/3 to 1/2 without the s pages only "judged" found.
    assert cells[:3] == ["0.667", "0.500", "-16.7"] and cells[6] == "4"
    assert "1 run of other systems, top 100" in judged


def test_the_page_shows_the_sample_estimate_with_its_interval(client, pool, owner):
    body = page(client, owner)
    sample = CompletenessSample.objects.get()
    estimate = completeness_estimate(sample)
    row = f"sample-{sample.pk}"
    assert (estimate.population, estimate.size, estimate.judged, estimate.relevant) == (4, 3, 2, 1)
    assert (cell(body, row, "population"), cell(body, row, "size"), cell(body, row, "judged"), cell(body, row, "relevant")) == (
        "4",
        "3",
        "2",
        "1",
    )
    low, high = estimate.interval
    assert cell(body, row, "estimate") == f"{round(estimate.estimate)} ({round(low)}–{round(high)})"
    share_low, share_high = estimate.share_interval
    assert cell(body, row, "share") == f"0.500 ({share_low:.3f}–{share_high:.3f})"
    assert "95% Wilson score interval" in body and "2 of 3 judged so far" in body


def test_the_page_draws_relevant_pages_found_against_judgments_made(client, pool, owner):
    body = page(client, owner)
    assert '<svg class="chart-svg"' in body and "Relevant pages found against judgments made, per pool" in body
    assert f"pool {pool.pk}: 1 relevant page found in the first 2 judgments" in body
    assert "judgments made in the pool" in body and f"pool {pool.pk} (depth, depth 2)" in body
    chart = body[body.index('<svg class="chart-svg"') : body.index("</svg>")]
    assert chart.count("<polyline") == 1 and chart.count("<circle") == 3  # (0, 0), (1, 1), (2, 1)


def test_a_set_without_pools_or_versions_says_so(client, owner):
    factories.golden_set("bare", manager=owner)
    client.force_login(owner)
    body = client.get(reverse("completeness", kwargs={"slug": "bare"})).content.decode()
    assert "No pool yet." in body and "No completeness sample yet." in body and "No run yet." in body


def test_the_golden_set_and_results_pages_link_here(client, pool, owner):
    client.force_login(owner)
    for name in ("golden_set", "results"):
        assert f'href="{url()}"' in client.get(reverse(name, kwargs={"slug": SLUG})).content.decode(), name


# --- the forms --------------------------------------------------------------------------------


def post(client, **data):
    """POST the page's form, then run what the request left for its commit (the job's
    task, in-process in the tests), as a real request's commit would: the test's own
    transaction commits nothing."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(url(), data)


def test_a_manager_builds_a_pool_from_the_form_and_sees_its_summary(client, pool, owner):
    client.force_login(owner)
    extra = run_import(
        golden_set=pool.golden_set, lines=lines(EXTRA), source_name="x.run", system="extra", stage="first_stage", name="extra"
    )
    response = post(client, form="pool", pool="", runs=[extra.pk], depth="2", strategy="mtf", budget="10")
    assert response.status_code == 302 and response["Location"] == url() + "#jobs"
    built = Pool.objects.exclude(pk=pool.pk).get()
    assert (built.strategy, built.depth, built.budget, built.created_by, built.pair_count) == ("mtf", 2, 10, owner, 4)
    job = PoolJob.objects.get()
    assert (job.kind, job.status, job.created_by, job.arguments) == (
        "build",
        "done",
        owner,
        {"runs": [extra.pk], "depth": 2, "strategy": "mtf", "budget": 10},
    )
    body = client.get(url()).content.decode()
    assert f'id="job-{job.pk}"' in body and 'Build a pool</strong> · <span class="status">Done' in body
    assert '<p class="hint asked">runs extra · depth 2 · strategy mtf · budget 10</p>' in body
    assert f"pool {built.pk} of {SLUG}: strategy mtf, runs extra (depth 2)" in body
    assert "pairs to judge added to the pool: 4" in body and "already in a pool of the set (skipped): 4" in body
    assert "hx-trigger" not in body  # nothing left to follow


def test_a_manager_builds_a_model_first_pool_from_the_form_with_the_model_labels_chosen(client, pool, owner):
    records = [ModelLabelLine(1, "q1", "v1", 2, 0.8), ModelLabelLine(2, "q2", "u2", 1, None)]
    model_labels_import(golden_set=pool.golden_set, model="judge 7b", records=records, prompt_text="grade it")
    digest = prompt_hash_of("grade it")
    client.force_login(owner)
    assert (
        f'<option value="{digest} judge 7b">judge 7b, prompt {digest[:12]} (2 model labels)</option>' in client.get(url()).content.decode()
    )
    extra = run_import(
        golden_set=pool.golden_set, lines=lines(EXTRA), source_name="x.run", system="extra", stage="first_stage", name="extra"
    )
    response = post(client, form="pool", pool="", runs=[extra.pk], depth="2", strategy="model_first", model_labels=f"{digest} judge 7b")
    assert response.status_code == 302
    built = Pool.objects.exclude(pk=pool.pk).get()
    assert (built.strategy, built.strategy_state) == ("model_first", {"model": "judge 7b", "prompt_hash": digest})
    assert f"strategy model_first · model labels of judge 7b, prompt {digest[:12]}" in client.get(url()).content.decode()


def test_the_pool_form_refuses_model_first_without_model_labels_and_writes_nothing(client, pool, owner):
    client.force_login(owner)
    response = post(client, form="pool", pool="", runs=[run_id("judged")], depth="3", strategy="model_first")
    assert response.status_code == 400 and "orders by model labels: choose the model" in response.content.decode()
    assert Pool.objects.count() == 1


def test_a_manager_extends_a_pool_from_the_form(client, pool, owner):
    client.force_login(owner)
    extra = run_import(
        golden_set=pool.golden_set, lines=lines(EXTRA), source_name="x.run", system="extra", stage="first_stage", name="extra"
    )
    response = post(client, form="pool", pool=str(pool.pk), runs=[extra.pk], depth="", strategy="depth")
    assert response.status_code == 302
    assert list(PoolRun.objects.filter(pool=pool).values_list("run__name", "depth")) == [("judged", 2), ("thin run", 2), ("extra", 2)]
    pool.refresh_from_db()
    assert pool.pair_count == 8
    assert "pairs to judge added to the pool: 4" in client.get(url()).content.decode()


@pytest.mark.parametrize(
    "data, message",
    [
        ({"pool": "", "depth": "", "strategy": "depth"}, "a new pool needs a depth"),
        ({"pool": "", "depth": "0", "strategy": "depth"}, "depth must be a whole number of at least 1, got 0"),
        (
            {"pool": "POOL", "depth": "", "strategy": "depth", "budget": "4"},
            "a budget is set when a pool is built; pool POOL keeps its own",
        ),
        ({"pool": "POOL", "depth": "2", "strategy": "depth"}, "nothing to add to pool POOL at depth 2"),
        ({"pool": "", "depth": "2", "strategy": "depth", "runs": []}, "choose at least one run"),
    ],
)
def test_the_pool_form_shows_what_it_refuses_and_writes_nothing(client, pool, owner, data, message):
    client.force_login(owner)
    data = {key: (value.replace("POOL", str(pool.pk)) if isinstance(value, str) else value) for key, value in data.items()}
    data.setdefault("runs", [run_id("judged")])
    before = (Pool.objects.count(), JudgingTask.objects.count(), PoolRun.objects.count())
    response = post(client, form="pool", **data)
    assert response.status_code == 400
    assert message.replace("POOL", str(pool.pk)) in response.content.decode()
    assert (Pool.objects.count(), JudgingTask.objects.count(), PoolRun.objects.count()) == before


def test_the_pool_form_lists_the_problems_a_refusal_names(client, pool, owner):
    client.force_login(owner)
    body = post(client, form="pool", pool=str(pool.pk), runs=[run_id("judged")], depth="2", strategy="depth").content.decode()
    assert "run &#x27;judged&#x27; is already pooled at depth 2" in body
    # The runs the manager ticked stay ticked.
    assert f'value="{run_id("judged")}" id="run-{run_id("judged")}" checked' in body


def test_a_manager_draws_a_sample_from_the_form(client, pool, owner):
    client.force_login(owner)
    JudgingTask.objects.filter(kind="sample").delete()
    CompletenessSample.objects.all().delete()
    response = post(client, form="sample", pool=str(pool.pk), size="2", depth_to="4", seed="8")
    assert response.status_code == 302 and response["Location"] == url() + "#jobs"
    sample = CompletenessSample.objects.get()
    # The fixture's sample judged two of the four w pages: they are labelled now.
    assert (sample.size, sample.population, sample.seed, sample.created_by) == (2, 2, 8, owner)
    assert "drawn uniformly at random: 2 (seed 8)" in client.get(url()).content.decode()


def test_the_sample_form_shows_what_it_refuses(client, pool, owner):
    client.force_login(owner)
    response = post(client, form="sample", pool=str(pool.pk), size="3", depth_to="2")
    assert response.status_code == 400 and "depth_to 2 is not below pool" in response.content.decode()
    assert not PoolJob.objects.exists()
    # The population is known once the runs are read: the worker refuses, the job says why.
    assert post(client, form="sample", pool=str(pool.pk), size="9", depth_to="4").status_code == 302
    job = PoolJob.objects.get()
    assert (job.status, job.lines) == ("failed", []) and job.error.startswith("size 9 is over the population")
    assert f"Nothing written: {job.error}" in client.get(url()).content.decode()
    assert CompletenessSample.objects.count() == 1


# --- permissions ----------------------------------------------------------------------------------


def build_post(client):
    return post(client, form="pool", pool="", runs=[run_id("judged")], depth="3", strategy="depth")


def test_anonymous_visitors_are_sent_to_log_in(client, golden_set):
    for response in (client.get(url()), build_post(client)):
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_a_stranger_and_an_annotator_get_not_found(client, golden_set, stranger, teammate):
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    for user in (stranger, teammate):
        client.force_login(user)
        assert client.get(url()).status_code == 404
        assert build_post(client).status_code == 404
    assert not Pool.objects.exists()


def test_an_adjudicator_reads_but_cannot_build(client, pool, teammate):
    membership_grant(user=teammate, golden_set=pool.golden_set, role=Membership.Role.ADJUDICATOR)
    body = page(client, teammate)
    assert f'<tr id="pool-{pool.pk}">' in body
    assert "Build or extend a pool" not in body and "Draw a completeness sample" not in body
    assert build_post(client).status_code == 404
    assert Pool.objects.count() == 1


def test_managers_and_staff_can_read_and_build(client, golden_set, owner, make_user):
    for user in (owner, make_user("staff", is_staff=True)):
        assert "Build or extend a pool" in page(client, user)
    assert build_post(client).status_code == 302
    assert Pool.objects.count() == 1


def test_an_unknown_form_is_a_bad_request(client, golden_set, owner):
    client.force_login(owner)
    assert post(client, form="other").status_code == 400


# --- cost -------------------------------------------------------------------------------------


def test_the_page_stays_within_its_query_budget_however_many_pools_and_tasks(client, pool, owner, django_assert_max_num_queries):
    client.force_login(owner)
    with django_assert_max_num_queries(18):
        assert client.get(url()).status_code == 200
    with CaptureQueriesContext(connection) as first:
        client.get(url())

    extra = run_import(
        golden_set=pool.golden_set, lines=lines(EXTRA), source_name="x.run", system="extra", stage="first_stage", name="extra"
    )
    other = pool_build(golden_set=pool.golden_set, runs=[extra], depth=2, strategy="bandit").pool
    judge(pool_queue(other).first(), 1, owner)
    judge(pool_queue(pool).first(), 1, owner)
    completeness_sample_draw(pool=pool, size=1, depth_to=4, seed=1)
    with CaptureQueriesContext(connection) as second:
        client.get(url())
    assert len(second) == len(first)
