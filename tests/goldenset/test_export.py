"""Exports load in the field's libraries exactly as the version holds them."""

import csv
import io
import json

import pytest
from django.core.cache import cache
from django.core.management import call_command

from goldenset.models import GoldenSet
from goldenset.selectors import version_label_rows
from goldenset.services import qrels_import, version_publish
from tests.support import factories
from tests.support.marks import RANX

pytestmark = pytest.mark.django_db

QRELS = {("q/1", "CR93E-3103#37"): 2, ("q/1", "d:ü"): 0, ("q/1", "a,b"): 1, ("q10", "x"): 3, ("q2", "x"): -1}


@pytest.fixture
def version(tmp_path):
    lines = [f"{q} 0 {d} {g}\n" for (q, d), g in QRELS.items()]
    qrels_import(golden_set_slug="ids", lines=lines, source_name="f", create_missing=True)
    return version_publish(golden_set=GoldenSet.objects.get(slug="ids"))


def export(fmt: str, tmp_path, slug="ids") -> str:
    path = tmp_path / f"out.{fmt}"
    call_command("export_qrels", slug, "--format", fmt, "--output", str(path))
    return path.read_text(encoding="utf-8")


def as_dict() -> dict:
    out: dict = {}
    for (q, d), g in QRELS.items():
        out.setdefault(q, {})[d] = g
    return out


def test_the_trec_export_is_in_natural_id_order(version, tmp_path):
    lines = export("trec", tmp_path).splitlines()
    # q2 before q10 (numbers compare as numbers), "q" before "q/" (the rest as text).
    assert [line.split()[0] for line in lines] == ["q2", "q10", "q/1", "q/1", "q/1"]
    assert lines[2:] == ["q/1 0 CR93E-3103#37 2", "q/1 0 a,b 1", "q/1 0 d:ü 0"]


def test_the_trec_export_round_trips_byte_identically_through_import(version, tmp_path):
    first = export("trec", tmp_path)
    qrels_import(golden_set_slug="again", lines=io.StringIO(first), source_name="x", create_missing=True)
    version_publish(golden_set=GoldenSet.objects.get(slug="again"))
    assert export("trec", tmp_path, slug="again").encode() == first.encode()


def test_json_beir_and_csv_exports_hold_the_same_labels(version, tmp_path):
    assert json.loads(export("json", tmp_path)) == as_dict()
    beir = export("beir", tmp_path).splitlines()
    assert beir[0] == "query-id\tcorpus-id\tscore"
    assert {tuple(line.split("\t")) for line in beir[1:]} == {(q, d, str(g)) for (q, d), g in QRELS.items()}
    rows = list(csv.DictReader(io.StringIO(export("csv", tmp_path))))
    assert {(r["query_id"], r["doc_id"], int(r["relevance"])) for r in rows} == {(q, d, g) for (q, d), g in QRELS.items()}


@RANX
def test_ranx_loads_the_trec_and_json_exports_as_the_version_holds_them(version, tmp_path):
    from ranx import Qrels

    trec_path = tmp_path / "ranx.qrels"
    trec_path.write_text(export("trec", tmp_path))
    from_trec = Qrels.from_file(str(trec_path), kind="trec").to_dict()
    from_json = Qrels.from_dict(json.loads(export("json", tmp_path))).to_dict()
    expected = as_dict()
    assert {q: dict(d) for q, d in from_trec.items()} == expected
    assert {q: dict(d) for q, d in from_json.items()} == expected


def test_pytrec_eval_parses_the_trec_export_as_the_version_holds_it(version, tmp_path):
    import pytrec_eval

    with io.StringIO(export("trec", tmp_path)) as handle:
        assert pytrec_eval.parse_qrel(handle) == as_dict()


def test_ir_measures_reads_the_trec_export_as_the_version_holds_it(version, tmp_path):
    import ir_measures

    path = tmp_path / "irm.qrels"
    path.write_text(export("trec", tmp_path))
    read = {(q.query_id, q.doc_id, q.relevance) for q in ir_measures.read_trec_qrels(str(path))}
    assert read == {(q, d, g) for (q, d), g in QRELS.items()}


def test_exporting_an_older_version_gives_its_labels_not_the_latest(version, tmp_path):
    qrels_import(golden_set_slug="ids", lines=["q2 0 x 3\n"], source_name="f")
    version_publish(golden_set=GoldenSet.objects.get(slug="ids"))
    path = tmp_path / "v1"
    call_command("export_qrels", "ids", "--version", "1", "--output", str(path))
    assert "q2 0 x -1" in path.read_text()


def test_the_export_streams_with_a_constant_number_of_queries(version, django_assert_max_num_queries):
    cache.clear()
    # The first export of a version in a process re-checks its content hash: three more reads
    # (labels, queries, pages), whatever the version's size; later exports skip the check.
    with django_assert_max_num_queries(2 + 3):
        rows = list(version_label_rows(version))
    with django_assert_max_num_queries(2):
        assert list(version_label_rows(version)) == rows
    assert len(rows) == 5


def test_export_of_a_set_without_versions_says_how_to_publish(tmp_path):
    factories.golden_set("empty")
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="publish one with publish_version"):
        call_command("export_qrels", "empty")
