"""Runs through the app's own path: upload, publish, scores stored per (run, version, slice, metric)."""

import json
import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections
from django.db.models import F
from django.utils import timezone

from evaluation.models import Completeness, Evaluation, Run, RunData, Score
from evaluation.services import evaluation_compute, run_import
from evaluation.tasks import STALE_AFTER, evaluate_run_task, sweep_missing_evaluations_task
from goldenset.models import GoldenSet
from goldenset.services import golden_set_import_beir, qrels_import, version_publish
from lib.errors import GoldsetError
from tests.evaluation.test_trec_eval_parity import ACCEPTANCE, CRANFIELD_RUNS, read_trec_eval_output
from tests.support import factories

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.golden_set("tiny", query_slice_fields=["lang"], queries=factories.queries("q1", "q2", "q3", lang="en")),
]


def upload(golden_set, text: str, **options):
    options.setdefault("system", "bm25")
    options.setdefault("stage", "first_stage")
    return run_import(golden_set=golden_set, lines=text.splitlines(keepends=True), source_name="run.txt", **options)


RUN = "q1 Q0 d1 1 3.0 sys\nq1 Q0 d2 2 2.0 sys\nq2 Q0 d4 1 5.0 sys\nq2 Q0 d3 2 1.0 sys\n"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("q1 Q0 d1 1 3.0\n", "run.txt:1: expected 6 columns"),
        ("q1 Q0 d1 1 3.0 s\nq1 Q0 d2 2 high s\n", "run.txt:2: score 'high' is not a finite number"),
        ("q1 Q0 d1 1 3.0 s\nq1 Q0 d1 2 2.0 s\n", "run.txt:2: doc id 'd1' appears twice for query 'q1' (first on line 1)"),
        ("q1 Q0 d1 1 3.0 s\nq9 Q0 d1 1 3.0 s\n", "run.txt:2: query id 'q9' is not in the golden set"),
    ],
)
def test_a_run_with_a_bad_line_is_refused_with_the_line_number_and_nothing_is_stored(golden_set, text, problem):
    with pytest.raises(GoldsetError) as caught:
        upload(golden_set, text)
    assert caught.value.problems[0].startswith(problem)
    assert not Run.objects.exists() and not RunData.objects.exists()


def test_doc_ids_outside_the_corpus_are_kept_and_counted(golden_set):
    run = upload(golden_set, RUN + "q3 Q0 elsewhere#1 1 1.0 sys\n")
    assert (run.query_count, run.entry_count, run.external_doc_count) == (3, 5, 1)


def test_the_depth_cap_is_applied_and_reported(golden_set):
    from evaluation.models import EvaluationSettings

    EvaluationSettings.objects.create(golden_set=golden_set, run_depth_cap=1)
    run = upload(golden_set, RUN)
    assert (run.entry_count, run.dropped_by_depth, run.depth_cap) == (2, 2, 1)


def test_a_run_name_is_unique_in_its_golden_set(golden_set):
    upload(golden_set, RUN)
    with pytest.raises(GoldsetError, match="already has a run named 'bm25 first_stage'"):
        upload(golden_set, RUN)


def test_an_unknown_stage_is_refused(golden_set):
    with pytest.raises(GoldsetError, match="unknown stage 'final'"):
        upload(golden_set, RUN, stage="final")


def test_publishing_scores_every_run_on_commit(golden_set, django_capture_on_commit_callbacks):
    first, second = upload(golden_set, RUN), upload(golden_set, RUN, name="other")
    with django_capture_on_commit_callbacks(execute=True):
        version = version_publish(golden_set=golden_set)
    for run in (first, second):
        evaluation = Evaluation.objects.get(run=run, version=version)
        assert evaluation.status == Evaluation.Status.DONE
        # q1: d1 (grade 2) at rank 1; q2: d3 (grade 1) at rank 2; q3 has no relevant page.
        assert Score.objects.get(evaluation=evaluation, slice="", metric="recall@5").value == 1.0
        assert Score.objects.get(evaluation=evaluation, slice="", metric="mrr").value == pytest.approx(0.75)
        assert (evaluation.queries_averaged, evaluation.no_relevant_count, evaluation.unanswered_count) == (2, 1, 0)
        assert Score.objects.filter(evaluation=evaluation, slice="query:lang=en").count() == len(evaluation.metrics)


def test_uploading_a_run_scores_it_against_the_latest_version(golden_set, django_capture_on_commit_callbacks):
    version_publish(golden_set=golden_set)
    qrels_import(golden_set_slug="tiny", lines=["q3 0 d5 1\n"], source_name="f")
    latest = version_publish(golden_set=golden_set)
    with django_capture_on_commit_callbacks(execute=True):
        run = upload(golden_set, RUN)
    assert list(Evaluation.objects.filter(run=run).values_list("version_id", "status")) == [(latest.id, "done")]


def test_computing_twice_leaves_every_figure_there_once(golden_set):
    run = upload(golden_set, RUN)
    version = version_publish(golden_set=golden_set)
    evaluation_compute(run=run, version=version)
    count = Score.objects.count()
    evaluation_compute(run=run, version=version)
    assert Score.objects.count() == count > 0
    assert Evaluation.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_computations_of_one_evaluation_at_once_take_turns(golden_set, monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite runs one writer at a time")
    run = upload(golden_set, RUN)
    version = version_publish(golden_set=golden_set)
    first_wrote, let_first_commit = threading.Event(), threading.Event()
    bulk_create = Completeness.objects.bulk_create

    def held(rows, *args, **kwargs):
        created = bulk_create(rows, *args, **kwargs)
        if threading.current_thread().name == "first":
            first_wrote.set()  # its scores are written, not committed
            let_first_commit.wait(10)
        return created

    monkeypatch.setattr(Completeness.objects, "bulk_create", held)
    errors = []

    def compute():
        try:
            evaluation_compute(run=run, version=version)
        except Exception as error:  # noqa: BLE001 - the test reports whatever the thread raised
            errors.append(error)
        finally:
            connections.close_all()

    first, second = threading.Thread(target=compute, name="first"), threading.Thread(target=compute, name="second")
    first.start()
    assert first_wrote.wait(10)
    second.start()
    second.join(1)  # the second waits for the first's lock instead of racing its insert
    assert second.is_alive()
    let_first_commit.set()
    first.join(10)
    second.join(10)
    assert errors == []
    evaluation = Evaluation.objects.get()
    assert evaluation.status == Evaluation.Status.DONE
    assert Score.objects.filter(evaluation=evaluation).count() == len({(s.slice, s.metric) for s in Score.objects.all()}) > 0


def test_the_sweeper_enqueues_what_was_never_scored(golden_set):
    run = upload(golden_set, RUN)
    version_publish(golden_set=golden_set)  # its on-commit task never runs here: as if the broker was down
    assert not Score.objects.exists()
    assert sweep_missing_evaluations_task() == 1
    assert Evaluation.objects.get(run=run).status == Evaluation.Status.DONE
    assert sweep_missing_evaluations_task() == 0


def test_the_sweeper_leaves_a_pending_evaluation_waiting_in_the_queue_until_it_looks_lost(golden_set, monkeypatch):
    run = upload(golden_set, RUN)
    version = version_publish(golden_set=golden_set)
    sent = []
    monkeypatch.setattr(evaluate_run_task, "delay", lambda *ids: sent.append(ids))  # a broker that holds them
    assert sweep_missing_evaluations_task() == 1 and sent == [(run.id, version.id)]
    assert Evaluation.objects.get(run=run).enqueued_at is not None
    assert sweep_missing_evaluations_task() == 0  # still in the queue: not sent twice
    Evaluation.objects.filter(run=run).update(enqueued_at=F("enqueued_at") - STALE_AFTER - timedelta(seconds=1))
    assert sweep_missing_evaluations_task() == 1 and len(sent) == 2  # lost, as far as anyone can tell: sent again


def test_the_sweeper_scores_every_version_a_run_was_scheduled_on_not_only_the_latest(golden_set):
    early = upload(golden_set, RUN, name="early")
    first = version_publish(golden_set=golden_set)  # no task runs here: as if the broker was down
    late = upload(golden_set, RUN, name="late")
    qrels_import(golden_set_slug="tiny", lines=["q3 0 d5 1\n"], source_name="more")
    second = version_publish(golden_set=golden_set)
    newest = upload(golden_set, RUN, name="newest")  # uploaded after version 2: never scored on version 1
    assert sweep_missing_evaluations_task() == 5
    scored = set(Evaluation.objects.filter(status=Evaluation.Status.DONE).values_list("run", "version"))
    assert scored == {(early.id, first.id), (early.id, second.id), (late.id, first.id), (late.id, second.id), (newest.id, second.id)}
    assert sweep_missing_evaluations_task() == 0


def test_the_sweeper_restarts_an_evaluation_running_for_longer_than_stale_after(golden_set, monkeypatch):
    run = upload(golden_set, RUN)
    version = version_publish(golden_set=golden_set)
    Evaluation.objects.create(run=run, version=version, status=Evaluation.Status.RUNNING, started_at=timezone.now())
    sent = []
    monkeypatch.setattr(evaluate_run_task, "delay", lambda *ids: sent.append(ids))
    assert sweep_missing_evaluations_task() == 0  # its worker may still be at it
    Evaluation.objects.filter(run=run).update(started_at=F("started_at") - STALE_AFTER - timedelta(seconds=1))
    assert sweep_missing_evaluations_task() == 1 and sent == [(run.id, version.id)]
    assert Evaluation.objects.get(run=run).status == Evaluation.Status.PENDING  # sent: waiting its turn
    assert sweep_missing_evaluations_task() == 0


def test_page_slices_count_only_the_relevant_pages_of_the_slice():
    pages = factories.pages("old1", "old2", kind="old") + factories.pages("new1", "new2", kind="new")
    golden_set = factories.golden_set(
        "sliced",
        pages=pages,
        queries=factories.queries("q1"),
        page_slice_fields=["kind"],
        qrels={("q1", "old1"): 1, ("q1", "old2"): 1, ("q1", "new1"): 1, ("q1", "new2"): 1},
    )
    run = upload(golden_set, "q1 Q0 old1 1 4 s\nq1 Q0 old2 2 3 s\nq1 Q0 new1 3 2 s\nq1 Q0 x 4 1 s\n")
    version = version_publish(golden_set=golden_set)
    evaluation = evaluation_compute(run=run, version=version)
    scores = {s.slice: s.value for s in Score.objects.filter(evaluation=evaluation, metric="recall@100")}
    assert scores == {"": 0.75, "page:kind=old": 1.0, "page:kind=new": 0.5}


def test_the_evaluate_command_prints_json_records(golden_set, capsys):
    upload(golden_set, RUN)
    version_publish(golden_set=golden_set)
    call_command("evaluate", "tiny", "--format", "json")
    records = json.loads(capsys.readouterr().out)
    overall = next(r for r in records if r["slice"] is None)
    assert {k: overall[k] for k in ("run", "system", "stage", "version", "queries")} == {
        "run": "bm25 first_stage",
        "system": "bm25",
        "stage": "first_stage",
        "version": 1,
        "queries": 2,
    }
    assert overall["metrics"]["recall@5"] == 1.0
    assert {r["slice"] for r in records} == {None, "lang=en"} or {r["slice"] for r in records} == {None, "query:lang=en"}


def test_the_import_run_command_reports_its_facts_and_refuses_bad_files(golden_set, tmp_path, capsys):
    path = tmp_path / "r.run"
    path.write_text(RUN + "q3 Q0 zz 1 1.0 sys\n")
    call_command("import_run", str(path), "--golden-set", "tiny", "--system", "s", "--stage", "reranked", verbosity=0)
    out = capsys.readouterr().out
    assert "3 queries, 5 entries kept" in out and "1 doc id(s) are not in the corpus" in out
    path.write_text(RUN + "q3 Q0 has space 1 1.0 sys\n")
    with pytest.raises(CommandError, match="r.run:5: expected 6 columns .*found 7"):
        call_command("import_run", str(path), "--golden-set", "tiny", "--system", "s3", "--stage", "reranked", verbosity=0)
    path.write_text("q1 Q0 d1 1 x sys\n")
    with pytest.raises(CommandError, match="r.run:1: score 'x'"):
        call_command("import_run", str(path), "--golden-set", "tiny", "--system", "s2", "--stage", "reranked", verbosity=0)


@pytest.mark.shared_data
def test_cranfield_runs_uploaded_through_the_app_score_as_trec_eval(shared_data, django_capture_on_commit_callbacks):
    """The acceptance figures, through import_beir, publish and run upload (trec_eval -c)."""
    golden_set_import_beir(directory=shared_data / "cranfield", slug="cranfield")
    golden_set = GoldenSet.objects.get(slug="cranfield")
    version_publish(golden_set=golden_set)
    from evaluation.models import EvaluationSettings

    EvaluationSettings.objects.create(golden_set=golden_set, metrics=list(ACCEPTANCE))
    runs_dir = shared_data / "cranfield" / "runs"
    for name in CRANFIELD_RUNS:
        with django_capture_on_commit_callbacks(execute=True), (runs_dir / f"{name}.run").open() as handle:
            run = run_import(golden_set=golden_set, lines=handle, source_name=name, system=name, stage="first_stage")
        evaluation = Evaluation.objects.get(run=run)
        expected = read_trec_eval_output(runs_dir / "expected" / f"{name}.trec_eval-10.0.c.all_trec.original_grades.txt")["all"]
        for ours, theirs in ACCEPTANCE.items():
            stored = Score.objects.get(evaluation=evaluation, slice="", metric=ours).value
            assert f"{stored:.4f}" == expected[theirs], (name, ours)
        assert evaluation.queries_averaged == 225
        curve = dict(evaluation.recall_curve)
        for k in (5, 10):
            assert curve[k] == pytest.approx(Score.objects.get(evaluation=evaluation, slice="", metric=f"recall@{k}").value, abs=1e-12)
    assert Evaluation.objects.filter(unanswered_count=1).count() >= 1  # the run with a missing topic
