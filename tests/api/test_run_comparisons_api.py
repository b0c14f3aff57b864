"""A run compared with a baseline through the API (what `goldset gate` asks): the tag names
the version, the scores a comparison needs are scheduled on it, and only the set's managers
with a write token may ask (asking schedules scoring)."""

import pytest

from evaluation.models import Evaluation
from evaluation.services import run_import
from goldenset.services import qrels_import, version_publish
from goldenset.tags import tag_move
from tests.api import RUN, SLUG, assert_error, client_for, make_set

pytestmark = pytest.mark.django_db

BASE = f"/api/v1/golden-sets/{SLUG}/"


@pytest.fixture
def candidate(run, golden_set, version, manager):
    """prod names version 1, version 2 is published, then the candidate comes in: it is
    scored on version 2 only by itself."""
    tag_move(golden_set=golden_set, name="prod", version=version, user=manager)
    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 2\n"], source_name="more")
    version_publish(golden_set=golden_set, user=manager, note="second")
    lines = RUN.splitlines(keepends=True)
    return run_import(golden_set=golden_set, lines=lines, source_name="pr.run", system="bm25", stage="first_stage", name="pr", user=manager)


def test_a_tag_baseline_compares_on_the_tags_version_scheduling_the_candidates_scores_there(token, golden_set, run, candidate):
    writer = client_for(token("write", golden_set))
    assert not Evaluation.objects.filter(run=candidate, version__number=1).exists()
    body = {"baseline": "prod", "max_drop": 3}
    first = writer.post(BASE + f"runs/{candidate.id}/comparisons/", body, format="json")
    assert first.status_code in (200, 202)
    assert (first.json()["version"], first.json()["tag"], first.json()["baseline_run"]) == (1, "prod", run.name)
    assert Evaluation.objects.filter(run=candidate, version__number=1).exists()
    # Tasks run in-process here: the evaluation asked for is done by the next ask.
    done = writer.post(BASE + f"runs/{candidate.id}/comparisons/", body, format="json").json()
    assert (done["status"], done["passed"]) == ("done", True)
    assert {(f["metric"], f["slice"], f["drop_points"]) for f in done["figures"]} == {("recall@10", "", 0.0), ("recall@2", "", 0.0)}


def test_an_unknown_baseline_metric_or_slice_is_422_naming_the_field(token, golden_set, candidate):
    writer = client_for(token("write", golden_set))
    url = BASE + f"runs/{candidate.id}/comparisons/"
    assert assert_error(writer.post(url, {"baseline": "nightly", "max_drop": 3}, format="json"), 422)["field"] == "baseline"
    assert writer.post(url, {"baseline": "prod", "max_drop": 3}, format="json").status_code in (200, 202)
    assert (
        assert_error(writer.post(url, {"baseline": "prod", "max_drop": 3, "metrics": ["mrr@7"]}, format="json"), 422)["field"] == "metric"
    )
    assert (
        assert_error(writer.post(url, {"baseline": "prod", "max_drop": 3, "slices": ["lang=xx"]}, format="json"), 422)["field"] == "slice"
    )
    assert assert_error(writer.post(url, {"baseline": "prod"}, format="json"), 400)["field"] == "max_drop"


def test_who_may_ask(token, golden_set, candidate, adjudicator, annotator, make_user):
    url = BASE + f"runs/{candidate.id}/comparisons/"
    body = {"baseline": "prod", "max_drop": 3}
    assert_error(client_for().post(url, body, format="json"), 401)
    assert_error(client_for(token("read", golden_set)).post(url, body, format="json"), 403)
    assert_error(client_for(token("write", owner=adjudicator)).post(url, body, format="json"), 403)
    assert_error(client_for(token("write", owner=annotator)).post(url, body, format="json"), 404)
    stranger = make_user("stranger")
    make_set("theirs", stranger)
    assert_error(client_for(token("write", owner=stranger)).post(url, body, format="json"), 404)
