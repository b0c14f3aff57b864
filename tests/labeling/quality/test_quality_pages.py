"""The agreement, adjudication and annotator-quality pages, their forms, and who may see them."""

import re
from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from goldenset.models import Judgment, Membership, Page, Query
from goldenset.services import judgment_record, membership_grant
from labeling.models import GoldAnswer, JudgingTask, QueueSettings
from labeling.quality.selectors import agreement_report, annotator_quality
from labeling.quality.services import gold_checks_add, pair_adjudicate
from lib.errors import GoldsetError
from tests.support import factories

MOMENT = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def judge(golden_set, who, query_id, doc_id, grade, *, note="", seconds=20.0, at=None):
    query = Query.objects.select_related("golden_set").get(golden_set=golden_set, query_id=query_id)
    page = Page.objects.get(corpus=golden_set.corpus, doc_id=doc_id)
    if at is None:
        return judgment_record(query=query, page=page, grade=grade, annotator=who, note=note, seconds_spent=seconds)
    with mock.patch("django.utils.timezone.now", return_value=at):
        return judgment_record(query=query, page=page, grade=grade, annotator=who, note=note, seconds_spent=seconds)


@pytest.fixture
def judged(golden_set, people):
    """ann and bob both judge five pairs of q3 (agreeing on three), cid judges two of them."""
    grades = {"ann": [0, 1, 2, 3, 3], "bob": [0, 1, 2, 1, 0], "cid": [0, 2]}
    for who, row in grades.items():
        for doc, grade in zip(("d1", "d2", "d3", "d4", "d5"), row):
            judge(golden_set, people[who], "q3", doc, grade, note=f"{who} on {doc}")
    return golden_set


def login(client, user):
    client.force_login(user)
    return client


# --- permissions --------------------------------------------------------------------------

READERS = {"agreement": ("boss", "judge"), "adjudicate": ("boss", "judge"), "quality": ("boss",)}


def _urls(golden_set):
    query = Query.objects.get(golden_set=golden_set, query_id="q1")
    page = Page.objects.get(corpus=golden_set.corpus, doc_id="d1")
    return {
        "agreement": reverse("agreement", args=[golden_set.slug]),
        "adjudicate": reverse("adjudicate", args=[golden_set.slug]),
        "adjudicate_pair": reverse("adjudicate_pair", args=[golden_set.slug, query.pk, page.pk]),
        "quality": reverse("quality", args=[golden_set.slug]),
    }


@pytest.mark.parametrize("name", ["agreement", "adjudicate", "adjudicate_pair", "quality"])
def test_each_page_sends_anonymous_visitors_to_the_login(client, golden_set, name):
    url = _urls(golden_set)[name]
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("name", ["agreement", "adjudicate", "adjudicate_pair", "quality"])
@pytest.mark.parametrize("who", ["stranger", "ann", "judge", "boss"])
def test_each_page_is_a_404_to_all_but_its_roles(client, golden_set, people, stranger, name, who):
    user = stranger if who == "stranger" else people[who]
    allowed = READERS["adjudicate" if name == "adjudicate_pair" else name]
    response = login(client, user).get(_urls(golden_set)[name])
    assert response.status_code == (200 if who in allowed else 404)


def test_a_manager_sets_the_overlap_the_agreement_page_asks_for(client, golden_set, people):
    """Issue 30 item 7: the overlap share was settable nowhere, though the agreement page's
    empty state told the manager to set it."""
    login(client, people["boss"])
    empty = client.get(reverse("agreement", args=[golden_set.slug])).content.decode()
    assert f'href="{reverse("quality", args=[golden_set.slug])}#overlap"' in empty
    assert 'id="overlap"' in client.get(reverse("quality", args=[golden_set.slug])).content.decode()
    response = client.post(
        reverse("overlap_update", args=[golden_set.slug]), {"overlap_share": "0.25", "overlap_annotators": "3"}, follow=True
    )
    assert "25% of the pairs first judged from now on go to 3 annotators." in response.content.decode()
    settings = QueueSettings.objects.get(golden_set=golden_set)
    assert (settings.overlap_share, settings.overlap_annotators) == (0.25, 3)
    refused = client.post(reverse("overlap_update", args=[golden_set.slug]), {"overlap_share": "1.5", "overlap_annotators": "4"})
    assert refused.status_code == 400 and QueueSettings.objects.get(golden_set=golden_set).overlap_share == 0.25


@pytest.mark.parametrize("who", ["stranger", "ann", "judge"])
def test_the_gold_check_forms_are_a_404_to_all_but_managers(client, golden_set, people, stranger, who):
    login(client, stranger if who == "stranger" else people[who])
    assert client.post(reverse("gold_checks_add", args=[golden_set.slug]), {"count": "1"}).status_code == 404
    assert client.post(reverse("gold_share_update", args=[golden_set.slug]), {"gold_share": "0.2"}).status_code == 404
    assert client.post(reverse("query_order_update", args=[golden_set.slug]), {"query_order": "interleaved"}).status_code == 404
    assert (
        client.post(reverse("overlap_update", args=[golden_set.slug]), {"overlap_share": "0.5", "overlap_annotators": "2"}).status_code
        == 404
    )
    assert not JudgingTask.objects.filter(kind=JudgingTask.Kind.GOLD).exists()
    assert not QueueSettings.objects.filter(golden_set=golden_set, gold_share=0.2).exists()
    assert not QueueSettings.objects.filter(golden_set=golden_set, query_order="interleaved").exists()


@pytest.mark.parametrize("name", ["gold_checks_add", "gold_share_update", "query_order_update"])
def test_the_quality_forms_send_anonymous_visitors_to_the_login(client, golden_set, name):
    response = client.post(reverse(name, args=[golden_set.slug]), {"query_order": "interleaved", "gold_share": "0.2"})
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert not QueueSettings.objects.filter(golden_set=golden_set, query_order="interleaved").exists()


def test_an_annotator_cannot_post_a_decision(client, judged, people):
    url = _urls(judged)["adjudicate_pair"]
    response = login(client, people["ann"]).post(url, {"grade": "3"})
    assert response.status_code == 404
    assert not Judgment.objects.filter(source=Judgment.Source.ADJUDICATED).exists()


# --- agreement ----------------------------------------------------------------------------


def test_the_agreement_report_has_overall_and_per_pair_figures(judged):
    report = agreement_report(judged)
    assert (report.units, report.judged_pairs, report.comparisons) == (5, 5, 5 + 2 + 2)
    assert report.annotators == ["ann", "bob", "cid"]
    # ann-bob agree on 3 of 5, ann-cid on 1 of 2 (d1), bob-cid on 1 of 2 (d1).
    assert report.percent == pytest.approx(5 / 9)
    by_pair = {(p.first, p.second): p for p in report.pairs}
    assert by_pair[("ann", "bob")].units == 5 and by_pair[("ann", "bob")].percent == pytest.approx(0.6)
    assert by_pair[("ann", "bob")].confusion == [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [1, 1, 0, 0]]
    assert sum(map(sum, report.confusion)) == 9
    assert -1 <= report.kappa <= 1 and -1 <= report.alpha <= 1


def test_the_agreement_page_shows_the_figures_and_the_confusion_matrix(client, judged, people):
    response = login(client, people["judge"]).get(reverse("agreement", args=[judged.slug]))
    text = response.content.decode()
    assert "Percent agreement" in text and "55.6 %" in text
    assert "Cohen's kappa (quadratic weights)" in text and "Krippendorff's alpha (ordinal)" in text
    assert "ann · bob" in text and "60.0 %" in text
    assert 'class="grid compact confusion"' in text


def test_the_agreement_page_says_when_nobody_overlaps(client, golden_set, people):
    judge(golden_set, people["ann"], "q3", "d1", 1)
    response = login(client, people["boss"]).get(reverse("agreement", args=[golden_set.slug]))
    assert "No pair has been judged by two people yet" in response.content.decode()


def test_the_agreement_page_reads_a_fixed_number_of_queries(client, judged, people, make_user):
    login(client, people["boss"])
    with CaptureQueriesContext(connection) as small:
        client.get(reverse("agreement", args=[judged.slug]))
    for n in range(4):
        extra = make_user(f"extra{n}")
        for doc in ("d1", "d2", "d3", "d4", "d5"):
            judge(judged, extra, "q2", doc, (n + len(doc)) % 4)
    with CaptureQueriesContext(connection) as large:
        client.get(reverse("agreement", args=[judged.slug]))
    assert len(large.captured_queries) == len(small.captured_queries) <= 10


# --- adjudication pages -------------------------------------------------------------------


def test_the_adjudication_list_shows_the_disagreements(client, judged, people):
    response = login(client, people["judge"]).get(reverse("adjudicate", args=[judged.slug]))
    text = response.content.decode()
    # d4 (3 against 1), d5 (3 against 0); d2 (ann 1, bob 1, cid 2) and d3 agree enough.
    assert "2 pairs to decide" in text
    assert text.count(">Decide</a>") == 2
    # Issue 30 item 8: ids only; the adjudicator reads the question and the page's title too.
    assert "question q3" in text and "title d4" in text and "title d5" in text


def test_the_adjudication_list_reads_a_fixed_number_of_queries(client, judged, people):
    login(client, people["judge"])
    with CaptureQueriesContext(connection) as small:
        client.get(reverse("adjudicate", args=[judged.slug]))
    for doc in ("d1", "d2", "d3", "d4", "d5"):
        judge(judged, people["ann"], "q2", doc, 3)
        judge(judged, people["bob"], "q2", doc, 0)
    with CaptureQueriesContext(connection) as large:
        response = client.get(reverse("adjudicate", args=[judged.slug]))
    assert "7 pairs to decide" in response.content.decode()
    assert len(large.captured_queries) == len(small.captured_queries) <= 12


def test_the_pair_page_shows_query_sanitised_page_and_every_grade(client, golden_set, people):
    page = Page.objects.get(corpus=golden_set.corpus, doc_id="d1")
    # Pages are not editable through the app; a page with HTML is set up directly.
    Page.objects.filter(pk=page.pk).update(text='<p onclick="steal()">Rotate <code>logs</code></p><script>alert(1)</script>')
    judge(golden_set, people["ann"], "q1", "d1", 3, note="exact runbook")
    judge(golden_set, people["bob"], "q1", "d1", 0, note="wrong region")
    query = Query.objects.get(golden_set=golden_set, query_id="q1")
    response = login(client, people["judge"]).get(reverse("adjudicate_pair", args=[golden_set.slug, query.pk, page.pk]))
    text = response.content.decode()
    assert "question q1" in text
    assert "<p>Rotate <code>logs</code></p>" in text
    assert "alert(1)" not in text and "steal()" not in text
    assert "exact runbook" in text and "wrong region" in text and "(imported)" in text
    assert 'name="grade"' in text


def test_deciding_a_pair_records_the_decision_and_goes_to_the_next(client, judged, people):
    query = Query.objects.get(golden_set=judged, query_id="q3")
    d4, d5 = (Page.objects.get(corpus=judged.corpus, doc_id=d) for d in ("d4", "d5"))
    url = reverse("adjudicate_pair", args=[judged.slug, query.pk, d4.pk])
    response = login(client, people["judge"]).post(url, {"grade": "2", "note": "partly"})
    assert response.status_code == 302
    assert response["Location"] == reverse("adjudicate_pair", args=[judged.slug, query.pk, d5.pk])
    decided = Judgment.objects.get(source=Judgment.Source.ADJUDICATED)
    assert (decided.page_id, decided.grade, decided.note, decided.annotator) == (d4.pk, 2, "partly", people["judge"])
    # The last one goes back to the (now empty) list.
    response = client.post(reverse("adjudicate_pair", args=[judged.slug, query.pk, d5.pk]), {"grade": "3"})
    assert response["Location"] == reverse("adjudicate", args=[judged.slug])


def test_a_decision_off_the_scale_is_refused_with_the_form(client, judged, people):
    query = Query.objects.get(golden_set=judged, query_id="q3")
    page = Page.objects.get(corpus=judged.corpus, doc_id="d4")
    response = login(client, people["boss"]).post(reverse("adjudicate_pair", args=[judged.slug, query.pk, page.pk]), {"grade": "9"})
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    assert not Judgment.objects.filter(source=Judgment.Source.ADJUDICATED).exists()


def test_a_pair_nobody_judged_or_of_another_set_is_a_404(client, golden_set, people):
    other = factories.golden_set("other")
    query = Query.objects.get(golden_set=golden_set, query_id="q3")
    login(client, people["judge"])
    unjudged = Page.objects.get(corpus=golden_set.corpus, doc_id="d5")
    assert client.get(reverse("adjudicate_pair", args=[golden_set.slug, query.pk, unjudged.pk])).status_code == 404
    foreign = Page.objects.get(corpus=other.corpus, doc_id="d1")
    assert client.get(reverse("adjudicate_pair", args=[golden_set.slug, query.pk, foreign.pk])).status_code == 404


# --- annotator quality --------------------------------------------------------------------


def test_judgments_per_hour_count_sessions_not_breaks(golden_set, people):
    # Session 1: pairs submitted at 9:00, 9:01, 9:02, the first after 60 s of reading:
    # 3 judgments in 180 s. Session 2, after a lunch break: one judgment of 30 s.
    ann = people["ann"]
    for minute, doc in enumerate(("d1", "d2", "d3")):
        judge(golden_set, ann, "q3", doc, 1, seconds=60, at=MOMENT + timedelta(minutes=minute))
    judge(golden_set, ann, "q3", "d4", 1, seconds=30, at=MOMENT + timedelta(hours=3))
    figures = {p.username: p for p in annotator_quality(golden_set)}
    assert figures["ann"].active_seconds == pytest.approx(180 + 30)
    assert figures["ann"].judgments_per_hour == pytest.approx(4 / (210 / 3600))
    assert figures["ann"].median_seconds == pytest.approx(60)
    # Judgments recorded faster than they were judged (in bulk) count their measured time.
    for second, doc in enumerate(("d1", "d2")):
        judge(golden_set, people["bob"], "q2", doc, 1, seconds=90, at=MOMENT + timedelta(seconds=second))
    assert annotator_quality(golden_set)[1].active_seconds == pytest.approx(180)
    # Annotators who have not judged yet are listed, with nothing measured.
    assert figures["cid"].judgments == 0 and figures["cid"].judgments_per_hour is None


def test_gold_accuracy_and_agreement_with_adjudicated_labels(golden_set, people):
    assert gold_checks_add(golden_set=golden_set, count=3, seed=1) == 3
    tasks = list(JudgingTask.objects.filter(golden_set=golden_set, kind=JudgingTask.Kind.GOLD).order_by("id"))
    # ann: exact, one off, two off; bob: exact.
    for task, (grade, expected) in zip(tasks, [(2, 2), (1, 2), (3, 1)]):
        GoldAnswer.objects.create(task=task, annotator=people["ann"], grade=grade, expected_grade=expected, seconds_spent=15)
    GoldAnswer.objects.create(task=tasks[0], annotator=people["bob"], grade=0, expected_grade=0, seconds_spent=15)
    judge(golden_set, people["ann"], "q3", "d5", 3)
    judge(golden_set, people["bob"], "q3", "d5", 0)
    judge(golden_set, people["ann"], "q3", "d4", 1)
    judge(golden_set, people["bob"], "q3", "d4", 3)
    for doc, grade in (("d5", 3), ("d4", 3)):
        query = Query.objects.select_related("golden_set").get(golden_set=golden_set, query_id="q3")
        pair_adjudicate(query=query, page=Page.objects.get(corpus=golden_set.corpus, doc_id=doc), adjudicator=people["judge"], grade=grade)
    figures = {p.username: p for p in annotator_quality(golden_set)}
    ann, bob = figures["ann"], figures["bob"]
    assert (ann.gold_answers, ann.gold_exact, ann.gold_within_one) == (3, pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert (bob.gold_answers, bob.gold_exact) == (1, 1.0)
    assert (ann.adjudicated_pairs, ann.adjudicated_agreement) == (2, 0.5)
    assert (bob.adjudicated_pairs, bob.adjudicated_agreement) == (2, 0.5)
    assert ann.judgments == 2


def test_the_quality_page_shows_each_annotator_and_the_gold_settings(client, judged, people):
    response = login(client, people["boss"]).get(reverse("quality", args=[judged.slug]))
    text = response.content.decode()
    for name in ("ann", "bob", "cid"):
        assert f"<td>{name}</td>" in text
    assert "Judgments per hour" in text and "Agreement with adjudicated labels" in text
    assert "0 gold checks in the set" in text and 'name="gold_share"' in text


def test_the_quality_page_reads_a_fixed_number_of_queries(client, judged, people, make_user):
    login(client, people["boss"])
    with CaptureQueriesContext(connection) as small:
        client.get(reverse("quality", args=[judged.slug]))
    for n in range(3):
        extra = make_user(f"extra{n}")
        membership_grant(user=extra, golden_set=judged, role=Membership.Role.ANNOTATOR)
        for doc in ("d1", "d2", "d3"):
            judge(judged, extra, "q1", doc, 1)
    with CaptureQueriesContext(connection) as large:
        client.get(reverse("quality", args=[judged.slug]))
    assert len(large.captured_queries) == len(small.captured_queries) <= 16


# --- gold checks --------------------------------------------------------------------------


def test_gold_checks_are_drawn_from_labelled_pairs_without_a_pool_and_with_a_position(golden_set):
    assert gold_checks_add(golden_set=golden_set, count=2, seed=7) == 2
    tasks = JudgingTask.objects.filter(golden_set=golden_set, kind=JudgingTask.Kind.GOLD)
    assert all(t.pool_id is None and t.position is not None and t.status == "open" for t in tasks)
    labelled = {("q1", "d1"), ("q1", "d2"), ("q2", "d3")}
    assert {(t.query.query_id, t.page.doc_id) for t in tasks} <= labelled
    # One left; asking for two more is refused whole.
    with pytest.raises(GoldsetError, match="only 1 labelled pair"):
        gold_checks_add(golden_set=golden_set, count=2)
    assert gold_checks_add(golden_set=golden_set, count=1) == 1
    assert sorted(tasks.values_list("position", flat=True)) == [0, 1, 2]


def test_gold_checks_from_named_pairs_refuse_unknown_and_unlabelled_ones_by_line(golden_set):
    with pytest.raises(GoldsetError) as caught:
        gold_checks_add(golden_set=golden_set, pairs=[("q1", "d1"), ("q9", "d1"), ("q1", "d9"), ("q3", "d1")])
    assert caught.value.problems == [
        "pair 2: query id 'q9' is not an active query of 'tiny'",
        "pair 3: doc id 'd9' is not in the corpus",
        "pair 4: ('q3', 'd1') has no label yet",
    ]
    assert not JudgingTask.objects.filter(kind=JudgingTask.Kind.GOLD).exists()
    assert gold_checks_add(golden_set=golden_set, pairs=[("q1", "d1")]) == 1
    with pytest.raises(GoldsetError, match="already a gold check"):
        gold_checks_add(golden_set=golden_set, pairs=[("q1", "d1")])


def test_a_manager_adds_gold_checks_and_sets_their_share_from_the_page(client, golden_set, people):
    login(client, people["boss"])
    response = client.post(reverse("gold_checks_add", args=[golden_set.slug]), {"count": "2"})
    assert response.status_code == 302
    assert JudgingTask.objects.filter(golden_set=golden_set, kind=JudgingTask.Kind.GOLD).count() == 2
    response = client.post(reverse("gold_checks_add", args=[golden_set.slug]), {"pairs": "q1 d9"})
    assert response.status_code == 400 and "doc id &#x27;d9&#x27; is not in the corpus" in response.content.decode()
    response = client.post(reverse("gold_share_update", args=[golden_set.slug]), {"gold_share": "0.15"})
    assert response.status_code == 302
    assert QueueSettings.objects.get(golden_set=golden_set).gold_share == pytest.approx(0.15)
    response = client.post(reverse("gold_share_update", args=[golden_set.slug]), {"gold_share": "0.9"})
    assert response.status_code == 400
    assert QueueSettings.objects.get(golden_set=golden_set).gold_share == pytest.approx(0.15)


def test_a_manager_chooses_how_annotators_go_through_queries(client, golden_set, people):
    login(client, people["boss"])
    page = client.get(reverse("quality", args=[golden_set.slug])).content.decode()
    assert re.search(r'value="one_at_a_time"[^>]*checked', page)  # the default
    response = client.post(reverse("query_order_update", args=[golden_set.slug]), {"query_order": "interleaved"})
    assert response.status_code == 302
    assert QueueSettings.objects.get(golden_set=golden_set).query_order == "interleaved"
    page = client.get(reverse("quality", args=[golden_set.slug])).content.decode()
    assert "Annotators now judge queries interleaved, from their next pair." in page
    response = client.post(reverse("query_order_update", args=[golden_set.slug]), {"query_order": "by length"})
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    assert QueueSettings.objects.get(golden_set=golden_set).query_order == "interleaved"


def test_only_managers_see_the_quality_tab(client, judged, people):
    url = reverse("agreement", args=[judged.slug])
    quality_url = reverse("quality", args=[judged.slug])
    assert quality_url not in login(client, people["judge"]).get(url).content.decode()
    assert quality_url in login(client, people["boss"]).get(url).content.decode()
