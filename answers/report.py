"""The oracle experiment's report: overall and per query slice of the version, for each
context, the answers in, exact match and token F1 (means over the queries with a reference
answer) and the judge's accuracy (the share graded "correct") when graded, each with its
95% interval; the retrieval loss (oracle - retrieved accuracy) and generation loss (1 -
oracle accuracy), all over the queries with a reference answer (the judge grades only
those: a grade needs a reference); the seed's three-row table filled with the run's recall@k_first and
recall@k_final on the version, and its row that applies; the queries the oracle context
answered right and the retrieved one wrong, with the relevant pages missing from the
retrieved context.

Intervals (95%): exact match and judge accuracy are shares, with Wilson's interval
(lib.ppi); token F1 is a mean of values in [0, 1], with the normal interval of a mean
(mean +- 1.96 sd / sqrt(n), sd the sample standard deviation, clipped to [0, 1]). The
retrieval loss is paired over the queries both contexts answered: the per-query
differences d = oracle - retrieved (each -1, 0 or 1), with the normal interval of their
mean (mean +- 1.96 s_d / sqrt(n)), clipped to [-1, 1]; the generation loss is 1 - oracle
accuracy, its interval 1 minus the oracle's Wilson interval. The accuracy the losses use is
the judge's when every answer is graded, else exact match (`accuracy`).

Only whole figures: a context's figures are shown when every sampled query has its answer
of that context (none missing, none failed); otherwise the figure is None and the report
says "n of N answered". Judge figures wait likewise for every answer's grade, and a loss
for both its contexts. `compute_report` is pure (ReportInputs in, ExperimentReport out);
`experiment_report` reads the experiment's rows into it.
"""

import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field

from answers.contexts import query_ids_of
from answers.experiments import experiment_contexts, experiment_queries
from answers.models import AnswerGrade, GeneratedAnswer, OracleExperiment
from evaluation.models import Evaluation, Score
from evaluation.reports.targets import FINAL_TARGET, FIRST_STAGE_FLOOR, funnel_diagnosis
from evaluation.selectors import version_slices
from goldenset.chunkings import chunk_spans
from goldenset.models import VersionLabel
from lib.ppi import Z_95, wilson_interval

ORACLE, RETRIEVED, CLOSED_BOOK = (GeneratedAnswer.Context.ORACLE, GeneratedAnswer.Context.RETRIEVED, GeneratedAnswer.Context.CLOSED_BOOK)
# The seed's decision table (../shared/seeds/recall-at-k.txt), in its words, by the kind
# evaluation.reports.targets.funnel_diagnosis gives.
DECISION_ROWS = (
    (
        "first_stage",
        f"recall@k_first < {FIRST_STAGE_FLOOR:.2f}",
        "Fix first stage: hybrid search, query rewriting, chunking, metadata filters",
    ),
    ("reranker", f"recall@k_first high, recall@k_final < {FINAL_TARGET:.2f}", "Better reranker or larger k_final within the token budget"),
    ("downstream", "both high but answers wrong", "Context assembly or generation: the oracle experiment measures which"),
)


@dataclass(frozen=True)
class AnswerRow:
    """One answer as the report reads it: `ok` False for a failed answer; `em`/`f1` None
    without a reference answer; `grade` the judge's ("correct", "partly", "wrong"), None
    while ungraded or unreadable."""

    query_id: str
    context: str
    ok: bool
    em: float | None = None
    f1: float | None = None
    grade: str | None = None


@dataclass
class ReportInputs:
    contexts: list[str]
    queries: list[str]  # the sampled query ids
    answers: list[AnswerRow]
    judged: bool = False  # the experiment has an answer judge
    slices: dict[str, set[str]] = field(default_factory=dict)
    k_first: int = 100
    k_final: int = 8
    recall_first: float | None = None
    recall_final: float | None = None
    missing_pages: dict[str, list[str]] = field(default_factory=dict)  # query id -> relevant doc ids not in the retrieved context


@dataclass(frozen=True)
class Estimate:
    """A figure with its 95% interval (fractions); `n` the values it rests on."""

    value: float
    low: float
    high: float
    n: int


@dataclass
class ContextFigures:
    context: str
    queries: int  # N: the sampled queries (of the slice)
    answered: int  # answers in without an error
    failed: int
    with_reference: int  # answered queries that have a reference answer
    complete: bool
    exact_match: Estimate | None = None
    token_f1: Estimate | None = None
    graded: int = 0
    judge_accuracy: Estimate | None = None

    @property
    def progress(self) -> str:
        return f"{self.answered} of {self.queries} answered"


@dataclass
class Loss:
    by: str  # "exact_match" or "judge"
    retrieval: Estimate | None  # oracle - retrieved, paired
    generation: Estimate | None  # 1 - oracle


@dataclass
class SliceReport:
    name: str  # "" for all queries, else "query:FIELD=VALUE"
    contexts: dict[str, ContextFigures]
    losses: list[Loss]


@dataclass
class Decision:
    k_first: int
    k_final: int
    recall_first: float | None
    recall_final: float | None
    row: str | None  # the kind of the row that applies, None without recalls
    rows: tuple = DECISION_ROWS


@dataclass
class Miss:
    query_id: str
    missing_pages: list[str]


@dataclass
class ExperimentReport:
    overall: SliceReport
    slices: list[SliceReport]
    accuracy: str  # what the losses use: "judge" when every answer is graded, else "exact_match"
    decision: Decision
    retrieval_misses: list[Miss]  # oracle right, retrieved wrong (by `accuracy`)
    complete: bool

    def loss(self, by: str | None = None) -> Loss | None:
        by = by or self.accuracy
        return next((loss for loss in self.overall.losses if loss.by == by), None)

    def to_dict(self) -> dict:
        return asdict(self)


def _share(values: list[float]) -> Estimate | None:
    if not values:
        return None
    low, high = wilson_interval(int(round(sum(values))), len(values))
    return Estimate(sum(values) / len(values), low, high, len(values))


def _mean(values: list[float], low_bound: float = 0.0, high_bound: float = 1.0) -> Estimate | None:
    if not values:
        return None
    n = len(values)
    mean = sum(values) / n
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    half = Z_95 * spread / math.sqrt(n)
    return Estimate(mean, max(mean - half, low_bound), min(mean + half, high_bound), n)


def _figures(context: str, queries: list[str], rows: dict[str, AnswerRow], judged: bool) -> ContextFigures:
    answered = [rows[q] for q in queries if q in rows and rows[q].ok]
    failed = sum(1 for q in queries if q in rows and not rows[q].ok)
    referenced = [r for r in answered if r.em is not None]
    figures = ContextFigures(context, len(queries), len(answered), failed, len(referenced), complete=len(answered) == len(queries))
    if figures.complete:
        figures.exact_match = _share([r.em for r in referenced])
        figures.token_f1 = _mean([r.f1 for r in referenced])
    if judged:
        grades = [r.grade for r in referenced if r.grade]
        figures.graded = len(grades)
        if figures.complete and len(grades) == len(referenced):
            figures.judge_accuracy = _share([1.0 if g == AnswerGrade.Grade.CORRECT else 0.0 for g in grades])
    return figures


def _right(row: AnswerRow | None, by: str) -> float | None:
    if row is None or not row.ok or row.em is None:
        return None  # no answer, or no reference answer to be right against
    if by == "judge":
        return None if not row.grade else float(row.grade == AnswerGrade.Grade.CORRECT)
    return row.em


def _loss(by: str, queries: list[str], by_context: dict[str, dict[str, AnswerRow]], figures: dict[str, ContextFigures]) -> Loss:
    oracle, retrieved = figures.get(ORACLE), figures.get(RETRIEVED)
    whole = {ctx: (f.judge_accuracy if by == "judge" else f.exact_match) for ctx, f in figures.items()}
    generation = retrieval = None
    if whole.get(ORACLE) is not None:
        o = whole[ORACLE]
        generation = Estimate(1 - o.value, 1 - o.high, 1 - o.low, o.n)
    if oracle and retrieved and whole.get(ORACLE) is not None and whole.get(RETRIEVED) is not None:
        pairs = [(_right(by_context[ORACLE].get(q), by), _right(by_context[RETRIEVED].get(q), by)) for q in queries]
        differences = [a - b for a, b in pairs if a is not None and b is not None]
        retrieval = _mean(differences, -1.0, 1.0)
    return Loss(by, retrieval, generation)


def _slice(name: str, queries: list[str], inputs: ReportInputs, by_context: dict[str, dict[str, AnswerRow]]) -> SliceReport:
    figures = {c: _figures(c, queries, by_context[c], inputs.judged) for c in inputs.contexts}
    losses = [_loss("exact_match", queries, by_context, figures)]
    if inputs.judged:
        losses.append(_loss("judge", queries, by_context, figures))
    return SliceReport(name, figures, losses)


def compute_report(inputs: ReportInputs) -> ExperimentReport:
    """The report of `inputs` (pure)."""
    by_context: dict[str, dict[str, AnswerRow]] = defaultdict(dict)
    for row in inputs.answers:
        by_context[row.context][row.query_id] = row
    overall = _slice("", inputs.queries, inputs, by_context)
    sampled = set(inputs.queries)
    slices = [
        _slice(name, [q for q in inputs.queries if q in members], inputs, by_context)
        for name, members in sorted(inputs.slices.items())
        if sampled & members
    ]
    judge_whole = inputs.judged and all(f.judge_accuracy is not None for f in overall.contexts.values())
    accuracy = "judge" if judge_whole else "exact_match"
    row = None
    if inputs.recall_first is not None and inputs.recall_final is not None:
        row = funnel_diagnosis(inputs.recall_first, inputs.recall_final, k_first=inputs.k_first, k_final=inputs.k_final).kind
    decision = Decision(inputs.k_first, inputs.k_final, inputs.recall_first, inputs.recall_final, row)
    misses = []
    if all(f.complete for f in overall.contexts.values()):
        for q in inputs.queries:
            if _right(by_context[ORACLE].get(q), accuracy) == 1.0 and _right(by_context[RETRIEVED].get(q), accuracy) == 0.0:
                misses.append(Miss(q, inputs.missing_pages.get(q, [])))
    complete = all(f.complete for f in overall.contexts.values()) and (not inputs.judged or judge_whole)
    return ExperimentReport(overall, slices, accuracy, decision, misses, complete)


# --- the experiment's rows read into the report -------------------------------------------


def _recalls(experiment: OracleExperiment) -> tuple[float | None, float | None]:
    evaluation = Evaluation.objects.filter(run=experiment.run_id, version=experiment.version_id, status=Evaluation.Status.DONE).first()
    if evaluation is None:
        return None, None
    version = experiment.version
    names = {f"recall@{version.k_first}": "first", f"recall@{experiment.k_final}": "final"}
    found = dict(Score.objects.filter(evaluation=evaluation, slice="", metric__in=list(names)).values_list("metric", "value"))
    return found.get(f"recall@{version.k_first}"), found.get(f"recall@{experiment.k_final}")


def _missing_pages(experiment: OracleExperiment, query_pks: dict[int, str], retrieved: dict[int, list[str]]) -> dict[str, list[str]]:
    """For the given queries: the relevant doc ids (best grade first) absent from the documents
    of the retrieved context."""
    if not retrieved:
        return {}
    if experiment.run.chunking_id is not None:
        spans = chunk_spans(experiment.run.chunking, {i for ids in retrieved.values() for i in ids})
        retrieved = {q: [spans[i][0] for i in ids if i in spans] for q, ids in retrieved.items()}
    relevant = defaultdict(list)
    rows = VersionLabel.objects.filter(
        version=experiment.version_id, query_id__in=list(retrieved), grade__gte=experiment.version.relevance_threshold
    ).values_list("query_id", "grade", "page__doc_id")
    for q, _grade, doc_id in sorted(rows, key=lambda r: (r[0], -r[1], r[2])):
        relevant[q].append(doc_id)
    return {query_pks[q]: [d for d in relevant[q] if d not in set(ids)] for q, ids in retrieved.items()}


def _model_grades(experiment: OracleExperiment) -> dict[int, str]:
    """{answer pk: the experiment judge's grade under its current rubric}."""
    if experiment.judge_id is None:
        return {}
    return dict(
        AnswerGrade.objects.filter(
            answer__experiment=experiment,
            source=AnswerGrade.Source.MODEL,
            judge=experiment.judge_id,
            rubric_hash=experiment.judge.rubric_hash,
        )
        .exclude(grade="")
        .values_list("answer_id", "grade")
    )


def sweep_figures(experiment: OracleExperiment) -> dict[int, ContextFigures]:
    """{k: the retrieved context's figures at k} for k_final (the experiment's own answers)
    and each k of a sweep job, on all its queries; whole figures only, as in the report."""
    query_pks = experiment_queries(experiment)
    names = query_ids_of(query_pks)
    grades = _model_grades(experiment)
    by_k: dict[int, dict[str, AnswerRow]] = defaultdict(dict)
    rows = experiment.answers.filter(context=RETRIEVED).values_list("pk", "query_id", "sweep_k", "error", "exact_match", "token_f1")
    for pk, q, k, error, em, f1 in rows:
        name = names.get(q, str(q))
        by_k[k or experiment.k_final][name] = AnswerRow(name, RETRIEVED, not error, em, f1, grades.get(pk))
    queries = [names[q] for q in query_pks]
    depths = sorted({experiment.k_final, *experiment.k_sweep})
    return {k: _figures(RETRIEVED, queries, by_k.get(k, {}), experiment.judge_id is not None) for k in depths}


def experiment_report(experiment: OracleExperiment) -> ExperimentReport:
    """The report of `experiment` as its rows stand (a running or stopped one: its figures
    wait, n of N answered)."""
    query_pks = experiment_queries(experiment)
    names = query_ids_of(query_pks)
    grades = _model_grades(experiment)
    rows, retrieved_ids = [], {}
    for pk, q, context, error, em, f1, ids in experiment.answers.filter(sweep_k=0).values_list(
        "pk", "query_id", "context", "error", "exact_match", "token_f1", "context_ids"
    ):
        rows.append(AnswerRow(names.get(q, str(q)), context, not error, em, f1, grades.get(pk)))
        if context == RETRIEVED and not error:
            retrieved_ids[q] = ids
    recall_first, recall_final = _recalls(experiment)
    inputs = ReportInputs(
        contexts=experiment_contexts(experiment),
        queries=[names[q] for q in query_pks],
        answers=rows,
        judged=experiment.judge_id is not None,
        slices=version_slices(experiment.version).query,
        k_first=experiment.version.k_first,
        k_final=experiment.k_final,
        recall_first=recall_first,
        recall_final=recall_final,
    )
    report = compute_report(inputs)
    if report.retrieval_misses:
        by_name = {name: pk for pk, name in names.items()}
        wanted = {by_name[m.query_id]: retrieved_ids.get(by_name[m.query_id], []) for m in report.retrieval_misses}
        missing = _missing_pages(experiment, names, wanted)
        report.retrieval_misses = [Miss(m.query_id, missing.get(m.query_id, [])) for m in report.retrieval_misses]
    return report


def _estimate_json(estimate: Estimate | None) -> dict | None:
    return None if estimate is None else {"value": estimate.value, "low": estimate.low, "high": estimate.high, "n": estimate.n}


def _context_json(figures: ContextFigures) -> dict:
    return {
        "exact_match": None if figures.exact_match is None else figures.exact_match.value,
        "token_f1": None if figures.token_f1 is None else figures.token_f1.value,
        "judge_accuracy": None if figures.judge_accuracy is None else figures.judge_accuracy.value,
        "queries": figures.answered,
        "queries_sampled": figures.queries,
        "with_reference": figures.with_reference,
        "failed": figures.failed,
        "graded": figures.graded,
        "complete": figures.complete,
        "progress": figures.progress,
        "intervals": {
            "exact_match": _estimate_json(figures.exact_match),
            "token_f1": _estimate_json(figures.token_f1),
            "judge_accuracy": _estimate_json(figures.judge_accuracy),
        },
    }


def _slice_json(part: SliceReport) -> dict:
    return {
        "slice": part.name,
        **{context: _context_json(figures) for context, figures in part.contexts.items()},
        "losses": {
            loss.by: {"retrieval": _estimate_json(loss.retrieval), "generation": _estimate_json(loss.generation)} for loss in part.losses
        },
    }


def report_json(experiment: OracleExperiment, report: ExperimentReport) -> dict:
    """The report as the command's --format json and the API give it: "oracle", "retrieved"
    (and "closed_book") each with "exact_match" and "token_f1" (means over the queries with
    a reference answer, fractions, null until every answer of the context is in) and
    "queries" (answered); the losses by the accuracy used, the seed's table and its row,
    the slices, the queries lost to retrieval, and the experiment's progress and counts."""
    loss = report.loss()
    decision = report.decision
    return {
        "experiment": {
            "id": experiment.pk,
            "golden_set": experiment.golden_set.slug,
            "version": experiment.version.number,
            "run": experiment.run.name,
            "generator": experiment.generator.name,
            "judge": experiment.judge.name if experiment.judge_id else None,
            "status": experiment.status,
            "k_final": experiment.k_final,
            "context_token_budget": experiment.context_token_budget,
            "sample_size": experiment.sample_size,
            "seed": experiment.seed,
            "queries": experiment.queries_total,
            "answers_total": experiment.answers_total,
            "answers_done": experiment.answers_done,
            "answers_failed": experiment.answers_failed,
            "grades_done": experiment.grades_done,
            "requests": experiment.requests,
            "prompt_tokens": experiment.prompt_tokens,
            "completion_tokens": experiment.completion_tokens,
            "cost": str(experiment.cost),
            "note": experiment.progress_note,
            "error": experiment.error,
        },
        **{context: _context_json(figures) for context, figures in report.overall.contexts.items()},
        "accuracy": report.accuracy,
        "retrieval_loss": None if loss is None or loss.retrieval is None else loss.retrieval.value,
        "generation_loss": None if loss is None or loss.generation is None else loss.generation.value,
        "losses": _slice_json(report.overall)["losses"],
        "decision": {
            "recall_first": decision.recall_first,
            "recall_final": decision.recall_final,
            "k_first": decision.k_first,
            "k_final": decision.k_final,
            "row": decision.row,
            "rows": [{"kind": kind, "when": when, "then": then, "applies": kind == decision.row} for kind, when, then in decision.rows],
        },
        "slices": [_slice_json(part) for part in report.slices],
        "retrieval_misses": [{"query_id": miss.query_id, "missing_pages": miss.missing_pages} for miss in report.retrieval_misses],
        "complete": report.complete,
    }


def report_lines(experiment: OracleExperiment, report: ExperimentReport) -> list[str]:
    """The report as a table of text lines (the command's default output)."""

    def cell(estimate: Estimate | None, progress: str) -> str:
        return f"{estimate.value:.3f} [{estimate.low:.3f}, {estimate.high:.3f}]" if estimate else f"({progress})"

    lines = [
        f"oracle experiment {experiment.pk}: {experiment.golden_set.slug} v{experiment.version.number}, run {experiment.run.name}, "
        f"generator {experiment.generator.name}, k_final {experiment.k_final}, status {experiment.status}",
        f"{'context':<12} {'answered':>12} {'exact match':>24} {'token F1':>24} {'judge':>24}",
    ]
    for context, f in report.overall.contexts.items():
        judge = cell(f.judge_accuracy, f"{f.graded} graded") if experiment.judge_id else "-"
        answered = f"{f.answered}/{f.queries}"
        lines.append(f"{context:<12} {answered:>12} {cell(f.exact_match, f.progress):>24} {cell(f.token_f1, f.progress):>24} {judge:>24}")
    for loss in report.overall.losses:
        lines.append(
            f"by {loss.by}: retrieval loss {cell(loss.retrieval, 'waits for both contexts')}, "
            f"generation loss {cell(loss.generation, 'waits for the oracle context')}"
        )
    decision = report.decision
    first = "n/a" if decision.recall_first is None else f"{decision.recall_first:.3f}"
    final = "n/a" if decision.recall_final is None else f"{decision.recall_final:.3f}"
    lines.append(f"recall@{decision.k_first} = {first}, recall@{decision.k_final} = {final} (the run's scores on this version)")
    for kind, when, then in decision.rows:
        lines.append(f"{'=>' if kind == decision.row else '  '} {when}: {then}")
    if report.retrieval_misses:
        lines.append(f"right with the oracle context, wrong with the retrieved ({report.accuracy}):")
        lines.extend(
            f"  {m.query_id}: missing {', '.join(m.missing_pages) or 'none of its relevant pages'}" for m in report.retrieval_misses
        )
    lines.append(
        f"requests {experiment.requests}, prompt tokens {experiment.prompt_tokens}, completion tokens {experiment.completion_tokens}, cost {experiment.cost}"
    )
    if experiment.progress_note:
        lines.append(experiment.progress_note)
    return lines
