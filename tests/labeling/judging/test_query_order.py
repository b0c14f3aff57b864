"""The order in which an annotator goes through queries (QueueSettings.query_order): one query
at a time, the default, keeps them on the query they are on until its window has nothing left
for them; interleaved hands out the queue's head every time."""

import pytest
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from goldenset.models import Judgment
from labeling.judging import services as queue
from labeling.judging.selectors import query_place
from labeling.judging.services import query_order_set, queue_settings_of, task_next, task_skip, task_submit
from labeling.models import JudgingTask, QueueSettings
from labeling.pools import services as pool_services
from labeling.pools.selectors import pool_queue
from labeling.pools.services import pool_build
from lib.errors import GoldsetError
from tests.labeling.judging.judging_data import annotator_of, pooled_set
from tests.support import factories

pytestmark = pytest.mark.django_db

ONE_AT_A_TIME = QueueSettings.QueryOrder.ONE_AT_A_TIME
INTERLEAVED = QueueSettings.QueryOrder.INTERLEAVED


@pytest.fixture(autouse=True)
def small_windows(monkeypatch):
    # Windows of two tasks a query: judgments bring every further pair into its window, so
    # staying on a query depends on the refills, as on a large pool.
    monkeypatch.setattr(pool_services, "QUEUE_FLOOR", 1)


@pytest.fixture
def ann(golden_set, make_user):
    return annotator_of(golden_set, make_user, "ann")


@pytest.fixture
def bob(golden_set, make_user):
    return annotator_of(golden_set, make_user, "bob")


def left_for(user, query_pk: int) -> bool:
    """Whether the query's window still has a pair `user` could be handed now: a free queued
    task, or a free overlap task, whose pair they have not judged."""
    judged = Judgment.objects.filter(query_id=OuterRef("query_id"), page_id=OuterRef("page_id"), annotator=user)
    now = timezone.now()
    work = Q(status="open", position__isnull=False) | Q(status="done", judgments_required__gt=F("judgments_done"))
    free = Q(leased_to__isnull=True) | Q(lease_expires_at__lte=now)
    return JudgingTask.objects.filter(work, free, query_id=query_pk).exclude(kind="gold").exclude(Exists(judged)).exists()


def adaptive_pool(slug: str, strategy: str, *, queries: int, depth: int):
    """A set of `queries` queries over 10 pages pooled `depth` deep from two runs that rank
    the pages in opposite orders, so that an adaptive strategy has runs to choose between."""
    query_ids = [f"q{n}" for n in range(1, queries + 1)]
    docs = [f"d{n}" for n in range(1, 11)]
    golden_set = factories.golden_set(slug, pages=factories.pages(*docs), queries=factories.queries(*query_ids), qrels={})
    runs = [
        factories.run(golden_set, "bm25", {query_id: docs for query_id in query_ids}),
        factories.run(golden_set, "dense", {query_id: docs[::-1] for query_id in query_ids}),
    ]
    QueueSettings.objects.create(golden_set=golden_set, overlap_share=0.0)
    return pool_build(golden_set=golden_set, runs=runs, depth=depth, strategy=strategy).pool


class Annotator:
    """Someone at the judging screen: asks for a pair, grades it, and says which query they
    are on as the judging view does (the pair just judged). Records each query change and
    whether it came only once the query left had nothing for them."""

    def __init__(self, golden_set, user, grade=lambda task: 0):
        self.golden_set, self.user, self.grade = golden_set, user, grade
        self.on_query = None
        self.queries: list[int] = []
        self.early_changes: list[tuple[int, int]] = []

    def take(self):
        had_work = self.on_query is not None and left_for(self.user, self.on_query)
        task = task_next(golden_set=self.golden_set, annotator=self.user, on_query=self.on_query)
        if task is not None and had_work and task.query_id != self.on_query:
            self.early_changes.append((self.on_query, task.query_id))
        return task

    def judge(self, task):
        task_submit(task=task, annotator=self.user, grade=self.grade(task))
        self.queries.append(task.query_id)
        self.on_query = task.query_id

    def step(self) -> bool:
        task = self.take()
        if task is None:
            return False
        self.judge(task)
        return True

    @property
    def changes(self) -> int:
        return sum(a != b for a, b in zip(self.queries, self.queries[1:]))


# --- the setting -------------------------------------------------------------------------


def test_a_new_set_judges_one_query_at_a_time(make_user):
    golden_set = factories.golden_set("fresh")
    assert queue_settings_of(golden_set).query_order == ONE_AT_A_TIME
    assert QueueSettings._meta.get_field("query_order").default == ONE_AT_A_TIME  # the migration's too


def test_a_manager_can_choose_the_interleaved_order_and_back(golden_set):
    assert query_order_set(golden_set=golden_set, query_order="interleaved").query_order == INTERLEAVED
    assert QueueSettings.objects.get(golden_set=golden_set).query_order == INTERLEAVED
    query_order_set(golden_set=golden_set, query_order="one_at_a_time")
    assert QueueSettings.objects.get(golden_set=golden_set).query_order == ONE_AT_A_TIME


def test_an_unknown_order_is_refused_naming_the_field_and_the_choices(golden_set):
    with pytest.raises(GoldsetError, match="unknown query order 'by_length'; choose one of 'one_at_a_time', 'interleaved'") as refused:
        query_order_set(golden_set=golden_set, query_order="by_length")
    assert refused.value.field == "query_order"
    assert QueueSettings.objects.get(golden_set=golden_set).query_order == ONE_AT_A_TIME


# --- one annotator -----------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["depth", "mtf", "bandit"])
def test_an_annotator_changes_query_only_once_its_window_is_exhausted(make_user, strategy):
    pool = adaptive_pool("one", strategy, queries=5, depth=3)  # 6 pairs a query: d1-d3 and d8-d10
    ann = Annotator(pool.golden_set, annotator_of(pool.golden_set, make_user, "ann"), grade=lambda task: task.page_id % 2)
    while ann.step():
        pass
    assert len(ann.queries) == 30  # every pair of the pool
    assert ann.early_changes == []
    assert ann.changes == 5 - 1  # k queries: k - 1 changes


def test_the_interleaved_order_still_takes_turns_between_queries(make_user):
    pool = pooled_set("turns", queries=5, pages=8, depth=6)
    query_order_set(golden_set=pool.golden_set, query_order="interleaved")
    ann = Annotator(pool.golden_set, annotator_of(pool.golden_set, make_user, "ann"))
    while (head := pool_queue(pool).first()) is not None:
        task = ann.take()
        assert task.pk == head.pk  # the queue's head every time, the query they are on or not
        ann.judge(task)
    assert ann.changes == 29  # five queries in turn: a change at every pair


@pytest.mark.parametrize("strategy", ["mtf", "bandit"])
def test_adaptive_strategies_keep_their_order_within_a_query_and_their_turns_across(make_user, strategy):
    pool = adaptive_pool("adaptive", strategy, queries=4, depth=4)
    ann = Annotator(pool.golden_set, annotator_of(pool.golden_set, make_user, "ann"), grade=lambda task: int(task.page_id % 3 == 0))
    while (head := pool_queue(pool).first()) is not None:
        staying = ann.on_query is not None and pool_queue(pool).filter(query_id=ann.on_query).exists()
        expected = pool_queue(pool).filter(query_id=ann.on_query).first() if staying else head
        task = ann.take()
        # Within the query, the strategy's next pair; moving on, the query whose turn it is.
        assert task.pk == expected.pk
        ann.judge(task)
    assert ann.changes == 4 - 1


def test_a_fresh_visit_resumes_the_query_of_the_latest_judgment(golden_set, ann):
    first = task_next(golden_set=golden_set, annotator=ann)
    task_submit(task=first, annotator=ann, grade=1)
    # No query passed (a new visit to the screen): the one they judged last.
    assert task_next(golden_set=golden_set, annotator=ann).query_id == first.query_id


def test_a_skip_keeps_the_annotator_on_the_query(golden_set, ann):
    first = task_next(golden_set=golden_set, annotator=ann)
    task_submit(task=first, annotator=ann, grade=1)
    second = task_next(golden_set=golden_set, annotator=ann, on_query=first.query_id)
    task_skip(task=second, annotator=ann)
    third = task_next(golden_set=golden_set, annotator=ann, skipped_ids=[second.pk], on_query=second.query_id)
    assert first.query_id == second.query_id == third.query_id and third.pk != second.pk


def test_a_gold_check_does_not_move_the_annotator_off_their_query(golden_set, ann, monkeypatch):
    from tests.labeling.judging.test_queue import gold_task

    gold = gold_task(golden_set)  # of q2
    QueueSettings.objects.filter(golden_set=golden_set).update(gold_share=0.5)
    monkeypatch.setattr(queue, "gold_draw", lambda: 0.9)
    first = task_next(golden_set=golden_set, annotator=ann)
    task_submit(task=first, annotator=ann, grade=1)
    assert first.query.query_id == "q1"
    monkeypatch.setattr(queue, "gold_draw", lambda: 0.0)
    checked = task_next(golden_set=golden_set, annotator=ann, on_query=first.query_id)
    assert checked.pk == gold.pk
    task_submit(task=checked, annotator=ann, grade=3)
    monkeypatch.setattr(queue, "gold_draw", lambda: 0.9)
    # The judging view passes no query after a gold check: the latest judgment's, q1 again.
    assert task_next(golden_set=golden_set, annotator=ann).query.query_id == "q1"


# --- several annotators ------------------------------------------------------------------


def test_annotators_at_work_together_take_queries_of_their_own(make_user):
    pool = pooled_set("team", queries=6, pages=8, depth=5)
    team = [Annotator(pool.golden_set, annotator_of(pool.golden_set, make_user, name)) for name in ("ann", "bob", "cid")]
    held = [member.take() for member in team]
    # Untouched queries are the least advanced: three people start on three queries.
    assert len({task.query_id for task in held}) == 3
    for member, task in zip(team, held):
        member.judge(task)
    while any([member.step() for member in team]):
        pass
    assert sum(len(member.queries) for member in team) == 30
    assert [member.early_changes for member in team] == [[], [], []]
    # Six queries for three people: each moved on about as often as it finished one.
    assert sum(member.changes for member in team) <= 6 + 3


def test_overlap_tasks_of_the_query_come_to_a_second_annotator_on_it(make_user):
    pool = pooled_set("overlap", queries=3, pages=8, depth=4, overlap_share=1.0)
    ann = Annotator(pool.golden_set, annotator_of(pool.golden_set, make_user, "ann"))
    bob = Annotator(pool.golden_set, annotator_of(pool.golden_set, make_user, "bob"))
    while any([ann.step(), bob.step()]):
        pass
    assert not JudgingTask.objects.filter(pool=pool).exclude(judgments_done=F("judgments_required")).exists()
    assert len(ann.queries) == len(bob.queries) == 12
    assert ann.early_changes == bob.early_changes == []


# --- where the pair stands in its query ---------------------------------------------------


def test_each_pair_says_its_place_among_its_querys_pairs(golden_set, ann):
    places = []
    on_query = None
    for _ in range(5):
        task = task_next(golden_set=golden_set, annotator=ann, on_query=on_query)
        places.append((task.query.query_id, query_place(task).page, query_place(task).of))
        task_submit(task=task, annotator=ann, grade=0)
        on_query = task.query_id
    assert places == [("q1", 1, 4), ("q1", 2, 4), ("q1", 3, 4), ("q1", 4, 4), ("q2", 1, 4)]


def test_a_pair_held_by_a_colleague_counts_as_gone_by(golden_set, ann, bob):
    first = task_next(golden_set=golden_set, annotator=ann)
    second = task_next(golden_set=golden_set, annotator=bob, on_query=first.query_id)
    assert second.query_id == first.query_id  # asked to stay there, bob shares q1's window
    assert (query_place(first).page, query_place(second).page, query_place(second).of) == (1, 2, 4)
