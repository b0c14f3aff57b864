"""What the model's labels would change, on the model labels page and its API: agreement
per query and page slice (with a floor of pairs), scores with model fill beside the
human-only ones, and the recall of the labels from a completeness sample, human only and
prediction-powered."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluation.models import Score
from goldenset.model_labels import model_labels_import, model_sources
from goldenset.models import Membership
from goldenset.services import membership_grant, version_publish
from labeling.model_labels import selectors
from labeling.model_labels.estimates import sample_own_pairs, sample_population, sample_recalls
from labeling.model_labels.selectors import calibration_report
from lib.formats import ModelLabelLine
from lib.ppi import human_share, ppi_share
from tests.labeling.model_labels.conftest import HUMAN, MODEL, MODEL_RELEVANT, POPULATION, TRULY_RELEVANT
from tests.support import factories

pytestmark = pytest.mark.django_db


def report(golden_set):
    return calibration_report(golden_set, model_sources(golden_set)[0])


# --- per slice -------------------------------------------------------------------------


@pytest.fixture
def paged_set(owner):
    """The conftest's labels over pages of two doc types: d1-d3 faq, d4-d6 guide."""
    pages = factories.pages("d1", "d2", "d3", doc_type="faq") + factories.pages("d4", "d5", "d6", doc_type="guide")
    queries = factories.queries("q1", "q2", lang="en") + factories.queries("q3", "q4", lang="de")
    made = factories.golden_set(
        "paged",
        manager=owner,
        qrels=HUMAN,
        pages=pages,
        queries=queries,
        query_slice_fields=["lang"],
        page_slice_fields=["doc_type"],
        k_first=10,
        k_final=2,
    )
    version_publish(golden_set=made)
    records = [ModelLabelLine(n, q, d, g) for n, ((q, d), g) in enumerate(MODEL.items(), start=1)]
    model_labels_import(golden_set=made, model="judge-7b", prompt_text="grade it", records=records)
    return made


def test_a_slice_with_too_few_pairs_gives_its_count_and_no_figure(paged_set):
    slices = {a.name: a for a in report(paged_set).slices}
    assert set(slices) == {"queries lang = de", "queries lang = en", "pages doc_type = faq", "pages doc_type = guide"}
    faq = slices["pages doc_type = faq"]
    assert faq.too_few and faq.pairs == 4 and faq.minimum_pairs == selectors.MIN_SLICE_PAIRS
    assert (faq.kappa_quadratic, faq.kappa_unweighted, faq.model_only_share, faq.human_only_share) == (None, None, None, None)


def test_page_slices_count_the_pairs_of_their_pages_over_every_query(paged_set, monkeypatch):
    monkeypatch.setattr(selectors, "MIN_SLICE_PAIRS", 1)
    slices = {a.name: a for a in report(paged_set).slices}
    # faq pages d1-d3: q1/d1 3-3, q1/d2 0-2, q2/d3 2-2, q3/d1 0-0.
    faq = slices["pages doc_type = faq"]
    assert faq.pairs == 4 and not faq.too_few
    assert faq.confusion.tolist() == [[1, 0, 1, 0], [0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    assert (faq.model_relevant_humans_not, faq.model_relevant, faq.model_only_share) == (1, 3, pytest.approx(1 / 3))
    # guide pages d4-d6: q2/d4 1-0, q3/d5 2-3, q4/d6 1-1: one relevant page of three the model misses.
    guide = slices["pages doc_type = guide"]
    assert (guide.pairs, guide.human_relevant_model_not, guide.human_relevant) == (3, 1, 3)
    assert guide.human_only_share == pytest.approx(1 / 3)


def test_the_page_says_a_slice_has_too_few_pairs(client, paged_set, owner):
    client.force_login(owner)
    body = client.get(reverse("model_labels", args=["paged"])).content.decode()
    assert "pages doc_type = guide" in body
    assert f"too few pairs: 3 of the {selectors.MIN_SLICE_PAIRS} a figure needs" in body


# --- scores with model fill ------------------------------------------------------------


def test_runs_are_scored_with_model_fill_beside_their_human_scores(golden_set):
    calibration = report(golden_set)
    assert calibration.filled_metrics == ["recall@2", "recall@10", "ndcg@10", "mrr"]
    gamma = {r.name: r for r in calibration.runs}["gamma"]
    scores = {s.metric: s for s in gamma.scores}
    # gamma: q1 [d3, d2], q2 [d4], q3 [d1], q4 [d2, d1]. Human labels find q2/d4 only (1 of
    # q2's 2 relevant: recall 0.5, others 0): recall@2 0.125. Filled, q1/d3 (3) and q4/d2 (2)
    # count too: q1 1 of 2, q2 1 of 2, q4 1 of 2: 0.375.
    assert (scores["recall@2"].human, scores["recall@2"].filled) == (pytest.approx(0.125), pytest.approx(0.375))
    assert scores["recall@2"].change_points == pytest.approx(25.0)
    # mrr: human q2 1/1 only (0.25); filled q1 1/1, q2 1/1, q4 1/1 (0.75).
    assert (scores["mrr"].human, scores["mrr"].filled) == (pytest.approx(0.25), pytest.approx(0.75))


def test_the_models_share_of_the_labels_in_a_runs_top_k_is_counted(golden_set):
    runs = {r.name: r for r in report(golden_set).runs}
    # gamma's top 2 labelled once filled: q1/d3 (model), q1/d2, q2/d4, q3/d1, q4/d2 (model): 2 of 5.
    share = {s.k: s for s in runs["gamma"].shares}[2]
    assert (share.model, share.labelled, share.share) == (2, 5, pytest.approx(0.4))
    # alpha's top 2 holds no pair the version left unjudged.
    assert {s.k: s.model for s in runs["alpha"].shares} == {2: 0, 10: 0}


def test_stored_scores_stay_human_only(golden_set):
    report(golden_set)
    gamma = Score.objects.filter(evaluation__run__name="gamma", metric="recall@2", slice="").values_list("value", flat=True)
    assert list(gamma) in ([], [pytest.approx(0.125)])


def test_the_page_labels_the_filled_scores_with_the_model_and_prompt(client, golden_set, owner):
    client.force_login(owner)
    body = client.get(reverse("model_labels", args=[golden_set.slug])).content.decode()
    source = model_sources(golden_set)[0]
    assert f"with model fill: judge-7b, prompt hash {source.short_hash}" in body
    row = re.search(r'<tr data-run="gamma">(.*?)</tr>', body, re.S).group(1)
    assert "0.375" in row and "2/5" in row


# --- recall of the labels, prediction-powered ------------------------------------------


def test_the_population_of_a_sample_is_drawn_up_again_with_its_judged_pairs(sampled):
    sample = sampled.completeness_samples.get()
    query_pks, page_pks = sample_population(sample, sample_own_pairs(sample))
    names = dict(sampled.queries.values_list("pk", "query_id")), dict(sampled.corpus.pages.values_list("pk", "doc_id"))
    assert {(names[0][q], names[1][p]) for q, p in zip(query_pks.tolist(), page_pks.tolist())} == POPULATION


def test_the_recall_of_the_labels_is_estimated_by_people_and_prediction_powered(sampled):
    [estimate] = sample_recalls(sampled, model_sources(sampled)[0])
    assert (estimate.found, estimate.population, estimate.population_now, estimate.model_called) == (1, 10, 10, 10)
    assert (estimate.judged, estimate.relevant, estimate.judged_model) == (10, 2, 10)
    # People: 2 of 10 relevant, so recall 1 / (1 + 10 * 0.2) = 1/3, Wilson's interval mapped.
    wilson = human_share(2, 10)
    assert estimate.human.recall == pytest.approx(1 / 3)
    assert (estimate.human.low, estimate.human.high) == (
        pytest.approx(1 / (1 + 10 * wilson.high)),
        pytest.approx(1 / (1 + 10 * wilson.low)),
    )
    # Model: 3 of 10 relevant (m = 0.3); on the sample it missed q2/d6 (b = 1) and wrongly
    # called q2/d5 and q3/d11 (c = 2): theta = 0.3 + (1 - 2) / 10 = 0.2, recall 1/3 again.
    ordered = sorted(POPULATION)
    expected = ppi_share(
        [p in MODEL_RELEVANT for p in ordered], [p in TRULY_RELEVANT for p in ordered], [p in MODEL_RELEVANT for p in ordered]
    )
    assert estimate.ppi.share.share == pytest.approx(0.2)
    assert estimate.ppi.recall == pytest.approx(1 / 3)
    assert (estimate.ppi.low, estimate.ppi.high) == (
        pytest.approx(1 / (1 + 10 * expected.high)),
        pytest.approx(1 / (1 + 10 * expected.low)),
    )
    assert estimate.label == "prediction-powered (judge-7b + 10 human labels)"


def test_no_prediction_powered_estimate_without_the_models_labels_on_the_judged_pairs(sampled):
    model_labels_import(golden_set=sampled, model="partial", prompt_hash="a" * 64, records=[ModelLabelLine(1, "q1", "d3", 2)])
    source = next(s for s in model_sources(sampled) if s.model == "partial")
    [estimate] = sample_recalls(sampled, source)
    assert estimate.ppi is None and estimate.human is not None
    assert estimate.why_not == "the model labelled 1 of the 10 judged sample pairs; it needs all of them"


def test_the_page_and_the_api_show_both_recall_intervals_labelled(client, sampled, owner, teammate):
    client.force_login(owner)
    body = client.get(reverse("model_labels", args=["sampled"])).content.decode()
    assert "prediction-powered (judge-7b + 10 human labels)" in body
    assert "human only (10 human labels)" in body
    membership_grant(user=teammate, golden_set=sampled, role=Membership.Role.ANNOTATOR)
    client.force_login(teammate)
    assert client.get(reverse("model_labels", args=["sampled"])).status_code == 404


def test_the_page_with_a_sample_makes_as_many_queries_however_many_runs_and_labels(client, sampled, owner):
    client.force_login(owner)
    url = reverse("model_labels", args=["sampled"])
    client.get(url)  # the session and the menu's first reads
    with CaptureQueriesContext(connection) as before:
        assert client.get(url).status_code == 200
    factories.run(sampled, "c", {"q1": ["d1", "d12"], "q3": ["d2"]})
    model_labels_import(
        golden_set=sampled,
        model="judge-7b",
        prompt_text="grade it",
        records=[ModelLabelLine(1, "q1", "d12", 1), ModelLabelLine(2, "q3", "d2", 0)],
    )
    with CaptureQueriesContext(connection) as after:
        assert client.get(url).status_code == 200
    assert len(after) == len(before) <= 40
