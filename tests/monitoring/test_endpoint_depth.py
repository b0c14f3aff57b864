"""A live endpoint asked once at a depth of the manager's choosing for the depth-and-cost
sweep (answers.endpoint_depth): through the nightly asker against a real engine server
(tests.monitoring.endpoints.engines), stored as a run outside the series, then swept to K.
The command, the page (a button on the sweep page) and who may use them."""

import io
import re

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from answers.endpoint_depth import endpoint_depth_run, endpoint_depth_submit
from answers.models import EndpointDepthRun
from evaluation.models import Evaluation, Run
from goldenset.models import Membership
from goldenset.services import membership_grant
from lib.errors import ConflictError, GoldsetError
from monitoring.endpoints.services import endpoint_add
from monitoring.models import NightlyRun
from monitoring.nightly.services import nightly_run_now
from tests.support import factories

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reranked(watched_set, engines):
    return endpoint_add(
        golden_set=watched_set, name="prod-rerank", system="prod", stage="reranked", preset="goldset", url=engines.base + "/goldset"
    )


@pytest.fixture
def manager(watched_set, make_user):
    user = make_user("boss")
    membership_grant(user=user, golden_set=watched_set, role=Membership.Role.MANAGER)
    return user


def text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def sweep_endpoint(*args) -> str:
    out = io.StringIO()
    call_command("sweep_endpoint", "watched", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_the_command_asks_every_query_at_the_depth_and_sweeps_the_one_off_run(reranked, engines):
    out = sweep_endpoint("--endpoint", "prod-rerank", "--depth", "10")
    # Asked at 10, not at the reranked endpoint's k_final (3), each query once.
    assert {request["body"]["k"] for request in engines.seen} == {10} and len(engines.seen) == 10
    run = Run.objects.get()
    assert run.name.startswith("prod-rerank depth 10 ") and (run.system, run.stage, run.series_id) == ("prod", "reranked", None)
    assert run.entry_count == 100 and not NightlyRun.objects.exists()
    assert Evaluation.objects.get(run=run).status == Evaluation.Status.DONE
    lines = out.splitlines()
    assert lines[0] == f"{run.name}: 10 queries asked at depth 10, 0 failed"
    rows = {int(line.split()[0]): line for line in lines[2:]}
    # The labels are the engine's top two pages relevant: recall@1 0.5, recall@2 on 1.0.
    assert sorted(rows) == list(range(1, 11))
    assert rows[1].split()[1] == "0.500" and rows[2].split()[1] == "1.000" and "cheapest ≥ 0.80" in rows[2]
    assert "k_final" in rows[3] and rows[10].split()[2] == "4000"
    job = EndpointDepthRun.objects.get()
    assert (job.status, job.run_id, job.queries_done, job.failed_count) == ("done", run.pk, 10, 0)


def test_bad_asks_are_named_and_a_busy_endpoint_is_refused(reranked, watched_set):
    with pytest.raises(CommandError, match=r"depth: pages to ask for, from 1 to the version's k_first \(10\), got 11"):
        sweep_endpoint("--endpoint", "prod-rerank", "--depth", "11")
    with pytest.raises(CommandError, match="--endpoint: golden set 'watched' has no endpoint 'nope'"):
        sweep_endpoint("--endpoint", "nope", "--depth", "5")
    other = factories.golden_set("other")
    with pytest.raises(GoldsetError) as caught:
        endpoint_depth_submit(golden_set=other, endpoint=reranked, depth=5, user=None, send=None)
    assert any(p.startswith("endpoint:") for p in caught.value.problems)
    night = nightly_run_now(endpoint=reranked)
    with pytest.raises(ConflictError, match=f"a night of prod-rerank \\(id {night.pk}\\) is pending"):
        endpoint_depth_submit(golden_set=watched_set, endpoint=reranked, depth=5, user=None, send=None)
    NightlyRun.objects.all().delete()
    first = endpoint_depth_submit(golden_set=watched_set, endpoint=reranked, depth=5, user=None, send=None)
    with pytest.raises(ConflictError, match="one ask at a time"):
        endpoint_depth_submit(golden_set=watched_set, endpoint=reranked, depth=6, user=None, send=None)
    assert endpoint_depth_run(first.pk).status == "done"
    assert endpoint_depth_run(first.pk) is None  # a second delivery finds it claimed: one run
    assert Run.objects.count() == 1 and not EndpointDepthRun.objects.filter(status="failed").exists()


def test_an_endpoint_that_answers_nothing_fails_the_ask_saying_why(watched_set, engines):
    down = endpoint_add(
        golden_set=watched_set, name="down", system="x", stage="reranked", preset="goldset", url="http://127.0.0.1:9/goldset", retries=0
    )
    job = endpoint_depth_submit(golden_set=watched_set, endpoint=down, depth=5, user=None, send=None)
    job = endpoint_depth_run(job.pk)
    assert job.status == "failed" and job.error.startswith("no query was answered") and not Run.objects.exists()


def test_a_manager_asks_from_the_sweep_page_and_lands_on_the_runs_sweep(client, reranked, manager, engines):
    client.force_login(manager)
    night_run = factories.run(reranked.golden_set, "nightly", {"q1": ["d1"]})
    sweep_url = reverse("run_sweep", kwargs={"slug": "watched", "run_id": night_run.pk})
    body = client.get(sweep_url).content.decode()
    assert "Sweep deeper: ask an endpoint at a depth" in body and 'name="depth"' in body
    start = reverse("endpoint_depth_start", kwargs={"slug": "watched"})
    refused = client.post(start, {"endpoint": reranked.pk, "depth": "0"})
    assert refused.status_code == 200 and not EndpointDepthRun.objects.exists()
    response = client.post(start, {"endpoint": reranked.pk, "depth": "6"})
    job = EndpointDepthRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("endpoint_depth", kwargs={"slug": "watched", "job_id": job.pk})
    # The task ran on commit, in process (no broker in tests): the job's page leads to the sweep.
    landed = client.get(response["Location"], follow=True)
    job.refresh_from_db()
    assert job.status == "done" and {request["body"]["k"] for request in engines.seen} == {6}
    assert landed.redirect_chain[-1][0].startswith(reverse("run_sweep", kwargs={"slug": "watched", "run_id": job.run_id}))
    assert "Recall@k for k = 1 to 6" in text_of(landed.content.decode())


def test_who_may_ask_and_read(client, reranked, manager, make_user, watched_set):
    job = EndpointDepthRun.objects.create(golden_set=watched_set, endpoint=reranked, version=watched_set.latest_version(), depth=5)
    start = reverse("endpoint_depth_start", kwargs={"slug": "watched"})
    page = reverse("endpoint_depth", kwargs={"slug": "watched", "job_id": job.pk})
    for url in (start, page):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    annotator, adjudicator, stranger = make_user("annotator"), make_user("adjudicator"), make_user("stranger")
    membership_grant(user=annotator, golden_set=watched_set, role=Membership.Role.ANNOTATOR)
    membership_grant(user=adjudicator, golden_set=watched_set, role=Membership.Role.ADJUDICATOR)
    factories.golden_set("elsewhere", manager=stranger)  # a manager of another set
    for user in (annotator, stranger):
        client.force_login(user)
        assert client.get(start).status_code == 404 and client.get(page).status_code == 404
        assert client.post(start, {"endpoint": reranked.pk, "depth": "5"}).status_code == 404
    client.force_login(adjudicator)
    assert client.get(page).status_code == 200 and client.post(start, {"endpoint": reranked.pk, "depth": "5"}).status_code == 404
    client.force_login(manager)
    assert client.get(page).status_code == 200 and "Queued" in client.get(page).content.decode()
    other = factories.golden_set("theirs", manager=manager)
    assert client.get(reverse("endpoint_depth", kwargs={"slug": "theirs", "job_id": job.pk})).status_code == 404
    assert other.pk and EndpointDepthRun.objects.count() == 1
