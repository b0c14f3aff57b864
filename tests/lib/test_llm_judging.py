"""The pure parts of a model judge: reading a grade from an answer, never guessing; the
prompt's slots; the backoff; the money."""

from decimal import Decimal

import pytest

from lib.llm_judging import DEFAULT_PROMPT, api_key_env_problem, backoff_delay, cost, messages_for, prompt_problem, read_grade
from lib.retrying import retry_after_seconds


@pytest.mark.parametrize(
    "answer, grade",
    [
        ("##final score: 2", 2),
        ("The passage answers it.\n##final score: 3", 3),
        ("## Final Score = 1", 1),
        ("final score: **0**", 0),
        ("2", 2),
        (" **3** ", 3),
        ("Reasoning mentions 1 and 2.\n##final score: 2", 2),
    ],
)
def test_a_grade_is_read_after_final_score_or_from_a_number_alone(answer, grade):
    assert read_grade(answer, (0, 3)).grade == grade


@pytest.mark.parametrize(
    "answer, error",
    [
        ("Quite relevant.", "no score found"),
        ("", "no score found"),
        ("I'd give it a 2 or a 3", "no score found"),
        ("##final score: 2\n##final score: 3", "several scores (2, 3)"),
        ("##final score: 5", "score 5 is not on the set's scale 0-3"),
        ("-1", "score -1 is not on the set's scale 0-3"),
    ],
)
def test_an_answer_without_one_clear_grade_on_the_scale_is_an_error_never_a_guess(answer, error):
    read = read_grade(answer, (0, 3))
    assert read.grade is None and error in read.error


def test_the_default_prompt_has_both_slots_and_the_pair_fills_them():
    assert prompt_problem(DEFAULT_PROMPT) is None
    assert prompt_problem("Query: {query}") == "the prompt must hold {passage}, where the pair's text goes"
    (message,) = messages_for("Q={query} P={passage} {other}", " what ", "x" * 5000)
    assert message["role"] == "user" and message["content"] == "Q=what P=" + "x" * 4000 + " {other}"


def test_only_judge_variables_may_hold_the_key():
    assert api_key_env_problem("") is None and api_key_env_problem("JUDGE_OPENAI") is None
    assert "starting with JUDGE_" in api_key_env_problem("SECRET_KEY")
    assert api_key_env_problem("JUDGE_lower") is not None


def test_retry_after_reads_seconds_and_dates():
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_backoff_doubles_takes_a_longer_retry_after_and_is_capped():
    assert [backoff_delay(n, 0.0) for n in (1, 2, 3)] == [0.25, 0.5, 1.0]
    assert backoff_delay(1, 1.0) == 0.5
    assert backoff_delay(1, 0.0, retry_after=7) == 7
    assert backoff_delay(1, 0.0, retry_after=3600) == 60.0


def test_money_is_counted_at_the_prices_per_million_tokens_and_is_none_without_prices():
    assert cost(2_000_000, 500_000, Decimal("0.15"), Decimal("0.60")) == Decimal("0.600000")
    assert cost(10, 10, None, None) is None


def test_a_batch_answer_gives_one_grade_per_numbered_passage_each_read_alone():
    from lib.llm_judging import read_batch_grades

    answer = "1. The query asks for x.\n[1] ##final score: 2\n2: 0\n[3] ##final score: 7\nSome closing words."
    reads = read_batch_grades(answer, 4, (0, 3))
    assert [(read.grade, read.error) for read in reads] == [
        (2, None),
        (0, None),
        (None, "score 7 is not on the set's scale 0-3"),
        (None, "the batch answer gives no score for passage [4] of 4"),
    ]


def test_a_passage_graded_twice_differently_fails_and_a_number_beyond_the_batch_is_ignored():
    from lib.llm_judging import read_batch_grades

    reads = read_batch_grades("[1] ##final score: 1\n[1] ##final score: 3\n[2] 2\n[5] ##final score: 1", 2, (0, 3))
    assert [(read.grade, read.error) for read in reads] == [
        (None, "the batch answer grades passage [1] more than once, differently"),
        (2, None),
    ]


def test_the_batch_prompt_numbers_each_passage_on_a_line_of_its_own_and_cuts_long_ones():
    from lib.llm_judging import PASSAGE_CHARS, batch_messages_for

    (message,) = batch_messages_for("Q: {query}\nPassage: {passage}", " what ", ["first", "x" * (PASSAGE_CHARS + 50)])
    text = message["content"]
    assert text.startswith("Q: what\nPassage: \n\n[1] first\n\n[2] " + "x" * PASSAGE_CHARS + "\n\nThere are 2 passages above")
    assert "x" * (PASSAGE_CHARS + 1) not in text and message["role"] == "user"


@pytest.mark.parametrize(
    ("value", "count"),
    [
        (12, 12),
        (12.0, 12),
        (0, 0),
        (None, 0),
        ("12", 0),
        (-5, 0),
        (True, 0),
        (3.5, 0),
        (float("nan"), 0),
        (float("inf"), 0),
        ([1], 0),
    ],
)
def test_a_token_count_is_a_whole_number_of_at_least_zero_or_nothing(value, count):
    """Hardening #31 item 10: a usage that was not a number failed the whole job, and a
    negative count gave a negative cost."""
    from lib.llm_judging import token_count

    assert token_count(value) == count
    assert cost(token_count(value), token_count(value), Decimal("1"), Decimal("1")) >= 0
