"""Golden sets with a pool to judge, made through the real services, for the judging tests."""

from goldenset.models import GoldenSet, Membership
from goldenset.services import membership_grant
from labeling.models import JudgingTask, Pool, QueueSettings
from labeling.services import pool_build
from tests import factories


def pooled_set(slug: str = "judged", *, queries: int = 3, pages: int = 8, depth: int = 4, overlap_share: float = 0.0, **options) -> Pool:
    """A set of `queries` queries over `pages` pages, nothing labelled, and a depth pool of
    one run that ranks pages d1.. for every query: queries x depth tasks. Overlap is off
    unless asked for, so each task is judged once."""
    query_ids = [f"q{n}" for n in range(1, queries + 1)]
    golden_set = factories.golden_set(
        slug, pages=options.pop("page_records", None) or factories.pages(*(f"d{n}" for n in range(1, pages + 1))),
        queries=factories.queries(*query_ids), qrels={}, **options,
    )
    run = factories.run(golden_set, "bm25", {query_id: [f"d{n}" for n in range(1, pages + 1)] for query_id in query_ids})
    QueueSettings.objects.create(golden_set=golden_set, overlap_share=overlap_share)
    return pool_build(golden_set=golden_set, runs=[run], depth=depth, strategy="depth").pool


def annotator_of(golden_set: GoldenSet, make_user, username: str):
    user = make_user(username)
    membership_grant(user=user, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    return user


def open_tasks(pool: Pool) -> int:
    return JudgingTask.objects.filter(pool=pool, status=JudgingTask.Status.OPEN).count()
