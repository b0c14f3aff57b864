"""The manager's walk through the pages alone: upload a small test run that is weak on a
slice, see the coverage flags and the alert it causes, archive it from the runs list, and
see them go; unarchive it and they are back."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evaluation.models import Run
from tests.evaluation.lifecycle.conftest import ENGLISH, GERMAN, LIFECYCLE_SET, SLUG, run_lines, score

pytestmark = [pytest.mark.django_db, LIFECYCLE_SET]


def flagged(client) -> list[str]:
    return [one.name for one in client.get(reverse("coverage", kwargs={"slug": SLUG})).context["report"].flagged]


def alerted(client) -> list[str]:
    return [alert.run.name for alert in client.get(reverse("alerts", kwargs={"slug": SLUG})).context["page"].object_list]


def test_archiving_the_test_run_takes_away_the_coverage_flags_it_caused(client, golden_set, owner):
    client.force_login(owner)
    assert flagged(client) == [] and alerted(client) == []

    # A test run over every English query and a third of the German ones, which it misses:
    # not partial (200 of 300 queries), but the German slice falls under its floor.
    queries = ENGLISH + GERMAN[:50]
    upload = SimpleUploadedFile("test.run", "".join(run_lines(queries, missed=set(GERMAN))).encode())
    response = client.post(
        reverse("runs", kwargs={"slug": SLUG}),
        {"file": upload, "system": "test", "stage": "first_stage", "name": "test"},
    )
    assert response.status_code == 302
    run = Run.objects.get(golden_set=golden_set, name="test")
    assert not run.partial
    score(run)  # what the worker does once the upload commits

    assert "query:lang=de" in flagged(client)
    assert "test" in alerted(client)

    runs_page = client.get(reverse("runs", kwargs={"slug": SLUG}))
    archive = reverse("run_lifecycle", kwargs={"slug": SLUG, "run_id": run.id, "action": "archive"})
    assert f'href="{archive}?back=runs"'.encode() in runs_page.content
    # Archiving asks first: the page says what the run leaves, and changes nothing.
    asked = client.get(archive, {"back": "runs"})
    assert b"leaves the leaderboard" in asked.content and b'name="back" value="runs"' in asked.content
    assert flagged(client) != []
    archived = client.post(
        reverse("run_lifecycle", kwargs={"slug": SLUG, "run_id": run.id, "action": "archive"}),
        {"back": "runs"},
        follow=True,
    )
    assert [row.run.name for row in archived.context["report"].rows] == ["bm25"]
    assert b"show archived (1)" in archived.content

    assert flagged(client) == [] and alerted(client) == []
    coverage = client.get(reverse("coverage", kwargs={"slug": SLUG}))
    assert b"Left out of the figures and flags" in coverage.content

    client.post(reverse("run_lifecycle", kwargs={"slug": SLUG, "run_id": run.id, "action": "unarchive"}))
    assert "query:lang=de" in flagged(client) and "test" in alerted(client)
