"""Publishing and uploading while the broker is down answer at once (202 with the publish
job, 201 with the run) with everything committed,
and once it is back beat's sweeper gets every run scored on every version, the superseded
one too, each score stored once (hardening finding 4: the publish answered 500 after it
had committed, and the sweeper looked at the latest version only).

The web side is a real server (live_server) sending to a Redis URL nobody answers; the
scoring is a real worker on the real Redis afterwards.
"""

import logging
import socket
from contextlib import closing

import pytest
import requests

from evaluation.models import Evaluation, Run, Score
from evaluation.tasks import sweep_missing_evaluations_task
from goldenset.models import Version
from goldenset.publishing import publish_job_run
from goldenset.services import qrels_import
from tests.api import RUN, SLUG
from tests.evaluation.test_worker import (  # noqa: F401  (workers is the fixture)
    assert_no_task_failed,
    pytestmark,
    scores_computed_here,
    scores_of,
    task_results,
    wait_until,
    workers,
)
from tests.worker_harness import sending_to


def a_port_nobody_answers() -> int:
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def api(live_server, token, golden_set):
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token('write', golden_set)}"
    base = f"{live_server.url}/api/v1/golden-sets/{SLUG}/"

    def post(path: str, **kwargs) -> requests.Response:
        return session.post(base + path, timeout=30, **kwargs)

    return post


def upload(api, system: str) -> requests.Response:
    return api("runs/", data={"system": system, "stage": "first_stage"}, files={"file": (f"{system}.run", RUN.encode())})


def test_publishing_and_uploading_with_the_broker_down_answer_at_once_and_every_version_gets_scored(workers, api, caplog):
    down = f"redis://127.0.0.1:{a_port_nobody_answers()}/0"
    with sending_to(down, workers.queue), caplog.at_level(logging.ERROR, logger="goldset.tasks"):
        assert upload(api, "bm25").status_code == 201
        first = api("versions/", json={"note": "first"})
        assert (first.status_code, first.json()["status"]) == (202, "queued"), first.text
        # The publish job's message was lost with the broker: its sweeper sends it again;
        # here the job runs in this process, and the scoring it sends is lost in turn.
        publish_job_run(first.json()["id"])
        assert upload(api, "dense").status_code == 201  # scored against version 1 from here on
        qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 2\n"], source_name="more")
        second = api("versions/", json={"note": "second, before anything was scored"})
        assert second.status_code == 202, second.text
        publish_job_run(second.json()["id"])
    assert list(Version.objects.order_by("number").values_list("note", flat=True)) == ["first", "second, before anything was scored"]
    assert Version.objects.count() == 2 and Run.objects.count() == 2
    assert not Evaluation.objects.exists()  # nothing reached a worker
    assert caplog.text.count("broker unreachable") == 6 and caplog.text.count("publish_job_task") == 2

    worker = workers.start()
    sweep_missing_evaluations_task.delay()
    done = Evaluation.objects.filter(status=Evaluation.Status.DONE)
    wait_until(lambda: done.count() == 4, "both runs scored on both versions", workers)
    assert task_results(worker.log(), "sweep_missing_evaluations_task") == ["4"]
    expected_total = 0
    for evaluation in Evaluation.objects.select_related("run", "version"):
        stored, expected = scores_of(evaluation), scores_computed_here(evaluation.run, evaluation.version)
        assert [row[:2] for row in stored] == [row[:2] for row in expected]  # each (slice, metric) once
        assert [row[2] for row in stored] == pytest.approx([row[2] for row in expected], abs=1e-12)
        expected_total += len(expected)
    assert expected_total and Score.objects.count() == expected_total
    assert_no_task_failed(workers)
