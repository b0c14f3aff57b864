"""The targets of a retrieval funnel and the diagnosis they give: which stage to fix
first. Pure: recalls (fractions) and a rerank loss (points) in, advice out; no database."""

from dataclasses import dataclass

# The funnel's decision table (SEMANTICS.md, "The funnel's targets").
FIRST_STAGE_TARGET = 0.90  # recall@k_first to reach before investing in reranking or prompts
FIRST_STAGE_FLOOR = 0.85  # under this, fix the first stage
FINAL_TARGET = 0.80  # recall@k_final, what the prompt sees
# Recall@k_first minus recall@k_final over this many points: the reranker drops what the
# first stage found (a golden set may set its own limit, EvaluationSettings.alert_rerank_loss_points).
RERANK_LOSS_LIMIT_POINTS = 10.0


@dataclass(frozen=True)
class Diagnosis:
    """Which row of the seed's decision table a funnel falls in, and what to do about it."""

    kind: str  # "first_stage", "reranker" or "downstream"
    headline: str
    advice: str
    notes: tuple[str, ...] = ()


def funnel_diagnosis(
    recall_first: float,
    recall_final: float,
    *,
    k_first: int,
    k_final: int,
    loss_limit_points: float = RERANK_LOSS_LIMIT_POINTS,
) -> Diagnosis:
    """The decision table: recall@k_first under 0.85 -> fix the first stage; recall@k_first
    high but recall@k_final under 0.80, or a rerank loss over `loss_limit_points` -> the
    reranker (depth or model); both high -> context assembly or generation (oracle test).

    Recalls are fractions; the loss is recall_first - recall_final in points.
    """
    # Rounded so that 0.91 - 0.81 is 10 points, not 10.000000000000009, and not "over 10".
    loss = round((recall_first - recall_final) * 100, 9)
    first, final = f"recall@{k_first}", f"recall@{k_final}"
    notes = []
    if recall_first < FIRST_STAGE_FLOOR:
        if loss > loss_limit_points:
            notes.append(
                f"The rerank loss ({loss:.1f} points) is over {loss_limit_points:g} points as well, but the reranker "
                f"can only keep what the first stage hands it: fix the first stage first."
            )
        return Diagnosis(
            kind="first_stage",
            headline="Fix the first stage",
            advice=(
                f"{first} is under {FIRST_STAGE_FLOOR:.2f}: relevant pages never reach the reranker. Try hybrid search, "
                f"query rewriting, chunking or metadata filters."
            ),
            notes=tuple(notes),
        )
    if recall_first < FIRST_STAGE_TARGET:
        notes.append(f"{first} is under the {FIRST_STAGE_TARGET:.2f} target for a first stage.")
    if recall_final < FINAL_TARGET or loss > loss_limit_points:
        reasons = []
        if recall_final < FINAL_TARGET:
            reasons.append(f"{final} is under {FINAL_TARGET:.2f}")
        if loss > loss_limit_points:
            reasons.append(f"the rerank loss is {loss:.1f} points, over {loss_limit_points:g}")
        return Diagnosis(
            kind="reranker",
            headline="Reranker depth or model",
            advice=(
                f"The first stage finds the pages ({first} is {recall_first:.3f}) but {' and '.join(reasons)}: "
                f"they are cut before the prompt. Try a better reranker, or a larger final k within the token "
                f"budget (see the cost below)."
            ),
            notes=tuple(notes),
        )
    return Diagnosis(
        kind="downstream",
        headline="Retrieval is not the bottleneck",
        advice=(
            f"{first} and {final} are both high. If answers are still wrong, look at context assembly or "
            f"generation: run an oracle experiment (hand the model the labelled relevant pages) to tell them apart."
        ),
        notes=tuple(notes),
    )
