"""/metrics scraped over real HTTP (live_server) after a judgment, a scoring and requests:
it holds request latency by route name, judgments of the last minute, queue depth,
recompute and nightly durations and task outcomes; and it is readable only from
METRICS_ALLOWED_NETWORKS or with the bearer METRICS_TOKEN."""

import pytest
import requests
from django.test import override_settings
from prometheus_client.parser import text_string_to_metric_families

from evaluation.models import Evaluation
from goldenset.models import Page, Query
from goldenset.services import judgment_record, version_publish
from tests.support import factories

pytestmark = pytest.mark.django_db(transaction=True)


def scrape(live_server, **headers) -> dict[tuple[str, tuple], float]:
    response = requests.get(live_server.url + "/metrics", headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name: str, **labels) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


@pytest.fixture
def activity(owner):
    """A set with imported labels, one judgment by a person, and a run scored on its version."""
    golden_set = factories.golden_set(manager=owner)
    judgment_record(
        query=Query.objects.get(golden_set=golden_set, query_id="q1"),
        page=Page.objects.get(doc_id="d4"),
        grade=1,
        annotator=owner,
    )
    version = version_publish(golden_set=golden_set, user=owner)
    run = factories.run(golden_set, "bm25", {"q1": ["d1", "d2"], "q2": ["d3"]})
    factories.score(run, version)
    return golden_set


def test_metrics_hold_the_figures_after_a_judgment_a_scoring_and_requests(live_server, activity):
    requests.get(live_server.url + "/healthz", timeout=30)
    requests.get(live_server.url + "/no/such/page/", timeout=30)
    samples = scrape(live_server)

    assert value(samples, "goldset_database_up") == 1
    # Request latency by route name, never by raw path.
    assert value(samples, "goldset_request_duration_seconds_count", view="healthz", method="GET", status="200") >= 1
    assert value(samples, "goldset_request_duration_seconds_count", view="<unresolved>", method="GET", status="404") >= 1
    assert not any("/no/such/page/" in str(labels) for _, labels in samples)
    # Judgments: the one recorded by a person, and the three labels the set was imported with.
    assert value(samples, "goldset_judgments_last_minute", source="human") == 1
    assert value(samples, "goldset_judgments_last_minute", source="imported") == 3
    # Nothing waits: the scoring ran inline.
    for queue in ("evaluations", "pool_jobs", "nightly_runs"):
        assert value(samples, "goldset_queue_depth", queue=queue) == 0
    # The scoring finished: one recompute duration, one outcome "done".
    finished = Evaluation.objects.filter(status=Evaluation.Status.DONE).count()
    assert finished >= 1
    assert value(samples, "goldset_recompute_duration_seconds_count") == finished
    assert value(samples, "goldset_recompute_duration_seconds_bucket", le="+Inf") == finished
    assert value(samples, "goldset_recompute_duration_seconds_sum") >= 0
    assert value(samples, "goldset_task_outcomes", task="evaluation", outcome="done") == finished
    assert value(samples, "goldset_task_outcomes", task="evaluation", outcome="failed") == 0
    assert value(samples, "goldset_nightly_run_duration_seconds_count") == 0


def test_a_pending_evaluation_is_counted_in_the_queue_depth(live_server, activity):
    Evaluation.objects.update(status=Evaluation.Status.PENDING)
    samples = scrape(live_server)
    assert value(samples, "goldset_queue_depth", queue="evaluations") == Evaluation.objects.count()


@override_settings(METRICS_ALLOWED_NETWORKS=[], METRICS_TOKEN="")
def test_metrics_are_refused_from_outside_the_allowed_networks(live_server):
    response = requests.get(live_server.url + "/metrics", timeout=30)
    assert response.status_code == 403
    assert "METRICS_TOKEN" in response.text and "goldset_" not in response.text


@override_settings(METRICS_ALLOWED_NETWORKS=["10.0.0.0/8"], METRICS_TOKEN="s3cret-metrics-token")
def test_metrics_are_readable_from_anywhere_with_the_token_and_not_with_another(live_server):
    assert scrape(live_server, Authorization="Bearer s3cret-metrics-token")
    for wrong in ("Bearer not-the-token", "Basic czNjcmV0", ""):
        response = requests.get(live_server.url + "/metrics", headers={"Authorization": wrong}, timeout=30)
        assert response.status_code == 403, wrong


@override_settings(METRICS_ALLOWED_NETWORKS=["127.0.0.0/8"], METRICS_TOKEN="")
def test_metrics_are_readable_from_an_allowed_network_without_a_token(live_server):
    assert scrape(live_server)


@override_settings(METRICS_ALLOWED_NETWORKS=[], METRICS_TOKEN="")
def test_a_logged_in_user_is_not_let_in_either(live_server, owner):
    """A session is not a way in: metrics are for the scraper, not for people."""
    session = requests.Session()
    login = session.get(live_server.url + "/accounts/login/", timeout=30)
    session.post(
        live_server.url + "/accounts/login/",
        timeout=30,
        data={"username": "owner", "password": "pw-owner", "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": login.url},
    )
    assert session.get(live_server.url + "/metrics", timeout=30).status_code == 403


def test_with_a_multiprocess_folder_metrics_sum_the_requests_of_every_gunicorn_worker(tmp_path):
    """Three workers, each answering some of the requests: any one of them reports them all.

    The kernel hands a sequential client's connections to whichever idle worker wakes first, so
    one worker can take them all; the requests therefore go six at a time, in rounds, until at
    least two workers have written their files (or 600 requests went), and the count must equal
    every request sent.
    """
    import os
    import subprocess
    import sys
    import time
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    from tests.goldset.test_health import free_port

    root = Path(__file__).resolve().parents[2]
    port, folder = free_port(), tmp_path / "metrics"
    folder.mkdir()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "goldset.settings",
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SQLITE_PATH": str(tmp_path / "empty.sqlite3"),
        "DATABASE_URL": "",
        "CELERY_BROKER_URL": "",
        "TASKS_OFF_REQUEST_THREAD": "false",
        "PROMETHEUS_MULTIPROC_DIR": str(folder),
    }
    gunicorn = Path(sys.executable).with_name("gunicorn")
    log = tmp_path / "gunicorn.log"  # a file, not a pipe nobody reads: a full pipe blocks the server
    with log.open("wb") as output:
        server = subprocess.Popen(
            [str(gunicorn), "goldset.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "3", "--log-level", "warning"],
            cwd=root,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"

    def health(_):
        return requests.get(base + "/healthz", headers={"Connection": "close"}, timeout=30).status_code

    sent = 0
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(base + "/readyz", timeout=30)
                break
            except requests.ConnectionError:
                assert server.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        workers: set[str] = set()
        with ThreadPoolExecutor(max_workers=6) as pool:
            while len(workers) < 2 and sent < 600:
                assert set(pool.map(health, range(30))) == {200}
                sent += 30
                workers = {path.name.split("_")[-1] for path in folder.glob("*.db")}
        text = requests.get(base + "/metrics", timeout=30).text
    finally:
        server.terminate()
        server.wait(timeout=20)
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    assert value(samples, "goldset_request_duration_seconds_count", view="healthz", method="GET", status="200") == sent
    assert len(workers) >= 2, f"the requests reached one worker only ({workers}): the sum proves nothing"
    assert value(samples, "goldset_database_up") == 0  # this database has no tables: said, not a 500


def test_production_settings_require_the_token_unless_networks_are_named():
    """Hardening #31 item 10: /metrics was open to loopback, so public behind a reverse proxy
    on the same host."""
    from tests.goldset.test_cache import in_fresh_process

    script = "from django.conf import settings; print(settings.METRICS_ALLOWED_NETWORKS)"
    production = {
        "DJANGO_SETTINGS_MODULE": "goldset.settings_production",
        "SECRET_KEY": "k" * 64,
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/goldset",
    }
    assert in_fresh_process(script, **production) == "[]"
    assert in_fresh_process(script, **production, METRICS_ALLOWED_NETWORKS="10.1.0.0/16") == "['10.1.0.0/16']"
    assert in_fresh_process(script) == "['127.0.0.0/8', '::1/128']"  # the embedded default, on a laptop
