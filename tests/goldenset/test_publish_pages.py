"""The publish job's page: where the publish page and the coverage page's form land, its
status fragment polling itself (htmx, no inline script) while the job is queued or running,
ending with a link to the new version or with why there is none; who may open it; and the
whole flow in a browser, the fragment following a job a worker finishes later."""

import os
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import TestCase
from django.urls import reverse

from goldenset.models import Membership, PublishJob
from goldenset.publishing import PROGRESS_KEY, publish_job_run
from goldenset.services import membership_grant
from tests.browser import login
from tests.support import factories

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("tiny", manager="owner")]


@pytest.fixture
def unsent(monkeypatch):
    """A worker that has not taken the job yet: sending does nothing."""
    monkeypatch.setattr("goldenset.tasks.publish_job_task.delay", lambda job_id: None)


def job_url(job: PublishJob) -> str:
    return reverse("publish_job", kwargs={"slug": job.golden_set.slug, "job_id": job.pk})


def status_url(job: PublishJob) -> str:
    return reverse("publish_job_status", kwargs={"slug": job.golden_set.slug, "job_id": job.pk})


def publish(client, note="first") -> PublishJob:
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = client.post(reverse("publish", args=["tiny"]), {"note": note})
    job = PublishJob.objects.get()
    assert response.status_code == 302 and response["Location"] == job_url(job)
    return job


def test_the_publish_page_lands_on_the_job_which_links_the_new_version(client, golden_set, owner):
    client.force_login(owner)
    job = publish(client)
    page = client.get(job_url(job)).content.decode()
    assert "Publishing Tiny" in page and "Done" in page
    assert f'Published <a href="{reverse("version", args=["tiny", 1])}">v1</a>' in page and "3 labels" in page
    assert "hx-get" not in page  # done: nothing left to follow


def test_a_queued_job_polls_its_own_fragment_which_shows_the_steps_once_running(client, golden_set, owner, unsent):
    client.force_login(owner)
    job = publish(client)
    page = client.get(job_url(job)).content.decode()
    assert f'hx-get="{status_url(job)}" hx-trigger="every 1s" hx-swap="outerHTML"' in page and "Waiting for a worker." in page
    assert "<script>" not in page.split('id="publish-job"')[1]

    PublishJob.objects.filter(pk=job.pk).update(status=PublishJob.Status.RUNNING)
    cache.set(PROGRESS_KEY.format(job.pk), {"step": "writing labels", "number": 4, "steps": 6, "done": 20000, "total": 50000})
    fragment = client.get(status_url(job)).content.decode()
    assert fragment.startswith('<section id="publish-job"') and "<html" not in fragment
    assert "Step 4 of 6: writing labels, 20000 of 50000." in fragment
    assert '<progress max="50000" value="20000">' in fragment and "hx-get" in fragment

    PublishJob.objects.filter(pk=job.pk).update(status=PublishJob.Status.QUEUED)
    publish_job_run(job.pk)
    fragment = client.get(status_url(job)).content.decode()
    assert "hx-get" not in fragment and 'href="/sets/tiny/versions/1/"' in fragment


def test_a_failed_job_says_why_and_leads_back_to_the_publish_page(client, golden_set, owner, unsent):
    client.force_login(owner)
    job = publish(client)
    PublishJob.objects.filter(pk=job.pk).update(status=PublishJob.Status.FAILED, error="the worker running it stopped")
    page = client.get(job_url(job)).content.decode()
    assert "Not published: the worker running it stopped" in page and f'href="{reverse("publish", args=["tiny"])}"' in page


def test_a_refusal_stays_on_the_publish_page_at_once(client, golden_set, owner):
    client.force_login(owner)
    publish(client)
    refused = client.post(reverse("publish", args=["tiny"]), {"note": "again"})
    assert refused.status_code == 409 and "nothing changed since version 1 of &#x27;tiny&#x27;; not published" in refused.content.decode()
    assert PublishJob.objects.count() == 1


def test_with_nothing_to_publish_the_page_offers_no_publish_button(client, golden_set, owner):
    """Issue 30 item 8: "Nothing to publish" still showed a "Publish v2" button."""
    client.force_login(owner)
    publish_job_run(publish(client).pk)
    body = client.get(reverse("publish", args=["tiny"])).content.decode()
    assert "Nothing to publish: the labels, queries, slice values and settings are those of v1." in body
    assert "Publish v2</button>" not in body and 'class="card publish-form"' not in body


@pytest.mark.parametrize(
    "who, status",
    [
        ("manager", 200),
        ("staff", 200),
        ("adjudicator", 404),
        ("annotator", 404),
        ("stranger", 404),
        ("anonymous", 302),
    ],
)
def test_only_those_who_may_publish_follow_a_publish(client, golden_set, owner, make_user, unsent, who, status):
    client.force_login(owner)
    job = publish(client)
    client.logout()
    if who == "manager":
        client.force_login(owner)
    elif who == "staff":
        client.force_login(make_user("admin", is_staff=True))
    elif who in ("adjudicator", "annotator", "stranger"):
        user = make_user(who)
        if who != "stranger":
            membership_grant(user=user, golden_set=golden_set, role=getattr(Membership.Role, who.upper()))
        client.force_login(user)
    response = client.get(job_url(job))
    assert response.status_code == status
    assert client.get(status_url(job)).status_code == status
    if who == "anonymous":
        assert response["Location"].startswith("/accounts/login/")


def test_a_job_of_another_set_is_not_found_under_this_one(client, golden_set, owner, unsent):
    client.force_login(owner)
    job = publish(client)
    factories.golden_set("other", manager=owner)
    assert client.get(reverse("publish_job", kwargs={"slug": "other", "job_id": job.pk})).status_code == 404
    assert client.get(reverse("publish_job", kwargs={"slug": "tiny", "job_id": 999999})).status_code == 404


# --- in a browser ----------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_in_a_browser_the_progress_follows_the_job_to_the_new_version(browser_page, live_server, owner, golden_set, unsent):
    page = browser_page
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    login(page, live_server, "owner", "pw-owner")
    page.goto(f"{live_server.url}/sets/tiny/publish/")
    page.fill("#id_note", "from the browser")
    with page.expect_navigation():
        page.click("form.publish-form button[type=submit]")
    job = PublishJob.objects.get()
    assert page.url.endswith(job_url(job))
    assert page.locator("#publish-job").inner_text().find("Waiting for a worker.") >= 0
    _screenshot(page, "publish-job-queued")

    publish_job_run(job.pk)  # the worker, here
    page.locator("#publish-job a", has_text="v1").wait_for()  # htmx swapped in the finished job
    page.locator("#publish-job a", has_text="v1").click()
    page.wait_for_url(f"{live_server.url}/sets/tiny/versions/1/")
    assert not [error for error in errors if "Content Security Policy" in error]
    page.go_back()  # the page, never its fragment alone (which has a URL of its own)
    assert page.locator("h1", has_text="Publishing Tiny").is_visible()
    page.locator("#publish-job a", has_text="v1").wait_for()
    _screenshot(page, "publish-job-done")


def _screenshot(page, name: str) -> None:
    shots = os.environ.get("GOLDSET_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / f"{name}.png"), full_page=True)


def test_the_publish_page_lists_the_sets_recent_jobs_so_a_manager_who_left_finds_them_again(client, golden_set, owner, unsent):
    client.force_login(owner)
    job = publish(client, note="the pool of week 3")
    page = client.get(reverse("publish", args=["tiny"])).content.decode()
    assert "Recent publish jobs" in page
    assert f'href="{job_url(job)}"' in page and "the pool of week 3" in page and "not yet" in page
    other = factories.golden_set("other", manager=owner)
    assert "Recent publish jobs" not in client.get(reverse("publish", args=[other.slug])).content.decode()
