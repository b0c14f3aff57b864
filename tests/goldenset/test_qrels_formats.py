"""Every qrels form the export writes imports back (a file, gzip, or `-` for standard
input) into labels that export again to the very same bytes."""

import gzip
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from goldenset.models import GoldenSet, Judgment
from goldenset.services import qrels_import, version_publish
from lib.formats import QREL_FORMATS
from tests.goldenset.test_export import QRELS

pytestmark = pytest.mark.django_db


@pytest.fixture
def version():
    lines = [f"{q} 0 {d} {g}\n" for (q, d), g in QRELS.items()]
    qrels_import(golden_set_slug="ids", lines=lines, source_name="f", create_missing=True)
    return version_publish(golden_set=GoldenSet.objects.get(slug="ids"))


def export(fmt: str, slug: str, capsys) -> bytes:
    capsys.readouterr()
    call_command("export_qrels", slug, "--format", fmt, "--output", "-")
    return capsys.readouterr().out.encode("utf-8")


@pytest.mark.parametrize("fmt", QREL_FORMATS)
@pytest.mark.parametrize("how", ["file", "gzip", "stdin"])
def test_each_export_form_round_trips_byte_for_byte(version, fmt, how, tmp_path, monkeypatch, capsys):
    first = export(fmt, "ids", capsys)
    path = tmp_path / f"qrels.{fmt}"
    path.write_bytes(gzip.compress(first) if how == "gzip" else first)
    if how == "stdin":
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(first)), encoding="utf-8"))
    argument = "-" if how == "stdin" else str(path)
    call_command("import_qrels", argument, "--format", fmt, "--golden-set", "again", "--create-missing", verbosity=0)
    version_publish(golden_set=GoldenSet.objects.get(slug="again"))
    assert export(fmt, "again", capsys) == first


@pytest.mark.parametrize(
    ("fmt", "text", "problem"),
    [
        ("json", '{"q1": {"d1": 1, "d2": 1.5}}', 'qrels.json: ["q1"]["d2"]: grade 1.5 is not an integer'),
        ("json", '{"q1": {"d1": 1, "d1": 2}}', 'qrels.json: key "d1" appears twice in one object'),
        ("beir", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\n", "qrels.json:3: expected 3 tab-separated columns"),
        ("csv", "query_id,doc_id,relevance\nq1,d1,x\n", "qrels.json:2: grade 'x' is not an integer"),
    ],
)
def test_a_malformed_qrels_file_is_refused_naming_its_line_or_key_and_stores_nothing(tmp_path, fmt, text, problem):
    path = tmp_path / "qrels.json"
    path.write_bytes(gzip.compress(text.encode()))
    with pytest.raises(CommandError) as caught:
        call_command("import_qrels", str(path), "--format", fmt, "--golden-set", "new", "--create-missing", verbosity=0)
    assert problem in str(caught.value)
    assert not Judgment.objects.exists() and not GoldenSet.objects.filter(slug="new").exists()


def test_a_missing_qrels_file_is_named(tmp_path):
    with pytest.raises(CommandError, match="nowhere.qrels: no such file"):
        call_command("import_qrels", str(tmp_path / "nowhere.qrels"), "--golden-set", "x", verbosity=0)
