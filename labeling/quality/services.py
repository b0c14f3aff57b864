"""Writes of the quality pages: an adjudicator's decision on a pair, hidden gold checks and
the share of the queue they take."""

import random
from collections.abc import Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max

from goldenset.models import GoldenSet, Judgment, Page, Query
from goldenset.selectors import resolved_labels
from goldenset.services import judgment_record
from labeling.models import JudgingTask, QueueSettings
from labeling.quality.selectors import Pair
from lib.errors import GoldsetError, ProblemCollector

GOLD_CHECKS_MAX_ADD = 1000


def pair_adjudicate(*, query: Query, page: Page, adjudicator: AbstractBaseUser, grade: int, note: str = "") -> Judgment:
    """Record `adjudicator`'s decision on a pair: an `adjudicated` judgment, which from now on
    is the pair's label (resolved_labels). The pair must have been judged; the grade must
    be on the scale and the adjudicator an adjudicator or manager of the set (staff too),
    which goldenset.services.judgment_record checks. GoldsetError otherwise."""
    if not Judgment.objects.filter(query=query, page=page).exists():
        raise GoldsetError(f"nobody judged ({query.query_id!r}, {page.doc_id!r}): there is nothing to adjudicate", field="page")
    if isinstance(grade, bool):
        raise GoldsetError(f"grade {grade!r} is not a grade", field="grade")
    return judgment_record(
        query=query,
        page=page,
        grade=grade,
        annotator=adjudicator,
        source=Judgment.Source.ADJUDICATED,
        note=(note or "").strip(),
    )


def gold_checks_add(
    *,
    golden_set: GoldenSet,
    count: int | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
    seed: int | None = None,
) -> int:
    """Make labelled pairs of the set hidden gold checks (JudgingTask rows of kind GOLD, no
    pool, a position so the queue can serve them); return how many were added.

    Either `pairs`, (query_id, doc_id) of pairs that have a label, or `count`: that many
    labelled pairs drawn at random (with `seed`, reproducibly) among those on active
    queries that are not gold checks yet. Annotators are not told which tasks are gold
    checks; the queue serves them at QueueSettings.gold_share. GoldsetError, nothing
    written, for unknown or unlabelled pairs, pairs already gold checks, or a count out of
    range.
    """
    if (count is None) == (pairs is None):
        raise GoldsetError("give either a number of pairs to draw or the pairs themselves", field="count")
    labels = {(q, p): g for q, p, g in resolved_labels(golden_set)}
    active = dict(Query.objects.filter(golden_set=golden_set, retired_at__isnull=True).values_list("pk", "query_id"))
    taken = set(JudgingTask.objects.filter(golden_set=golden_set, kind=JudgingTask.Kind.GOLD).values_list("query_id", "page_id"))
    if pairs is not None:
        problems = ProblemCollector()
        query_pks = {query_id: pk for pk, query_id in active.items()}
        wanted_docs = {doc_id for _, doc_id in pairs}
        page_pks = dict(Page.objects.filter(corpus_id=golden_set.corpus_id, doc_id__in=wanted_docs).values_list("doc_id", "pk"))
        chosen: list[Pair] = []
        for line, (query_id, doc_id) in enumerate(pairs, start=1):
            pair = (query_pks.get(query_id), page_pks.get(doc_id))
            if pair[0] is None:
                problems.add(f"pair {line}: query id {query_id!r} is not an active query of {golden_set.slug!r}")
            elif pair[1] is None:
                problems.add(f"pair {line}: doc id {doc_id!r} is not in the corpus")
            elif pair not in labels:
                problems.add(f"pair {line}: ({query_id!r}, {doc_id!r}) has no label yet")
            elif pair in taken or pair in chosen:
                problems.add(f"pair {line}: ({query_id!r}, {doc_id!r}) is already a gold check")
            else:
                chosen.append(pair)
        problems.raise_if_any(f"cannot add gold checks to {golden_set.slug!r}: {len(problems.problems)} problem(s)")
        if not chosen:
            raise GoldsetError("no pairs given", field="pairs")
    else:
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= GOLD_CHECKS_MAX_ADD:
            raise GoldsetError(f"the number of gold checks to add must be 1 to {GOLD_CHECKS_MAX_ADD}, got {count!r}", field="count")
        candidates = sorted(pair for pair in labels if pair[0] in active and pair not in taken)
        if count > len(candidates):
            raise GoldsetError(
                f"only {len(candidates)} labelled pair(s) of {golden_set.slug!r} can still become gold checks, not {count}",
                field="count",
            )
        chosen = random.Random(seed).sample(candidates, count)

    with transaction.atomic():
        start = JudgingTask.objects.filter(golden_set=golden_set, kind=JudgingTask.Kind.GOLD).aggregate(top=Max("position"))["top"]
        start = 0 if start is None else start + 1
        JudgingTask.objects.bulk_create(
            [
                JudgingTask(
                    golden_set=golden_set,
                    query_id=q,
                    page_id=p,
                    kind=JudgingTask.Kind.GOLD,
                    position=start + i,
                    status=JudgingTask.Status.OPEN,
                )
                for i, (q, p) in enumerate(chosen)
            ]
        )
    return len(chosen)


def gold_share_set(*, golden_set: GoldenSet, gold_share: float) -> QueueSettings:
    """Set the share (0 to 0.5) of served tasks that are hidden gold checks."""
    if isinstance(gold_share, bool) or not isinstance(gold_share, (int, float)) or not 0 <= gold_share <= 0.5:
        raise GoldsetError(f"the gold check share must be a fraction from 0 to 0.5, got {gold_share!r}", field="gold_share")
    settings, _ = QueueSettings.objects.get_or_create(golden_set=golden_set)
    settings.gold_share = float(gold_share)
    settings.save(update_fields=["gold_share"])
    return settings
