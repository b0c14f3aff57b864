"""The report's numbers on a 20-query fixture, each equal to a hand computation written out."""

import math

import pytest

from answers.report import AnswerRow, ReportInputs, compute_report

Z = 1.959963984540054  # the normal quantile of a two-sided 95% interval

QUERIES = [f"q{i}" for i in range(1, 21)]
# q1..q16 have a reference answer (exact match and F1 are written), q17..q20 none.
ORACLE_EM = {q: 1.0 if i <= 12 else 0.0 for i, q in enumerate(QUERIES[:16], 1)}  # right: q1..q12
RETRIEVED_EM = {q: 1.0 if i <= 8 or i == 13 else 0.0 for i, q in enumerate(QUERIES[:16], 1)}  # right: q1..q8, q13
ORACLE_F1 = {**{q: 1.0 for q in QUERIES[:12]}, "q13": 0.5, "q14": 0.5, "q15": 0.0, "q16": 0.0}
RETRIEVED_F1 = {**{q: v for q, v in RETRIEVED_EM.items()}, "q9": 0.25, "q10": 0.25, "q11": 0.25, "q12": 0.25}
# The judge: the oracle answers of q1..q14 correct, the retrieved of q1..q8, q13, q17, q18.
ORACLE_RIGHT = {f"q{i}" for i in range(1, 15)}
RETRIEVED_RIGHT = {f"q{i}" for i in (1, 2, 3, 4, 5, 6, 7, 8, 13, 17, 18)}


def rows(*, drop: str | None = None) -> list[AnswerRow]:
    made = []
    for q in QUERIES:
        made.append(AnswerRow(q, "oracle", True, ORACLE_EM.get(q), ORACLE_F1.get(q), "correct" if q in ORACLE_RIGHT else "wrong"))
        if q != drop:
            made.append(
                AnswerRow(q, "retrieved", True, RETRIEVED_EM.get(q), RETRIEVED_F1.get(q), "correct" if q in RETRIEVED_RIGHT else "partly")
            )
    return made


def inputs(**changes) -> ReportInputs:
    values = dict(
        contexts=["oracle", "retrieved"],
        queries=QUERIES,
        answers=rows(),
        judged=True,
        slices={"query:lang=en": set(QUERIES[:10]), "query:lang=fr": set(QUERIES[10:]), "query:lang=de": {"q99"}},
        k_first=100,
        k_final=8,
        recall_first=0.93,
        recall_final=0.85,
        missing_pages={"q9": ["d9"], "q14": ["d14a", "d14b"]},
    )
    values.update(changes)
    return ReportInputs(**values)


def wilson(r: int, n: int) -> tuple[float, float]:
    """Wilson's interval written out: (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    p = r / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return max(centre - half, 0.0), min(centre + half, 1.0)


def normal(values: list[float], lo: float = 0.0, hi: float = 1.0) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    s = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return max(mean - Z * s / math.sqrt(n), lo), min(mean + Z * s / math.sqrt(n), hi)


def close(estimate, value: float, interval: tuple[float, float], n: int) -> None:
    assert estimate.value == pytest.approx(value)
    assert (estimate.low, estimate.high) == pytest.approx(interval)
    assert estimate.n == n


def test_each_context_has_the_means_of_the_queries_with_a_reference_and_the_judges_share():
    report = compute_report(inputs())
    oracle, retrieved = report.overall.contexts["oracle"], report.overall.contexts["retrieved"]
    assert (oracle.queries, oracle.answered, oracle.with_reference, oracle.graded) == (20, 20, 16, 16)
    # Exact match: 12 of 16 right with the oracle context, 9 of 16 with the retrieved one.
    close(oracle.exact_match, 12 / 16, wilson(12, 16), 16)
    close(retrieved.exact_match, 9 / 16, wilson(9, 16), 16)
    # Token F1: twelve 1.0, two 0.5, two 0.0 = 13 / 16; nine 1.0, four 0.25, three 0.0 = 10 / 16.
    close(oracle.token_f1, 13 / 16, normal([1.0] * 12 + [0.5, 0.5, 0.0, 0.0]), 16)
    close(retrieved.token_f1, 10 / 16, normal([1.0] * 9 + [0.25] * 4 + [0.0] * 3), 16)
    # The judge's share counts the 16 with a reference: 14 correct with the oracle (q1..q14),
    # 9 with the retrieved (q1..q8, q13; q17 and q18 have no reference; "partly" is not correct).
    close(oracle.judge_accuracy, 14 / 16, wilson(14, 16), 16)
    close(retrieved.judge_accuracy, 9 / 16, wilson(9, 16), 16)
    assert report.complete


def test_the_losses_are_paired_by_exact_match_and_by_the_judge():
    report = compute_report(inputs())
    assert report.accuracy == "judge"  # every answer is graded
    by_em, by_judge = report.loss("exact_match"), report.loss("judge")
    # By exact match over the 16 with a reference: q9..q12 +1 each, q13 -1, the rest 0.
    differences = [0.0] * 8 + [1.0] * 4 + [-1.0] + [0.0] * 3
    close(by_em.retrieval, 3 / 16, normal(differences, -1.0, 1.0), 16)
    low, high = wilson(12, 16)
    close(by_em.generation, 1 - 12 / 16, (1 - high, 1 - low), 16)
    # By the judge over the same 16: q9..q12 and q14 +1, the rest 0.
    differences = [0.0] * 8 + [1.0] * 4 + [0.0, 1.0, 0.0, 0.0]
    close(by_judge.retrieval, 5 / 16, normal(differences, -1.0, 1.0), 16)
    low, high = wilson(14, 16)
    close(by_judge.generation, 1 - 14 / 16, (1 - high, 1 - low), 16)
    assert report.loss() is by_judge


def test_the_queries_right_with_the_oracle_and_wrong_with_the_retrieved_name_their_missing_pages():
    report = compute_report(inputs())
    assert [(m.query_id, m.missing_pages) for m in report.retrieval_misses] == [
        ("q9", ["d9"]),
        ("q10", []),
        ("q11", []),
        ("q12", []),
        ("q14", ["d14a", "d14b"]),
    ]


def test_each_query_slice_has_its_own_figures_and_a_slice_with_no_sampled_query_is_left_out():
    report = compute_report(inputs())
    assert [s.name for s in report.slices] == ["query:lang=en", "query:lang=fr"]
    en, fr = report.slices
    # en: q1..q10, all with a reference; oracle right 10 of 10, retrieved 8 of 10.
    close(en.contexts["oracle"].exact_match, 1.0, wilson(10, 10), 10)
    close(en.contexts["retrieved"].exact_match, 0.8, wilson(8, 10), 10)
    close(en.losses[0].retrieval, 0.2, normal([0.0] * 8 + [1.0, 1.0], -1.0, 1.0), 10)
    # fr: q11..q20, six with a reference (q11..q16); oracle right q11, q12; retrieved q13.
    close(fr.contexts["oracle"].exact_match, 2 / 6, wilson(2, 6), 6)
    close(fr.contexts["retrieved"].exact_match, 1 / 6, wilson(1, 6), 6)
    # The judge on fr's six with a reference: oracle q11..q14 correct (4 of 6), retrieved q13 (1 of 6).
    close(fr.contexts["oracle"].judge_accuracy, 4 / 6, wilson(4, 6), 6)
    close(fr.contexts["retrieved"].judge_accuracy, 1 / 6, wilson(1, 6), 6)


def test_the_seeds_table_is_filled_with_the_runs_recalls_and_the_row_that_applies():
    assert compute_report(inputs()).decision.row == "downstream"  # 0.93 and 0.85: both high
    assert compute_report(inputs(recall_first=0.80, recall_final=0.70)).decision.row == "first_stage"
    assert compute_report(inputs(recall_first=0.93, recall_final=0.62)).decision.row == "reranker"
    decision = compute_report(inputs(recall_first=None, recall_final=None)).decision
    assert decision.row is None and len(decision.rows) == 3


def test_a_context_missing_an_answer_shows_n_of_n_answered_and_no_partial_figure():
    report = compute_report(inputs(answers=rows(drop="q20")))
    retrieved = report.overall.contexts["retrieved"]
    assert retrieved.progress == "19 of 20 answered"
    assert (retrieved.exact_match, retrieved.token_f1, retrieved.judge_accuracy) == (None, None, None)
    assert report.loss("exact_match").retrieval is None and report.loss("judge").retrieval is None
    assert report.retrieval_misses == [] and not report.complete
    # The whole context keeps its figures, and the generation loss needs only it.
    assert report.overall.contexts["oracle"].exact_match.value == pytest.approx(0.75)
    assert report.loss("exact_match").generation.value == pytest.approx(0.25)


def test_a_failed_answer_is_no_answer_and_an_ungraded_one_keeps_the_judges_figure_back():
    answers = [AnswerRow(r.query_id, r.context, r.ok and r.query_id != "q1", r.em, r.f1, r.grade) for r in rows()]
    report = compute_report(inputs(answers=answers))
    oracle = report.overall.contexts["oracle"]
    assert (oracle.answered, oracle.failed, oracle.exact_match) == (19, 1, None)
    answers = [AnswerRow(r.query_id, r.context, r.ok, r.em, r.f1, None if r.query_id == "q2" else r.grade) for r in rows()]
    report = compute_report(inputs(answers=answers))
    assert report.overall.contexts["oracle"].judge_accuracy is None
    assert report.accuracy == "exact_match" and not report.complete
    assert report.overall.contexts["oracle"].exact_match.value == pytest.approx(0.75)
