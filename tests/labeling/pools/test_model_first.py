"""A pool judged "model first" (labeling.pools.model_first, strategies.ModelFirst): its
queue takes the pairs a chosen model and prompt grade highest first, then the pairs the
model did not label in depth order, with the queue's windows and turns as for any pool."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from goldenset.model_labels import model_labels_import, prompt_hash_of
from goldenset.services import judgment_record
from labeling.models import JudgingTask, Pool
from labeling.pools import services
from labeling.pools.selectors import pool_queue
from labeling.pools.services import pool_build, pool_extend, pool_task_judged
from lib.errors import GoldsetError
from lib.formats import ModelLabelLine
from tests.labeling.pools.conftest import SMALL_SET

pytestmark = [pytest.mark.django_db, SMALL_SET]

# golden_set: SMALL_SET made by the shared fixture; run_a and run_b: tests/labeling/pools/conftest.py.


def import_labels(golden_set, model: str, prompt: str, labels: list[tuple[str, str, int, float | None]]) -> None:
    records = [ModelLabelLine(n, q, d, grade, score) for n, (q, d, grade, score) in enumerate(labels, start=1)]
    model_labels_import(golden_set=golden_set, model=model, records=records, prompt_text=prompt)


@pytest.fixture
def labels(golden_set):
    """judge-7b grades q1's d3 highest, then d6 and d2 (same grade, d6's own score higher),
    and q2's d5; it says nothing of q3. Another model says the opposite."""
    import_labels(
        golden_set,
        "judge-7b",
        "grade it",
        [
            ("q1", "d3", 3, None),
            ("q1", "d6", 2, 0.9),
            ("q1", "d2", 2, 0.1),
            ("q2", "d5", 1, None),
        ],
    )
    import_labels(golden_set, "other", "grade it", [("q1", "d5", 3, None), ("q2", "d7", 3, None)])


def queue(pool) -> list[tuple[str, str]]:
    return list(pool_queue(pool).values_list("query__query_id", "page__doc_id"))


def test_the_queue_takes_the_pairs_the_model_grades_highest_first_then_the_unlabelled_in_depth_order(golden_set, run_a, run_b, labels):
    result = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="model_first", model="judge-7b")
    pool = result.pool
    assert pool.strategy_state == {"model": "judge-7b", "prompt_hash": pool.strategy_state["prompt_hash"]}
    # Depth order would be q1: d5 d2 d3 d6, q2: d7 d4 d5, q3: d6 d7 d8; the other model's labels play no part.
    assert queue(pool) == [
        ("q1", "d3"),
        ("q2", "d5"),
        ("q3", "d6"),
        ("q1", "d6"),
        ("q2", "d7"),
        ("q3", "d7"),
        ("q1", "d2"),
        ("q2", "d4"),
        ("q3", "d8"),
        ("q1", "d5"),
    ]
    lines = "\n".join(result.lines())
    assert "judging order: model first (uses model labels)" in lines
    assert f"model labels ordering the queue: judge-7b, prompt {pool.strategy_state['prompt_hash'][:12]}" in lines


def test_the_window_moves_on_in_the_models_order_after_each_judgment(golden_set, run_a, run_b, labels, owner, monkeypatch):
    monkeypatch.setattr(services, "QUEUE_FLOOR", 1)  # the smallest window: two tasks a query
    pool = pool_build(golden_set=golden_set, runs=[run_a, run_b], depth=3, strategy="model_first", model="judge-7b").pool
    assert queue(pool) == [("q1", "d3"), ("q2", "d5"), ("q3", "d6"), ("q1", "d6"), ("q2", "d7"), ("q3", "d7")]
    task = pool_queue(pool).first()
    judgment_record(query=task.query, page=task.page, grade=0, annotator=owner)
    outcome = pool_task_judged(task=task, grade=0)
    # Not adaptive: a miss changes nothing but the window, which takes d2 next.
    assert outcome.reordered_tasks == 1
    assert queue(pool) == [("q2", "d5"), ("q3", "d6"), ("q1", "d6"), ("q2", "d7"), ("q3", "d7"), ("q1", "d2")]


def test_an_extended_model_first_pool_puts_new_pairs_in_the_models_order(golden_set, run_a, run_b, labels):
    pool = pool_build(golden_set=golden_set, runs=[run_b], depth=3, strategy="model_first", model="judge-7b").pool
    assert [pair for pair in queue(pool) if pair[0] == "q1"] == [("q1", "d6"), ("q1", "d2"), ("q1", "d5")]
    pool_extend(pool=pool, runs=[run_a])
    assert [pair for pair in queue(pool) if pair[0] == "q1"] == [("q1", "d3"), ("q1", "d6"), ("q1", "d2"), ("q1", "d5")]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"strategy": "model_first"}, "orders by model labels: choose the model"),
        ({"strategy": "model_first", "model": "nobody"}, "has no labels from model 'nobody'"),
        (
            {"strategy": "model_first", "model": "judge-7b", "prompt_hash": "0" * 64},
            "has no labels from model 'judge-7b' with prompt 000000000000",
        ),
        ({"strategy": "depth", "model": "judge-7b"}, "strategy 'depth' uses no model labels"),
    ],
)
def test_a_model_first_pool_without_a_known_model_is_refused_and_nothing_is_written(golden_set, run_a, labels, options, message):
    with pytest.raises(GoldsetError, match=message):
        pool_build(golden_set=golden_set, runs=[run_a], depth=3, **options)
    assert not Pool.objects.exists() and not JudgingTask.objects.exists()


def test_a_model_with_several_prompts_needs_the_prompt_chosen(golden_set, run_a, labels):
    import_labels(golden_set, "judge-7b", "grade it again", [("q3", "d6", 1, None)])
    with pytest.raises(GoldsetError, match="several prompts: choose one by its hash"):
        pool_build(golden_set=golden_set, runs=[run_a], depth=3, strategy="model_first", model="judge-7b")
    pool = pool_build(
        golden_set=golden_set,
        runs=[run_a],
        depth=3,
        strategy="model_first",
        model="judge-7b",
        prompt_hash=prompt_hash_of("grade it again"),
    ).pool
    assert pool.strategy_state["prompt_hash"] == prompt_hash_of("grade it again")


def test_build_pool_builds_a_model_first_pool(golden_set, run_a, run_b, labels, capsys):
    call_command("build_pool", "tiny", "--runs", "a", "b", "--depth", "3", "--strategy", "model_first", "--model", "judge-7b", verbosity=0)
    out = capsys.readouterr().out
    assert Pool.objects.get().strategy == "model_first"
    assert "judging order: model first (uses model labels)" in out and "model labels ordering the queue: judge-7b" in out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--strategy", "model_first"], "orders by model labels: choose the model"),
        (["--model", "judge-7b"], "strategy 'depth' uses no model labels"),
    ],
)
def test_build_pool_explains_a_missing_or_stray_model(golden_set, run_a, labels, arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("build_pool", "tiny", "--runs", "a", "--depth", "3", *arguments, verbosity=0)
