"""The model labels a model-first pool orders by (labeling.pools.strategies.ModelFirst):
which source (model and prompt) a new pool may follow, and each pair's score from it.

Model labels are a source of their own (goldenset.model_labels); a pool that orders by
them says so (its strategy's description, its stored options), and reads them only to
order the queue: a judgment is still a person's.
"""

import numpy as np

from goldenset.models import GoldenSet, ModelJudgment
from labeling.models import Pool
from labeling.pools import strategies
from lib.errors import GoldsetError


def pool_model_source_check(
    *,
    golden_set: GoldenSet,
    strategy: str,
    model: object = None,
    prompt_hash: object = None,
) -> tuple[str, str] | None:
    """The (model, prompt hash) whose labels a model-first pool orders by, checked
    (GoldsetError naming the field); None for a strategy that uses no model labels, which
    refuses a model given. The prompt hash may be left out when the model labelled the
    set with one prompt only."""
    if not strategies.strategy_class(strategy).uses_model_labels:
        if model or prompt_hash:
            raise GoldsetError(f"strategy {strategy!r} uses no model labels: choose model_first to order by a model", field="model")
        return None
    if not model or not isinstance(model, str):
        raise GoldsetError(
            f"strategy {strategy!r} orders by model labels: choose the model (and prompt) whose labels it follows", field="model"
        )
    labels = ModelJudgment.objects.filter(golden_set=golden_set, model=model)
    if prompt_hash:
        labels = labels.filter(prompt_hash=prompt_hash)
    prompts = list(labels.order_by().values_list("prompt_hash", flat=True).distinct()[:2])
    if not prompts:
        which = f"model {model!r}" + (f" with prompt {str(prompt_hash)[:12]}" if prompt_hash else "")
        raise GoldsetError(f"golden set {golden_set.slug!r} has no labels from {which}", field="model")
    if len(prompts) > 1:
        raise GoldsetError(
            f"model {model!r} labelled {golden_set.slug!r} with several prompts: choose one by its hash", field="prompt_hash"
        )
    return model, prompts[0]


def pool_model_scores(pool: Pool, query_pks: np.ndarray, page_pks: np.ndarray) -> np.ndarray:
    """For a pool ordered by model labels (model first), the model's score of each pair
    (query_pks[i], page_pks[i]): float64, higher first, NaN where the pool's model and
    prompt (its strategy_state) gave the pair no label.

    The value only orders: it is the place of the label's (grade, own score) among the
    source's labels of these queries, so a higher grade always comes first and the
    model's own score (where it gave one; none counts lowest) orders pairs of one grade.
    One query, served by the index model_judgment_source.
    """
    query_pks, page_pks = np.asarray(query_pks, dtype=np.int64), np.asarray(page_pks, dtype=np.int64)
    scores = np.full(len(query_pks), np.nan)
    if not len(query_pks):
        return scores
    rows = list(
        ModelJudgment.objects.filter(
            golden_set_id=pool.golden_set_id,
            model=pool.strategy_state.get("model", ""),
            prompt_hash=pool.strategy_state.get("prompt_hash", ""),
            query_id__in=np.unique(query_pks).tolist(),
        ).values_list("query_id", "page_id", "grade", "score")
    )
    if not rows:
        return scores
    label_query = np.array([row[0] for row in rows], dtype=np.int64)
    label_page = np.array([row[1] for row in rows], dtype=np.int64)
    grade = np.array([row[2] for row in rows], dtype=np.float64)
    own = np.array([-np.inf if row[3] is None else row[3] for row in rows], dtype=np.float64)
    order = np.lexsort((own, grade))
    step = np.r_[False, (grade[order][1:] != grade[order][:-1]) | (own[order][1:] != own[order][:-1])]
    place = np.empty(len(rows), dtype=np.float64)
    place[order] = np.cumsum(step)
    span = int(max(label_page.max(), page_pks.max())) + 1
    label_keys, pair_keys = label_query * span + label_page, query_pks * span + page_pks
    by_key = np.argsort(label_keys)
    at = np.minimum(np.searchsorted(label_keys[by_key], pair_keys), len(rows) - 1)
    found = label_keys[by_key][at] == pair_keys
    scores[found] = place[by_key[at[found]]]
    return scores
