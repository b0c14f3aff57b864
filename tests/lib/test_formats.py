import json

import pytest

from lib.errors import ProblemCollector
from lib.formats import qrels_to_text, read_beir_qrels, read_jsonl, read_trec_qrels


def read(reader, text):
    problems = ProblemCollector()
    rows = list(reader(text.splitlines(keepends=True), "f", problems))
    return rows, problems.problems


def test_it_skips_comment_lines_but_keeps_hash_inside_ids():
    rows, problems = read(read_trec_qrels, "# comment here\n301 0 CR93E-3103#37 1\n  # indented comment\n301 0 CR#93E-1860 0\n")
    assert problems == []
    assert [(r.query_id, r.doc_id, r.grade) for r in rows] == [("301", "CR93E-3103#37", 1), ("301", "CR#93E-1860", 0)]


def test_it_names_the_line_of_a_missing_column():
    _, problems = read(read_trec_qrels, "1 0 d1 1\n1 0 d2\n")
    assert problems == ["f:2: expected 4 columns 'query_id iteration doc_id grade', found 3: '1 0 d2'"]


def test_it_names_the_line_of_a_non_integer_grade():
    _, problems = read(read_trec_qrels, "1 0 d1 1\n1 0 d2 high\n1 0 d3 1.5\n")
    assert problems == ["f:2: grade 'high' is not an integer", "f:3: grade '1.5' is not an integer"]


def test_it_keeps_negative_grades_and_reads_integral_floats():
    rows, problems = read(read_trec_qrels, "1 0 d1 -1\n1 0 d2 2.0\n")
    assert problems == []
    assert [r.grade for r in rows] == [-1, 2]


def test_beir_qrels_split_on_tabs_so_a_space_in_an_id_is_refused():
    _, problems = read(read_beir_qrels, "query-id\tcorpus-id\tscore\nq 1\td1\t1\n")
    assert problems == ["f:2: query id 'q 1' contains whitespace, which TREC files cannot carry"]


def test_jsonl_folds_extra_keys_into_metadata_and_accepts_numeric_ids():
    rows, problems = read(read_jsonl, '{"_id": 7, "title": "T", "text": "x", "lang": "de", "metadata": {"team": "sre"}}\n')
    assert problems == []
    assert rows[0].id == "7" and rows[0].metadata == {"team": "sre", "lang": "de"}


def test_jsonl_reports_bad_json_and_missing_ids_by_line():
    _, problems = read(read_jsonl, '{"_id": "a"}\n{oops}\n{"text": "no id"}\n{"_id": "b c"}\n')
    assert problems[0].startswith("f:2: not valid JSON")
    assert problems[1] == "f:3: field '_id' is missing"
    assert problems[2] == "f:4: _id 'b c' contains whitespace, which TREC files cannot carry"


@pytest.mark.parametrize(
    "line",
    [
        '{"_id": 123456789012345678901234567890, "n": 1}',  # past 64 bits: orjson would give a float
        '{"_id": "a", "big": -9223372036854775809, "nested": {"deep": [18446744073709551616]}}',
        '{"_id": "a", "score": 0.1, "inf": 1e400, "nan": NaN}',  # NaN and 1e400: json takes them, orjson does not
        '{"_id": "a", "text": "lone \\ud800 surrogate", "lang": "de"}',
        '{"_id": "a", "a": 1, "a": 2, "nested": {"list": [1, "two", null, true]}}',
    ],
)
def test_jsonl_reads_each_value_as_json_loads_does(line):
    rows, problems = read(read_jsonl, line + "\n")
    expected = json.loads(line)
    expected_id = str(expected.pop("_id"))
    assert problems == []
    assert rows[0].id == expected_id and rows[0].text == expected.pop("text", "")
    assert repr(rows[0].metadata) == repr(expected)  # repr tells 1 from 1.0 and keeps NaN equal to itself


def test_jsonl_words_bad_json_as_json_does():
    line = '{"_id": "a", "text": "x",}'
    try:
        json.loads(line)
    except json.JSONDecodeError as exc:
        expected = f"f:1: not valid JSON ({exc.msg} at column {exc.colno})"
    _, problems = read(read_jsonl, line + "\n")
    assert problems == [expected]


ROWS = [("q1", "d,1", 2), ("q1", 'd"2', 0), ("q/ü:2", "CR93E-3103#37", -1)]


def test_every_format_writes_ids_unchanged():
    assert qrels_to_text(ROWS, "trec") == 'q1 0 d,1 2\nq1 0 d"2 0\nq/ü:2 0 CR93E-3103#37 -1\n'
    assert qrels_to_text(ROWS, "beir") == 'query-id\tcorpus-id\tscore\nq1\td,1\t2\nq1\td"2\t0\nq/ü:2\tCR93E-3103#37\t-1\n'
    assert qrels_to_text(ROWS, "csv") == 'query_id,doc_id,relevance\nq1,"d,1",2\nq1,"d""2",0\nq/ü:2,CR93E-3103#37,-1\n'


def test_json_export_is_a_nested_mapping():
    import json

    assert json.loads(qrels_to_text(ROWS, "json")) == {"q1": {"d,1": 2, 'd"2': 0}, "q/ü:2": {"CR93E-3103#37": -1}}
    assert json.loads(qrels_to_text([], "json")) == {}
