"""Every endpoint against every kind of caller: anonymous, a bad, expired or revoked
token, a token for another golden set, read and write tokens, and tokens whose owner
holds too small a role. A token never grants more than its owner's roles."""

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from goldenset.model_fill import version_model_fill_create
from goldenset.model_labels import model_labels_import, prompt_hash_of
from goldenset.models import Membership, VersionModelFill
from goldenset.services import qrels_import
from lib.formats import ModelLabelLine
from tests.api import RUN, SLUG, assert_error, client_for

pytestmark = pytest.mark.django_db

BASE = f"/api/v1/golden-sets/{SLUG}/"


def endpoints(run_id: int) -> list[tuple[str, str, dict, int]]:
    """(method, url, request options, status on success) of every operation, reads first."""
    run_file = SimpleUploadedFile("run2.txt", RUN.encode())
    fill_id = VersionModelFill.objects.values_list("pk", flat=True).first()
    return [
        ("get", "/api/v1/golden-sets/", {}, 200),
        ("get", BASE, {}, 200),
        ("get", BASE + "versions/", {}, 200),
        ("get", BASE + "versions/1/", {}, 200),
        ("get", BASE + "versions/latest/", {}, 302),
        ("get", BASE + "versions/1/qrels", {}, 200),
        ("get", BASE + "versions/1/queries", {}, 200),
        ("get", BASE + "versions/1/diff/1", {}, 200),
        ("get", BASE + "runs/", {}, 200),
        ("get", BASE + f"runs/{run_id}/", {}, 200),
        ("get", BASE + f"runs/{run_id}/evaluations/", {}, 200),
        ("get", BASE + "evaluations/", {}, 200),
        ("get", BASE + "versions/1/model-fills/", {}, 200),
        ("get", BASE + f"versions/1/model-fills/{fill_id}/qrels", {}, 200),
        ("post", BASE + "judgments/", {"data": {"labels": [{"query_id": "q3", "doc_id": "d2", "grade": 1}]}, "format": "json"}, 201),
        ("post", BASE + "versions/", {"data": {"note": "more labels"}, "format": "json"}, 202),
        ("post", BASE + "runs/", {"data": {"file": run_file, "system": "dense", "stage": "reranked"}, "format": "multipart"}, 201),
        ("post", BASE + f"runs/{run_id}/archive/", {}, 200),
        ("post", BASE + f"runs/{run_id}/unarchive/", {}, 200),
        (
            "post",
            BASE + "versions/1/model-fills/",
            {"data": {"model": "judge", "prompt_hash": prompt_hash_of("strict")}, "format": "json"},
            201,
        ),
    ]


READS = 14  # the first fourteen endpoints only read
WRITES = 6  # the rest write


@pytest.fixture
def pending_change(golden_set, version):
    """A label added after version 1, so that a publish has something to publish; model
    labels of two prompts, the first of which fills a variant of version 1."""
    qrels_import(golden_set_slug=golden_set.slug, lines=["q3 0 d1 1\n"], source_name="extra")
    for prompt in ("grade", "strict"):
        model_labels_import(golden_set=golden_set, model="judge", prompt_text=prompt, records=[ModelLabelLine(1, "q1", "d5", 2)])
    version_model_fill_create(version=version, model="judge", prompt_hash=prompt_hash_of("grade"))


def outcomes(client, run_id: int) -> list[tuple[str, str, int]]:
    found = []
    for method, url, options, _ in endpoints(run_id):
        response = getattr(client, method)(url, **options)
        found.append((method, url, response.status_code))
        if response.status_code >= 400:
            assert_error(response, response.status_code)
    return found


def expected(statuses: list[int], run_id: int) -> list[tuple[str, str, int]]:
    return [(method, url, status) for (method, url, _, _), status in zip(endpoints(run_id), statuses, strict=True)]


def successes(run_id: int) -> list[int]:
    return [status for *_, status in endpoints(run_id)]


def test_a_write_token_may_do_everything(uploaded_run, pending_change, token, golden_set):
    client = client_for(token("write", golden_set))
    assert outcomes(client, uploaded_run.id) == expected(successes(uploaded_run.id), uploaded_run.id)


def test_a_write_token_for_every_set_may_do_everything_in_this_one(uploaded_run, pending_change, token):
    client = client_for(token("write"))
    assert outcomes(client, uploaded_run.id) == expected(successes(uploaded_run.id), uploaded_run.id)


def test_a_read_token_reads_and_is_forbidden_to_write(uploaded_run, pending_change, token, golden_set):
    client = client_for(token("read", golden_set))
    statuses = successes(uploaded_run.id)[:READS] + [403] * WRITES
    assert outcomes(client, uploaded_run.id) == expected(statuses, uploaded_run.id)


def test_a_token_for_another_golden_set_finds_nothing_here(uploaded_run, pending_change, token, other_set):
    client = client_for(token("write", other_set))
    statuses = [200] + [404] * (len(endpoints(0)) - 1)
    assert outcomes(client, uploaded_run.id) == expected(statuses, uploaded_run.id)
    listed = client.get("/api/v1/golden-sets/").json()["results"]
    assert [s["slug"] for s in listed] == ["other"]


@pytest.mark.parametrize("kind", ["anonymous", "unknown", "expired", "revoked", "malformed"])
def test_without_a_valid_token_every_endpoint_answers_401(uploaded_run, pending_change, kind, expired_token, revoked_token):
    secret = {"anonymous": None, "unknown": "gs_not-a-token", "expired": expired_token, "revoked": revoked_token}.get(kind)
    client = client_for(secret)
    if kind == "malformed":
        client.credentials(HTTP_AUTHORIZATION="Bearer two tokens")
    assert outcomes(client, uploaded_run.id) == expected([401] * len(endpoints(0)), uploaded_run.id)
    response = client.get(BASE)
    error = assert_error(response, 401, "not_authenticated" if kind == "anonymous" else "authentication_failed")
    assert response["WWW-Authenticate"].startswith("Bearer")
    if kind in ("expired", "revoked"):
        assert kind in error["message"]


def test_an_adjudicators_write_token_reads_but_may_not_write(uploaded_run, pending_change, token, adjudicator):
    client = client_for(token("write", owner=adjudicator))
    statuses = successes(uploaded_run.id)[:READS] + [403] * WRITES
    assert outcomes(client, uploaded_run.id) == expected(statuses, uploaded_run.id)


def test_an_annotators_token_finds_nothing_because_annotators_judge_blind(uploaded_run, pending_change, token, annotator):
    client = client_for(token("write", owner=annotator))
    statuses = [200] + [404] * (len(endpoints(0)) - 1)
    assert outcomes(client, uploaded_run.id) == expected(statuses, uploaded_run.id)


def test_a_token_loses_its_reach_when_its_owner_loses_the_role(uploaded_run, token, golden_set, manager):
    client = client_for(token("read", golden_set))
    assert client.get(BASE).status_code == 200
    Membership.objects.filter(user=manager, golden_set=golden_set).delete()
    assert_error(client.get(BASE), 404, "not_found")


def test_a_token_of_an_inactive_owner_is_refused(uploaded_run, token, golden_set, manager):
    client = client_for(token("read", golden_set))
    manager.is_active = False
    manager.save(update_fields=["is_active"])
    assert_error(client.get(BASE), 401, "authentication_failed")


def test_a_token_past_its_expiry_stops_working(uploaded_run, token, golden_set, manager):
    from api.models import ApiToken

    client = client_for(token("read", golden_set, expires_in=timedelta(hours=1)))
    assert client.get(BASE).status_code == 200
    ApiToken.objects.update(expires_at=ApiToken.objects.get().created_at)
    assert_error(client.get(BASE), 401, "authentication_failed")


def test_the_session_of_a_logged_in_manager_works_for_the_browsable_api(uploaded_run, manager, client):
    client.force_login(manager)
    assert client.get(BASE, HTTP_ACCEPT="application/json").json()["slug"] == SLUG
    page = client.get(BASE, HTTP_ACCEPT="text/html")
    assert page.status_code == 200 and b"Golden Set Detail" in page.content


def test_a_golden_set_that_does_not_exist_answers_as_one_the_caller_may_not_read(uploaded_run, token, other_set):
    client = client_for(token("read", other_set))
    hidden = client.get(BASE).json()
    absent = client.get("/api/v1/golden-sets/no-such-set/").json()
    assert hidden == absent
