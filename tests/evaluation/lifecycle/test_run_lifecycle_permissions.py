"""Who may archive, unarchive, mark complete and mark partial a run, on the pages (POST
with CSRF, managers only) and through the API (a manager's write token)."""

import pytest
from django.test import Client
from django.urls import reverse

from evaluation.models import Run
from evaluation.services import run_archive, run_mark_complete
from tests.api import client_for
from tests.evaluation.lifecycle.conftest import LIFECYCLE_SET, QUERIES, SLUG, upload

pytestmark = [pytest.mark.django_db, LIFECYCLE_SET]

ACTIONS = ["archive", "unarchive", "mark-complete", "mark-partial"]


@pytest.fixture
def small(golden_set):
    return upload(golden_set, "test", QUERIES[:8])  # partial


def ready(action: str, run: Run, owner) -> Run:
    """The run in the state the action applies to."""
    if action == "unarchive":
        run_archive(run=run, user=owner)
    if action == "mark-partial":
        run_mark_complete(run=run, user=owner)
    run.refresh_from_db()
    return run


def changed(action: str, run: Run) -> bool:
    run.refresh_from_db()
    return {
        "archive": run.archived_at is not None,
        "unarchive": run.archived_at is None,
        "mark-complete": run.completed_at is not None,
        "mark-partial": run.completed_at is None,
    }[action]


def url(action: str, run: Run) -> str:
    return reverse("run_lifecycle", kwargs={"slug": SLUG, "run_id": run.id, "action": action})


@pytest.mark.parametrize("action", ACTIONS)
def test_a_manager_changes_the_lifecycle_from_the_run_page(client, small, owner, action):
    run = ready(action, small, owner)
    client.force_login(owner)
    response = client.post(url(action, run))
    assert response.status_code == 302 and response["Location"] == reverse("run", kwargs={"slug": SLUG, "run_id": run.id})
    assert changed(action, run)


def test_the_runs_list_buttons_go_back_to_the_list_as_it_was_shown(client, small, owner):
    client.force_login(owner)
    response = client.post(url("archive", small), {"back": "runs", "archived": "1"})
    assert response["Location"] == reverse("runs", kwargs={"slug": SLUG}) + "?archived=1"
    page = client.get(response["Location"])
    assert b"Unarchive" in page.content and b"Mark complete" in page.content


def test_a_refused_change_is_said_on_the_page_not_an_error(client, small, owner):
    client.force_login(owner)
    response = client.post(url("unarchive", small), follow=True)
    assert response.status_code == 200
    assert "run 'test' is not archived" in [str(m) for m in response.context["messages"]]


@pytest.mark.parametrize("role", ["adjudicator", "annotator", "stranger"])
@pytest.mark.parametrize("action", ACTIONS)
def test_no_one_but_a_manager_may_change_it(client, small, owner, request, role, action):
    run = ready(action, small, owner)
    client.force_login(request.getfixturevalue(role))
    assert client.post(url(action, run)).status_code == 404
    assert not changed(action, run)


@pytest.mark.parametrize("action", ACTIONS)
def test_anonymous_visitors_are_sent_to_log_in(client, small, owner, action):
    run = ready(action, small, owner)
    response = client.post(url(action, run))
    assert response.status_code == 302 and "/login" in response["Location"]
    assert not changed(action, run)


def test_the_actions_take_post_with_a_csrf_token_only(small, owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    # GET asks first (a confirmation page) and changes nothing; the others have no GET page.
    assert client.get(url("archive", small)).status_code == 200
    assert client.get(url("unarchive", small)).status_code == 302
    assert client.post(url("archive", small)).status_code == 403
    assert not changed("archive", small)


def test_the_buttons_are_shown_to_managers_only(client, small, owner, adjudicator):
    run_page = reverse("run", kwargs={"slug": SLUG, "run_id": small.id})
    runs_page = reverse("runs", kwargs={"slug": SLUG})
    client.force_login(owner)
    assert b"Archive\xe2\x80\xa6</a>" in client.get(run_page).content and b"Archive\xe2\x80\xa6</a>" in client.get(runs_page).content
    client.force_login(adjudicator)
    assert (
        b"Archive\xe2\x80\xa6</a>" not in client.get(run_page).content and b"Archive\xe2\x80\xa6</a>" not in client.get(runs_page).content
    )
    # Nor the confirmation page: 404 as for every action of the run they may not take.
    assert client.get(reverse("run_lifecycle", kwargs={"slug": SLUG, "run_id": small.id, "action": "archive"})).status_code == 404


# --- the API ------------------------------------------------------------------------------


def api_url(action: str, run: Run) -> str:
    return f"/api/v1/golden-sets/{SLUG}/runs/{run.id}/{action}/"


@pytest.mark.parametrize("action", ACTIONS)
def test_a_managers_write_token_changes_the_lifecycle(small, owner, token, action):
    run = ready(action, small, owner)
    response = client_for(token("write")).post(api_url(action, run))
    assert response.status_code == 200 and response.json()["id"] == run.id
    assert changed(action, run)


@pytest.mark.parametrize(
    ("who", "status"), [("read", 403), ("adjudicator", 403), ("annotator", 404), ("stranger", 404), ("anonymous", 401)]
)
@pytest.mark.parametrize("action", ACTIONS)
def test_other_callers_may_not(small, owner, token, request, action, who, status):
    run = ready(action, small, owner)
    if who == "anonymous":
        secret = None
    elif who == "read":
        secret = token("read")
    else:
        secret = token("write", request.getfixturevalue(who))
    assert client_for(secret).post(api_url(action, run)).status_code == status
    assert not changed(action, run)


def test_the_api_names_what_is_refused(small, token):
    client = client_for(token("write"))
    refused = client.post(api_url("unarchive", small))
    assert refused.status_code == 409 and refused.json()["error"]["message"] == "run 'test' is not archived"
    bm25 = Run.objects.get(name="bm25")
    assert client.post(api_url("mark-complete", bm25)).status_code == 422
    assert client.post(api_url("archive", small), {}, format="json").status_code == 200
