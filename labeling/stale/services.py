"""The re-judging queue of stale labels (SEMANTICS.md, "Stale evidence").

A label whose deciding judgment marked evidence that is gone from its page's new text, or
stands there more than once (goldenset.stale_spans), is left out of every version until
it is judged again. stale_queue_fill queues each such pair as a STALE judging task ahead
of every pool's and sample's (a negative position: the pool's positions start at 0), so
that the labels a version lost come back first; a stale task judged before whose label is
stale again (the page changed once more) is opened again rather than made twice.
"""

from dataclasses import dataclass

from django.db import transaction

from goldenset.models import GoldenSet
from goldenset.stale_spans import stale_span_labels
from labeling.models import JudgingTask


@dataclass(frozen=True)
class StaleQueueResult:
    stale_labels: int
    queued: int
    reopened: int

    @property
    def already_queued(self) -> int:
        return self.stale_labels - self.queued - self.reopened


def stale_queue_fill(*, golden_set: GoldenSet) -> StaleQueueResult:
    """Queue every stale label of `golden_set` for judging again (see the module docstring)."""
    labels = stale_span_labels(golden_set)
    with transaction.atomic():
        # The pool build's lock: no other writer claims these pairs meanwhile.
        GoldenSet.objects.select_for_update().filter(pk=golden_set.pk).exists()
        existing = {
            (query, page): (pk, status)
            for pk, query, page, status in JudgingTask.objects.filter(
                golden_set=golden_set,
                kind=JudgingTask.Kind.STALE,
                query_id__in={label.query_id for label in labels},
                page_id__in={label.page_id for label in labels},
            ).values_list("pk", "query_id", "page_id", "status")
        }
        new, reopen = [], []
        for place, label in enumerate(labels, start=-len(labels)):
            found = existing.get((label.query_id, label.page_id))
            if found is None:
                new.append(
                    JudgingTask(
                        golden_set=golden_set,
                        query_id=label.query_id,
                        page_id=label.page_id,
                        kind=JudgingTask.Kind.STALE,
                        position=place,
                        status=JudgingTask.Status.OPEN,
                    )
                )
            elif found[1] != JudgingTask.Status.OPEN:
                reopen.append(found[0])
        JudgingTask.objects.bulk_create(new, batch_size=2000)
        if reopen:
            JudgingTask.objects.filter(pk__in=reopen).update(
                status=JudgingTask.Status.OPEN, position=-1, grade=None, done_at=None, judgments_done=0, judgments_required=1
            )
    return StaleQueueResult(stale_labels=len(labels), queued=len(new), reopened=len(reopen))
