"""GET .../versions/{n}/qrels gzipped when the client accepts it, over real HTTP (live_server).

`requests` sends Accept-Encoding: gzip by default, as the Python client does: what it
decodes must be the very bytes of the plain export, whose hash is the ETag; the weak ETag
a gzipped answer carries still gets its 304.
"""

import gzip

import pytest
import requests

from tests.api import SLUG

pytestmark = pytest.mark.django_db(transaction=True)

PATH = f"/api/v1/golden-sets/{SLUG}/versions/1/qrels"


@pytest.fixture
def reader(token, golden_set, version) -> dict:
    return {"Authorization": f"Bearer {token('read', golden_set)}"}


@pytest.mark.parametrize("fmt", ["trec", "json", "beir", "csv"])
def test_a_client_accepting_gzip_decodes_the_plain_export_byte_for_byte(live_server, reader, fmt):
    plain = requests.get(live_server.url + PATH, params={"format": fmt}, headers={**reader, "Accept-Encoding": "identity"}, timeout=30)
    assert plain.status_code == 200 and "Content-Encoding" not in plain.headers

    zipped = requests.get(
        live_server.url + PATH, params={"format": fmt}, headers={**reader, "Accept-Encoding": "gzip"}, timeout=30, stream=True
    )
    raw = zipped.raw.read(decode_content=False)
    assert zipped.status_code == 200
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in zipped.headers["Vary"]
    assert gzip.decompress(raw) == plain.content
    assert zipped.headers["ETag"] == "W/" + plain.headers["ETag"]


def test_requests_by_default_gets_gzip_and_the_same_text(live_server, reader):
    plain = requests.get(live_server.url + PATH, headers={**reader, "Accept-Encoding": "identity"}, timeout=30)
    default = requests.get(live_server.url + PATH, headers=reader, timeout=30)
    assert default.headers["Content-Encoding"] == "gzip"
    assert default.content == plain.content


@pytest.mark.parametrize("held", ["strong", "weak"])
def test_the_etag_of_either_answer_gets_a_304(live_server, reader, held):
    first = requests.get(live_server.url + PATH, headers=reader, timeout=30)
    etag = first.headers["ETag"]  # weak: the answer was gzipped
    tag = etag if held == "weak" else etag.removeprefix("W/")
    again = requests.get(live_server.url + PATH, headers={**reader, "If-None-Match": tag}, timeout=30)
    assert again.status_code == 304 and not again.content


def test_gzip_changes_nothing_for_a_caller_without_access(live_server, golden_set, version):
    response = requests.get(live_server.url + PATH, headers={"Accept-Encoding": "gzip"}, timeout=30)
    assert response.status_code == 401


def test_an_error_answer_of_the_qrels_endpoint_stays_plain_json(live_server, reader):
    """Only the qrels stream is compressed: a refusal keeps the JSON error shape the schema names."""
    response = requests.get(
        live_server.url + PATH, params={"slice": "no-equals-sign"}, headers={**reader, "Accept-Encoding": "gzip"}, timeout=30, stream=True
    )
    assert response.status_code == 400 and "Content-Encoding" not in response.headers
    assert "Accept-Encoding" in response.headers["Vary"]
    assert response.json()["error"]["field"] == "slice"
