"""The calibration of model labels through the API: what the page shows, for read tokens,
and nothing for those who may not read the set."""

import pytest

from goldenset.model_labels import model_labels_import, prompt_hash_of
from lib.formats import ModelLabelLine
from tests.api import SLUG, assert_error, client_for

pytestmark = pytest.mark.django_db

URL = f"/api/v1/golden-sets/{SLUG}/model-labels/calibration/"


@pytest.fixture
def labelled(golden_set, run):
    # q1/d2: people 0, model 2; q1/d1 agreed; q3/d1 fills a pair the version left unjudged.
    records = [ModelLabelLine(1, "q1", "d1", 2), ModelLabelLine(2, "q1", "d2", 2), ModelLabelLine(3, "q3", "d1", 1)]
    model_labels_import(golden_set=golden_set, model="judge", prompt_text="grade", records=records)
    return golden_set


def test_a_read_token_gets_the_sources_and_the_calibration(labelled, token, golden_set, run):
    body = client_for(token("read", golden_set)).get(URL).json()
    assert body["sources"] == [{"model": "judge", "prompt_hash": prompt_hash_of("grade"), "label_count": 3}]
    calibration = body["calibration"]
    assert (calibration["model"], calibration["version"], calibration["metric"]) == ("judge", 1, "recall@2")
    assert calibration["overall"]["pairs"] == 2
    assert calibration["overall"]["confusion"][0] == [0, 0, 1, 0]
    assert calibration["worst"] == [{"query_id": "q1", "doc_id": "d2", "human": 0, "model": 2, "flip": True}]
    assert calibration["filled_pairs"] == 1
    assert [(r["run_id"], r["human_rank"], r["filled_rank"]) for r in calibration["runs"]] == [(run.pk, 1, 1)]
    assert calibration["tau"] is None  # one run: nothing to rank


def test_a_set_without_model_labels_has_no_calibration(run, token, golden_set):
    assert client_for(token("read", golden_set)).get(URL).json() == {"sources": [], "calibration": None}


def test_an_unknown_model_or_a_malformed_prompt_hash_is_refused_in_the_error_shape(labelled, token, golden_set):
    client = client_for(token("read", golden_set))
    assert_error(client.get(URL, {"model": "nobody"}), 404, "not_found")
    assert_error(client.get(URL, {"model": "judge", "prompt": "abc"}), 400)
    assert_error(client.get(URL, {"modle": "judge"}), 400)


def test_an_adjudicators_token_reads_it(labelled, token, adjudicator):
    assert client_for(token("read", owner=adjudicator)).get(URL).status_code == 200


def test_annotators_other_sets_tokens_and_anonymous_callers_get_nothing(labelled, token, annotator, other_set):
    assert_error(client_for(token("read", owner=annotator)).get(URL), 404, "not_found")
    assert_error(client_for(token("read", other_set)).get(URL), 404, "not_found")
    assert_error(client_for(None).get(URL), 401, "not_authenticated")


def test_it_only_reads(labelled, token, golden_set):
    assert_error(client_for(token("write", golden_set)).post(URL, {}), 405)


def test_the_calibration_gives_scores_with_model_fill_and_recall_estimates_named_as_such(labelled, token, golden_set, run):
    calibration = client_for(token("read", golden_set)).get(URL).json()["calibration"]
    assert calibration["model_fill"] == f"with model fill: judge, prompt hash {prompt_hash_of('grade')}"
    [ranked] = calibration["runs"]
    assert [score["metric"] for score in ranked["scores"]] == ["recall@2", "recall@10", "ndcg@10", "mrr"]
    assert set(ranked["scores"][0]) == {"metric", "human", "with_model_fill"}
    assert [share["k"] for share in ranked["model_shares"]] == [2, 10]
    assert calibration["recalls"] == []  # no completeness sample in this set
    assert calibration["overall"]["too_few_pairs"] is False and calibration["overall"]["model_only_share"] == 0.5
