"""One error shape for every failure, and 4xx, never 500, for bad input."""

import pytest

from tests.api import SLUG, assert_error, client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(token, golden_set, version):
    return client_for(token("read", golden_set))


def test_a_path_no_endpoint_has_is_404_in_the_error_shape(reader):
    for path in (
        "/api/v1/nothing",
        "/api/v1/golden-sets/tiny/versions/x/",
        "/api/v1/golden-sets/bad%20slug/",
        "/api/v1/golden-sets/tiny/runs/-1/",
        "/api/",
        "/api/v2/golden-sets/",
    ):
        assert_error(reader.get(path), 404, "not_found")


def test_a_method_an_endpoint_does_not_have_is_405(reader):
    assert_error(reader.delete(f"/api/v1/golden-sets/{SLUG}/"), 405, "method_not_allowed")


def test_an_unsupported_body_type_is_415(token, golden_set, version):
    writer = client_for(token("write", golden_set))
    response = writer.post(f"/api/v1/golden-sets/{SLUG}/versions/", "<note/>", content_type="application/xml")
    assert_error(response, 415, "unsupported_media_type")


def test_a_validation_error_names_the_field_and_lists_every_problem(reader):
    error = assert_error(reader.get(f"/api/v1/golden-sets/{SLUG}/runs/", {"stage": "final", "system": "x" * 300}), 400, "invalid")
    assert error["message"] == "the request has 2 problems"
    assert sorted(p.split(":")[0] for p in error["problems"]) == ["stage", "system"]


def test_huge_numbers_and_nul_bytes_are_refused_not_crashed_on(reader, run):
    base = f"/api/v1/golden-sets/{SLUG}/"
    assert_error(reader.get(base + "evaluations/", {"version": 10**30}), 400, "invalid")
    assert_error(reader.get(base + "runs/", {"system": "a\x00b"}), 400, "invalid")
    assert_error(reader.get(base + "versions/1/qrels", {"slice": "lang=\x00"}), 400, "invalid")
    assert reader.get(base + "runs/", {"offset": 10**30}).json()["results"] == []
    # Not replaced by the default any more (hardening finding 15): refused, named.
    assert assert_error(reader.get(base + "runs/", {"limit": "lots"}), 400, "invalid")["problems"] == [
        "limit: 'lots' is not a whole number"
    ]
    assert_error(reader.get(base + "versions/1/diff/99999999999999999999999999"), 404, "not_found")
