"""Reads of pool jobs: a set's latest jobs, for the completeness page's jobs section."""

from evaluation.models import Run
from goldenset.models import GoldenSet
from labeling.models import PoolJob

# Jobs the completeness page lists.
RECENT_JOBS = 5


def recent_pool_jobs(golden_set: GoldenSet, limit: int = RECENT_JOBS) -> list[PoolJob]:
    """The set's latest jobs, newest first (index pool_job_recent), each with `asked`: what
    was asked, for people ("runs bm25, dense · depth 20 · strategy mtf"). Two queries."""
    jobs = list(PoolJob.objects.filter(golden_set=golden_set).select_related("created_by")[:limit])
    run_ids = {pk for job in jobs for pk in job.arguments.get("runs", [])}
    names = dict(Run.objects.filter(pk__in=run_ids).values_list("pk", "name")) if run_ids else {}
    for job in jobs:
        job.asked = _asked(job.arguments, names)
    return jobs


def _asked(arguments: dict, run_names: dict[int, str]) -> str:
    parts = []
    if arguments.get("pool") is not None:
        parts.append(f"pool {arguments['pool']}")
    if arguments.get("version") is not None:
        parts.append(f"flagged slices of v{arguments['version']}")
    if arguments.get("runs"):
        parts.append("runs " + ", ".join(run_names.get(pk, f"#{pk} (deleted)") for pk in arguments["runs"]))
    for name, label in [
        ("depth", "depth"),
        ("strategy", "strategy"),
        ("budget", "budget"),
        ("size", "size"),
        ("depth_to", "down to rank"),
        ("seed", "seed"),
    ]:
        if arguments.get(name) is not None:
            parts.append(f"{label} {arguments[name]}")
    if arguments.get("model"):
        parts.append(f"model labels of {arguments['model']}, prompt {str(arguments.get('prompt_hash', ''))[:12]}")
    return " · ".join(parts)
