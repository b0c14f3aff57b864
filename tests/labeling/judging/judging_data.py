"""Golden sets with a pool to judge, made through the real services, for the judging tests;
and a race of annotators judging one pool at once, with what must hold after it."""

import threading
import time

from django.db import connections
from django.db.models import Exists, F, OuterRef, Q

from goldenset.model_labels import model_labels_import
from goldenset.models import GoldenSet, Judgment, Membership
from goldenset.services import membership_grant
from labeling.judging.services import task_next, task_submit
from labeling.models import JudgingTask, Pool, QueueSettings
from labeling.pools.services import pool_build
from lib.formats import ModelLabelLine
from tests.support import factories


def pooled_set(
    slug: str = "judged",
    *,
    queries: int = 3,
    pages: int = 8,
    depth: int = 4,
    overlap_share: float = 0.0,
    strategy: str = "depth",
    **options,
) -> Pool:
    """A set of `queries` queries over `pages` pages, nothing labelled, and a pool of one
    run that ranks pages d1.. for every query: queries x depth tasks, in depth order (or
    `strategy`'s: a model_first pool follows model labels "judge" gives every page, d3,
    d6, ... highest). Overlap is off unless asked for, so each task is judged once."""
    query_ids = [f"q{n}" for n in range(1, queries + 1)]
    golden_set = factories.golden_set(
        slug,
        pages=options.pop("page_records", None) or factories.pages(*(f"d{n}" for n in range(1, pages + 1))),
        queries=factories.queries(*query_ids),
        qrels={},
        **options,
    )
    run = factories.run(golden_set, "bm25", {query_id: [f"d{n}" for n in range(1, pages + 1)] for query_id in query_ids})
    QueueSettings.objects.create(golden_set=golden_set, overlap_share=overlap_share)
    model = None
    if strategy == "model_first":
        model = "judge"
        records = [
            ModelLabelLine(line, query_id, f"d{n}", 1 if n % 3 == 0 else 0, None)
            for line, (query_id, n) in enumerate(((q, n) for q in query_ids for n in range(1, pages + 1)), start=1)
        ]
        model_labels_import(golden_set=golden_set, model=model, records=records, prompt_text="grade it")
    return pool_build(golden_set=golden_set, runs=[run], depth=depth, strategy=strategy, model=model).pool


def annotator_of(golden_set: GoldenSet, make_user, username: str):
    user = make_user(username)
    membership_grant(user=user, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    return user


def open_tasks(pool: Pool) -> int:
    return JudgingTask.objects.filter(pool=pool, status=JudgingTask.Status.OPEN).count()


def _left_for(pool: Pool, user) -> bool:
    """Whether the pool has a task `user` could still be handed: an open one, or a done one
    short of its judgments whose pair they have not judged."""
    judged = Judgment.objects.filter(query_id=OuterRef("query_id"), page_id=OuterRef("page_id"), annotator=user)
    short = Q(status="done", judgments_done__lt=F("judgments_required")) & ~Exists(judged)
    return JudgingTask.objects.filter(Q(status="open") | short, pool=pool).exists()


def race(pool: Pool, users: list, *, give_up_seconds: float = 60) -> list[str]:
    """Let `users` judge the whole pool at once, one thread each, as fast as they can, and
    return what went wrong (nothing, when all is well): an error in a thread, a pair judged
    twice by one person, a judgment lost or extra, a task short of or over its judgments, a
    task without overlap judged by two people, a pair of the pool never judged."""
    golden_set = pool.golden_set
    submitted: list[tuple[int, int]] = []
    errors: list[str] = []
    barrier = threading.Barrier(len(users))
    give_up_at = time.monotonic() + give_up_seconds

    def work(user):
        try:
            barrier.wait()
            on_query = None  # the query they are on, passed on as the judging view does
            while True:
                task = task_next(golden_set=golden_set, annotator=user, on_query=on_query)
                if task is None:
                    if not _left_for(pool, user):
                        return
                    # A pair they may still judge is leased to someone else right now
                    # (an overlap task is only offered once its first judgment lands):
                    # like a person at the screen, they ask again in a moment.
                    if time.monotonic() > give_up_at:
                        raise AssertionError(f"{user} waited {give_up_seconds} s for a pair that is never handed out")
                    time.sleep(0.01)
                    continue
                task_submit(task=task, annotator=user, grade=task.pk % 4)
                submitted.append((task.pk, user.pk))
                on_query = task.query_id
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            errors.append(f"{user}: {type(exc).__name__}: {exc}")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(user,)) for user in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=give_up_seconds * 2)
    if errors:
        return errors
    problems = []
    if len(submitted) != len(set(submitted)):
        problems.append("an annotator judged a pair twice")
    stored = Judgment.objects.filter(query__golden_set=golden_set).count()
    if stored != len(submitted):
        problems.append(f"{len(submitted)} judgments submitted, {stored} stored")
    tasks = {task.pk: task for task in JudgingTask.objects.filter(pool=pool)}
    if len(tasks) != pool.pair_count:
        problems.append(f"{pool.pair_count} pairs in the pool, {len(tasks)} became tasks")
    unfinished = [pk for pk, task in tasks.items() if task.status != "done" or task.judgments_done != task.judgments_required]
    if unfinished:
        problems.append(f"tasks not done with all their judgments: {unfinished}")
    per_task: dict[int, int] = {}
    for task_id, _ in submitted:
        per_task[task_id] = per_task.get(task_id, 0) + 1
    shared = [pk for pk, task in tasks.items() if per_task.get(pk, 0) != task.judgments_required]
    if shared:
        problems.append(f"tasks judged other than the number of times they require: {shared}")
    if len({user_id for _, user_id in submitted}) < 2:
        problems.append("one annotator judged everything: there was no race")
    return problems
