"""Finding 6 of the second hardening probe (high): run uploads decompressed without a limit
inside the web worker (a 19 KB LZ4 file took 2 GB, a 0.27 MB parquet file 4.5 GB and 31 s),
while the 100 MB cap counted compressed bytes. Each bomb is now refused with 413 naming the
limit, through the API over a real server and through the page, with nothing stored.
bench/upload_bombs.py measures the worker's peak memory for each at full size."""

import gzip

import pytest
import requests
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.urls import reverse

from evaluation.models import Run
from lib.errors import ProblemCollector, TooLargeError
from lib.run_formats import ExpansionLimit, read_run
from tests.api import RUN, SLUG
from tests.api.conftest import golden_set, manager, token, version  # noqa: F401
from tests.hardening.bombs import gzip_bomb, lz4_bomb, parquet_bomb

BOMBS = {
    "run.lz4": lambda: lz4_bomb(256 << 20),
    "run.trec.gz": lambda: gzip_bomb(64 << 20),
    "run.parquet": lambda: parquet_bomb(5_000_000),
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_each_bomb_is_refused_by_its_expansion_before_it_is_held(name):
    with pytest.raises(TooLargeError) as refused:
        read_run([BOMBS[name]()], name, ProblemCollector())
    assert refused.value.http_status == 413 and refused.value.field == "file"
    assert "expands more than 100 times its compressed size" in refused.value.message
    assert refused.value.message.endswith("the limit for compressed runs; nothing was stored")


def test_a_run_past_the_ceiling_is_refused_naming_the_setting_whatever_its_ratio():
    limit = ExpansionLimit(ceiling_bytes=1 << 20, floor_bytes=8 << 20)
    with pytest.raises(TooLargeError, match=r"expands past 1 MB once decompressed \(the limit, RUN_MAX_EXPANDED_MB\)"):
        read_run([gzip.compress(RUN.encode() * 100_000)], "big.trec.gz", ProblemCollector(), limit=limit)


def test_real_compressed_runs_are_read_as_before():
    entries = read_run([gzip.compress(RUN.encode())], "run.trec.gz", ProblemCollector())
    plain = read_run([RUN.encode()], "run.trec", ProblemCollector())
    assert entries.query_ids == plain.query_ids and len(entries) == len(plain)


@pytest.fixture
def api(live_server, token, golden_set, version):  # noqa: F811
    def call(path: str, **kwargs) -> requests.Response:
        headers = {"Authorization": f"Bearer {token('write', golden_set)}"}
        return requests.post(f"{live_server.url}/api/v1/golden-sets/{SLUG}/{path}", headers=headers, timeout=60, **kwargs)

    return call


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", sorted(BOMBS))
def test_the_api_answers_413_naming_the_limit_and_stores_nothing(api, name):
    response = api("runs/", data={"system": "bomb", "stage": "other"}, files={"file": (name, BOMBS[name]())})
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "too_large" and error["field"] == "file" and "times its compressed size" in error["message"]
    assert not Run.objects.filter(system="bomb").exists()


@pytest.mark.django_db
@override_settings(RUN_MAX_EXPANDED_MB=1)
def test_the_upload_page_answers_413_and_says_which_limit(client, manager, golden_set, version):  # noqa: F811
    client.force_login(manager)
    data = gzip.compress(RUN.encode() * 100_000)
    response = client.post(
        reverse("runs", args=[golden_set.slug]),
        {
            "file": SimpleUploadedFile("big.trec.gz", data),
            "system": "big",
            "stage": "other",
            "name": "",
            "format": "",
        },
    )
    assert response.status_code == 413
    assert b"expands past 1 MB once decompressed (the limit, RUN_MAX_EXPANDED_MB)" in response.content
    assert not Run.objects.filter(system="big").exists()
