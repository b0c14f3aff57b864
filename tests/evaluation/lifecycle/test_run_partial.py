"""Partial runs: a run answering under the set's partial share of its queries is marked so
at upload, said so everywhere, and kept out of coverage flags and alerts until a manager
marks it complete."""

from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from django.utils.html import escape

from evaluation.models import Alert, Run
from evaluation.selectors import evaluation_settings
from evaluation.services import run_mark_complete, run_mark_partial
from evaluation.settings_service import evaluation_settings_update
from lib.errors import ConflictError, GoldsetError
from tests.api import client_for
from tests.evaluation.lifecycle.conftest import LIFECYCLE_SET, QUERIES, SLUG, run_lines, score, upload

pytestmark = [pytest.mark.django_db, LIFECYCLE_SET]

NOTE = "answers 8 of 300 queries (2.7%): marked partial: left out of coverage flags and alerts until a manager marks it complete"


@pytest.fixture
def small(golden_set):
    """A test run of 8 queries, scored: every other query scores 0 (trec_eval -c)."""
    run = upload(golden_set, "test", QUERIES[:8])
    score(run)
    return run


def test_a_run_of_8_queries_is_marked_partial_at_upload_and_says_so(small):
    assert (small.partial, small.answered_query_count, small.expected_query_count) == (True, 8, 300)
    assert small.partial_note == NOTE


def test_a_run_answering_most_queries_is_not_partial(golden_set):
    run = upload(golden_set, "most", QUERIES[:200])
    assert (run.partial, run.answered_query_count, run.partial_note) == (False, 200, "")


def test_the_share_is_a_setting_of_the_set(golden_set, owner):
    evaluation_settings_update(golden_set=golden_set, user=owner, partial_share=0.8)
    assert upload(golden_set, "most", QUERIES[:200]).partial
    with pytest.raises(GoldsetError, match="partial_share is a fraction from 0 to 1"):
        evaluation_settings_update(golden_set=golden_set, user=owner, partial_share=50)


def test_the_settings_page_edits_the_share(client, golden_set, owner):
    client.force_login(owner)
    url = reverse("evaluation_settings", kwargs={"slug": SLUG})
    form = client.get(url).context["form"]
    data = {name: value for name, value in form.initial.items() if value is not None}
    data["partial_share"] = "0.25"
    assert client.post(url, data).status_code == 302
    assert evaluation_settings(golden_set).partial_share == 0.25


def test_the_share_is_measured_against_the_latest_versions_queries_not_those_added_since(golden_set):
    from goldenset.services import queries_add
    from lib.formats import JsonRecord

    new = [JsonRecord(line=n, id=f"new{n}", text=f"new question {n}", metadata={"lang": "en"}) for n in range(1, 401)]
    queries_add(golden_set=golden_set, records=new)  # not published: v1 still has 300 queries
    run = upload(golden_set, "half", QUERIES[:150])
    assert (run.answered_query_count, run.expected_query_count, run.partial) == (150, 300, False)


def test_a_set_with_no_version_measures_against_its_live_queries(owner):
    from tests.support import factories

    tiny = factories.golden_set("unpublished", manager=owner)  # q1, q2, q3, nothing published
    run = factories.run(tiny, "one", {"q1": ["d1"]})
    assert (run.answered_query_count, run.expected_query_count, run.partial) == (1, 3, True)


def test_a_partial_run_raises_no_alert_and_no_coverage_flag(client, small, owner):
    assert not Alert.objects.filter(run=small).exists()
    client.force_login(owner)
    report = client.get(reverse("coverage", kwargs={"slug": SLUG})).context["report"]
    assert [r.run.name for r in report.runs] == ["bm25"] and not report.flagged
    page = client.get(reverse("coverage", kwargs={"slug": SLUG}))
    assert NOTE.encode() in page.content


def test_marking_it_complete_brings_its_alerts_and_flags_and_marking_it_partial_again_hides_them(client, small, owner):
    client.force_login(owner)
    coverage = reverse("coverage", kwargs={"slug": SLUG})
    alerts = reverse("alerts", kwargs={"slug": SLUG})
    run_mark_complete(run=small, user=owner)
    small.refresh_from_db()
    assert small.completed_by == owner and not small.held_back
    assert Alert.objects.filter(run=small, kind=Alert.Kind.SLICE_UNDER_FLOOR).exists()
    report = client.get(coverage).context["report"]
    assert "test" in [r.run.name for r in report.runs] and report.flagged
    assert "test" in [a.run.name for a in client.get(alerts).context["page"].object_list]
    run_mark_partial(run=small, user=owner)
    report = client.get(coverage).context["report"]
    assert "test" not in [r.run.name for r in report.runs] and not report.flagged
    assert "test" not in [a.run.name for a in client.get(alerts).context["page"].object_list]


def test_marking_is_refused_for_a_run_that_is_not_partial_or_already_marked(golden_set, small, owner):
    bm25 = Run.objects.get(name="bm25")
    with pytest.raises(GoldsetError, match="'bm25' is not partial"):
        run_mark_complete(run=bm25, user=owner)
    with pytest.raises(ConflictError):
        run_mark_partial(run=small, user=owner)
    run_mark_complete(run=small, user=owner)
    with pytest.raises(ConflictError, match="marked complete already"):
        run_mark_complete(run=small, user=owner)


def test_every_list_marks_a_partial_run(client, small, owner):
    client.force_login(owner)
    for name, params in (("runs", {}), ("results", {}), ("compare", {"a": small.id, "b": Run.objects.get(name="bm25").id})):
        page = client.get(reverse(name, kwargs={"slug": SLUG}), params)
        assert b"run-flag partial" in page.content, name
    page = client.get(reverse("run", kwargs={"slug": SLUG, "run_id": small.id}))
    assert NOTE.encode() in page.content and b"Mark complete" in page.content


def test_the_upload_page_says_a_run_is_partial(client, golden_set, owner):
    client.force_login(owner)
    upload_file = SimpleUploadedFile("test.run", "".join(run_lines(QUERIES[:8])).encode())
    response = client.post(
        reverse("runs", kwargs={"slug": SLUG}),
        {"file": upload_file, "system": "test", "stage": "first_stage", "name": ""},
        follow=True,
    )
    assert response.status_code == 200
    assert f"Run 'test first_stage' {NOTE}." in [str(message) for message in response.context["messages"]]
    assert escape(f"Run 'test first_stage' {NOTE}.").encode() in response.content


def test_the_api_says_a_run_is_partial_and_marks_it_complete(golden_set, token):
    client = client_for(token("write"))
    base = f"/api/v1/golden-sets/{SLUG}/runs/"
    upload_file = SimpleUploadedFile("test.run", "".join(run_lines(QUERIES[:8])).encode())
    body = client.post(base, {"file": upload_file, "system": "test", "stage": "first_stage"}, format="multipart").json()
    assert (body["partial"], body["partial_note"], body["counted"]) == (True, NOTE, False)
    marked = client.post(base + f"{body['id']}/mark-complete/")
    assert marked.status_code == 200 and marked.json()["counted"] is True and marked.json()["completed_at"]
    assert client.post(base + f"{body['id']}/mark-complete/").status_code == 409
    assert client.post(base + f"{body['id']}/mark-partial/").json()["counted"] is False
    listed = client.get(base).json()["results"]
    assert {run["name"]: run["partial"] for run in listed} == {"test first_stage": True, "bm25": False}


def test_import_run_says_a_run_is_partial(golden_set, tmp_path):
    path = tmp_path / "test.run"
    path.write_text("".join(run_lines(QUERIES[:8])))
    out = StringIO()
    call_command("import_run", str(path), golden_set=SLUG, system="test", stage="first_stage", stdout=out)
    assert NOTE in out.getvalue()


def test_a_series_run_is_never_partial(golden_set):
    from evaluation.services import run_import

    run = run_import(
        golden_set=golden_set,
        lines=run_lines(QUERIES[:8]),
        source_name="night.run",
        system="prod",
        stage="first_stage",
        name="prod night 1",
        series="prod nightly",
    )
    assert run.series_id is not None and not run.partial
