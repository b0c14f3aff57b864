import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError
from django.utils import timezone

from goldenset import services
from goldenset.models import Corpus, GoldenSet, Judgment, Page, Query
from goldenset.selectors import version_label_rows
from goldenset.services import GoldenSetSource, golden_set_create, golden_set_import_beir, version_publish
from lib.errors import GoldsetError
from lib.formats import JsonRecord

pytestmark = pytest.mark.django_db


def write_beir(root: Path, corpus: list[dict], queries: list[dict], qrels: str) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return root


@pytest.fixture
def beir(tmp_path):
    corpus = [
        {"_id": "CR93E-3103#37", "title": "t1", "text": "x", "lang": "en", "published_at": "2026-01-02T03:04:05Z"},
        {"_id": "doc/2:ü", "title": "t2", "text": "y", "lang": "de"},
    ]
    queries = [{"_id": "q#1", "text": "what"}, {"_id": "q2", "text": "why"}]
    return write_beir(tmp_path / "set", corpus, queries, "q#1\tCR93E-3103#37\t2\nq2\tdoc/2:ü\t0\n")


def nothing_written():
    return not (Corpus.objects.exists() or GoldenSet.objects.exists() or Page.objects.exists() or Judgment.objects.exists())


def test_it_imports_pages_queries_and_judgments_with_ids_unchanged(beir):
    summary = golden_set_import_beir(directory=beir, slug="set")
    assert (summary.pages_created, summary.queries_created, summary.judgments_created) == (2, 2, 2)
    assert set(Page.objects.values_list("doc_id", flat=True)) == {"CR93E-3103#37", "doc/2:ü"}
    page = Page.objects.get(doc_id="CR93E-3103#37")
    assert page.metadata == {"lang": "en"} and page.published_at.year == 2026
    assert set(Judgment.objects.values_list("source", flat=True)) == {"imported"}
    golden_set = GoldenSet.objects.get(slug="set")
    assert golden_set.page_slice_fields == ["lang"]
    version_publish(golden_set=golden_set, note="v1")
    assert list(version_label_rows(golden_set.latest_version())) == [("q2", "doc/2:ü", 0), ("q#1", "CR93E-3103#37", 2)]


@pytest.mark.parametrize(
    ("qrels", "message"),
    [
        ("q#1\tCR93E-3103#37\n", "qrels/test.tsv:2: expected 3 tab-separated columns"),
        ("q#1\tCR93E-3103#37\tyes\n", "qrels/test.tsv:2: grade 'yes' is not an integer"),
        ("q9\tCR93E-3103#37\t1\n", "qrels/test.tsv:2: query id 'q9' is not in queries.jsonl"),
        ("q#1\tnope\t1\n", "qrels/test.tsv:2: doc id 'nope' is not in corpus.jsonl"),
        (
            "q#1\tCR93E-3103#37\t1\nq#1\tCR93E-3103#37\t2\n",
            "qrels/test.tsv:3: pair ('q#1', 'CR93E-3103#37') has grade 2, but line 2 gave it grade 1",
        ),
    ],
)
def test_a_bad_qrels_line_fails_the_whole_import_and_names_the_line(tmp_path, qrels, message):
    folder = write_beir(tmp_path / "b", [{"_id": "CR93E-3103#37", "text": "x"}], [{"_id": "q#1", "text": "q"}], qrels)
    with pytest.raises(GoldsetError) as caught:
        golden_set_import_beir(directory=folder, slug="b")
    assert any(problem.startswith(message) for problem in caught.value.problems), caught.value.problems
    assert nothing_written()


def test_a_duplicate_doc_id_in_the_corpus_names_both_lines(tmp_path):
    folder = write_beir(tmp_path / "b", [{"_id": "d", "text": "x"}, {"_id": "d", "text": "y"}], [{"_id": "q", "text": "q"}], "")
    with pytest.raises(GoldsetError) as caught:
        golden_set_import_beir(directory=folder, slug="b")
    assert caught.value.problems == ["corpus.jsonl:2: duplicate doc id 'd' (first on line 1)"]
    assert nothing_written()


def test_an_id_with_whitespace_is_refused_with_its_line(tmp_path):
    folder = write_beir(tmp_path / "b", [{"_id": "has space", "text": "x"}], [{"_id": "q", "text": "q"}], "")
    with pytest.raises(GoldsetError) as caught:
        golden_set_import_beir(directory=folder, slug="b")
    assert caught.value.problems == ["corpus.jsonl:1: _id 'has space' contains whitespace, which TREC files cannot carry"]


def test_a_bad_date_is_refused_with_its_line(tmp_path):
    folder = write_beir(tmp_path / "b", [{"_id": "d", "text": "x", "published_at": "last week"}], [{"_id": "q", "text": "q"}], "")
    with pytest.raises(GoldsetError) as caught:
        golden_set_import_beir(directory=folder, slug="b")
    assert "field 'published_at' of 'd' is not an ISO 8601 date-time" in caught.value.problems[0]
    assert nothing_written()


def test_it_refuses_an_existing_slug_and_a_folder_that_is_not_beir(beir, tmp_path):
    golden_set_import_beir(directory=beir, slug="set")
    with pytest.raises(GoldsetError, match="already exists"):
        golden_set_import_beir(directory=beir, slug="set")
    with pytest.raises(GoldsetError, match="is not a BEIR folder: missing"):
        golden_set_import_beir(directory=tmp_path, slug="other")


def test_the_command_prints_a_summary_with_the_grades_found(beir, capsys):
    call_command("import_beir", str(beir), "--slug", "set", "--name", "My set", verbosity=0)
    out = capsys.readouterr().out
    assert "judgments imported: 2" in out and "grades found: 0: 1, 2: 1" in out
    assert GoldenSet.objects.get(slug="set").name == "My set"


def test_the_command_turns_bad_input_into_a_command_error(tmp_path):
    folder = write_beir(tmp_path / "b", [{"_id": "d", "text": "x"}], [{"_id": "q", "text": "q"}], "q\td\tx\n")
    with pytest.raises(CommandError, match="qrels/test.tsv:2"):
        call_command("import_beir", str(folder), "--slug", "b", verbosity=0)


@pytest.mark.shared_data
def test_cranfield_round_trips_its_1837_triples(shared_data, tmp_path):
    folder = shared_data / "cranfield"
    summary = golden_set_import_beir(directory=folder, slug="cranfield")
    assert (summary.pages_created, summary.queries_created, summary.judgments_created) == (1400, 225, 1837)
    assert dict(summary.grades) == {-1: 225, 1: 128, 2: 387, 3: 734, 4: 363}
    golden_set = GoldenSet.objects.get(slug="cranfield")
    assert golden_set.grade_values() == [-1, 1, 2, 3, 4]
    version_publish(golden_set=golden_set, note="cranfield")
    out = tmp_path / "cran.qrels"
    call_command("export_qrels", "cranfield", "--output", str(out), "--format", "trec")
    exported = {tuple(line.split()) for line in out.read_text().splitlines()}
    lines = (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]
    expected = {(q, "0", d, g) for q, d, g in (line.split("\t") for line in lines)}
    assert len(exported) == 1837 and exported == expected
    assert Query.objects.filter(golden_set=golden_set).count() == 225


@pytest.mark.django_db(transaction=True)  # the foreign keys are checked at commit
def test_a_judgment_written_outside_its_set_is_refused_and_nothing_is_written(beir, monkeypatch):
    real_insert_queries = services.insert_queries

    def insert_queries_off_by_a_million(*args):
        return {query_id: pk + 1_000_000 for query_id, pk in real_insert_queries(*args).items()}

    monkeypatch.setattr(services, "insert_queries", insert_queries_off_by_a_million)
    with pytest.raises(IntegrityError, match="(?i)foreign key constraint"):
        golden_set_import_beir(directory=beir, slug="set")
    assert nothing_written()


def test_golden_set_create_names_a_judgment_whose_ids_are_not_in_its_input():
    source = GoldenSetSource(
        pages=[JsonRecord(line=1, id="d1", text="x")],
        queries=[JsonRecord(line=1, id="q1", text="q")],
        qrels={("q1", "d1"): 1, ("q1", "d9"): 2, ("q9", "d1"): 0},
        source_name="generated",
    )
    with pytest.raises(GoldsetError) as caught:
        golden_set_create(slug="made", name="Made", source=source)
    assert caught.value.problems == [
        "generated: judgment ('q1', 'd9') names doc id 'd9', which is not in the input",
        "generated: judgment ('q9', 'd1') names query id 'q9', which is not in the input",
    ]
    assert nothing_written()


def test_imported_judgments_hold_their_grade_their_page_s_hash_and_the_time_of_the_import(beir):
    # On PostgreSQL they go as numpy columns in a binary COPY, elsewhere as rows: the same values.
    before = timezone.now()
    golden_set_import_beir(directory=beir, slug="set")
    rows = Judgment.objects.order_by("id").values_list(
        "query__query_id", "page__doc_id", "grade", "source", "note", "page_hash", "page__content_hash", "annotator", "created_at"
    )
    assert [row[:5] for row in rows] == [("q#1", "CR93E-3103#37", 2, "imported", ""), ("q2", "doc/2:ü", 0, "imported", "")]
    assert all(row[5] == row[6] and row[7] is None and before <= row[8] <= timezone.now() for row in rows)


def test_pages_and_queries_keep_their_metadata_and_dates_as_the_files_give_them(tmp_path):
    # On PostgreSQL they go in COPY's binary format, metadata written by orjson where it can.
    metadata = {"lang": "de", "tags": ["a", 1, 2.5, None], "deep": {"x": 'é"\\\t'}, "big": 2**70, "ok": True}
    corpus = [
        {"_id": "d1", "text": "x", "metadata": dict(metadata), "published_at": "2026-01-02T03:04:05+02:00", "modified_at": "2026-02-03"},
        {"_id": "d2", "text": "y", "lang": "fr"},
    ]
    folder = write_beir(tmp_path / "m", corpus, [{"_id": "q1", "text": "why?", "metadata": {"intent": "faq", "n": 3}}], "q1\td1\t1\n")
    golden_set_import_beir(directory=folder, slug="m")
    first, second = Page.objects.order_by("id")
    assert first.metadata == metadata and second.metadata == {"lang": "fr"}
    # The same instants (SQLite hands the offset back as written): a date without one is UTC.
    assert first.published_at == datetime(2026, 1, 2, 1, 4, 5, tzinfo=UTC)
    assert first.modified_at == datetime(2026, 2, 3, tzinfo=UTC)
    assert second.published_at is None and second.modified_at is None
    assert Query.objects.get().metadata == {"intent": "faq", "n": 3}
