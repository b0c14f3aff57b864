"""Pools built and extended through the services: the union of the runs' tops, less what
is already labelled or already in a pool, kept per query, its windows written as judging
tasks in the strategy's order."""

import threading
from collections import defaultdict
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, OperationalError, connection, connections, transaction
from django.db.models import Count
from django.utils import timezone

from evaluation.services import run_import
from goldenset.models import GoldenSet, Judgment, Page, Query
from goldenset.services import golden_set_import_beir, judgment_record, query_retire
from labeling.models import JudgingTask, Pool, PoolQuery, PoolRun
from labeling.pools import services, task_writes, union
from labeling.pools import strategies as pooling
from labeling.pools.selectors import pool_pairs, pool_progress, pool_queue
from labeling.pools.services import pool_build, pool_extend, pool_task_judged, runs_by_name
from lib.errors import GoldsetError
from tests.labeling.pools.conftest import SMALL_SET
from tests.support import factories

pytestmark = [pytest.mark.django_db, SMALL_SET]

# golden_set: SMALL_SET made by the shared fixture; run_a and run_b: tests/labeling/pools/conftest.py.

CRANFIELD_RUNS = ["stevinjs_custom_bm25", "stevinjs_english_bm25", "stevinjs_standard_bm25", "stevinjs_standard_classic"]


def task_pairs(pool) -> set[tuple[str, str]]:
    """The pool's pairs as (query id, doc id), tasks yet or not."""
    pairs = pool_pairs(pool)
    query_ids = dict(Query.objects.filter(pk__in=pairs.query_pks.tolist()).values_list("pk", "query_id"))
    doc_ids = dict(Page.objects.filter(pk__in=pairs.page_pks.tolist()).values_list("pk", "doc_id"))
    return {(query_ids[q], doc_ids[p]) for q, p in zip(pairs.query_pks.tolist(), pairs.page_pks.tolist())}


def queue(pool) -> list[tuple[str, str]]:
    return list(pool_queue(pool).values_list("query__query_id", "page__doc_id"))


# --- the union ----------------------------------------------------------------------


def test_a_pool_is_the_union_of_the_runs_tops_less_labelled_pairs(golden_set, run_a, run_b):
    result = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=2, strategy="depth")
    assert task_pairs(result.pool) == {
        ("q1", "d2"),
        ("q1", "d5"),  # q1-d1 is labelled
        ("q2", "d4"),
        ("q2", "d7"),  # q2-d3 is labelled (not relevant counts as labelled)
        ("q3", "d6"),
        ("q3", "d7"),
    }
    assert (result.candidate_pairs, result.already_labelled, result.new_tasks) == (8, 2, 6)
    assert {q: (c.candidates, c.already_labelled, c.new_tasks) for q, c in result.per_query.items()} == {
        "q1": (3, 1, 2),
        "q2": (3, 1, 2),
        "q3": (2, 0, 2),
    }


def test_the_pool_records_its_runs_with_their_depth_and_which_runs_retrieved_each_task(golden_set, run_a, run_b):
    pool = pool_build(golden_set=golden_set, runs=[run_b, run_a], depth=3, strategy="depth").pool
    assert list(PoolRun.objects.filter(pool=pool).values_list("run__name", "depth", "ordinal")) == [("b", 3, 0), ("a", 3, 1)]
    ranks = {
        (q, d): JudgingTask.objects.get(pool=pool, query__query_id=q, page__doc_id=d).ranks(2)
        for q, d in [("q1", "d2"), ("q1", "d5"), ("q1", "d3")]
    }
    assert ranks == {("q1", "d2"): [2, 2], ("q1", "d5"): [1, 0], ("q1", "d3"): [0, 3]}
    arrays = pool_pairs(pool)
    assert arrays.ranks.shape == (len(arrays), 2) and len(arrays) == pool.pair_count == 10
    assert (arrays.task_ids > 0).all()  # three queries: the windows hold every pair


def test_pages_outside_the_corpus_cannot_be_judged_and_are_counted(golden_set):
    run = factories.run(golden_set, "ext", {"q1": ["elsewhere#1", "d2"], "q2": ["elsewhere#1", "other/2"]})
    result = pool_build(golden_set=golden_set, runs=[run], depth=5, strategy="depth")
    assert task_pairs(result.pool) == {("q1", "d2")}
    assert (result.candidate_pairs, result.outside_corpus, result.new_tasks) == (4, 3, 1)


def test_the_depth_strategy_queues_rank_by_rank_round_robin_over_queries(golden_set, run_a, run_b):
    pool = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="depth").pool
    # q1-d1 and q2-d3 are labelled; among equal ranks, run a (listed first) goes first.
    assert queue(pool) == [
        ("q1", "d5"),
        ("q2", "d7"),
        ("q3", "d6"),  # rank 1
        ("q1", "d2"),
        ("q2", "d4"),
        ("q3", "d7"),  # rank 2
        ("q1", "d3"),
        ("q2", "d5"),
        ("q3", "d8"),  # rank 3
        ("q1", "d6"),  # rank 3 of b
    ]


def forget(pool) -> None:
    """Delete a pool and its tasks, so that its pairs can be pooled again."""
    JudgingTask.objects.filter(pool=pool).delete()
    Pool.objects.filter(pk=pool.pk).delete()


def test_the_portable_insert_writes_the_same_pairs_and_tasks_as_copy(golden_set, run_a, run_b, monkeypatch):
    monkeypatch.setattr(services, "QUEUE_FLOOR", 1)  # windows of two: some pairs are no task yet
    monkeypatch.setattr(task_writes, "_BULK_UPDATE_LIMIT", 0)  # every task through the binary COPY, on PostgreSQL
    copied = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="mtf").pool
    rows = lambda pool: sorted(  # noqa: E731
        JudgingTask.objects.filter(pool=pool).values_list(
            "query_id", "page_id", "kind", "position", "best_rank", "run_ranks", "status", "judgments_required"
        )
    )
    pairs = lambda pool: sorted(  # noqa: E731
        (q, bytes(pages), bytes(ranks), runs)
        for q, pages, ranks, runs in PoolQuery.objects.filter(pool=pool).values_list("query_id", "page_ids", "run_ranks", "runs")
    )
    expected = [(q, p, k, pos, best, bytes(blob), s, j) for q, p, k, pos, best, blob, s, j in rows(copied)]
    expected_pairs = pairs(copied)
    assert len(expected) == 6 and len(expected_pairs) == 3 and copied.pair_count == 10
    forget(copied)
    # Then a few tasks at once, as a judgment makes them: the ORM's INSERT, as on SQLite;
    # and the pairs' rows written by lib.bulk's text path, as on SQLite.
    monkeypatch.setattr(task_writes, "_BULK_UPDATE_LIMIT", 1000)
    monkeypatch.setattr(connection, "vendor", "portable")  # lib.bulk keys on the vendor
    inserted = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="mtf").pool
    monkeypatch.undo()
    assert [(q, p, k, pos, best, bytes(blob), s, j) for q, p, k, pos, best, blob, s, j in rows(inserted)] == expected
    assert pairs(inserted) == expected_pairs


# --- the Cranfield acceptance ---------------------------------------------------------


def top_pages_from_the_run_files(folder: Path, names: list[str], depth: int) -> dict[str, set[str]]:
    """Each query's union of the runs' top `depth`, read straight from the files: entries
    by score descending, ties by doc id descending (trec_eval's order)."""
    union: dict[str, set[str]] = defaultdict(set)
    for name in names:
        entries: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for line in (folder / f"{name}.run").read_text(encoding="utf-8").splitlines():
            query_id, _, doc_id, _, score, _ = line.split()
            entries[query_id].append((doc_id, float(score)))
        for query_id, ranked in entries.items():
            ranked.sort(key=lambda entry: entry[0], reverse=True)
            ranked.sort(key=lambda entry: -entry[1])
            union[query_id].update(doc_id for doc_id, _ in ranked[:depth])
    return union


@pytest.mark.shared_data
def test_a_depth_10_pool_of_the_cranfield_runs_is_exactly_the_union_of_their_top_10s(shared_data):
    folder = shared_data / "cranfield"
    golden_set_import_beir(directory=folder, slug="cranfield")
    golden_set = GoldenSet.objects.get(slug="cranfield")
    runs = []
    for name in CRANFIELD_RUNS:
        with (folder / "runs" / f"{name}.run").open(encoding="utf-8") as lines:
            runs.append(
                run_import(golden_set=golden_set, lines=lines, source_name=f"{name}.run", system=name, stage="first_stage", name=name)
            )

    result = pool_build(golden_set=golden_set, runs=runs, depth=10, strategy="depth")

    union = top_pages_from_the_run_files(folder / "runs", CRANFIELD_RUNS, 10)
    labelled = {tuple(line.split("\t")[:2]) for line in (folder / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]}
    unjudged = {query_id: {d for d in docs if (query_id, d) not in labelled} for query_id, docs in union.items()}
    assert {q: c.candidates for q, c in result.per_query.items()} == {q: len(docs) for q, docs in union.items()}
    assert {q: c.new_tasks for q, c in result.per_query.items()} == {q: len(docs) for q, docs in unjudged.items()}
    written: dict[str, set[str]] = defaultdict(set)
    for query_id, doc_id in task_pairs(result.pool):
        written[query_id].add(doc_id)
    assert written == {q: docs for q, docs in unjudged.items() if docs}
    # Only the windows are tasks yet: three pairs a query (500 queued over 225 queries).
    assert result.pool.window == 3
    tasks_per_query = JudgingTask.objects.filter(pool=result.pool).values("query_id").annotate(n=Count("id"))
    assert all(row["n"] == min(3, len(unjudged[Query.objects.get(pk=row["query_id"]).query_id])) for row in tasks_per_query)
    assert result.candidate_pairs == sum(map(len, union.values())) == result.already_labelled + result.new_tasks


# --- incremental pooling ------------------------------------------------------------------


def judge(task, grade: int, annotator):
    """What the annotator queue does: record the judgment, then close the task."""
    judgment_record(query=task.query, page=task.page, grade=grade, annotator=annotator)
    return pool_task_judged(task=task, grade=grade)


def test_adding_a_run_later_adds_only_its_new_unjudged_pairs(golden_set, run_a, run_b, owner):
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=3, strategy="depth").pool
    before = task_pairs(pool)
    assert before == {("q1", "d2"), ("q1", "d3"), ("q2", "d4"), ("q2", "d5"), ("q3", "d6")}
    judge(pool_queue(pool).first(), 2, owner)  # q1-d2, now labelled and done

    result = pool_extend(pool=pool, runs=[run_b])

    assert task_pairs(pool) - before == {("q1", "d5"), ("q1", "d6"), ("q2", "d7"), ("q3", "d7"), ("q3", "d8")}
    assert (result.candidate_pairs, result.already_tasks, result.already_labelled, result.new_tasks) == (8, 2, 1, 5)
    # The tasks b also retrieved now say so, done or open.
    assert result.credited_tasks == 2
    ranks = lambda q, d: JudgingTask.objects.get(pool=pool, query__query_id=q, page__doc_id=d).ranks(2)  # noqa: E731
    assert (ranks("q1", "d2"), ranks("q3", "d6"), ranks("q1", "d5")) == ([2, 2], [1, 1], [0, 1])
    # New pages take their place in rank order: q1-d5 (rank 1 of b) comes before q1-d3.
    assert [d for q, d in queue(pool) if q == "q1"] == ["d5", "d3", "d6"]


def planned_tasks() -> int:
    """The judging tasks the database's planner counts, as its last ANALYZE found them."""
    table = JudgingTask._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [table])
        else:  # sqlite_stat1: each index's row count leads its stat
            cursor.execute("SELECT max(CAST(stat AS INTEGER)) FROM sqlite_stat1 WHERE tbl = %s", [table])
        return int(cursor.fetchone()[0] or 0)


def test_a_build_and_an_extension_leave_the_queue_counted_for_the_planner(golden_set, run_a, run_b):
    """The hand-out's look-ups are planned for the tasks a build or an extension wrote, not
    for the table as it was before (autovacuum counts it only later): planned for an empty
    queue, an annotator's move to a new query read far more than it needed
    (bench/judging_browser.py measures what that costs)."""
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=3, strategy="depth").pool
    assert planned_tasks() == JudgingTask.objects.count() == 5
    pool_extend(pool=pool, runs=[run_b])
    assert planned_tasks() == JudgingTask.objects.count() == 10


def test_pooling_a_run_deeper_adds_only_the_pages_below_its_old_depth(golden_set, run_a):
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=2, strategy="depth").pool
    result = pool_extend(pool=pool, runs=[run_a], depth=3)
    assert task_pairs(pool) == {("q1", "d2"), ("q1", "d3"), ("q2", "d4"), ("q2", "d5"), ("q3", "d6")}
    assert result.new_tasks == 2 and PoolRun.objects.get(pool=pool).depth == 3


def test_a_pool_extended_for_some_queries_takes_their_pairs_only_even_from_runs_it_holds(golden_set, run_a, run_b):
    q1, q2 = golden_set.queries.get(query_id="q1"), golden_set.queries.get(query_id="q2")
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=3, strategy="depth", queries=[q1]).pool
    assert task_pairs(pool) == {("q1", "d2"), ("q1", "d3")}
    # Run a at depth 3 is in the pool already, but not for q2: not refused.
    result = pool_extend(pool=pool, runs=[run_a, run_b], depth=2, queries=[q2])
    assert task_pairs(pool) == {("q1", "d2"), ("q1", "d3"), ("q2", "d4"), ("q2", "d7")}
    assert (result.new_tasks, result.unchosen_query_pairs, result.credited_tasks) == (2, 5, 0)  # q1-d2 (b) is not credited
    assert dict(PoolRun.objects.filter(pool=pool).values_list("run__name", "depth")) == {"a": 3, "b": 2}


def test_a_run_already_pooled_at_that_depth_is_refused(golden_set, run_a):
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=3, strategy="depth").pool
    with pytest.raises(GoldsetError) as caught:
        pool_extend(pool=pool, runs=[run_a], depth=2)
    assert caught.value.problems == ["run 'a' is already pooled at depth 3"]


def test_a_pair_already_a_task_of_another_pool_is_not_added_again(golden_set, run_a, run_b):
    first = pool_build(golden_set=golden_set, runs=[run_a], depth=2, strategy="depth").pool
    result = pool_build(golden_set=golden_set, runs=[run_b], depth=2, strategy="mtf")
    assert task_pairs(first) & task_pairs(result.pool) == set()
    assert result.already_tasks == 2  # q1-d2 and q3-d6
    assert JudgingTask.objects.count() == len(task_pairs(first)) + result.new_tasks


# --- judging, budgets and adaptive order ----------------------------------------------------


def test_a_budget_caps_judging_and_reports_what_it_leaves_out(golden_set, run_a, run_b, owner):
    result = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="depth", budget=4)
    assert (result.new_tasks, result.left_out_by_budget) == (10, 6)
    assert "budget 4 judgments: 6 open pair(s) will be left out" in "\n".join(result.lines())
    outcomes = [judge(pool_queue(result.pool).first(), 0, owner) for _ in range(4)]
    assert [outcome.unqueued_by_budget for outcome in outcomes] == [0, 0, 0, 6]
    progress = pool_progress(result.pool)
    assert (progress.open, progress.queued, progress.done, progress.left_out_by_budget) == (6, 0, 4, 6)


def test_tasks_added_to_a_pool_whose_budget_is_spent_are_not_queued_and_reported(golden_set, run_a, run_b, owner):
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=1, strategy="depth", budget=1).pool
    judge(pool_queue(pool).first(), 1, owner)
    result = pool_extend(pool=pool, runs=[run_b], depth=1)
    assert result.new_tasks == result.left_out_by_budget == 2  # q1-d5 and q2-d7; q3-d6 is a task already
    assert pool_queue(pool).count() == 0


def test_move_to_front_leaves_a_run_after_a_miss_and_stays_with_it_after_a_hit(golden_set, run_a, run_b, owner):
    pool = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="mtf").pool
    q1 = lambda: [d for q, d in queue(pool) if q == "q1"]  # noqa: E731
    assert q1() == ["d2", "d3", "d5", "d6"]  # down run a first
    outcome = judge(pool_queue(pool).get(query__query_id="q1", page__doc_id="d2"), 0, owner)
    assert q1() == ["d5", "d6", "d3"]  # a missed: b leads
    assert outcome.reordered_tasks == 3 and not outcome.relevant
    judge(pool_queue(pool).get(query__query_id="q1", page__doc_id="d5"), 3, owner)
    assert q1() == ["d6", "d3"]  # b hit: it keeps the lead


def test_an_adaptive_reorder_touches_only_the_judged_query_and_a_bounded_number_of_queries(
    golden_set, run_a, run_b, owner, django_assert_max_num_queries
):
    pool = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="bandit").pool
    others = set(JudgingTask.objects.filter(pool=pool).exclude(query__query_id="q1").values_list("id", "position"))
    task = pool_queue(pool).get(query__query_id="q1", page__doc_id="d2")
    with django_assert_max_num_queries(9):
        pool_task_judged(task=task, grade=0)
    assert set(JudgingTask.objects.filter(pool=pool).exclude(query__query_id="q1").values_list("id", "position")) == others


def test_a_task_is_closed_once_and_only_with_a_grade_on_the_scale(golden_set, run_a, owner):
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=2, strategy="mtf").pool
    task = pool_queue(pool).first()
    with pytest.raises(GoldsetError, match="grade 7 is not on the scale"):
        pool_task_judged(task=task, grade=7)
    judge(task, 1, owner)
    with pytest.raises(GoldsetError, match="is done, not open"):
        pool_task_judged(task=task, grade=1)


def test_only_a_window_of_each_query_is_queued_and_it_moves_on_with_each_judgment(golden_set, run_a, run_b, owner, monkeypatch):
    monkeypatch.setattr(services, "QUEUE_FLOOR", 1)  # the smallest window: two tasks a query
    result = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="depth")
    assert result.pool.window == 2 and "the next 2 pair(s) of each query" in "\n".join(result.lines())
    assert queue(result.pool) == [("q1", "d5"), ("q2", "d7"), ("q3", "d6"), ("q1", "d2"), ("q2", "d4"), ("q3", "d7")]
    outcome = judge(pool_queue(result.pool).first(), 0, owner)  # q1-d5
    assert outcome.reordered_tasks == 1  # q1-d3 joins the queue
    assert queue(result.pool) == [("q2", "d7"), ("q3", "d6"), ("q1", "d2"), ("q2", "d4"), ("q3", "d7"), ("q1", "d3")]
    assert pool_progress(result.pool).queued == 6


def test_an_extended_pool_queues_the_new_pages_in_their_place(golden_set, run_a, run_b, monkeypatch):
    monkeypatch.setattr(services, "QUEUE_FLOOR", 1)
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=3, strategy="depth").pool
    pool_extend(pool=pool, runs=[run_b])
    assert [d for q, d in queue(pool) if q == "q1"] == ["d5", "d2"]  # q1-d3 left the window for q1-d5
    assert JudgingTask.objects.get(pool=pool, query__query_id="q1", page__doc_id="d3").position is None


# --- pairs wait in the pool until their window reaches them -------------------------------


def test_pairs_beyond_the_window_become_tasks_when_the_window_reaches_them(golden_set, run_a, run_b, owner, monkeypatch):
    monkeypatch.setattr(services, "QUEUE_FLOOR", 1)  # windows of two
    pool = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="depth").pool
    pairs = pool_pairs(pool)
    assert pool.pair_count == len(pairs) == 10
    # Only the windows are tasks: two a query; q1's d3 and d6 wait in the pool.
    assert JudgingTask.objects.filter(pool=pool).count() == 6 == int((pairs.task_ids > 0).sum())
    assert not JudgingTask.objects.filter(pool=pool, query__query_id="q1", page__doc_id__in=["d3", "d6"]).exists()
    progress = pool_progress(pool)
    assert (progress.open, progress.queued, progress.done) == (10, 6, 0)

    judge(pool_queue(pool).get(query__query_id="q1", page__doc_id="d5"), 0, owner)
    made = JudgingTask.objects.get(pool=pool, query__query_id="q1", page__doc_id="d3")
    # The new task carries what its pair holds: each run's rank, the best of them.
    assert (made.status, made.ranks(2), made.best_rank) == ("open", [3, 0], 3)
    assert made.position is not None and made.golden_set_id == golden_set.pk
    assert (pool_progress(pool).open, pool_progress(pool).done) == (9, 1)


def test_a_run_added_later_is_credited_on_pairs_that_are_no_task_yet(golden_set, run_a, owner, monkeypatch):
    monkeypatch.setattr(services, "QUEUE_FLOOR", 1)
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=4, strategy="depth").pool
    assert not JudgingTask.objects.filter(pool=pool, query__query_id="q1", page__doc_id="d4").exists()  # q1: d2, d3 queued
    late = factories.run(golden_set, "late", {"q1": ["d4", "d8"]})
    result = pool_extend(pool=pool, runs=[late], depth=1)
    assert (result.credited_tasks, result.new_tasks) == (1, 0)
    pairs = pool_pairs(pool, [golden_set.queries.get(query_id="q1").pk])
    d4 = golden_set.corpus.pages.get(doc_id="d4").pk
    assert pairs.ranks[pairs.page_pks.tolist().index(d4)].tolist() == [4, 1]
    # Credited with rank 1 of the late run, q1-d4 now leads q1's window, as a task.
    assert [d for q, d in queue(pool) if q == "q1"] == ["d4", "d2"]
    assert JudgingTask.objects.get(pool=pool, query__query_id="q1", page__doc_id="d4").ranks(2) == [4, 1]


def test_pools_built_when_every_pair_was_a_task_get_their_pairs_from_their_tasks(golden_set, run_a, run_b):
    import importlib

    from django.apps import apps

    pool = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="depth").pool
    assert JudgingTask.objects.filter(pool=pool).count() == pool.pair_count  # small: every pair is in a window
    rows = lambda: sorted(  # noqa: E731
        (q, bytes(pages), bytes(ranks), runs)
        for q, pages, ranks, runs in PoolQuery.objects.filter(pool=pool).values_list("query_id", "page_ids", "run_ranks", "runs")
    )
    expected = rows()
    PoolQuery.objects.all().delete()
    importlib.import_module("labeling.migrations.0004_pool_query").pairs_from_tasks(apps, None)
    assert rows() == expected


# --- validation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"depth": 0}, "depth must be a whole number of at least 1, got 0"),
        ({"depth": 70_000}, "depth 70000 is over the most a pool stores (65535)"),
        ({"strategy": "random"}, "unknown strategy 'random'; choose one of depth, mtf, bandit, model_first"),
        ({"budget": 0}, "budget must be a whole number of at least 1 (or none), got 0"),
        ({"runs": []}, "a pool needs at least one run"),
    ],
)
def test_bad_pool_settings_are_refused_and_nothing_is_written(golden_set, run_a, options, message):
    arguments = {"golden_set": golden_set, "runs": [run_a], "depth": 2, "strategy": "depth", **options}
    with pytest.raises(GoldsetError) as caught:
        pool_build(**arguments)
    assert str(caught.value) == message
    assert not Pool.objects.exists() and not JudgingTask.objects.exists()


def test_runs_of_another_set_or_listed_twice_are_refused(golden_set, run_a):
    other = factories.golden_set("other")
    foreign = factories.run(other, "foreign", {"q1": ["d1"]})
    with pytest.raises(GoldsetError) as caught:
        pool_build(golden_set=golden_set, runs=[run_a, foreign, run_a], depth=2, strategy="depth")
    assert caught.value.problems == ["run 'foreign' belongs to another golden set, not 'tiny'", "run 'a' is listed twice"]
    assert not Pool.objects.exists()


def test_unknown_run_names_are_refused_with_the_names_the_set_has(golden_set, run_a, run_b):
    with pytest.raises(GoldsetError) as caught:
        runs_by_name(golden_set=golden_set, names=["a", "c"])
    assert str(caught.value).splitlines() == ["golden set 'tiny' has no run named 'c'", "  its runs: 'a', 'b'"]


# --- the command and the admin ----------------------------------------------------------


def test_build_pool_builds_and_summarises(golden_set, run_a, run_b, capsys):
    call_command("build_pool", "tiny", "--runs", "a", "b", "--depth", "3", "--strategy", "bandit", "--budget", "5", verbosity=0)
    out = capsys.readouterr().out
    pool = Pool.objects.get()
    assert (pool.strategy, pool.depth, pool.budget, pool.strategy_state) == ("bandit", 3, 5, {"discount": pooling.DEFAULT_DISCOUNT})
    assert "pairs to judge added to the pool: 10" in out and "budget 5 judgments: 5 open pair(s) will be left out" in out
    assert "judging order: bandit over runs" in out


def test_build_pool_extends_a_pool(golden_set, run_a, run_b, capsys):
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=3, strategy="depth").pool
    call_command("build_pool", "tiny", "--runs", "b", "--extend", str(pool.pk), verbosity=0)
    assert "pairs to judge added to the pool: 5" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["nope", "--runs", "a", "--depth", "2"], "no golden set 'nope'"),
        (["tiny", "--runs", "a", "zz", "--depth", "2"], "golden set 'tiny' has no run named 'zz'"),
        (["tiny", "--runs", "a"], "--depth is required for a new pool"),
        (["tiny", "--runs", "a", "--depth", "0"], "depth must be a whole number of at least 1, got 0"),
        (["tiny", "--runs", "a", "--extend", "999"], "golden set 'tiny' has no pool 999"),
    ],
)
def test_build_pool_explains_what_is_wrong(golden_set, run_a, arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("build_pool", *arguments, verbosity=0)


def test_the_admin_lists_pools_and_tasks_without_a_query_per_row(
    golden_set, run_a, run_b, make_user, client, django_assert_max_num_queries
):
    pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="mtf")
    client.force_login(make_user("admin", is_staff=True, is_superuser=True))
    assert client.get("/admin/labeling/pool/").status_code == 200
    with django_assert_max_num_queries(12):
        assert client.get("/admin/labeling/judgingtask/").status_code == 200
    task = JudgingTask.objects.first()
    assert client.get(f"/admin/labeling/judgingtask/{task.pk}/change/").status_code == 200


# --- edges ------------------------------------------------------------------------------


def test_retired_queries_are_left_out_and_counted(golden_set, run_a, run_b):
    query_retire(query=golden_set.queries.get(query_id="q3"))
    result = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=2, strategy="depth")
    assert {q for q, _ in task_pairs(result.pool)} == {"q1", "q2"}
    assert (result.retired_query_pairs, result.candidate_pairs, set(result.per_query)) == (2, 6, {"q1", "q2"})


def test_a_pool_of_chosen_queries_holds_their_pairs_only_and_counts_the_others(golden_set, run_a, run_b):
    chosen = [golden_set.queries.get(query_id="q2")]
    result = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=2, strategy="depth", queries=chosen)
    assert task_pairs(result.pool) == {("q2", "d4"), ("q2", "d7")}
    assert (result.candidate_pairs, result.unchosen_query_pairs, set(result.per_query)) == (3, 5, {"q2"})
    assert "pairs of queries outside the chosen ones (skipped): 5" in result.lines()


def test_queries_of_another_set_or_none_at_all_are_refused_and_nothing_is_written(golden_set, run_a):
    other = factories.golden_set("other", pages=factories.pages("x1"), queries=factories.queries("o1"), qrels={("o1", "x1"): 1})
    with pytest.raises(GoldsetError, match="'o1' are not of golden set 'tiny'"):
        pool_build(golden_set=golden_set, runs=[run_a], depth=2, strategy="depth", queries=list(other.queries.all()))
    with pytest.raises(GoldsetError, match="no query chosen"):
        pool_build(golden_set=golden_set, runs=[run_a], depth=2, strategy="depth", queries=[])
    assert not Pool.objects.exists() and not JudgingTask.objects.exists()


def test_the_union_is_the_same_when_its_keys_are_too_wide_to_pack(golden_set, run_a, run_b, monkeypatch):
    packed = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="mtf")
    rows = lambda pool: sorted(JudgingTask.objects.filter(pool=pool).values_list("query_id", "page_id", "position", "run_ranks"))  # noqa: E731
    expected = [(q, p, position, bytes(ranks)) for q, p, position, ranks in rows(packed.pool)]
    forget(packed.pool)
    monkeypatch.setattr(union, "PACK_LIMIT_BITS", 0)
    sorted_apart = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="mtf")
    assert [(q, p, position, bytes(ranks)) for q, p, position, ranks in rows(sorted_apart.pool)] == expected


def test_the_database_refuses_a_task_whose_page_is_in_another_corpus(golden_set, run_a):
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=1, strategy="depth").pool
    elsewhere = factories.golden_set("other").corpus.pages.get(doc_id="d1")
    with pytest.raises(IntegrityError), transaction.atomic():
        JudgingTask.objects.create(
            golden_set=golden_set,
            pool=pool,
            query=golden_set.queries.get(query_id="q1"),
            page=elsewhere,
            kind=JudgingTask.Kind.POOL,
            position=0,
        )


def test_the_database_refuses_to_move_a_task_to_another_page(golden_set, run_a):
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=2, strategy="depth").pool
    task = JudgingTask.objects.filter(pool=pool).first()
    with pytest.raises(IntegrityError), transaction.atomic():
        JudgingTask.objects.filter(pk=task.pk).update(page=golden_set.corpus.pages.get(doc_id="d8"))


def test_progress_counts_the_relevant_pages_found(golden_set, run_a, owner):
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=3, strategy="depth").pool
    judge(pool_queue(pool).first(), 2, owner)
    judge(pool_queue(pool).first(), 0, owner)
    progress = pool_progress(pool)
    assert (progress.total, progress.done, progress.relevant_found, progress.open) == (5, 2, 1, 3)


def test_the_database_refuses_a_lease_to_a_user_who_does_not_exist(golden_set, run_a, owner):
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=2, strategy="depth").pool
    task = JudgingTask.objects.filter(pool=pool).first()
    JudgingTask.objects.filter(pk=task.pk).update(leased_to=owner, lease_expires_at=timezone.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        JudgingTask.objects.filter(pk=task.pk).update(leased_to_id=owner.pk + 1000, lease_expires_at=timezone.now())


def test_deleting_a_pool_deletes_its_tasks_and_keeps_the_judgments(golden_set, run_a, owner):
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=2, strategy="depth").pool
    judge(pool_queue(pool).first(), 1, owner)
    judgments = Judgment.objects.count()
    pool.delete()
    assert not JudgingTask.objects.exists() and Judgment.objects.count() == judgments


def test_a_lease_ends_when_its_user_is_deleted(golden_set, run_a, make_user):
    pool = pool_build(golden_set=golden_set, runs=[run_a], depth=2, strategy="depth").pool
    leaving = make_user("leaving")
    JudgingTask.objects.filter(pool=pool).update(leased_to=leaving, lease_expires_at=timezone.now())
    leaving.delete()
    assert not JudgingTask.objects.filter(leased_to__isnull=False).exists()


# --- concurrent judgments ----------------------------------------------------------------------


def _judge_and_hold(task, grade, annotator, judged, release, errors):
    """In a thread: judge `task`, then keep the transaction open until `release` is set."""
    try:
        with transaction.atomic():
            judge(task, grade, annotator)
            judged.set()
            release.wait(timeout=30)
    except BaseException as exc:  # noqa: BLE001 - reported by the main thread
        errors.append(exc)
        judged.set()
    finally:
        connections.close_all()


def _open_task(pool, query_id: str) -> JudgingTask:
    return pool_queue(pool).filter(query__query_id=query_id).select_related("query", "page").first()


@pytest.mark.django_db(transaction=True)
def test_judgments_of_different_queries_of_a_pool_do_not_wait_for_each_other_but_of_one_query_do(golden_set, run_a, run_b, make_user):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite serialises every write transaction")
    pool = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="mtf").pool
    first, second = make_user("first"), make_user("second")
    q1_tasks = list(pool_queue(pool).filter(query__query_id="q1").select_related("query", "page")[:2])
    judged, release, errors = threading.Event(), threading.Event(), []
    holder = threading.Thread(target=_judge_and_hold, args=(q1_tasks[0], 0, first, judged, release, errors))
    holder.start()
    try:
        assert judged.wait(timeout=30) and not errors, errors
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            judge(_open_task(pool, "q2"), 1, second)  # another query: goes through at once
        with pytest.raises(OperationalError, match="lock timeout"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '300ms'")
            judge(q1_tasks[1], 1, second)  # the same query: waits for the first judgment
    finally:
        release.set()
        holder.join(timeout=30)
    assert not errors, errors
    assert JudgingTask.objects.filter(pool=pool, status=JudgingTask.Status.DONE).count() == 2


@pytest.mark.django_db(transaction=True)
def test_the_queue_empties_when_concurrent_judgments_of_different_queries_spend_the_budget(golden_set, run_a, run_b, make_user):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite serialises every write transaction")
    pool = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="depth", budget=2).pool
    first, second = make_user("first"), make_user("second")
    judged, release, errors = threading.Event(), threading.Event(), []
    holder = threading.Thread(target=_judge_and_hold, args=(_open_task(pool, "q1"), 0, first, judged, release, errors))
    holder.start()
    try:
        assert judged.wait(timeout=30) and not errors, errors
        # Each of the two sees only its own judgment (the other's is uncommitted): one short.
        assert judge(_open_task(pool, "q2"), 0, second).unqueued_by_budget == 0
        assert pool_queue(pool).exists()
    finally:
        release.set()
        holder.join(timeout=30)
    assert not errors, errors
    # The last to commit counted again after its commit, and saw both.
    assert JudgingTask.objects.filter(pool=pool, status=JudgingTask.Status.DONE).count() == 2
    assert not pool_queue(pool).exists()
