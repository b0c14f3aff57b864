"""Canary pages: adding them, the alert a run that misses one raises, and the coverage page's figure.

The set is tests/evaluation/alerts/test_alerts.py's: 20 queries, qN's one relevant page dN,
k_first = 3, so a canary at rank 4 or lower is missed.
"""

import pytest
from django.urls import reverse

from evaluation.alerts.rules import alerts_check
from evaluation.canaries import canary_add, canary_checks
from evaluation.models import Alert, Canary
from goldenset.models import Page, Query
from goldenset.services import query_retire, version_publish
from lib.errors import GoldsetError
from tests.support import factories
from tests.support.factories import alerting_run as upload
from tests.support.factories import score as evaluate

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("canaries", factory="alerting_set", manager="owner")]


@pytest.fixture
def v1(golden_set):
    return version_publish(golden_set=golden_set, note="first labels")


def add(golden_set, query_id: str, doc_id: str, note: str = "") -> Canary:
    return canary_add(
        golden_set=golden_set,
        query=Query.objects.get(golden_set=golden_set, query_id=query_id),
        page=Page.objects.get(corpus=golden_set.corpus, doc_id=doc_id),
        note=note,
    )


def test_a_canary_must_be_a_query_of_the_set_and_a_page_of_its_corpus(golden_set, owner):
    other = factories.golden_set("other", manager=owner)
    other_query = Query.objects.get(golden_set=other, query_id="q1")
    other_page = Page.objects.get(corpus=other.corpus, doc_id="d1")
    page = Page.objects.get(corpus=golden_set.corpus, doc_id="d1")
    with pytest.raises(GoldsetError, match="query 'q1' is not a query of golden set 'canaries'") as caught:
        canary_add(golden_set=golden_set, query=other_query, page=page)
    assert caught.value.field == "query"
    with pytest.raises(GoldsetError, match="page 'd1' is not in the corpus of golden set 'canaries'") as caught:
        canary_add(golden_set=golden_set, query=Query.objects.get(golden_set=golden_set, query_id="q1"), page=other_page)
    assert caught.value.field == "page"
    assert not Canary.objects.exists()


def test_the_same_canary_cannot_be_added_twice(golden_set):
    add(golden_set, "q1", "d1", note="  newest runbook  ")
    with pytest.raises(GoldsetError, match="page 'd1' is a canary of query 'q1' already"):
        add(golden_set, "q1", "d1")
    assert list(Canary.objects.values_list("note", flat=True)) == ["newest runbook"]


def test_a_run_that_finds_every_canary_raises_nothing(golden_set, v1):
    add(golden_set, "q1", "d1")
    add(golden_set, "q2", "d2")
    evaluation = evaluate(upload(golden_set, "monday"), v1)
    assert not [a for a in alerts_check(evaluation=evaluation) if a.kind == Alert.Kind.CANARY_MISSED]


def test_a_run_that_misses_canaries_raises_one_alert_per_run_and_version(golden_set, v1):
    add(golden_set, "q1", "d1")
    add(golden_set, "q2", "d2")
    add(golden_set, "q3", "x1")  # x1 is at rank 2 for every query of the run: found
    run = upload(golden_set, "tuesday", ranks={"q1": 4, "q2": 5})
    alerts = [a for a in alerts_check(evaluation=evaluate(run, v1)) if a.kind == Alert.Kind.CANARY_MISSED]
    assert len(alerts) == 1
    alert = alerts[0]
    assert (alert.metric, alert.slice, alert.reference) == ("recall@3", "", 1.0)
    assert alert.value == pytest.approx(1 / 3)
    assert "missed 2 of 3 canary pages in its top 3" in alert.message
    assert "page d1 for query q1 at rank 4" in alert.message and "page d2 for query q2 at rank 5" in alert.message
    # Checked again (a redelivered task, a recompute): the same alert, not a second one.
    assert alerts_check(evaluation=evaluate(run, v1)) == []
    assert Alert.objects.filter(kind=Alert.Kind.CANARY_MISSED).count() == 1


def test_a_page_the_run_does_not_rank_is_missed_and_a_retired_query_is_not_checked(golden_set, v1):
    add(golden_set, "q1", "x4")  # x4 is at rank 5 of q1 in a run that puts d1 at rank 1
    add(golden_set, "q20", "d19")  # never ranked for q20
    query_retire(query=Query.objects.get(golden_set=golden_set, query_id="q20"))
    run = upload(golden_set, "monday")
    results = canary_checks(version=v1, runs=[run])[run.pk]
    assert [(r.canary.page.doc_id, r.rank, r.found) for r in results] == [("x4", 5, False), ("d19", None, False)]
    v2 = version_publish(golden_set=golden_set, note="q20 retired")
    results = canary_checks(version=v2, runs=[run])[run.pk]
    assert [r.canary.page.doc_id for r in results] == ["x4"]


def test_the_evaluation_stores_the_ranks_so_checks_read_no_run(golden_set, v1, django_assert_num_queries):
    add(golden_set, "q1", "d1")
    run = upload(golden_set, "tuesday", ranks={"q1": 4})
    evaluation = evaluate(run, v1)
    canary = Canary.objects.get()
    assert evaluation.canary_ranks == {str(canary.pk): 4}
    with django_assert_num_queries(2):  # the canaries, the stored ranks: no run's entries
        results = canary_checks(version=v1, runs=[run])[run.pk]
    assert [(r.rank, r.found) for r in results] == [(4, False)]


def test_a_canary_added_after_scoring_is_checked_in_the_runs_entries(golden_set, v1):
    run = upload(golden_set, "tuesday", ranks={"q2": 5})
    evaluation = evaluate(run, v1)
    assert evaluation.canary_ranks == {}
    add(golden_set, "q2", "d2")
    assert [(r.rank, r.found) for r in canary_checks(version=v1, runs=[run])[run.pk]] == [(5, False)]
    assert [a.kind for a in alerts_check(evaluation=evaluation)] == [Alert.Kind.CANARY_MISSED]


def test_a_set_without_canaries_reads_no_run(golden_set, v1, django_assert_num_queries):
    run = upload(golden_set, "monday")
    with django_assert_num_queries(1):  # the canaries, none: no run's data is read
        assert canary_checks(version=v1, runs=[run]) == {}


def test_the_coverage_page_shows_each_runs_canaries_and_the_miss(client, golden_set, v1, owner):
    add(golden_set, "q1", "d1", note="newest runbook")
    evaluate(upload(golden_set, "monday"), v1)
    evaluate(upload(golden_set, "tuesday", ranks={"q1": 4}), v1)
    client.force_login(owner)
    response = client.get(reverse("coverage", kwargs={"slug": "canaries"}))
    report = response.context["report"]
    assert [run.name for run in report.canary_runs] == ["monday", "tuesday"]
    assert [(r.rank, r.found) for r in report.canary_rows[0].results] == [(1, True), (4, False)]
    body = response.content.decode()
    assert "newest runbook" in body and "✓ 1" in body and "✗ 4" in body
    assert "Canary missed: tuesday (1)" in body


# --- the admin -------------------------------------------------------------------------------


@pytest.fixture
def superuser(make_user):
    return make_user("root", is_staff=True, is_superuser=True)


def test_staff_add_a_canary_in_the_admin_through_the_service(client, golden_set, superuser):
    client.force_login(superuser)
    query = Query.objects.get(golden_set=golden_set, query_id="q1")
    page = Page.objects.get(corpus=golden_set.corpus, doc_id="d1")
    response = client.post(
        reverse("admin:evaluation_canary_add"), {"golden_set": golden_set.pk, "query": query.pk, "page": page.pk, "note": " new runbook "}
    )
    assert response.status_code == 302
    canary = Canary.objects.get()
    assert (canary.query, canary.page, canary.note) == (query, page, "new runbook")


def test_the_admin_refuses_a_canary_query_of_another_set(client, golden_set, owner, superuser):
    other = factories.golden_set("other", manager=owner)
    client.force_login(superuser)
    response = client.post(
        reverse("admin:evaluation_canary_add"),
        {
            "golden_set": golden_set.pk,
            "query": Query.objects.get(golden_set=other, query_id="q1").pk,
            "page": Page.objects.get(corpus=golden_set.corpus, doc_id="d1").pk,
        },
    )
    assert response.status_code == 200
    assert "is not a query of golden set" in response.content.decode()
    assert not Canary.objects.exists()


def test_staff_without_the_permission_cannot_add_a_canary(client, golden_set, make_user):
    client.force_login(make_user("staff", is_staff=True))
    assert client.get(reverse("admin:evaluation_canary_add")).status_code == 403
    assert client.get(reverse("admin:evaluation_canary_changelist")).status_code == 403
