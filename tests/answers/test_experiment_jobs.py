"""The oracle experiment as a background job: the task runs it once, the sweeper sends a lost
one again and fails one whose worker vanished, the beat runs the sweeper."""

from datetime import timedelta

import pytest
from django.utils import timezone

from answers import tasks
from answers.experiments import oracle_experiment_submit, oracle_experiments_sweep
from answers.models import OracleExperiment
from evaluation.models import Run

pytestmark = pytest.mark.django_db(transaction=True)


def submit(answer_set, generator, owner, send=None) -> OracleExperiment:
    return oracle_experiment_submit(
        golden_set=answer_set,
        version=answer_set.latest_version(),
        run=Run.objects.get(golden_set=answer_set, name="bm25"),
        generator=generator,
        user=owner,
        send=send,
    )


def test_the_task_sent_on_commit_runs_the_experiment_once(answer_set, generator, owner, chat_server):
    experiment = submit(answer_set, generator, owner, send=tasks.oracle_experiment_task)  # in process here: no broker
    experiment.refresh_from_db()
    assert experiment.status == "done" and experiment.answers.count() == 8 and experiment.enqueued_at is not None
    # A second delivery of the same message finds it claimed already and asks nothing.
    assert tasks.oracle_experiment_task.delay(experiment.pk).get() == "claimed already"
    assert len(chat_server.requests) == 8


def test_the_sweeper_sends_a_lost_experiment_again_and_fails_one_whose_worker_vanished(answer_set, generator, owner):
    lost, stuck = submit(answer_set, generator, owner), submit(answer_set, generator, owner)
    now = timezone.now()
    OracleExperiment.objects.filter(pk=stuck.pk).update(status="running", started_at=now - timedelta(hours=7))
    sent = []

    class Task:
        @staticmethod
        def delay(job_id):
            sent.append(job_id)

    assert oracle_experiments_sweep(job_task=Task, now=now) == (1, 1)
    stuck.refresh_from_db()
    assert sent == [lost.pk] and stuck.status == "failed" and "its answers are kept: continue it" in stuck.error


def test_the_beat_runs_the_oracle_experiment_sweeper(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["sweep-oracle-experiments"]
    assert entry["task"] == tasks.sweep_oracle_experiments_task.name
