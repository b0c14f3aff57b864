"""Calibration of model labels against people's, overall and per slice (query slices and
page slices of the latest version), and what the model's labels would change: the reads of
the model labels page.

The human label of a pair is its label in the set's LATEST VERSION (VersionLabel), the
labels every score is computed on, so "how far to trust the model" is measured against
what the numbers rest on. Pairs judged by both are the pairs that carry both a version
label and a label of the chosen model and prompt. Model labels are read here and only
here (and by their import): human resolution, versions and scores never see them.

The ranking of systems compares each run's recall@k_final (the set's k_final as frozen
in the version) on the version's labels with the same metric on those labels plus the
model's labels filling the pairs the version left unjudged, computed by the project's
engine (evaluation.engine), as the results pages compute scores. The same two scorings
give the filled scores shown beside the human-only ones (recall@k_final, recall@k_first,
ndcg@10, mrr), with the share of the model's labels among the labelled pages of each run's
top k: stored scores never read model labels, these are computed here and only shown,
labelled with the model and the prompt's hash.

The recall of the labels from the completeness samples, human only and prediction-powered
with the model's labels, is labeling.model_labels.estimates'.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np
from django.db.models import F, Window
from django.db.models.functions import RowNumber

from evaluation import scoring_inputs
from evaluation.completeness import pooled_labels
from evaluation.engine import QrelsArrays, evaluate_run
from evaluation.models import Run, RunData
from evaluation.selectors import (
    later_night,
    run_not_archived,
    slice_label,
    version_labels,
    version_query_ids,
)
from goldenset.model_labels import ModelSource, model_sources
from goldenset.models import GoldenSet, ModelJudgment, Page, Query, Version
from labeling.model_labels.estimates import SampleRecall, sample_recalls
from labeling.model_labels.stats import cohen_kappa, kendall_tau_b
from labeling.models import JudgeFailure, JudgeJob
from labeling.quality.agreement import confusion_matrix
from lib.ids import natural_key
from lib.llm_judging import cost
from lib.runs import RankedRun

WORST_LIMIT = 50
# A slice with fewer pairs judged by both shows its count and no figure: kappa over a
# dozen pairs swings by tenths with one pair.
MIN_SLICE_PAIRS = 20

Pair = tuple[str, int]  # (query_id, page pk)


def _finite(value: float) -> float | None:
    return None if value != value else value


@dataclass
class Agreement:
    """Model against people on the pairs both judged, over all queries or one query slice.

    `confusion[i][j]` counts pairs people graded values[i] and the model values[j]. The
    shares are fractions in [0, 1], None when nothing is counted under them."""

    name: str
    values: list[int]
    pairs: int
    kappa_quadratic: float | None
    kappa_unweighted: float | None
    confusion: np.ndarray
    model_relevant: int
    model_relevant_humans_not: int
    human_relevant: int
    human_relevant_model_not: int
    minimum_pairs: int = 0

    @property
    def too_few(self) -> bool:
        return self.pairs < self.minimum_pairs

    @property
    def model_only_share(self) -> float | None:
        """Of the pairs the model calls relevant, the share people do not."""
        return self.model_relevant_humans_not / self.model_relevant if self.model_relevant and not self.too_few else None

    @property
    def human_only_share(self) -> float | None:
        """Of the pairs people call relevant, the share the model does not."""
        return self.human_relevant_model_not / self.human_relevant if self.human_relevant and not self.too_few else None

    @property
    def confusion_counts(self) -> list[list[int]]:
        return self.confusion.tolist()

    @property
    def confusion_rows(self) -> list[tuple[int, list[int]]]:
        return list(zip(self.values, self.confusion.tolist()))


@dataclass(frozen=True)
class Disagreement:
    query_pk: int
    page_pk: int
    query_id: str
    query_text: str
    doc_id: str
    page_title: str
    human: int
    model: int
    flip: bool  # one side calls the page relevant, the other does not

    @property
    def difference(self) -> int:
        return abs(self.human - self.model)


@dataclass(frozen=True)
class FilledScore:
    """One metric of one run on the version's labels (`human`, the stored score's labels)
    and on them with the model's filling the unjudged pairs (`filled`): fractions in
    [0, 1], None when no query of the version has a relevant page."""

    metric: str
    human: float | None
    filled: float | None

    @property
    def change_points(self) -> float | None:
        return None if self.human is None or self.filled is None else (self.filled - self.human) * 100


@dataclass(frozen=True)
class ModelShare:
    """Of the labelled pages in a run's top `k` (over the version's queries) once the model
    fills the gaps, how many carry the model's label: `model` of `labelled`."""

    k: int
    model: int
    labelled: int

    @property
    def share(self) -> float | None:
        return self.model / self.labelled if self.labelled else None


@dataclass(frozen=True)
class RunRanking:
    """One run's score on human labels and on human labels filled with the model's, and
    its rank (1 = best) under each, by the ranking metric; `scores` the metrics the results
    page leads with, both ways, and `shares` the model's part of the labels in its top k.
    Scores are fractions in [0, 1], None when no query of the version has a relevant page."""

    run_pk: int
    name: str
    stage: str
    human: float | None
    filled: float | None
    human_rank: int
    filled_rank: int
    scores: tuple[FilledScore, ...] = ()
    shares: tuple[ModelShare, ...] = ()


@dataclass
class Calibration:
    golden_set: GoldenSet
    source: ModelSource
    version: Version | None
    metric: str = ""
    model_labels: int = 0
    overall: Agreement | None = None
    slices: list[Agreement] = field(default_factory=list)
    worst: list[Disagreement] = field(default_factory=list)
    runs: list[RunRanking] = field(default_factory=list)
    filled_pairs: int = 0  # model labels that fill pairs the version left unjudged
    tau: float | None = None
    recalls: list[SampleRecall] = field(default_factory=list)
    minimum_slice_pairs: int = MIN_SLICE_PAIRS

    @property
    def runs_by_filled(self) -> list[RunRanking]:
        return sorted(self.runs, key=lambda run: run.filled_rank)

    @property
    def filled_metrics(self) -> list[str]:
        """The metrics each run's `scores` hold, in order (none before a first version)."""
        return filled_metrics(self.version) if self.version is not None else []


def _agreement(name: str, pairs: list[tuple[int, int]], values: list[int], threshold: int, minimum: int = 0) -> Agreement:
    human = np.asarray([h for h, _ in pairs], dtype=np.int64)
    model = np.asarray([m for _, m in pairs], dtype=np.int64)
    human_rel, model_rel = human >= threshold, model >= threshold
    enough = len(pairs) >= minimum
    return Agreement(
        name=name,
        values=values,
        pairs=len(pairs),
        minimum_pairs=minimum,
        kappa_quadratic=_finite(cohen_kappa(human, model, values=values, weights="quadratic")) if enough else None,
        kappa_unweighted=_finite(cohen_kappa(human, model, values=values)) if enough else None,
        confusion=confusion_matrix(human, model, values=values),
        model_relevant=int(model_rel.sum()),
        model_relevant_humans_not=int((model_rel & ~human_rel).sum()),
        human_relevant=int(human_rel.sum()),
        human_relevant_model_not=int((human_rel & ~model_rel).sum()),
    )


def _worst(golden_set: GoldenSet, both: dict[Pair, tuple[int, int]], threshold: int) -> list[Disagreement]:
    """The pairs where people and model differ most, then flips of relevance first, then
    in the natural order of query id and page: two queries in all."""
    differing = [(pair, h, m) for pair, (h, m) in both.items() if h != m]
    differing.sort(
        key=lambda item: (
            -abs(item[1] - item[2]),
            (item[1] >= threshold) == (item[2] >= threshold),
            natural_key(item[0][0]),
            item[0][1],
        )
    )
    chosen = differing[:WORST_LIMIT]
    if not chosen:
        return []
    queries = {
        q.query_id: q
        for q in Query.objects.filter(golden_set=golden_set, query_id__in={p[0] for p, _, _ in chosen}).only("pk", "query_id", "text")
    }
    pages = {p.pk: p for p in Page.objects.filter(pk__in={p[1] for p, _, _ in chosen}).only("pk", "doc_id", "title")}
    return [
        Disagreement(
            query_pk=queries[query_id].pk,
            page_pk=page_pk,
            query_id=query_id,
            query_text=queries[query_id].text,
            doc_id=pages[page_pk].doc_id,
            page_title=pages[page_pk].title,
            human=h,
            model=m,
            flip=(h >= threshold) != (m >= threshold),
        )
        for (query_id, page_pk), h, m in chosen
    ]


def _ranks(scores: list[float], names: list[str]) -> list[int]:
    """1-based rank of each score, best first; ties in the order of the names."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], natural_key(names[i])))
    ranks = [0] * len(scores)
    for rank, i in enumerate(order, start=1):
        ranks[i] = rank
    return ranks


def _ranked_runs(golden_set: GoldenSet) -> Iterator[tuple[Run, RankedRun]]:
    """The set's runs that are not archived (each series by its latest night, as leaderboards
    show them), with their ranked entries, one run at a time: two queries, and one run's
    entries in memory at once (a run may hold a million)."""
    runs = {
        run.pk: run
        for run in Run.objects.filter(run_not_archived(), golden_set=golden_set).exclude(later_night()).only("pk", "name", "stage")
    }
    rows = RunData.objects.filter(run__in=list(runs)).values_list("run_id", "ranked")
    for run_pk, ranked in rows.iterator(chunk_size=1):
        yield runs[run_pk], RankedRun.from_bytes(bytes(ranked))


def filled_metrics(version: Version) -> list[str]:
    """The metrics scored both ways, in the results page's order of the defaults:
    recall@k_final (what the prompt sees, the ranking metric), recall@k_first, ndcg@10, mrr."""
    return list(dict.fromkeys([f"recall@{version.k_final}", f"recall@{version.k_first}", "ndcg@10", "mrr"]))


def _rankings(
    golden_set: GoldenSet,
    version: Version,
    query_ids: list[str],
    human_rows: list[tuple[str, int, int]],
    human: QrelsArrays,
    fill: list[tuple[str, int, int]],
    metric: str,
) -> list[RunRanking]:
    """Every run scored on the version's labels (`human`, the arrays scoring reads, made of
    `human_rows`) and on them filled with the model's, by the project's engine (trec_eval's
    ties), one run's entries in memory at a time."""
    filled = QrelsArrays.from_rows([*human_rows, *fill], query_ids=query_ids)
    model_only = QrelsArrays.from_rows(fill, query_ids=query_ids)
    metrics = filled_metrics(version)
    depths = sorted({version.k_final, version.k_first})
    threshold = version.relevance_threshold
    scored = []
    for run, ranked in _ranked_runs(golden_set):
        on_human = evaluate_run(human, ranked, metrics, relevance_threshold=threshold).means
        on_filled = evaluate_run(filled, ranked, metrics, relevance_threshold=threshold).means
        shares = []
        for k in depths:
            model_hits = len(pooled_labels(model_only, ranked, k)) if fill else 0
            shares.append(ModelShare(k=k, model=model_hits, labelled=model_hits + len(pooled_labels(human, ranked, k))))
        scores = tuple(FilledScore(name, on_human[name], on_filled[name]) for name in metrics)
        scored.append((run, on_human[metric], on_filled[metric], scores, tuple(shares)))
    scored.sort(key=lambda item: (natural_key(item[0].name), item[0].pk))
    names = [item[0].name for item in scored]
    human_ranks = _ranks([item[1] or 0.0 for item in scored], names)
    filled_ranks = _ranks([item[2] or 0.0 for item in scored], names)
    return [
        RunRanking(run.pk, run.name, run.stage, h, f, hr, fr, scores, shares)
        for (run, h, f, scores, shares), hr, fr in zip(scored, human_ranks, filled_ranks)
    ]


def source_find(golden_set: GoldenSet, model: str | None, prompt_hash: str | None) -> tuple[list[ModelSource], ModelSource | None]:
    """The set's model-label sources, and the one asked for (the first, most labels, when
    none is named; None when the one named has no label in the set)."""
    sources = model_sources(golden_set)
    if not model:
        return sources, sources[0] if sources else None
    for source in sources:
        if source.model == model and (not prompt_hash or source.prompt_hash == prompt_hash):
            return sources, source
    return sources, None


def calibration_report(golden_set: GoldenSet, source: ModelSource) -> Calibration:
    """How the labels of `source` compare with the latest version's, overall and per query
    and page slice of that version, with the worst disagreements, the runs ranked and
    scored both ways, and the recall of the labels from the newest completeness sample,
    human only and prediction-powered (labeling.model_labels.estimates)."""
    version = golden_set.latest_version()
    report = Calibration(golden_set=golden_set, source=source, version=version)
    model_rows = ModelJudgment.objects.filter(golden_set=golden_set, model=source.model, prompt_hash=source.prompt_hash)
    model = {(q, p): g for q, p, g in model_rows.values_list("query__query_id", "page_id", "grade").iterator(chunk_size=20_000)}
    report.model_labels = len(model)
    if version is None:
        return report
    threshold = version.relevance_threshold
    report.metric = f"recall@{version.k_final}"
    human_rows = version_labels(version)
    human = {(q, p): g for q, p, g in human_rows}
    both = {pair: (grade, model[pair]) for pair, grade in human.items() if pair in model}
    values = sorted(set(golden_set.grade_values()) | {h for h, _ in both.values()})
    report.overall = _agreement("all queries", list(both.values()), values, threshold)
    # What scoring reads of the version, shared with the process's evaluations (cached).
    human_qrels, slices = scoring_inputs.get_or_build(version)
    for name, query_ids in slices.query.items():
        pairs = [grades for (query_id, _), grades in both.items() if query_id in query_ids]
        report.slices.append(_agreement(slice_label(name), pairs, values, threshold, MIN_SLICE_PAIRS))
    # A page slice holds the pairs whose page is in it (the version's snapshot of the
    # page's metadata, and its age at publish time), over every query.
    for name, page_keys in slices.page.items():
        in_slice = set(page_keys.tolist())
        pairs = [grades for (_, page_pk), grades in both.items() if page_pk in in_slice]
        report.slices.append(_agreement(slice_label(name), pairs, values, threshold, MIN_SLICE_PAIRS))
    report.worst = _worst(golden_set, both, threshold)
    query_ids = version_query_ids(version)
    in_version = set(query_ids)
    fill = [(q, p, g) for (q, p), g in model.items() if (q, p) not in human and q in in_version]
    report.filled_pairs = len(fill)
    report.runs = _rankings(golden_set, version, query_ids, human_rows, human_qrels, fill, report.metric)
    report.recalls = sample_recalls(golden_set, source)
    if len(report.runs) >= 2:
        report.tau = _finite(kendall_tau_b([r.human or 0.0 for r in report.runs], [r.filled or 0.0 for r in report.runs]))
    return report


RECENT_JUDGE_JOBS = 10


FAILURES_SHOWN = 3


def recent_judge_jobs(golden_set: GoldenSet, limit: int = RECENT_JUDGE_JOBS) -> list[JudgeJob]:
    """The set's latest judge jobs, newest first, each with `money` (at the manager's prices,
    None without them), `short_hash` and `first_failures`: its first FAILURES_SHOWN failed
    pairs with the raw answers, to see what the model answered. One query, and one more
    when a job has failures."""
    jobs = list(JudgeJob.objects.filter(golden_set=golden_set).select_related("created_by")[:limit])
    failed = [job.pk for job in jobs if job.pairs_failed]
    shown: dict[int, list[JudgeFailure]] = {}
    if failed:
        rows = (
            JudgeFailure.objects.filter(job_id__in=failed)
            .annotate(n=Window(RowNumber(), partition_by=[F("job_id")], order_by=F("id").asc()))
            .filter(n__lte=FAILURES_SHOWN)
            .select_related("query", "page")
            .order_by("job_id", "id")
        )
        for row in rows:
            shown.setdefault(row.job_id, []).append(row)
    for job in jobs:
        job.money = cost(job.prompt_tokens, job.completion_tokens, job.price_in, job.price_out)
        job.short_hash = job.prompt_hash[:12]
        # 1.5, not 1.5000 as stored
        job.price_in_shown, job.price_out_shown = (
            format((price or Decimal(0)).normalize(), "f") for price in (job.price_in, job.price_out)
        )
        job.first_failures = shown.get(job.pk, [])
    return jobs
