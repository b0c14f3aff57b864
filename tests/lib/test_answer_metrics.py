"""Exact match and token F1 equal SQuAD v1.1's official script on tricky pairs."""

import re
import string
from collections import Counter

import pytest

from lib.answer_metrics import best_scores, exact_match, normalize_answer, token_f1


# The reference implementation: the functions of SQuAD v1.1's official evaluation script,
# evaluate-v1.1.py (https://rajpurkar.github.io/SQuAD-explorer/, "Evaluation script v1.1"),
# copied as they are but for the names.
def official_normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def official_f1_score(prediction, ground_truth):
    prediction_tokens = official_normalize_answer(prediction).split()
    ground_truth_tokens = official_normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def official_exact_match_score(prediction, ground_truth):
    return official_normalize_answer(prediction) == official_normalize_answer(ground_truth)


def official_metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    scores_for_ground_truths = []
    for ground_truth in ground_truths:
        score = metric_fn(prediction, ground_truth)
        scores_for_ground_truths.append(score)
    return max(scores_for_ground_truths)


PAIRS = [
    ("The Eiffel Tower", "eiffel tower"),  # an article and case
    ("an apple a day", "apple day"),  # articles inside
    ("theatre", "the atre"),  # "the" inside a word is no article
    ("Paris.", "paris"),  # punctuation
    ("U.S.A.", "usa"),  # dots inside
    ("a.b", "ab"),  # punctuation goes before the articles
    ("rock-and-roll", "rock and roll"),  # a hyphen joins
    ("Zürich", "zurich"),  # unicode letters are not folded
    ("ÉCOLE", "école"),  # unicode lower case
    ("“quoted”", "quoted"),  # unicode quotes are no ASCII punctuation
    ("naïve – approach", "naive approach"),  # an en dash stays a token
    ("", "paris"),  # an empty answer
    ("", ""),  # both empty
    ("   ", "the"),  # only whitespace against only an article
    ("the the the", "the"),  # only articles
    ("paris paris paris", "paris"),  # repeated tokens
    ("new york new york", "new york city"),  # repeated tokens against fewer
    ("1,000 km", "1000 km"),  # a thousands comma
    ("42", "forty-two"),  # no overlap
    ("Marie   Curie\n", "marie curie"),  # whitespace collapsed
    ("Barack Obama was the 44th president", "Barack Obama"),  # a long answer
]


@pytest.mark.parametrize(("prediction", "truth"), PAIRS)
def test_it_scores_each_pair_as_the_official_script(prediction, truth):
    assert normalize_answer(prediction) == official_normalize_answer(prediction)
    assert exact_match(prediction, truth) == float(official_exact_match_score(prediction, truth))
    assert token_f1(prediction, truth) == pytest.approx(official_f1_score(prediction, truth), abs=1e-12)


@pytest.mark.parametrize(("prediction", "truth"), PAIRS)
def test_it_takes_the_best_over_the_reference_and_its_aliases_as_the_official_script(prediction, truth):
    truths = [truth, "eiffel tower", "Paris"]
    em, f1 = best_scores(prediction, truths)
    assert em == float(official_metric_max_over_ground_truths(official_exact_match_score, prediction, truths))
    assert f1 == pytest.approx(official_metric_max_over_ground_truths(official_f1_score, prediction, truths), abs=1e-12)


def test_it_scores_a_few_pairs_as_written_out_by_hand():
    assert token_f1("paris paris paris", "paris") == pytest.approx(0.5)  # precision 1/3, recall 1
    assert token_f1("new york new york", "new york city") == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert exact_match("The Eiffel Tower!", "eiffel tower") == 1.0
    assert best_scores("anything", []) == (0.0, 0.0)
