"""Archiving a run: it keeps its entries and every score, and leaves the leaderboard, the
alerts, the coverage flags, the pool forms and the default lists until it is unarchived."""

import pytest
from django.urls import reverse

from evaluation.models import Alert, Completeness, Evaluation, Run, RunData, Score
from evaluation.services import run_archive, run_unarchive
from labeling.pools.services import pool_build
from lib.errors import ConflictError, GoldsetError
from tests.api import client_for
from tests.evaluation.lifecycle.conftest import GERMAN, LIFECYCLE_SET, SLUG, score, upload

pytestmark = [pytest.mark.django_db, LIFECYCLE_SET]


@pytest.fixture
def weak(golden_set):
    """A test run of its own system that finds no German query's page: it flags the German
    slice on the coverage page and raises a slice-under-floor alert."""
    run = upload(golden_set, "test", missed=GERMAN)
    score(run)
    return run


def figures(run: Run) -> tuple:
    return (
        bytes(RunData.objects.get(run=run).ranked),
        sorted(Score.objects.filter(evaluation__run=run).values_list("evaluation__version__number", "slice", "metric", "value")),
        sorted(Completeness.objects.filter(evaluation__run=run).values_list("slice", "judged_at_k_final")),
        sorted(Alert.objects.filter(run=run).values_list("kind", "slice", "value")),
    )


def test_archiving_keeps_the_entries_scores_and_alerts_and_records_who_and_when(weak, owner):
    before = figures(weak)
    run_archive(run=weak, user=owner)
    weak.refresh_from_db()
    assert weak.archived and weak.archived_by == owner and weak.archived_at is not None
    assert figures(weak) == before
    run_unarchive(run=weak, user=owner)
    weak.refresh_from_db()
    assert (weak.archived_at, weak.archived_by) == (None, None)
    assert figures(weak) == before


def test_archiving_twice_or_unarchiving_a_live_run_is_refused_naming_the_run(weak, owner):
    with pytest.raises(ConflictError, match="'test' is not archived"):
        run_unarchive(run=weak, user=owner)
    run_archive(run=weak, user=owner)
    with pytest.raises(ConflictError, match="'test' is archived already"):
        run_archive(run=weak, user=owner)


def test_an_archived_run_is_still_scored_and_read_on_its_own_pages(client, weak, owner):
    run_archive(run=weak, user=owner)
    client.force_login(owner)
    page = client.get(reverse("run", kwargs={"slug": SLUG, "run_id": weak.id}))
    assert page.status_code == 200
    assert b"Archived" in page.content and b"Unarchive" in page.content
    assert Evaluation.objects.get(run=weak).status == Evaluation.Status.DONE
    compare = client.get(reverse("compare", kwargs={"slug": SLUG}), {"a": weak.id, "b": Run.objects.get(name="bm25").id})
    assert compare.status_code == 200 and compare.context["report"] is not None


def test_an_archived_run_leaves_the_leaderboard_and_comes_back_when_unarchived(client, weak, owner):
    client.force_login(owner)
    url = reverse("results", kwargs={"slug": SLUG})
    assert [r.run.name for r in client.get(url).context["report"].results] == ["bm25", "test"]
    run_archive(run=weak, user=owner)
    assert [r.run.name for r in client.get(url).context["report"].results] == ["bm25"]
    run_unarchive(run=weak, user=owner)
    assert [r.run.name for r in client.get(url).context["report"].results] == ["bm25", "test"]


def test_an_archived_runs_alerts_are_hidden_not_resolved_and_show_again_when_unarchived(client, weak, owner):
    client.force_login(owner)
    url = reverse("alerts", kwargs={"slug": SLUG})
    shown = lambda: [alert.run.name for alert in client.get(url).context["page"].object_list]  # noqa: E731
    assert "test" in shown()
    run_archive(run=weak, user=owner)
    assert "test" not in shown()
    assert Alert.objects.filter(run=weak, resolved_at=None).exists()  # hidden, not resolved
    results = client.get(reverse("results", kwargs={"slug": SLUG}))
    assert all(alert.run_id != weak.id for alert in results.context["alerts"])
    run_unarchive(run=weak, user=owner)
    assert "test" in shown()


def test_an_archived_run_raises_no_new_alert_until_it_is_unarchived(weak, owner):
    Alert.objects.filter(run=weak).delete()
    run_archive(run=weak, user=owner)
    score(weak)  # a new version's scoring would do the same
    assert not Alert.objects.filter(run=weak).exists()
    run_unarchive(run=weak, user=owner)
    assert Alert.objects.filter(run=weak, kind=Alert.Kind.SLICE_UNDER_FLOOR, slice="query:lang=de").exists()


def test_an_archived_run_leaves_the_coverage_flags(client, weak, owner):
    client.force_login(owner)
    url = reverse("coverage", kwargs={"slug": SLUG})
    report = client.get(url).context["report"]
    assert [r.run.name for r in report.runs] == ["bm25", "test"] and report.flagged
    run_archive(run=weak, user=owner)
    report = client.get(url).context["report"]
    assert [r.run.name for r in report.runs] == ["bm25"] and not report.flagged
    assert [run.name for run in report.held_back] == ["test"]


def test_pool_build_refuses_an_archived_run_naming_it_and_the_pool_form_leaves_it_out(client, golden_set, weak, owner):
    run_archive(run=weak, user=owner)
    with pytest.raises(GoldsetError) as refused:
        pool_build(golden_set=golden_set, runs=[weak], depth=3, strategy="depth")
    assert "run 'test' is archived" in " ".join(refused.value.problems)
    client.force_login(owner)
    page = client.get(reverse("completeness", kwargs={"slug": SLUG}))
    assert [label for _, label in page.context["pool_form"].fields["runs"].choices] == ["bm25"]


def test_the_compare_form_offers_no_archived_run(weak, golden_set, owner):
    from evaluation.forms import CompareForm

    run_archive(run=weak, user=owner)
    assert [run.name for run in CompareForm(golden_set=golden_set).fields["a"].queryset] == ["bm25"]


def test_the_runs_list_hides_archived_runs_behind_a_show_archived_link(client, weak, owner):
    client.force_login(owner)
    url = reverse("runs", kwargs={"slug": SLUG})
    assert b"show archived" not in client.get(url).content
    run_archive(run=weak, user=owner)
    page = client.get(url)
    assert [row.run.name for row in page.context["report"].rows] == ["bm25"]
    assert b"show archived (1)" in page.content
    shown = client.get(url, {"archived": "1"})
    assert [row.run.name for row in shown.context["report"].rows] == ["bm25", "test"]
    assert b"hide archived" in shown.content and b"run-flag archived" in shown.content


def test_the_apis_run_lists_leave_archived_runs_out_unless_asked(weak, owner, token):
    run_archive(run=weak, user=owner)
    client = client_for(token("read"))
    base = f"/api/v1/golden-sets/{SLUG}/"
    names = lambda path, **params: [r["name"] for r in client.get(base + path, params).json()["results"]]  # noqa: E731
    assert names("runs/") == ["bm25"]
    assert names("runs/", archived="true") == ["test"]
    assert sorted(names("runs/", archived="all")) == ["bm25", "test"]
    assert client.get(base + "runs/", {"archived": "maybe"}).status_code == 400
    runs = lambda **params: [e["run"]["name"] for e in client.get(base + "evaluations/", params).json()["results"]]  # noqa: E731
    assert runs() == ["bm25"]
    assert runs(archived="all") == ["bm25", "test"]
    detail = client.get(base + f"runs/{weak.id}/").json()
    assert detail["archived"] is True and detail["archived_by"] == "owner" and detail["counted"] is False


def test_the_archive_run_command_archives_and_undoes(weak):
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    call_command("archive_run", SLUG, "test", stdout=out)
    assert "archived" in out.getvalue() and Run.objects.get(pk=weak.pk).archived
    call_command("archive_run", SLUG, "test", "--undo", stdout=out)
    assert not Run.objects.get(pk=weak.pk).archived
    with pytest.raises(CommandError, match="no run named 'nope'"):
        call_command("archive_run", SLUG, "nope")
