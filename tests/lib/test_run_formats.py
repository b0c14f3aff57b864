"""Every run form lib.run_formats reads gives the entries of its TREC original, and each
malformed variant is refused naming its line, row or JSON key path."""

import gzip
import io
import json

import numpy as np
import pytest
from ranx import Run

from lib.errors import GoldsetError, ProblemCollector
from lib.run_formats import detect_run_format, read_run
from lib.runs import read_trec_run
from tests.support.marks import RANX

pytestmark = RANX

# Ids that a careless reader would split or alter: '#', '/', ':', non-ASCII letters, a comma.
RANKINGS = {"q1": {"d#1": 2.5, "d/2:ü": 1.5, "a,b": -0.25}, "q/2": {"d#1": 3.0, "x": 3.0}}
TREC = "".join(
    f"{q} Q0 {d} {rank} {score!r} sys\n" for q, ranking in RANKINGS.items() for rank, (d, score) in enumerate(ranking.items(), start=1)
)


def read(data: bytes, fmt: str = "auto", **kwargs):
    problems = ProblemCollector()
    entries = read_run(io.BytesIO(data), "f", problems, fmt=fmt, **kwargs)
    return entries, problems.problems


def as_pairs(entries) -> list[tuple[str, str, float]]:
    return [
        (entries.query_ids[q], entries.doc_ids[d], s)
        for q, d, s in zip(entries.query_index.tolist(), entries.doc_index.tolist(), entries.scores.tolist())
    ]


def original():
    problems = ProblemCollector()
    entries = read_trec_run(TREC.splitlines(keepends=True), "f", problems)
    assert problems.problems == []
    return entries


def ranx_file(tmp_path, suffix: str) -> bytes:
    path = tmp_path / f"run.{suffix}"
    Run.from_dict(RANKINGS, name="sys").save(str(path))
    return path.read_bytes()


def jsonl() -> bytes:
    return "".join(
        json.dumps({"query_id": q, "doc_id": d, "score": s, "text": "a passage"}, ensure_ascii=False) + "\n"
        for q, ranking in RANKINGS.items()
        for d, s in ranking.items()
    ).encode()


def forms(tmp_path) -> dict[str, tuple[bytes, str]]:
    """form -> (its bytes, what detection must call it)."""
    return {
        "trec": (TREC.encode(), "trec"),
        "trec with crlf and tabs": (TREC.replace(" ", "\t").replace("\n", "\r\n").encode(), "trec"),
        "trec with a header": (("query_id Q0 doc_id rank score tag\n" + TREC).encode(), "trec"),
        "trec with trec_eval's header": (("qid iter docno rank sim run_id\n" + TREC).encode(), "trec"),
        "ranx's trec": (ranx_file(tmp_path, "trec"), "trec"),
        "ranx json": (ranx_file(tmp_path, "json"), "json"),
        "beir results json": (json.dumps(RANKINGS, indent=1, ensure_ascii=False).encode(), "json"),
        "jsonl": (jsonl(), "jsonl"),
        "ranx parquet": (ranx_file(tmp_path, "parquet"), "parquet"),
        "ranx lz4": (ranx_file(tmp_path, "lz4"), "lz4"),
    }


@pytest.mark.parametrize("gzipped", [False, True])
def test_every_form_reads_to_the_entries_of_its_trec_original(tmp_path, gzipped):
    expected = sorted(as_pairs(original()))
    for name, (data, detected) in forms(tmp_path).items():
        if gzipped and detected in ("parquet", "lz4"):
            continue  # gzip wraps the text forms
        data = gzip.compress(data) if gzipped else data
        entries, problems = read(data)
        assert problems == [], name
        assert sorted(as_pairs(entries)) == expected, name
        named, problems = read(data, fmt=detected)
        assert problems == [] and sorted(as_pairs(named)) == expected, name


def test_detection_names_each_form(tmp_path):
    for name, (data, detected) in forms(tmp_path).items():
        assert detect_run_format(data[:65536]) == detected, name
    assert detect_run_format(b"q1\td1\t1\n") == "tsv"


def test_ms_marco_ranks_become_scores_in_rank_order():
    entries, problems = read(b"qid\tpid\trank\nq1\td9\t2\nq1\td1\t1\nq/2\td1\t1\n")
    assert problems == []
    assert as_pairs(entries) == [("q1", "d9", -2.0), ("q1", "d1", -1.0), ("q/2", "d1", -1.0)]
    assert entries.line_numbers.tolist() == [2, 3, 4]


def test_a_stream_of_chunks_split_anywhere_reads_as_the_whole_file():
    data = gzip.compress(TREC.encode())
    chunks = [data[i : i + 7] for i in range(0, len(data), 7)]
    problems = ProblemCollector()
    entries = read_run(chunks, "f", problems)
    assert problems.problems == [] and sorted(as_pairs(entries)) == sorted(as_pairs(original()))


@pytest.mark.parametrize(
    ("data", "fmt", "problem"),
    [
        (
            b"q1 Q0 d1 1 2.5 sys\nq1 Q0 has space 2 8.5 sys\n",
            "auto",
            "f:2: expected 6 columns 'query_id Q0 doc_id rank score tag', found 7",
        ),
        (b"q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 x sys\n", "auto", "f:2: score 'x' is not a finite number"),
        (b"q1\td1\t1\nq1\td2\tfirst\n", "auto", "f:2: rank 'first' is not a whole number from 1"),
        (b"q1\td1\t1\nq1\td2\t1\n", "auto", "f:2: rank 1 is given twice for query 'q1' (first on line 1)"),
        (b"q1\td1\t1\nq1\td has\t2\n", "tsv", "f:2: expected 3 columns 'qid docid rank', found 4"),
        (
            b'{"query_id": "q1", "doc_id": "d1", "score": 1}\n{"query_id": "q1", "doc_id": "d1", "score": 2}\n',
            "auto",
            "f:2: doc id 'd1' appears twice for query 'q1' (first on f:1)",
        ),
        (b'{"query_id": "q1", "doc_id": "d1", "score": 1}\n{"query_id": "q1", "doc_id": "d2"}\n', "auto", "f:2: the record has no 'score'"),
        (b'{"query_id": "q1", "doc_id": "d1", "score": 1}\n{"query_id": "q1", "doc_id": "d 2", "score": 1}\n', "auto", "f:2: doc id 'd 2'"),
        (b'{"query_id": "q1", "doc_id": "d1", "score": "1"}\n', "jsonl", "f:1: score '1' is not a finite number"),
        (b'{"query_id": "q1", "doc_id": 7, "score": 1}\n', "jsonl", "f:1: doc id 7 is not a string"),
        (b'{"q1": {"d1": 1.0, "d2": "high"}}', "auto", 'f: ["q1"]["d2"]: score \'high\' is not a finite number'),
        (b'{"q1": {"d1": 1.0, "d1": 2.0}}', "json", 'f: key "d1" appears twice in one object'),
        (b'{"q1": [1, 2]}', "beir", 'f: ["q1"]: expected an object {doc_id: score}, found list'),
        (b'{"q1": {"d1": 1.0}', "json", "f:1: not JSON"),
    ],
)
def test_a_malformed_run_is_refused_naming_its_line_or_record(data, fmt, problem):
    _, problems = read(data, fmt)
    assert any(p.startswith(problem) for p in problems), problems
    _, gzipped_problems = read(gzip.compress(data), fmt)
    assert gzipped_problems == problems


def test_a_malformed_parquet_row_and_lz4_entry_are_named(tmp_path):
    import pandas as pd

    path = tmp_path / "bad.parquet"
    pd.DataFrame({"q_id": ["q1", "q1"], "doc_id": ["d1", "d 2"], "score": [1.0, float("nan")]}).to_parquet(path, index=False)
    _, problems = read(path.read_bytes())
    assert problems[0].startswith("f: row 2: doc id 'd 2'")
    pd.DataFrame({"query": ["q1"], "doc_id": ["d1"], "score": [1.0]}).to_parquet(path, index=False)
    assert read(path.read_bytes())[1][0].startswith("f: the parquet file has no column q_id or query_id")
    Run.from_dict({"q1": {"d1": 1.0, "d 2": 2.0}}).save(str(tmp_path / "bad.lz4"))
    _, problems = read((tmp_path / "bad.lz4").read_bytes())
    assert problems[0].startswith('f: ["q1"]["d 2"]: doc id \'d 2\'')


def test_query_ids_outside_the_golden_set_are_refused_in_every_form(tmp_path):
    for name, (data, _) in forms(tmp_path).items():
        _, problems = read(data, known_query_ids={"q1"})
        assert len(problems) == 1 and "query id 'q/2' is not in the golden set" in problems[0], name


def test_bytes_that_are_not_utf8_or_a_broken_gzip_stop_the_read_naming_the_line():
    with pytest.raises(GoldsetError) as caught:
        read(gzip.compress(b"q1 Q0 d1 1 1.0 s\nq1 Q0 \xff 2 1.0 s\n"))
    assert caught.value.problems == ["f:2: bytes that are not UTF-8 (invalid start byte)"]
    with pytest.raises(GoldsetError, match="cannot read run f"):
        read(gzip.compress(TREC.encode())[:-12])
    with pytest.raises(GoldsetError, match="unknown run format 'xml'"):
        read(TREC.encode(), fmt="xml")


def test_an_empty_file_in_any_text_form_has_no_entries():
    for data in (b"", b"# only a comment\n", gzip.compress(b"")):
        entries, problems = read(data)
        assert len(entries) == 0 and problems == ["f: no run entries found"]
    assert np.array_equal(read(b"{}")[0].scores, np.zeros(0))
