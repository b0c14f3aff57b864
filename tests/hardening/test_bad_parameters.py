"""Finding 10 of the hardening probe: bad parameters and bodies answered 500. `?version=²`
(results, run versions, coverage), `?following=²`, `?judged=²`, `%00` in the drill-down
path, NUL in text/plain qrels and JSON nested 1,000 deep (RecursionError). `"²".isdigit()`
is true and `int("²")` is not, so every page parameter is read by one helper
(lib.params) that takes ASCII digits only and answers 400 naming the parameter; the API's
JSON parser refuses a body nested past JSON_MAX_DEPTH."""

import json

import pytest
from django.urls import reverse

from api.parsers import JSON_MAX_DEPTH
from goldenset.models import Judgment, Membership
from goldenset.services import membership_grant
from labeling.models import JudgingTask
from tests.api import assert_error, client_for
from tests.labeling.judging.judging_data import pooled_set

BAD_NUMBERS = ["²", "1²", "-1", "1.5", "x", "99999999999999999999999"]


@pytest.fixture
def manager_client(client, manager):
    client.force_login(manager)
    return client


def assert_bad_parameter(response, parameter: str):
    assert response.status_code == 400, (response.status_code, response.content[:300])
    assert parameter.encode() in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("value", BAD_NUMBERS)
@pytest.mark.parametrize("page", ["results", "results_progress", "compare", "coverage"])
def test_a_set_page_answers_400_naming_a_version_that_is_not_a_number(manager_client, golden_set, version, page, value):
    response = manager_client.get(reverse(page, kwargs={"slug": golden_set.slug}), {"version": value})
    assert_bad_parameter(response, "version")


@pytest.mark.django_db
@pytest.mark.parametrize("parameter", ["from", "to"])
def test_the_run_versions_page_answers_400_naming_a_version_that_is_not_a_number(manager_client, golden_set, run, parameter):
    url = reverse("run_versions", kwargs={"slug": golden_set.slug, "run_id": run.pk})
    assert_bad_parameter(manager_client.get(url, {parameter: "²"}), parameter)


@pytest.mark.django_db
def test_the_drill_down_answers_400_naming_a_version_that_is_not_a_number(manager_client, golden_set, run):
    url = reverse("run_query", kwargs={"slug": golden_set.slug, "run_id": run.pk, "query_id": "q1"})
    assert_bad_parameter(manager_client.get(url, {"version": "²"}), "version")


@pytest.mark.django_db
def test_a_version_number_that_is_well_formed_but_absent_is_a_404(manager_client, golden_set, version):
    assert manager_client.get(reverse("results", kwargs={"slug": golden_set.slug}), {"version": "7"}).status_code == 404


@pytest.mark.django_db
def test_the_drill_down_of_a_query_id_holding_nul_is_a_404(manager_client, golden_set, run):
    url = reverse("run_query", kwargs={"slug": golden_set.slug, "run_id": run.pk, "query_id": "q1"}).replace("q1", "q%001")
    response = manager_client.get(url)
    assert response.status_code == 404


@pytest.mark.django_db
def test_the_drill_down_form_answers_400_for_a_version_that_is_not_a_number(manager_client, golden_set, run):
    url = reverse("run_query_jump", kwargs={"slug": golden_set.slug, "run_id": run.pk})
    assert_bad_parameter(manager_client.get(url, {"query": "q1", "version": "²"}), "version")


@pytest.mark.django_db
def test_pooling_flagged_slices_answers_400_for_a_version_that_is_not_a_number(manager_client, golden_set, version):
    response = manager_client.post(reverse("coverage_pool", kwargs={"slug": golden_set.slug}), {"version": "²"})
    assert_bad_parameter(response, "version")


@pytest.mark.django_db
def test_revoking_a_membership_answers_400_naming_an_id_that_is_not_a_number(manager_client, golden_set):
    response = manager_client.post(reverse("golden_set_members", kwargs={"slug": golden_set.slug}), {"action": "revoke", "membership": "²"})
    assert_bad_parameter(response, "membership")


@pytest.mark.django_db
@pytest.mark.parametrize("following", ["²", "1,²", "1,,x"])
def test_the_jobs_poll_answers_400_naming_a_following_that_is_not_a_list_of_ids(manager_client, golden_set, following):
    response = manager_client.get(reverse("completeness_jobs", kwargs={"slug": golden_set.slug}), {"following": following})
    assert_bad_parameter(response, "following")


@pytest.mark.django_db
def test_the_jobs_poll_still_takes_a_list_of_ids(manager_client, golden_set):
    response = manager_client.get(reverse("completeness_jobs", kwargs={"slug": golden_set.slug}), {"following": "1, 2"})
    assert response.status_code == 200
    assert response["HX-Refresh"] == "true"  # jobs 1 and 2 are not going: the page reloads


@pytest.fixture
def judging(client, make_user):
    pool = pooled_set("judging-params")
    annotator = make_user("ann")
    membership_grant(user=annotator, golden_set=pool.golden_set, role=Membership.Role.ANNOTATOR)
    client.force_login(annotator)
    return pool.golden_set, client


@pytest.mark.django_db
def test_a_garbled_judged_count_falls_back_to_the_count_of_the_visit(judging):
    golden_set, client = judging
    assert client.get(reverse("judging_screen", kwargs={"slug": golden_set.slug})).status_code == 200
    response = client.get(reverse("judging_next", kwargs={"slug": golden_set.slug}), {"judged": "²"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200


@pytest.mark.django_db
def test_a_grade_sent_with_a_garbled_judged_count_is_recorded(judging):
    golden_set, client = judging
    client.get(reverse("judging_screen", kwargs={"slug": golden_set.slug}))
    task = JudgingTask.objects.get(golden_set=golden_set, leased_to__isnull=False)
    url = reverse("judging_judge", kwargs={"slug": golden_set.slug, "task_id": task.pk})
    response = client.post(url, {"grade": "1", "judged": "²"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert Judgment.objects.filter(query=task.query, page=task.page).count() == 1


# --- the API -------------------------------------------------------------------------------


def judgments_url(golden_set) -> str:
    return reverse("api_judgments", kwargs={"slug": golden_set.slug})


@pytest.mark.django_db
def test_text_qrels_holding_nul_are_refused_naming_the_line(golden_set, token):
    before = Judgment.objects.count()
    body = "q1 0 d1 1\nq1 0 d\x002 1\n"
    response = client_for(token("write", golden_set)).post(
        judgments_url(golden_set) + "?create_missing=true", body, content_type="text/plain"
    )
    error = assert_error(response, 400, "parse_error")
    assert "line 2" in error["message"] and "NUL" in error["message"]
    assert Judgment.objects.count() == before


def nested(depth: int) -> str:
    return '{"labels": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.django_db
@pytest.mark.parametrize("depth", [JSON_MAX_DEPTH, 1_000, 100_000])
def test_a_json_body_nested_too_deep_is_refused_with_400_saying_so(golden_set, token, depth):
    response = client_for(token("write", golden_set)).post(judgments_url(golden_set), nested(depth), content_type="application/json")
    error = assert_error(response, 400, "parse_error")
    assert "nested" in error["message"] and str(JSON_MAX_DEPTH) in error["message"]


@pytest.mark.django_db
def test_a_version_publish_body_nested_too_deep_is_refused_with_400(golden_set, token):
    url = reverse("api_versions", kwargs={"slug": golden_set.slug})
    response = client_for(token("write", golden_set)).post(
        url, '{"note": ' + "[" * 1000 + "]" * 1000 + "}", content_type="application/json"
    )
    assert_error(response, 400, "parse_error")


@pytest.mark.django_db
def test_a_json_body_nested_within_the_limit_is_read_as_before(golden_set, token):
    labels = [{"query_id": "q1", "doc_id": "d1", "grade": 1}]
    response = client_for(token("write", golden_set)).post(
        judgments_url(golden_set), json.dumps({"labels": labels}), content_type="application/json"
    )
    assert response.status_code == 201, response.content
