"""Finding 2 of the second hardening probe (high): with the broker and CACHE_URL on one Redis,
as docker-compose runs them, Redis away for 20 s made the API answer 500 even to a list
(DRF's throttle reads the cache), uploads and publishes answer 500, the judging screen
answer 500 to every request (grades lost), and a publish confirmed during the outage run 13
minutes after Redis came back.

Redis here is the real one, reached through a forwarder the test closes and reopens (what a
restarted container or a network fault looks like to a client); the worker and beat are
real processes on the same forwarder.
"""

import re
from urllib.parse import urlsplit

import pytest
import redis
from django.conf import settings
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.urls import reverse

from api.services import api_token_create
from evaluation.models import Evaluation, Run
from goldenset.models import Judgment, PublishJob, Version
from goldset import cache as failover
from labeling.models import JudgingTask
from tests.evaluation.test_worker import wait_until
from tests.labeling.judging.judging_data import annotator_of, pooled_set
from tests.support import factories
from tests.support.forwarder import Forwarder
from tests.worker_harness import WorkerPool, purge_queue, sending_to, session_queue

pytestmark = pytest.mark.skipif(not settings.REDIS_AVAILABLE, reason=f"Redis does not answer at {settings.TEST_REDIS_URL}")

REDIS = urlsplit(settings.TEST_REDIS_URL)
DATABASE = int((REDIS.path or "/0").strip("/") or 0)
RUN = b"q1 Q0 d1 1 3.0 bm25\nq1 Q0 d2 2 2.0 bm25\nq2 Q0 d3 1 1.0 bm25\n"


@pytest.fixture
def forwarder():
    made = Forwarder((REDIS.hostname, REDIS.port or 6379)).open()
    try:
        yield made
    finally:
        made.close()


def failover_cache(url: str) -> dict:
    return {"default": {"BACKEND": "goldset.cache.FailoverRedisCache", "LOCATION": url, "KEY_PREFIX": f"outage-{session_queue()}"}}


def task_id(response) -> int:
    found = re.search(r'id="pair"[^>]*data-task-id="(\d*)"', response.content.decode())
    assert found, response.content.decode()[:500]
    return int(found.group(1))


@pytest.mark.django_db
def test_the_read_api_and_the_judging_screen_answer_and_keep_every_grade_while_the_cache_is_away(
    forwarder,
    client,
    make_user,
    monkeypatch,
):
    pool = pooled_set("outage")
    golden_set = pool.golden_set
    annotator = annotator_of(golden_set, make_user, "ann")
    _, secret = api_token_create(owner=make_user("reader", is_staff=True), scope="read", golden_set=golden_set)
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    with override_settings(CACHES=failover_cache(forwarder.url("redis", str(DATABASE)))):
        assert client.get("/api/v1/golden-sets/", **bearer).status_code == 200  # Redis answers: throttled in it
        monkeypatch.setattr(failover, "RETRY_SECONDS", 0.0)  # every call asks Redis again, and is refused
        forwarder.close()
        client.force_login(annotator)
        screen = reverse("judging_screen", args=[golden_set.slug])
        graded = []
        for _ in range(5):
            assert client.get("/api/v1/golden-sets/", **bearer).status_code == 200
            assert client.get(f"/api/v1/golden-sets/{golden_set.slug}/", **bearer).status_code == 200
            page = client.get(screen)
            assert page.status_code == 200
            task = task_id(page)
            answer = client.post(reverse("judging_judge", args=[golden_set.slug, task]), {"grade": "2"}, HTTP_HX_REQUEST="true")
            assert answer.status_code == 200, answer.content[:300]
            graded.append(task)
        assert Judgment.objects.filter(annotator=annotator).count() == 5  # no grade lost to the cache
        assert set(JudgingTask.objects.filter(pk__in=graded).values_list("status", flat=True)) == {"done"}

        # Back: the first call after the retry interval uses the shared cache again.
        forwarder.open()
        cache.set("outage-probe", "shared", 30)
        direct = redis.Redis.from_url(settings.TEST_REDIS_URL)
        try:
            assert any(direct.scan_iter(match=f"outage-{session_queue()}:*outage-probe"))
        finally:
            direct.close()


@pytest.mark.worker
@pytest.mark.skipif(not settings.POSTGRES_AVAILABLE, reason="a worker process needs the PostgreSQL test database")
def test_a_publish_and_an_upload_made_while_redis_is_away_are_done_once_soon_after_it_returns(
    forwarder,
    transactional_db,
    tmp_path,
    client,
    make_user,
):
    """The broker and the cache on one Redis, as compose runs them; beat's sweepers at a
    5-second interval here (60 s by default: the README's "within a minute" of the return)."""
    broker, queue = forwarder.url("redis", str(DATABASE)), session_queue()
    purge_queue(settings.TEST_REDIS_URL, queue)
    pool = WorkerPool(broker_url=broker, queue=queue, log_dir=tmp_path)
    manager = make_user("boss")
    golden_set = factories.golden_set("outage-publish", manager=manager)
    _, secret = api_token_create(owner=manager, scope="write", golden_set=golden_set)
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    env = {"CACHE_URL": broker, "JOB_SWEEP_SECONDS": "5", "EVALUATION_SWEEP_SECONDS": "5"}
    try:
        with sending_to(broker, queue), override_settings(CACHES=failover_cache(broker)):
            pool.start(env=env)
            pool.start_beat(env=env)
            forwarder.close()
            uploaded = client.post(
                f"/api/v1/golden-sets/{golden_set.slug}/runs/",
                {"system": "bm25", "stage": "first_stage", "file": SimpleUploadedFile("r.run", RUN)},
                **bearer,
            )
            assert uploaded.status_code == 201, uploaded.content
            published = client.post(
                f"/api/v1/golden-sets/{golden_set.slug}/versions/", {"note": "in the outage"}, content_type="application/json", **bearer
            )
            assert published.status_code == 202, published.content
            job = PublishJob.objects.get(pk=published.json()["id"])
            assert job.enqueued_at is None  # refused by the broker: the sweeper's to send
            forwarder.open()
            wait_until(lambda: Version.objects.filter(golden_set=golden_set).exists(), "the version published", pool, timeout=120)
            run = Run.objects.get(golden_set=golden_set)
            done = Evaluation.objects.filter(run=run, status=Evaluation.Status.DONE)
            wait_until(done.exists, "the run scored on the version", pool, timeout=120)
    finally:
        pool.kill_all()
        purge_queue(settings.TEST_REDIS_URL, queue)
    job.refresh_from_db()
    assert job.status == PublishJob.Status.DONE and Version.objects.filter(golden_set=golden_set).count() == 1
    assert Evaluation.objects.filter(run=run).count() == 1
    assert "raised unexpected" not in pool.logs()  # the worker logs its lost connection, but no task failed
