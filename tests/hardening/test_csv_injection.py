"""Finding 6 of the hardening probe: ids like `=cmd|'/Ccalc'!A0`, `=HYPERLINK(...)` and
`@SUM(1+1)` were exported verbatim in CSV, where a spreadsheet runs them. Cells that start
like a formula get OWASP's leading `'`; importing the CSV back gives the very same ids."""

import csv
import io

import pytest
from django.core.management import call_command
from hypothesis import given
from hypothesis import strategies as st

from goldenset.selectors import version_label_rows
from goldenset.services import version_publish
from lib.errors import ProblemCollector
from lib.formats import csv_cell, csv_cell_value, qrels_to_text, read_csv_qrels
from tests.support import factories

HOSTILE = ["=cmd|'/Ccalc'!A0", '=HYPERLINK("http://evil.example","click")', "@SUM(1+1)", "+1", "-2", "'=already", "'plain"]


@pytest.mark.django_db
def test_a_csv_export_starts_no_cell_with_a_formula_and_imports_back_to_the_same_ids(tmp_path):
    qrels = {(query_id, f"d{n}"): 1 for n, query_id in enumerate(HOSTILE)}
    qrels.update({("q1", doc_id): 2 for doc_id in HOSTILE})
    golden_set = factories.golden_set(
        "hostile",
        qrels=qrels,
        queries=factories.queries("q1", *HOSTILE),
        pages=factories.pages(*(f"d{n}" for n in range(len(HOSTILE))), *HOSTILE),
    )
    version = version_publish(golden_set=golden_set)
    path = tmp_path / "hostile.csv"
    call_command("export_qrels", "hostile", "--format", "csv", "--output", str(path))

    with path.open(newline="", encoding="utf-8") as handle:
        cells = [cell for row in csv.reader(handle) for cell in row[:2]]
    assert not [cell for cell in cells if cell.startswith(("=", "+", "-", "@", "\t", "\r"))]

    call_command("import_qrels", str(path), "--golden-set", "round-trip", "--create-missing", "--format", "csv")
    again = version_publish(golden_set=type(golden_set).objects.get(slug="round-trip"))
    assert list(version_label_rows(again)) == list(version_label_rows(version))


def test_a_bad_csv_line_is_named_by_its_number():
    problems = ProblemCollector()
    list(read_csv_qrels(["query_id,doc_id,relevance\n", "q1,d1,1\n", "q1,d2\n", "q1,d\u200b3,1\n"], "labels.csv", problems))
    assert problems.problems == [
        "labels.csv:3: expected 3 comma-separated columns 'query_id,doc_id,relevance', found 2",
        "labels.csv:4: doc id 'd\\u200b3' contains an invisible format character (U+200B) at character 2",
    ]


@given(st.lists(st.tuples(st.text(min_size=1), st.text(min_size=1)), min_size=1, max_size=5))
def test_any_ids_written_to_csv_read_back_the_same(pairs):
    text = qrels_to_text([(q, d, 1) for q, d in pairs], "csv")
    rows = list(csv.reader(io.StringIO(text, newline="")))[1:]
    assert [(csv_cell_value(q), csv_cell_value(d)) for q, d, _ in rows] == pairs
    assert all(not csv_cell(value).startswith(("=", "+", "-", "@")) for pair in pairs for value in pair)
