"""Property: any Unicode id, through every entry and exit, either is refused with a clear
message or round-trips byte for byte; no 5xx anywhere on the way.

Each example imports (query, doc) ids through the API with create_missing, publishes
through the API, downloads the qrels in every format, uploads a run that ranks the doc,
and opens the results page, the run's page and its per-query drill-down. Examples run
in one test database transaction each, rolled back after, so they do not see each other.
"""

import csv
import io
import json
import unicodedata

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from api.services import api_token_create
from goldenset.models import PublishJob
from goldenset.publishing import publish_job_run
from lib.formats import csv_cell_value
from lib.ids import id_problem
from tests.api import client_for
from tests.support import factories

pytestmark = [pytest.mark.django_db, pytest.mark.whole_system]

# Any code point but surrogates (JSON cannot carry them to the API either way), weighted
# towards what breaks things: digits of other scripts, marks, format and control characters.
TRICKY = st.sampled_from(list("²³¹൧٣۵߁०\u0301\u200b\u202e\u2066\ufeff\x00\x07\x1b\t =+-@'\",#/:%?&\\") + ["😀", "ß", "İ", "ﬁ"])
ANY_IDS = st.lists(st.one_of(st.characters(exclude_categories=["Cs"]), TRICKY), min_size=1, max_size=12).map("".join)
# Ids a person could mean: letters, digits, punctuation and symbols of every script, in NFC.
FAIR_IDS = st.text(st.characters(categories=["L", "N", "P", "S"]), min_size=1, max_size=12).map(lambda s: unicodedata.normalize("NFC", s))
IDS = st.one_of(ANY_IDS, FAIR_IDS)


class Rollback(Exception):
    pass


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(query_id=IDS, doc_id=IDS)
def test_any_ids_are_refused_clearly_or_round_trip_byte_for_byte(owner, query_id, doc_id):
    try:
        with transaction.atomic():
            _one_example(owner, query_id, doc_id)
            raise Rollback
    except Rollback:
        pass


def _one_example(owner, query_id: str, doc_id: str) -> None:
    golden_set = factories.golden_set("prop", manager=owner)
    api = client_for(api_token_create(owner=owner, scope="write", golden_set=golden_set)[1])
    base = "/api/v1/golden-sets/prop/"
    labels = [{"query_id": query_id, "doc_id": doc_id, "grade": 2}, {"query_id": "q1", "doc_id": "d1", "grade": 1}]
    imported = api.post(base + "judgments/", {"labels": labels, "create_missing": True}, format="json")
    problem = id_problem(query_id, "query id") or id_problem(doc_id, "doc id")
    event("refused" if problem else "accepted")
    if problem:
        # 422 for ids the schema allows but storage cannot; 400 for a NUL, which the schema forbids.
        assert imported.status_code in (400, 422), (imported.status_code, imported.content[:300])
        # Named by field: ours ("contains a control character (U+0007) at character 2")
        # or DRF's own for a NUL ("Null characters are not allowed").
        problems = imported.json()["error"]["problems"]
        assert any(p.startswith(("labels[0].query_id: ", "labels[0].doc_id: ")) for p in problems), problems
        return
    assert imported.status_code == 201, imported.content[:300]

    assert api.post(base + "versions/", {"note": "p"}, format="json").status_code == 202
    publish_job_run(PublishJob.objects.get().pk)  # the worker, here
    trec = api.get(base + "versions/1/qrels", {"format": "trec"})
    assert f"{query_id} 0 {doc_id} 2\n".encode() in b"".join(trec.streaming_content)
    as_json = json.loads(b"".join(api.get(base + "versions/1/qrels", {"format": "json"}).streaming_content))
    assert as_json[query_id][doc_id] == 2
    rows = list(
        csv.reader(io.StringIO(b"".join(api.get(base + "versions/1/qrels", {"format": "csv"}).streaming_content).decode(), newline=""))
    )
    assert (query_id, doc_id, "2") in {(csv_cell_value(q), csv_cell_value(d), g) for q, d, g in rows[1:]}

    run_text = f"{query_id} Q0 {doc_id} 1 2.0 sys\nq1 Q0 d1 1 1.0 sys\n".encode()
    uploaded = api.post(base + "runs/", {"file": io.BytesIO(run_text), "system": "sys²", "stage": "first_stage"}, format="multipart")
    assert uploaded.status_code == 201, uploaded.content[:300]
    run_id = uploaded.json()["id"]

    pages = Client()
    pages.force_login(owner)
    for url in (
        reverse("results", kwargs={"slug": "prop"}),
        reverse("run", kwargs={"slug": "prop", "run_id": run_id}),
        reverse("run_query", kwargs={"slug": "prop", "run_id": run_id, "query_id": query_id}),
        reverse("version", kwargs={"slug": "prop", "number": 1}),
    ):
        response = pages.get(url)
        assert response.status_code == 200, (url, response.status_code)
    evaluations = api.get(base + f"runs/{run_id}/evaluations/")
    assert evaluations.status_code == 200
