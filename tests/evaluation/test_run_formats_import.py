"""A run in any form that lib.run_formats reads is stored as its TREC original is, through
the service, the upload page and `import_run` (a file, or `-` for standard input)."""

import gzip
import io
import json

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from ranx import Run as RanxRun

from evaluation.models import Run, RunData
from evaluation.services import run_import
from goldenset.models import Membership
from goldenset.services import membership_grant
from lib.errors import GoldsetError
from lib.runs import RankedRun
from tests.support import factories
from tests.support.marks import RANX

pytestmark = [
    RANX,
    pytest.mark.django_db,
    pytest.mark.golden_set(
        "forms", manager="owner", qrels={("q1", "d1"): 2, ("q/2", "d3"): 1}, queries=factories.queries("q1", "q/2", "q3")
    ),
]

RANKINGS = {"q1": {"d1": 3.0, "d2": 2.0, "out#1": 2.0}, "q/2": {"d3": 5.0, "d1": 1.0}}
TREC = "".join(
    f"{q} Q0 {d} {rank} {score} sys\n" for q, ranking in RANKINGS.items() for rank, (d, score) in enumerate(ranking.items(), start=1)
)


def stored(run: Run) -> RankedRun:
    return RankedRun.from_bytes(RunData.objects.get(run=run).ranked)


def assert_same_run(run: Run, reference: Run) -> None:
    ours, theirs = stored(run), stored(reference)
    assert ours.query_ids == theirs.query_ids and ours.external_doc_ids == theirs.external_doc_ids
    for name in ("offsets", "doc_keys", "scores"):
        assert np.array_equal(getattr(ours, name), getattr(theirs, name)), name
    assert (run.query_count, run.entry_count) == (reference.query_count, reference.entry_count)


def forms(tmp_path) -> dict[str, bytes]:
    def ranx(suffix):
        path = tmp_path / f"run.{suffix}"
        RanxRun.from_dict(RANKINGS, name="sys").save(str(path))
        return path.read_bytes()

    jsonl = "".join(json.dumps({"query_id": q, "doc_id": d, "score": s}) + "\n" for q, r in RANKINGS.items() for d, s in r.items())
    return {
        "trec.gz": gzip.compress(TREC.encode()),
        "header.trec": ("query_id Q0 doc_id rank score tag\n" + TREC).encode(),
        "ranx.json": ranx("json"),
        "beir.json": json.dumps(RANKINGS).encode(),
        "run.jsonl": jsonl.encode(),
        "run.jsonl.gz": gzip.compress(jsonl.encode()),
        "run.parquet": ranx("parquet"),
        "run.lz4": ranx("lz4"),
    }


def test_every_form_stores_the_run_its_trec_original_stores(golden_set, tmp_path):
    reference = run_import(golden_set=golden_set, data=io.BytesIO(TREC.encode()), source_name="r.trec", system="trec", stage="other")
    for name, data in forms(tmp_path).items():
        run = run_import(golden_set=golden_set, data=io.BytesIO(data), source_name=name, system=name, stage="other")
        assert_same_run(run, reference)


def test_an_ms_marco_run_stores_its_rank_order(golden_set):
    run = run_import(golden_set=golden_set, data=io.BytesIO(b"q1\td2\t2\nq1\td1\t1\n"), source_name="r.tsv", system="m", stage="other")
    reference = run_import(
        golden_set=golden_set, lines=["q1 Q0 d1 1 -1 s\n", "q1 Q0 d2 2 -2 s\n"], source_name="r", system="t", stage="other"
    )
    assert_same_run(run, reference)


def test_a_malformed_run_in_any_form_stores_nothing(golden_set):
    for data in (
        b'{"q1": {"d1": 1.0, "d2": null}}',
        b'{"query_id": "q1", "doc_id": "d1", "score": 1}\n{"query_id": "q1"}\n',
        gzip.compress(b"q1 Q0 has space 1 1.0 sys\n"),
        b"q1\td1\t1\nq1\td2\t1\n",
    ):
        with pytest.raises(GoldsetError) as caught:
            run_import(golden_set=golden_set, data=io.BytesIO(data), source_name="bad", system="bad", stage="other")
        assert caught.value.problems and caught.value.problems[0].startswith("bad:")
    assert not Run.objects.exists() and not RunData.objects.exists()


def test_the_upload_page_takes_a_gzipped_jsonl_run_and_a_named_format(client, golden_set, owner, tmp_path):
    client.force_login(owner)
    url = reverse("runs", kwargs={"slug": golden_set.slug})
    data = forms(tmp_path)["run.jsonl.gz"]
    response = client.post(url, {"file": SimpleUploadedFile("run.jsonl.gz", data), "system": "rag", "stage": "reranked", "format": "jsonl"})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Run.objects.get(system="rag").entry_count == 5
    response = client.post(url, {"file": SimpleUploadedFile("x.json", b'{"q1": {"d1": "high"}}'), "system": "x", "stage": "reranked"})
    assert response.status_code == 400 and "x.json: [&quot;q1&quot;][&quot;d1&quot;]: score" in response.content.decode()


def test_the_upload_page_refuses_an_annotator(client, golden_set, teammate, tmp_path):
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    client.force_login(teammate)
    file = SimpleUploadedFile("run.parquet", forms(tmp_path)["run.parquet"])
    response = client.post(reverse("runs", kwargs={"slug": golden_set.slug}), {"file": file, "system": "p", "stage": "other"})
    assert response.status_code == 404 and not Run.objects.exists()


def stdin_of(monkeypatch, data: bytes) -> None:
    """sys.stdin as the shell gives it: a text stream over a binary buffer."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(data)), encoding="utf-8"))


@pytest.mark.parametrize("name", ["run.lz4", "run.parquet", "trec.gz", "run.jsonl"])
def test_import_run_reads_any_form_from_standard_input(golden_set, tmp_path, monkeypatch, capsys, name):
    stdin_of(monkeypatch, forms(tmp_path)[name])
    call_command("import_run", "-", "--golden-set", "forms", "--system", "piped", "--stage", "other", verbosity=0)
    run = Run.objects.get(system="piped")
    assert (run.source_name, run.entry_count) == ("stdin", 5)
    assert "2 queries, 5 entries kept" in capsys.readouterr().out


def test_import_run_takes_a_named_format_and_refuses_a_bad_one_naming_the_line(golden_set, tmp_path, monkeypatch):
    path = tmp_path / "run.txt"
    path.write_bytes(b"q1\td1\t1\nq1\td2\t2\n")
    call_command("import_run", str(path), "--format", "tsv", "--golden-set", "forms", "--system", "m", "--stage", "other", verbosity=0)
    assert Run.objects.get(system="m").entry_count == 2
    stdin_of(monkeypatch, b'{"query_id": "q1", "doc_id": "d1", "score": 1}\n{"query_id": "q9", "doc_id": "d1", "score": 1}\n')
    with pytest.raises(CommandError, match="stdin:2: query id 'q9' is not in the golden set"):
        call_command("import_run", "-", "--golden-set", "forms", "--system", "bad", "--stage", "other", verbosity=0)
    assert not Run.objects.filter(system="bad").exists()
