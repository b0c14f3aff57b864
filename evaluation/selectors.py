"""Reads the evaluation needs: a version's labels and slices as arrays, a run's entries."""

import io
from dataclasses import dataclass
from datetime import timedelta

import numpy as np

from evaluation.metrics import Metric, default_metrics, parse_metrics
from evaluation.models import Evaluation, EvaluationSettings, Run
from goldenset.models import GoldenSet, Version, VersionLabel, VersionPage, VersionQuery
from lib.ids import natural_key
from lib.runs import RankedRun

DEFAULT_AGE_BUCKETS = [30, 365]


def evaluation_settings(golden_set: GoldenSet) -> EvaluationSettings:
    """The set's evaluation settings, with the seed's defaults when none were saved."""
    found = EvaluationSettings.objects.filter(golden_set=golden_set).first()
    return found or EvaluationSettings(golden_set=golden_set)


def metrics_for(golden_set: GoldenSet, version: Version) -> tuple[Metric, ...]:
    """The metrics to score, in display order: the set's choice, or the defaults at the version's k."""
    chosen = evaluation_settings(golden_set).metrics
    return parse_metrics(chosen) if chosen else default_metrics(version.k_first, version.k_final)


def run_ranked(run: Run) -> RankedRun:
    return RankedRun.from_bytes(bytes(Run.objects.filter(pk=run.pk).values_list("data__ranked", flat=True).get()))


@dataclass
class VersionSlices:
    """The slices of a version. Keys are slice names as stored in Score.slice:
    "query:FIELD=VALUE" maps to a set of query ids, "page:FIELD=VALUE" to an array of page keys."""

    query: dict[str, set[str]]
    page: dict[str, np.ndarray]


def version_query_ids(version: Version) -> list[str]:
    """The version's query ids in natural order."""
    ids = VersionQuery.objects.filter(version=version).values_list("query__query_id", flat=True)
    return sorted(ids, key=lambda q: (natural_key(q), q))


def version_labels(version: Version) -> list[tuple[str, int, int]]:
    """(query_id, page key, grade) of every label of the version."""
    rows = VersionLabel.objects.filter(version=version).values_list("query__query_id", "page_id", "grade")
    return list(rows.iterator(chunk_size=50_000))


def age_bucket_names(bounds: list[int]) -> list[tuple[str, int | None]]:
    """[(name, upper bound in days or None)], e.g. 0-30d, 31-365d, 366d+."""
    names, low = [], 0
    for bound in sorted(bounds):
        names.append((f"{low}-{bound}d", bound))
        low = bound + 1
    names.append((f"{low}d+", None))
    return names


def version_slices(version: Version) -> VersionSlices:
    """Query slices from the snapshotted query metadata; page slices from the snapshotted page
    metadata, plus the age of each labelled page at the version's publish time."""
    query: dict[str, set[str]] = {}
    for query_id, metadata in VersionQuery.objects.filter(version=version).values_list("query__query_id", "metadata"):
        for field in version.query_slice_fields:
            if field in metadata:
                query.setdefault(f"query:{field}={metadata[field]}", set()).add(query_id)

    pages: dict[str, list[int]] = {}
    buckets = age_bucket_names(evaluation_settings(version.golden_set).age_buckets or DEFAULT_AGE_BUCKETS)
    rows = VersionPage.objects.filter(version=version).values_list("page_id", "metadata", "published_at")
    for page_id, metadata, published_at in rows:
        for field in version.page_slice_fields:
            if field in metadata:
                pages.setdefault(f"page:{field}={metadata[field]}", []).append(page_id)
        if published_at is not None:
            age = version.created_at - published_at
            for name, bound in buckets:
                if bound is None or age <= timedelta(days=bound):
                    pages.setdefault(f"page:age={name}", []).append(page_id)
                    break
    ordered_query = dict(sorted(query.items(), key=lambda item: natural_key(item[0])))
    ordered_pages = {
        name: np.asarray(keys, dtype=np.int64) for name, keys in sorted(pages.items(), key=lambda item: natural_key(item[0]))
    }
    return VersionSlices(query=ordered_query, page=ordered_pages)


@dataclass
class PerQuery:
    """Per-query values of an evaluation: query ids, and one float array per metric (fractions)."""

    query_ids: tuple[str, ...]
    values: dict[str, np.ndarray]
    answered: np.ndarray
    relevant_counts: np.ndarray

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        arrays = {f"metric:{name}": array for name, array in self.values.items()}
        np.savez_compressed(
            buffer, query_ids=np.frombuffer("\n".join(self.query_ids).encode(), dtype=np.uint8),
            answered=self.answered, relevant_counts=self.relevant_counts, **arrays,
        )
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "PerQuery":
        with np.load(io.BytesIO(data), allow_pickle=False) as stored:
            raw = stored["query_ids"].tobytes().decode()
            return cls(
                query_ids=tuple(raw.split("\n")) if raw else (),
                values={key.removeprefix("metric:"): stored[key] for key in stored.files if key.startswith("metric:")},
                answered=stored["answered"], relevant_counts=stored["relevant_counts"],
            )


def evaluation_per_query(evaluation: Evaluation) -> PerQuery | None:
    data = Evaluation.objects.filter(pk=evaluation.pk).values_list("per_query", flat=True).get()
    return PerQuery.from_bytes(bytes(data)) if data else None
