"""Version tags through the API: listed to readers, moved by managers, resolved wherever a
version number goes (a redirect to the number it names now, which the answer names)."""

import pytest

from goldenset.services import qrels_import, version_publish
from goldenset.tags import tag_move
from tests.api import SLUG, assert_error, client_for

pytestmark = pytest.mark.django_db

BASE = f"/api/v1/golden-sets/{SLUG}/"


@pytest.fixture
def second_version(golden_set, version, manager):
    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 2\n"], source_name="more")
    return version_publish(golden_set=golden_set, user=manager, note="second")


@pytest.fixture
def prod(golden_set, version, manager):
    return tag_move(golden_set=golden_set, name="prod", version=version, user=manager, note="first release")


@pytest.fixture
def writer(token, golden_set, version):
    return client_for(token("write", golden_set))


def test_a_tag_in_place_of_a_number_redirects_to_the_number_it_names_and_says_so(writer, prod, version, second_version):
    response = writer.get(BASE + "versions/prod/qrels?format=json")
    assert (response.status_code, response["Location"]) == (302, BASE + "versions/1/qrels?format=json")
    assert (response["X-Goldset-Version"], response["X-Goldset-Version-Hash"], response["X-Goldset-Tag"]) == (
        "1",
        version.content_hash,
        "prod",
    )
    assert response["Cache-Control"] == "no-cache"
    qrels = writer.get(response["Location"])
    assert qrels["ETag"] == f'"{version.content_hash}"' and qrels["X-Goldset-Version"] == "1"


def test_moving_the_tag_changes_what_the_next_request_resolves_to(writer, prod, version, second_version):
    moved = writer.put(BASE + "tags/prod/", {"version": 2, "note": "v2 is out"}, format="json")
    assert moved.status_code == 200
    body = moved.json()
    assert (body["version"], body["content_hash"], body["moved_by"]) == (2, second_version.content_hash, "manager")
    assert [(m["from_version"], m["to_version"], m["note"]) for m in body["history"]] == [(1, 2, "v2 is out"), (None, 1, "first release")]
    for path in ("versions/prod/", "versions/prod/queries", "versions/prod/answers", "versions/1/diff/prod"):
        response = writer.get(BASE + path)
        assert response.status_code == 302 and response["X-Goldset-Version"] == "2", path
    assert writer.get(BASE + "versions/prod/", follow=True).json()["content_hash"] == second_version.content_hash


def test_tags_are_listed_with_the_version_and_hash_they_name(writer, prod, version):
    [listed] = writer.get(BASE + "tags/").json()
    assert (listed["name"], listed["version"], listed["content_hash"], listed["moved_by"]) == ("prod", 1, version.content_hash, "manager")


def test_an_unknown_tag_is_404_naming_it(writer, version):
    error = assert_error(writer.get(BASE + "versions/candidate/qrels"), 404, "not_found")
    assert "candidate" in error["message"]
    assert_error(writer.get(BASE + "tags/candidate/"), 404, "not_found")


def test_a_bad_name_or_version_is_refused_naming_the_field(writer, version):
    assert assert_error(writer.put(BASE + "tags/latest/", {"version": 1}, format="json"), 422)["field"] == "name"
    assert assert_error(writer.put(BASE + "tags/9lives/", {"version": 1}, format="json"), 422)["field"] == "name"
    assert assert_error(writer.put(BASE + "tags/prod/", {"version": 7}, format="json"), 422)["field"] == "version"


def test_anonymous_callers_read_nothing(prod):
    for path in ("tags/", "tags/prod/", "versions/prod/"):
        assert_error(client_for().get(BASE + path), 401)
    assert_error(client_for().put(BASE + "tags/prod/", {"version": 1}, format="json"), 401)


def test_an_annotator_finds_nothing_and_moves_nothing(token, annotator, prod):
    client = client_for(token("write", owner=annotator))
    assert_error(client.get(BASE + "tags/"), 404)
    assert_error(client.get(BASE + "versions/prod/"), 404)
    assert_error(client.put(BASE + "tags/prod/", {"version": 1}, format="json"), 404)


def test_an_adjudicator_reads_tags_but_may_not_move_them(token, adjudicator, prod):
    client = client_for(token("write", owner=adjudicator))
    assert client.get(BASE + "tags/").status_code == 200
    assert_error(client.put(BASE + "tags/prod/", {"version": 1, "note": "mine"}, format="json"), 403)


def test_a_read_token_of_the_manager_may_not_move_a_tag(token, golden_set, prod):
    assert_error(client_for(token("read", golden_set)).put(BASE + "tags/prod/", {"version": 1}, format="json"), 403)


def test_the_manager_of_another_set_finds_nothing(make_user, token, prod):
    from tests.api import make_set

    stranger = make_user("stranger")
    make_set("theirs", stranger)
    client = client_for(token("write", owner=stranger))
    assert_error(client.get(BASE + "tags/"), 404)
    assert_error(client.get(BASE + "versions/prod/qrels"), 404)
    assert_error(client.put(BASE + "tags/prod/", {"version": 1}, format="json"), 404)


def test_scores_asked_for_a_tag_name_the_version_it_resolved_to(writer, run, prod, version, second_version, manager):
    from evaluation.services import evaluation_compute

    evaluation_compute(run=run, version=second_version)
    [scored] = writer.get(BASE + "evaluations/", {"version": "prod"}).json()["results"]
    assert (scored["version"], scored["content_hash"]) == (1, version.content_hash)
    tag_move(golden_set=run.golden_set, name="prod", version=second_version, user=manager)
    [scored] = writer.get(BASE + f"runs/{run.id}/evaluations/", {"version": "prod"}).json()["results"]
    assert (scored["version"], scored["content_hash"]) == (2, second_version.content_hash)
    assert_error(writer.get(BASE + "evaluations/", {"version": "nightly"}), 404, "not_found")
