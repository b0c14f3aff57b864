"""Two chunkings side by side (the compare page's "Chunkings" box): what each run of a
chunking puts in the prompt, at document level and as evidence, and at what cost in
tokens, read in one line ("passages-400 finds 6.0 points more of the evidence at 20% more
tokens"). SEMANTICS.md, "Documents, chunkings and levels": evidence recall@k and prompt
tokens@k are chunk-level figures; a run of `documents` in a corpus with chunkings has them
too, each document one chunk (evaluation.chunk_scoring.documents_level); one scored before
its corpus had a chunking has none until it is scored again, and its document-level recall
stands in for its evidence recall. No ORM here but the one read of the figures
(`evaluation_level_figures`).
"""

from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.level_figures import evaluations_levels
from evaluation.models import Evaluation, Run
from goldenset.models import Chunking

DOCUMENT_LEVEL = "document"
CHUNK_LEVEL = "chunk"
# Below this, a difference in tokens reads as "the same tokens" (half a percent).
SAME_TOKENS = 0.005


@dataclass(frozen=True)
class LevelRow:
    """One evaluation's figures at one level, on one version, at k = the version's k_final.

    `level`: "document" or "chunk"; `chunking`: the run's chunking name ("documents" for a
    run of documents); `recall`: recall@k at that level, `evidence_recall`: evidence
    recall@k (chunk level only), fractions in [0, 1]; `prompt_tokens`: prompt tokens@k, the
    characters of the top k chunks / 4, averaged over the answered queries. None where a
    figure was not scored.
    """

    level: str
    chunking: str
    recall: float | None = None
    evidence_recall: float | None = None
    prompt_tokens: float | None = None


@dataclass(frozen=True)
class ChunkingSide:
    """One run of the comparison: its chunking, its document-level recall@k_final, its
    evidence recall@k_final and prompt tokens@k_final (None: not scored)."""

    run_name: str
    chunking: str
    document_recall: float | None
    evidence_recall: float | None
    prompt_tokens: float | None
    run_id: int | None = None


@dataclass(frozen=True)
class ChunkingComparison:
    """Run b's chunking against run a's at k_final, on one version."""

    version_number: int
    k_final: int
    a: ChunkingSide
    b: ChunkingSide

    @property
    def document_points(self) -> float | None:
        """b - a in document-level recall@k_final, in points."""
        return _points(self.a.document_recall, self.b.document_recall)

    @property
    def evidence_points(self) -> float | None:
        """b - a in evidence recall@k_final, in points."""
        return _points(self.a.evidence_recall, self.b.evidence_recall)

    @property
    def tokens_change(self) -> float | None:
        """b's prompt tokens@k_final over a's, less 1 (0.2: 20% more); None without both, or a's 0."""
        if self.a.prompt_tokens is None or self.b.prompt_tokens is None or not self.a.prompt_tokens:
            return None
        return self.b.prompt_tokens / self.a.prompt_tokens - 1

    @property
    def tokens_change_text(self) -> str:
        """tokens_change as people read it: "+20%", "-5%", "0%"; "" without it."""
        change = self.tokens_change
        if change is None:
            return ""
        text = f"{change * 100:+.0f}%"
        return "0%" if text in ("+0%", "-0%") else text

    @property
    def sides(self) -> list[tuple[str, ChunkingSide]]:
        return [("a", self.a), ("b", self.b)]

    @property
    def reading(self) -> str:
        """The comparison in one line, b's chunking named first: by evidence recall when both
        runs have it, else at document level; with the tokens when both have them."""
        if self.evidence_points is not None:
            points, what, level = self.evidence_points, "of the evidence", ""
        elif self.document_points is not None:
            points, what, level = self.document_points, "of the relevant documents", " (document level)"
        else:
            return ""
        a, b, k = self.a.chunking, self.b.chunking, self.k_final
        if round(points, 1) == 0:
            found = f"{b} finds as much {what} as {a} in the top {k}{level}"
        else:
            found = f"{b} finds {abs(points):.1f} points {'more' if points > 0 else 'less'} {what} than {a} in the top {k}{level}"
        change = self.tokens_change
        if change is None:
            return f"{found}."
        if abs(change) < SAME_TOKENS:
            return f"{found}, at the same prompt tokens."
        return f"{found}, at {abs(change) * 100:.0f}% {'more' if change > 0 else 'fewer'} prompt tokens."


def _points(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round((b - a) * 100, 9)


def chunking_side(run: Run, figures: Sequence[LevelRow], chunking: str) -> ChunkingSide:
    """A run's side of the comparison from its figures (`evaluation_level_figures`): the
    document level's recall, the chunk level's evidence recall and tokens; a run of
    documents, whose chunk level is its document level, takes its document-level figures."""
    by_level = {figure.level: figure for figure in figures}
    document = by_level.get(DOCUMENT_LEVEL)
    chunk = by_level.get(CHUNK_LEVEL)
    if chunk is None and chunking == Chunking.DOCUMENTS:
        chunk = document
    recall = document.recall if document is not None else None
    evidence = chunk.evidence_recall if chunk is not None else None
    if evidence is None and chunking == Chunking.DOCUMENTS:
        evidence = recall
    return ChunkingSide(
        run_id=getattr(run, "pk", None),
        run_name=run.name,
        chunking=chunking,
        document_recall=recall,
        evidence_recall=evidence,
        prompt_tokens=chunk.prompt_tokens if chunk is not None else None,
    )


def chunking_comparison(*, version_number: int, k_final: int, a: ChunkingSide, b: ChunkingSide) -> ChunkingComparison:
    return ChunkingComparison(version_number=version_number, k_final=k_final, a=a, b=b)


def run_chunking_name(run: Run) -> str:
    """The run's chunking's name; "documents" for a run of documents (Run.chunking null)."""
    return run.chunking.name if run.chunking_id is not None else Chunking.DOCUMENTS


def evaluation_level_figures(evaluations: Sequence[Evaluation], k_final: int) -> dict[int, list[LevelRow]]:
    """Evaluation id -> its LevelRows at `k_final`, overall (slice ""), from the stored levels
    (evaluation.level_figures.evaluations_levels): per level, recall@k_final and
    evidence_recall@k_final from its scores, and the chunk level's prompt tokens."""
    recall, evidence = f"recall@{k_final}", f"evidence_recall@{k_final}"
    return {
        pk: [
            LevelRow(
                level=figures.name,
                chunking=figures.chunking,
                recall=figures.scores.get(recall),
                evidence_recall=figures.scores.get(evidence),
                prompt_tokens=figures.prompt_tokens,
            )
            for figures in levels
        ]
        for pk, levels in evaluations_levels(evaluations).items()
    }


def prompt_stage_chunkings(runs: Sequence[tuple[Run, Evaluation]], *, version_number: int, k_final: int) -> list[ChunkingComparison]:
    """The results page's funnel across chunkings: of the scored (run, evaluation) pairs of
    a version, each chunking's latest reranked run (else its latest run), what reaches the
    prompt, compared with the baseline's: the chunking `documents` when it has a run, else
    the first chunking by name. [] with runs of one chunking only. One statement."""
    latest: dict[str, tuple[Run, Evaluation]] = {}
    for run, evaluation in runs:
        name = run_chunking_name(run)
        held = latest.get(name)
        key = (run.stage == Run.Stage.RERANKED, run.created_at, run.pk)
        if held is None or key > (held[0].stage == Run.Stage.RERANKED, held[0].created_at, held[0].pk):
            latest[name] = (run, evaluation)
    if len(latest) < 2:
        return []
    names = sorted(latest, key=lambda name: (name != Chunking.DOCUMENTS, name))
    figures = evaluation_level_figures([evaluation for _, evaluation in latest.values()], k_final)
    sides = {name: chunking_side(latest[name][0], figures[latest[name][1].pk], name) for name in names}
    baseline = sides[names[0]]
    return [chunking_comparison(version_number=version_number, k_final=k_final, a=baseline, b=sides[name]) for name in names[1:]]
