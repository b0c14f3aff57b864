"""Run files are read strictly, ranked as trec_eval ranks them and stored compactly."""

import io

import numpy as np
import pytest

from lib.errors import ProblemCollector
from lib.runs import RankedRun, RunEntries, rank_run, read_trec_run, run_entries_from_rankings


def read(text: str, **kwargs) -> tuple[RunEntries, list[str]]:
    problems = ProblemCollector()
    entries = read_trec_run(text.splitlines(keepends=True), "f", problems, **kwargs)
    return entries, problems.problems


def rank(text: str, doc_keys=None, **kwargs) -> RankedRun:
    entries, problems = read(text)
    assert problems == []
    return rank_run(entries, doc_keys=doc_keys or {}, **kwargs)


def ranked_docs(run: RankedRun, query_id: str, doc_keys: dict[str, int]) -> list[str]:
    by_key = {key: doc for doc, key in doc_keys.items()}
    by_key.update({-(i + 1): doc for i, doc in enumerate(run.external_doc_ids)})
    return [by_key[key] for key in run.doc_keys[run.rows(query_id)].tolist()]


def test_it_reads_the_six_columns_of_a_run_line():
    entries, problems = read("q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.5 bm25\nq2 Q0 d1 1 -3 bm25\n")
    assert problems == []
    assert entries.query_ids == ["q1", "q2"] and entries.doc_ids == ["d1", "d2"]
    assert entries.query_index.tolist() == [0, 0, 1]
    assert entries.doc_index.tolist() == [0, 1, 0]
    assert entries.scores.tolist() == [2.5, 1.5, -3.0]
    assert entries.line_numbers.tolist() == [1, 2, 3]
    assert entries.run_tags == ("bm25",) and entries.extra_column_lines == 0


def test_it_refuses_a_line_with_text_after_the_run_tag_naming_it():
    # trec_eval ignores everything after the sixth column, which stored `has space` as doc
    # `has`: an id with whitespace is refused (SEMANTICS.md), so the seventh column is too.
    entries, problems = read("q1 Q0 d1 1 1.0 t\nq1 Q0 has space 2 8.5 sys\n")
    assert problems == [
        "f:2: expected 6 columns 'query_id Q0 doc_id rank score tag', found 7 (an id cannot hold whitespace): 'q1 Q0 has space 2 8.5 sys'"
    ]
    assert entries.doc_ids == ["d1"] and entries.extra_column_lines == 0


def test_a_header_line_is_skipped_only_as_the_first_line_holding_data():
    for header in ("query_id Q0 doc_id rank score tag", "qid iter docno rank sim run_id"):
        entries, problems = read(f"# made by bm25\n{header}\nq1 Q0 d1 1 2.5 t\n")
        assert problems == [] and entries.query_ids == ["q1"] and entries.line_numbers.tolist() == [3]
    _, problems = read("q1 Q0 d1 1 2.5 t\nquery_id Q0 doc_id rank score tag\n")
    assert problems == ["f:2: score 'score' is not a finite number"]
    _, problems = read("q1 Q0 d1 1 x t\n")  # a number in the rank column: a data line with a bad score
    assert problems == ["f:1: score 'x' is not a finite number"]


def test_it_skips_blank_lines_and_comments_but_keeps_hash_inside_ids():
    entries, problems = read("# system: bm25\n\n   \n  # indented\nq#1 Q0 CR93E-3103#37 1 1.0 t\n")
    assert problems == []
    assert entries.query_ids == ["q#1"] and entries.doc_ids == ["CR93E-3103#37"]
    assert entries.line_numbers.tolist() == [5]


def test_it_keeps_ids_with_slashes_colons_and_non_ascii_letters_byte_for_byte():
    entries, problems = read("q/ü:2 Q0 d:ß/ä 1 1.0 t\n")
    assert problems == []
    assert entries.query_ids == ["q/ü:2"] and entries.doc_ids == ["d:ß/ä"]


def test_it_ignores_a_byte_order_mark_at_the_start_of_the_file():
    entries, problems = read("\ufeffq1 Q0 d1 1 1.0 t\n")
    assert problems == [] and entries.query_ids == ["q1"]


def test_it_names_the_line_of_a_short_line():
    _, problems = read("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 0.5\n")
    assert problems == ["f:2: expected 6 columns 'query_id Q0 doc_id rank score tag', found 5: 'q1 Q0 d2 2 0.5'"]


@pytest.mark.parametrize("score", ["high", "nan", "NaN", "inf", "-Infinity", "1e999", "1_000", "١٢"])
def test_it_refuses_scores_that_are_not_finite_numbers(score):
    _, problems = read(f"q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 {score} t\n")
    assert problems == [f"f:2: score {score!r} is not a finite number"]


def test_it_refuses_the_same_doc_twice_for_one_query_naming_both_lines():
    _, problems = read("q1 Q0 d1 1 3 t\nq2 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\nq1 Q0 d1 3 1 t\nq1 Q0 d1 4 0 t\n")
    assert problems == [
        "f:4: doc id 'd1' appears twice for query 'q1' (first on line 1)",
        "f:5: doc id 'd1' appears twice for query 'q1' (first on line 1)",
    ]


def test_it_lists_every_unknown_query_id_once_with_its_first_line():
    text = "q1 Q0 d1 1 1 t\nzz Q0 d1 1 1 t\nq2 Q0 d1 1 1 t\nzz Q0 d2 2 0 t\nyy Q0 d1 1 1 t\n"
    entries, problems = read(text, known_query_ids={"q1", "q2"})
    assert problems == [
        "f:2: query id 'zz' is not in the golden set (2 lines from here on)",
        "f:5: query id 'yy' is not in the golden set (1 line from here on)",
    ]
    assert entries.query_ids == ["q1", "q2"]


def test_it_refuses_an_id_longer_than_an_id_column_holds():
    _, problems = read(f"q1 Q0 {'d' * 256} 1 1 t\n")
    assert len(problems) == 1 and problems[0].startswith("f:1: doc id 'dddd") and "longer than 255" in problems[0]


def test_it_reports_a_file_without_entries():
    _, problems = read("# only a comment\n\n")
    assert problems == ["f: no run entries found"]


def test_it_orders_by_score_then_doc_id_descending_in_byte_order():
    # trec_eval compares docnos with strcmp: "b" > "a" > "B" > "A", and "é" (U+00E9) > "z".
    text = "q1 Q0 A 1 1.0 t\nq1 Q0 b 2 1.0 t\nq1 Q0 B 3 1.0 t\nq1 Q0 é 4 1.0 t\nq1 Q0 a 5 1.0 t\nq1 Q0 z 6 1.0 t\nq1 Q0 top 7 9 t\n"
    run = rank(text)
    assert ranked_docs(run, "q1", {}) == ["top", "é", "z", "b", "a", "B", "A"]


def test_it_ignores_the_rank_column():
    run = rank("q1 Q0 low 1 0.1 t\nq1 Q0 high 2 0.9 t\nq1 Q0 mid 1 0.5 t\n")
    assert ranked_docs(run, "q1", {}) == ["high", "mid", "low"]
    assert run.ranks.tolist() == [1, 2, 3]


def test_it_sorts_queries_naturally_and_gives_each_its_rows():
    run = rank("q10 Q0 a 1 1 t\nq2 Q0 a 1 1 t\nq2 Q0 b 2 0 t\nq1 Q0 a 1 1 t\n")
    assert run.query_ids == ("q1", "q2", "q10")
    assert run.offsets.tolist() == [0, 1, 3, 4]
    assert run.query_index.tolist() == [0, 1, 1, 2]
    assert run.rows("q2") == slice(1, 3) and run.rows("absent") == slice(0, 0)


def test_it_caps_each_query_at_the_depth_and_counts_what_it_dropped():
    lines = [f"q1 Q0 d{i} {i} {i} t\n" for i in range(5)] + ["q2 Q0 d0 1 1 t\n"]
    run = rank("".join(lines), depth=3)
    assert ranked_docs(run, "q1", {}) == ["d4", "d3", "d2"]
    assert ranked_docs(run, "q2", {}) == ["d0"]
    assert run.dropped_by_depth == 2 and run.depth == 3


def test_it_keys_corpus_pages_by_their_key_and_others_by_negative_keys():
    run = rank("q1 Q0 known 1 3 t\nq1 Q0 stranger 2 2 t\nq2 Q0 other 1 1 t\nq2 Q0 known 2 0 t\n", doc_keys={"known": 42})
    assert run.doc_keys.tolist() == [42, -1, -2, 42]
    assert run.external_doc_ids == ("stranger", "other")


def test_it_refuses_a_corpus_key_that_is_not_positive():
    with pytest.raises(ValueError, match="corpus keys must be positive"):
        rank("q1 Q0 d 1 1 t\n", doc_keys={"d": 0})


def test_a_ranked_run_round_trips_through_bytes():
    run = rank("q/ü:2 Q0 d:ß 1 1.25 t\nq/ü:2 Q0 CR93E-3103#37 2 0.5 t\nq1 Q0 x 1 7 t\n", doc_keys={"x": 7}, depth=5)
    back = RankedRun.from_bytes(run.to_bytes())
    assert back.query_ids == run.query_ids and back.external_doc_ids == run.external_doc_ids
    assert back.offsets.tolist() == run.offsets.tolist()
    assert back.doc_keys.tolist() == run.doc_keys.tolist() and back.scores.tolist() == run.scores.tolist()
    assert (back.depth, back.dropped_by_depth) == (5, 0)


def test_reading_bytes_that_are_not_a_stored_run_raises_value_error():
    with pytest.raises(ValueError, match="not a stored run"):
        RankedRun.from_bytes(b"not a zip file")
    buffer = io.BytesIO()
    np.savez_compressed(buffer, format=np.array([99, 1, 0]))
    with pytest.raises(ValueError, match="format 99, expected 1"):
        RankedRun.from_bytes(buffer.getvalue())


def test_a_million_entry_run_stores_in_a_few_megabytes():
    rng = np.random.default_rng(0)
    queries, depth = 10_000, 100
    run = RankedRun(
        query_ids=tuple(f"q{i}" for i in range(queries)),
        offsets=np.arange(0, queries * depth + 1, depth, dtype=np.int64),
        doc_keys=rng.integers(1, 500_000, queries * depth),
        scores=np.round(rng.random(queries * depth), 4),
        external_doc_ids=(),
        depth=depth,
        dropped_by_depth=0,
    )
    blob = run.to_bytes()
    assert len(blob) < 10_000_000  # 16 MB of raw int64 + float64
    assert RankedRun.from_bytes(blob).doc_keys.tolist() == run.doc_keys.tolist()


@pytest.mark.shared_data
def test_trec_evals_truncated_test_run_is_refused_for_its_junk_columns_naming_each_line(shared_data):
    path = shared_data / "trec_eval_test" / "results.trunc"
    problems = ProblemCollector()
    read_trec_run(path.open(encoding="utf-8"), path.name, problems, known_query_ids={"301", "302", "303"})
    assert len(problems.problems) == 5
    assert all(p.startswith("results.trunc:") and "expected 6 columns" in p for p in problems.problems)


@pytest.mark.shared_data
def test_tied_cranfield_scores_are_ordered_by_doc_id_descending(shared_data):
    path = shared_data / "cranfield" / "runs" / "stevinjs_custom_bm25.run"
    problems = ProblemCollector()
    entries = read_trec_run(path.open(encoding="utf-8"), path.name, problems)
    assert problems.problems == [] and len(entries) == 11140
    doc_keys = {doc: i + 1 for i, doc in enumerate(entries.doc_ids)}
    run = rank_run(entries, doc_keys=doc_keys)
    ids = np.array(entries.doc_ids, dtype=object)[run.doc_keys - 1]
    same_query = run.query_index[1:] == run.query_index[:-1]
    tied = same_query & (run.scores[1:] == run.scores[:-1])
    assert tied.sum() == 443  # the README's count of tied adjacent pairs
    assert all(a > b for a, b in zip(ids[:-1][tied], ids[1:][tied]))  # "99" > "987" > "1000": strings, not numbers
    assert (np.diff(run.scores)[same_query] <= 0).all()


def test_rankings_in_hand_are_checked_as_a_files_ids_are_naming_the_query_and_hit():
    problems = ProblemCollector()
    entries = run_entries_from_rankings([("q1", [("d1", 2.0), ("d 2", 1.0)]), ("q 3", [("d1", 1.0)])], "http://search", problems)
    assert problems.problems == [
        "http://search: query q1, hit 2: doc id 'd 2' contains whitespace, which TREC files cannot carry",
        "http://search: query id 'q 3' contains whitespace, which TREC files cannot carry",
    ]
    assert (entries.query_ids, entries.doc_ids) == (["q1"], ["d1"])


def test_rankings_already_in_order_are_ranked_without_sorting_and_exactly_as_sorting_would():
    """rank_run's fast path (each query one block in trec_eval's order, as an endpoint's
    answers come) gives the very run the general sort gives; input out of order still sorts."""
    import random

    import lib.runs as runs
    from lib.errors import ProblemCollector
    from lib.runs import RunEntriesBuilder

    rng = random.Random(7)
    docs = [f"d{n}" for n in range(300)]
    keys = {doc: n + 1 for n, doc in enumerate(docs)}

    def ranked(rankings, fast: bool):
        builder = RunEntriesBuilder("endpoint", ProblemCollector())
        for query_id, ranking in rankings:
            builder.add(query_id, ranking)
        general = runs._segments_in_order
        if not fast:
            runs._segments_in_order = lambda *args: None
        try:
            return rank_run(builder.entries(), doc_keys=keys, depth=20)
        finally:
            runs._segments_in_order = general

    in_order, shuffled = [], []
    for n in rng.sample(range(60), 60):  # queries in no particular order
        chosen = sorted(rng.sample(docs, 30), reverse=True)  # ties broken by doc id descending
        in_order.append((f"q{n}", [(doc, float(30 - i // 4)) for i, doc in enumerate(chosen)]))
        mixed = list(in_order[-1][1])
        rng.shuffle(mixed)
        shuffled.append((f"q{n}", mixed))
    for rankings in (in_order, shuffled):
        fast, general = ranked(rankings, True), ranked(rankings, False)
        assert fast.query_ids == general.query_ids and fast.query_ids[:3] == ("q0", "q1", "q2")
        assert np.array_equal(fast.offsets, general.offsets)
        assert np.array_equal(fast.doc_keys, general.doc_keys) and np.array_equal(fast.scores, general.scores)
