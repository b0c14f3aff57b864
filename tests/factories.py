"""Small golden sets built through the real services, for tests that need one."""

from evaluation.services import run_import
from goldenset.models import GoldenSet, Membership, default_grade_scale
from goldenset.services import GoldenSetSource, golden_set_create, membership_grant
from lib.formats import JsonRecord


def pages(*doc_ids: str, **metadata) -> list[JsonRecord]:
    return [JsonRecord(line=n, id=d, title=f"title {d}", text=f"text of {d}", metadata=dict(metadata)) for n, d in enumerate(doc_ids, 1)]


def queries(*query_ids: str, **metadata) -> list[JsonRecord]:
    return [JsonRecord(line=n, id=q, text=f"question {q}", metadata=dict(metadata)) for n, q in enumerate(query_ids, 1)]


def golden_set(slug: str = "tiny", *, manager=None, qrels: dict | None = None, **options) -> GoldenSet:
    """A set of three queries over five pages, with imported labels `qrels`."""
    if qrels is None:
        qrels = {("q1", "d1"): 2, ("q1", "d2"): 0, ("q2", "d3"): 1}
    source = GoldenSetSource(
        pages=options.pop("pages", None) or pages("d1", "d2", "d3", "d4", "d5"),
        queries=options.pop("queries", None) or queries("q1", "q2", "q3"),
        qrels=qrels,
        grade_scale=options.pop("grade_scale", None) or default_grade_scale(),
        **options,
    )
    golden_set_create(slug=slug, name=slug.title(), source=source)
    golden_set = GoldenSet.objects.get(slug=slug)
    if manager is not None:
        membership_grant(user=manager, golden_set=golden_set, role=Membership.Role.MANAGER)
    return golden_set


def run(golden_set: GoldenSet, name: str, ranking: dict[str, list[str]], *, stage: str = "first_stage"):
    """A run `name` (its own system) that ranks, for each query id, the given doc ids best first."""
    lines = [
        f"{query_id} Q0 {doc_id} {rank} {100 - rank} {name}\n"
        for query_id, doc_ids in ranking.items()
        for rank, doc_id in enumerate(doc_ids, start=1)
    ]
    return run_import(golden_set=golden_set, lines=lines, source_name=f"{name}.run", system=name, stage=stage, name=name)
