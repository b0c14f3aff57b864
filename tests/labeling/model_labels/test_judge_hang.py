"""A judge job against an endpoint that accepts and never answers (hardening #31 item 4):
its requests fail at the timeout, and the jobs list says so while the job runs, from the
first timeout on; once their retries are spent the pairs are failures naming the timeout.
The endpoint is a real server on 127.0.0.1 (chat_server.SilentServer)."""

import threading
import time

import pytest
from django.db import connection
from django.urls import reverse

from labeling.model_labels.jobs import judge_job_run, judge_job_submit
from labeling.models import JudgeFailure, JudgeJob
from lib.llm_judging import DEFAULT_PROMPT
from tests.labeling.model_labels.chat_server import SilentServer
from tests.labeling.model_labels.test_judge import NoWait, pooled  # noqa: F401  (pooled is the fixture)

TIMEOUT = 2.0  # seconds, JUDGE_TIMEOUT_SECONDS here
MARGIN = 2.0  # seconds past the first timeout within which the page must say so


@pytest.fixture
def silent():
    server = SilentServer().start()
    yield server
    server.stop()


@pytest.mark.skipif(
    connection.vendor == "sqlite",
    reason="the job's thread writes the one SQLite file while the page is read from it: under the SQLite leg's "
    "two processes its writes wait past the margin this test allows (seen in .ci/run); PostgreSQL runs it",
)
@pytest.mark.django_db(transaction=True)  # the job runs on another thread, which sees only what is committed
def test_a_job_whose_endpoint_never_answers_says_so_at_the_first_timeout_and_fails_its_pairs(
    client,
    owner,
    pooled,
    silent,
    settings,
):
    golden_set, pool = pooled
    settings.JUDGE_TIMEOUT_SECONDS = TIMEOUT
    job = judge_job_submit(
        golden_set=golden_set,
        pool_id=pool.pk,
        base_url=silent.base_url,
        model="judge-8b",
        prompt_text=DEFAULT_PROMPT,
        job_task=None,
        max_in_flight=10,
    )

    def run() -> None:
        try:
            judge_job_run(job.pk, waiting=NoWait())
        finally:
            connection.close()

    worker = threading.Thread(target=run)
    started = time.monotonic()
    worker.start()
    client.force_login(owner)
    page = ""
    while "no answer within 2 s (attempt 1 of 4); trying again" not in page:
        assert time.monotonic() - started < TIMEOUT + MARGIN, f"the page did not say the endpoint does not answer:\n{page}"
        time.sleep(0.1)
        page = client.get(reverse("judge_jobs", args=[golden_set.slug])).content.decode()
    assert "Running since" in page
    worker.join(60)
    assert not worker.is_alive()
    job.refresh_from_db()
    assert (job.status, job.pairs_failed, job.pairs_done, job.requests) == (JudgeJob.Status.DONE, 10, 0, 40)
    assert set(JudgeFailure.objects.filter(job=job).values_list("error", flat=True)) == {"no answer within 2 s after 4 attempts"}
    page = client.get(reverse("judge_jobs", args=[golden_set.slug])).content.decode()
    assert "10 pairs not graded" in page and "no answer within 2 s after 4 attempts" in page
