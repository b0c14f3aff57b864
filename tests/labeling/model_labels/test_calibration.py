"""The model labels page: how far a model's labels agree with the latest version's, overall and
per query slice, its worst disagreements, and the runs ranked with and without its labels."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from goldenset.model_labels import model_labels_import, model_sources
from goldenset.models import Membership
from goldenset.services import membership_grant
from labeling.model_labels import selectors
from labeling.model_labels.selectors import calibration_report
from lib.formats import ModelLabelLine
from tests.labeling.model_labels.conftest import HUMAN, MODEL
from tests.support import factories

pytestmark = pytest.mark.django_db


def report(golden_set):
    return calibration_report(golden_set, model_sources(golden_set)[0])


def test_agreement_counts_pairs_both_judged_in_a_confusion_matrix_people_by_model(golden_set):
    overall = report(golden_set).overall
    assert overall.pairs == 7
    assert overall.confusion.tolist() == [[1, 0, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1]]
    people = [HUMAN[pair] for pair in HUMAN]
    model = [MODEL[pair] for pair in HUMAN]
    assert overall.kappa_quadratic == pytest.approx(cohen_kappa_score(people, model, labels=[0, 1, 2, 3], weights="quadratic"))
    assert overall.kappa_unweighted == pytest.approx(cohen_kappa_score(people, model, labels=[0, 1, 2, 3]))


def test_the_relevance_flips_are_shares_of_what_each_side_calls_relevant(golden_set):
    overall = report(golden_set).overall
    assert (overall.model_relevant_humans_not, overall.model_relevant) == (1, 5)  # q1/d2
    assert (overall.human_relevant_model_not, overall.human_relevant) == (1, 5)  # q2/d4
    assert overall.model_only_share == pytest.approx(0.2)


def test_agreement_is_given_per_query_slice(golden_set, monkeypatch):
    monkeypatch.setattr(selectors, "MIN_SLICE_PAIRS", 1)  # the hand-made set's slices hold three and four pairs
    slices = {a.name: a for a in report(golden_set).slices}
    assert set(slices) == {"queries lang = de", "queries lang = en"}
    english, german = slices["queries lang = en"], slices["queries lang = de"]
    assert (english.pairs, german.pairs) == (4, 3)
    assert english.confusion.tolist() == [[0, 0, 1, 0], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    assert (german.model_relevant_humans_not, german.human_relevant_model_not) == (0, 0)
    pairs = [p for p in HUMAN if p[0] in ("q3", "q4")]
    assert german.kappa_quadratic == pytest.approx(
        cohen_kappa_score([HUMAN[p] for p in pairs], [MODEL[p] for p in pairs], labels=[0, 1, 2, 3], weights="quadratic")
    )


def test_the_worst_disagreements_come_largest_difference_first_then_flips(golden_set):
    worst = report(golden_set).worst
    assert [(d.query_id, d.doc_id, d.human, d.model, d.flip) for d in worst] == [
        ("q1", "d2", 0, 2, True),
        ("q2", "d4", 1, 0, True),
        ("q3", "d5", 2, 3, False),
    ]
    assert worst[0].query_text == "question q1" and worst[0].page_title == "title d2"


def test_runs_are_ranked_on_human_labels_and_with_the_model_filling_the_gaps(golden_set):
    calibration = report(golden_set)
    assert calibration.metric == "recall@2"
    assert calibration.filled_pairs == 2
    runs = {r.name: r for r in calibration.runs}
    assert set(runs) == {"alpha", "beta", "gamma"}  # the archived run is left out
    assert [(runs[n].human, runs[n].filled) for n in ("alpha", "beta", "gamma")] == [
        pytest.approx((1.0, 0.75)),
        pytest.approx((0.875, 0.875)),
        pytest.approx((0.125, 0.375)),
    ]
    assert [(runs[n].human_rank, runs[n].filled_rank) for n in ("alpha", "beta", "gamma")] == [(1, 2), (2, 1), (3, 3)]
    # alpha/beta swap, the other two pairs keep their order: (2 - 1) / 3.
    assert calibration.tau == pytest.approx(1 / 3)


def test_a_set_with_model_labels_and_no_version_says_there_is_nothing_to_compare(client, owner):
    made = factories.golden_set("fresh", manager=owner)
    model_labels_import(golden_set=made, model="m", prompt_hash="e" * 64, records=[ModelLabelLine(1, "q1", "d1", 1)])
    client.force_login(owner)
    body = client.get(reverse("model_labels", args=["fresh"])).content.decode()
    assert "No version is published yet" in body


# --- the page ------------------------------------------------------------------------


def url(golden_set) -> str:
    return reverse("model_labels", args=[golden_set.slug])


def figure(body: str, name: str) -> str:
    found = re.search(rf'data-figure="{name}">([^<]*)', body)
    return found.group(1).strip() if found else ""


def test_the_page_shows_the_figures_of_the_selectors(client, golden_set, owner):
    client.force_login(owner)
    body = client.get(url(golden_set)).content.decode()
    overall = report(golden_set).overall
    assert figure(body, "pairs") == "7"
    assert figure(body, "kappa-quadratic") == f"{overall.kappa_quadratic:.3f}"
    assert figure(body, "tau") == "0.333"
    assert "judge-7b" in body and "queries lang = de" in body and "recall@2" in body
    assert reverse("adjudicate_pair", args=["calib", report(golden_set).worst[0].query_pk, report(golden_set).worst[0].page_pk]) in body
    assert "latest version" in body  # says which human labels it compares with


def test_the_page_shows_the_model_and_prompt_asked_for(client, golden_set, owner):
    model_labels_import(golden_set=golden_set, model="other", prompt_hash="f" * 64, records=[ModelLabelLine(1, "q1", "d1", 0)])
    client.force_login(owner)
    body = client.get(url(golden_set), {"model": "other", "prompt": "f" * 64}).content.decode()
    assert figure(body, "pairs") == "1"
    assert client.get(url(golden_set), {"model": "nobody"}).status_code == 404


def test_a_set_without_model_labels_says_how_to_import_them(client, owner):
    factories.golden_set("bare", manager=owner)
    client.force_login(owner)
    body = client.get(reverse("model_labels", args=["bare"])).content.decode()
    assert "import_model_labels" in body


def test_anonymous_visitors_are_sent_to_log_in(client, golden_set):
    response = client.get(url(golden_set))
    assert response.status_code == 302 and "/login" in response["Location"]


def test_managers_adjudicators_and_staff_read_the_page(client, golden_set, owner, teammate, make_user):
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    for user in (owner, teammate, make_user("staff", is_staff=True)):
        client.force_login(user)
        assert client.get(url(golden_set)).status_code == 200


def test_an_annotator_and_a_stranger_get_not_found(client, golden_set, teammate, stranger):
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    for user in (teammate, stranger):
        client.force_login(user)
        assert client.get(url(golden_set)).status_code == 404


def test_the_page_is_read_only(client, golden_set, owner):
    client.force_login(owner)
    assert client.post(url(golden_set)).status_code == 405


def test_the_page_makes_as_many_queries_however_many_runs_and_labels(client, golden_set, owner):
    client.force_login(owner)
    client.get(url(golden_set))  # the session and the menu's first reads
    with CaptureQueriesContext(connection) as before:
        assert client.get(url(golden_set)).status_code == 200
    for n in range(3):
        factories.run(golden_set, f"more{n}", {"q1": ["d1"], "q2": ["d4", "d3"]})
    model_labels_import(
        golden_set=golden_set,
        model="judge-7b",
        prompt_text="grade it",
        records=[ModelLabelLine(1, "q2", "d1", 1), ModelLabelLine(2, "q3", "d2", 0)],
    )
    with CaptureQueriesContext(connection) as after:
        assert client.get(url(golden_set)).status_code == 200
    assert len(after) == len(before) <= 20
