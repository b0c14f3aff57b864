"""Recall of the labels from a completeness sample, by people alone and prediction-powered
with a model's labels (lib.ppi holds the statistics and their derivation): the reads of the
model labels page's estimate section and of its API.

For a completeness sample (labeling.completeness) of n pairs drawn from a population of P
unjudged pairs (ranks depth_from + 1 .. depth_to of its pool's runs), with F relevant pages
found (the set's pairs labelled relevant now, on live queries, outside this sample), the
recall of the labels within the pooled runs' top depth_to is F / (F + P * theta), theta the
share of the population that is relevant:

- human only: theta from the sample's judged pairs (Wilson), as the completeness page
  estimates the relevant pages nobody judged;
- prediction-powered: theta from the model's calls on the population's pairs, corrected by
  the model's mistakes on the judged sample pairs.

The population is not stored pair by pair (only its size P is), so it is drawn up again as
the draw made it (labeling.completeness.services): the pairs the pool's runs rank in the
sampled ranks on live queries, in the corpus, with no judgment, not a task of the set and
not a pair of its pools, plus this sample's own pairs (judged since). Pairs judged or pooled
since the draw have left it, so it may hold fewer than P pairs; the model's calls are read
on those (`population_now`).

Prediction-powered inference needs the model's calls on a uniform share of the population
and on the same sample pairs as people's, or the model could be corrected on pairs unlike
the rest. So the estimate is given only when the model labelled every judged sample pair and
at least MIN_POPULATION_SHARE of the population as drawn up now; otherwise `why_not` says
what is missing (a judge job over the sample's pool below its depth, or an import, fills it).
"""

from dataclasses import dataclass

import numpy as np

from goldenset.model_labels import ModelSource
from django.db.models import Max

from goldenset.models import GoldenSet, ModelJudgment, Page, Query
from goldenset.selectors import resolved_labels
from labeling.completeness.selectors import sample_pair_labels, samples_of
from labeling.models import CompletenessSample, JudgingTask
from labeling.pools.selectors import pool_runs
from labeling.pools.union import RunSpec, classify, copy_pairs, dense_queries, member, pool_union, set_pool_pairs
from lib.ppi import RecallEstimate, human_share, ppi_share, recall_estimate
from lib.progress import no_progress

# The newest samples the page and the API estimate from. Each draws its population up
# again from its pool's runs, which costs what a sample draw's union costs (every pooled
# run read to depth_to: seconds at 10,000 queries and 20 runs), so only the newest one.
SAMPLES_ESTIMATED = 1
# The share of the population (as drawn up now) the model must have labelled.
MIN_POPULATION_SHARE = 0.9


@dataclass(frozen=True)
class SampleRecall:
    """The recall of the labels from one completeness sample: `human` from its judged pairs
    alone, `ppi` prediction-powered with the model's labels (None, with `why_not`, when the
    model's labels do not cover what it needs). Counts: `found` F, `population` P as drawn,
    `population_now` its pairs found again, `model_called` of those the model labelled,
    `judged` sample pairs with a human label, `judged_model` of those the model labelled."""

    sample: CompletenessSample
    model: str
    prompt_hash: str
    found: int
    judged: int
    relevant: int
    population_now: int
    model_called: int
    judged_model: int
    human: RecallEstimate | None
    ppi: RecallEstimate | None
    why_not: str

    @property
    def population(self) -> int:
        return self.sample.population

    @property
    def k(self) -> int:
        return self.sample.depth_to

    @property
    def short_hash(self) -> str:
        return self.prompt_hash[:12]

    @property
    def label(self) -> str:
        """How the prediction-powered figure is named wherever it is shown."""
        return f"prediction-powered ({self.model} + {self.judged} human labels)"


def sample_population(sample: CompletenessSample) -> tuple[np.ndarray, np.ndarray]:
    """(query pks, page pks) of the sample's population as drawn up now (module docstring),
    this sample's pairs included. Empty when the sample's pool was deleted."""
    if sample.pool_id is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    golden_set = sample.golden_set
    runs = pool_runs(sample.pool)
    if not runs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    specs = [RunSpec(run=pool_run.run, ordinal=pool_run.ordinal, depth=sample.depth_to) for pool_run in runs]
    union = pool_union(golden_set, specs, max(pool_run.ordinal for pool_run in runs) + 1, no_progress)
    in_range = (union.ranks > sample.depth_from).any(axis=1)
    other_tasks = JudgingTask.objects.filter(golden_set=golden_set).exclude(sample=sample)
    task_query_pks, task_page_pks = copy_pairs(
        other_tasks.values_list("query_id", "page_id"),
        f"SELECT query_id, page_id FROM {JudgingTask._meta.db_table} WHERE golden_set_id = {int(golden_set.pk)} "
        f"AND (sample_id IS NULL OR sample_id <> {int(sample.pk)})",
    )
    pool_query_pks, pool_page_pks = set_pool_pairs(golden_set)
    query_pks = np.concatenate([task_query_pks, pool_query_pks])
    page_pks = np.concatenate([task_page_pks, pool_page_pks])
    task_keys = union.pair_keys(dense_queries(union, query_pks), page_pks)
    masks = classify(golden_set, union, task_keys[task_keys >= 0])
    own = np.asarray(list(JudgingTask.objects.filter(sample=sample).values_list("query_id", "page_id")), dtype=np.int64).reshape(-1, 2)
    own_query_pks, own_page_pks = own[:, 0], own[:, 1]
    own_keys = union.pair_keys(dense_queries(union, own_query_pks), own_page_pks)
    chosen = in_range & (masks["new_tasks"] | member(union.keys, own_keys[own_keys >= 0]))
    return union.query_pks[union.query_dense[chosen]], union.page_keys[chosen]


def _pair_codes(query_pks: np.ndarray, page_pks: np.ndarray, span: int) -> np.ndarray:
    return query_pks.astype(np.int64) * span + page_pks.astype(np.int64)


def sample_recalls(golden_set: GoldenSet, source: ModelSource, limit: int = SAMPLES_ESTIMATED) -> list[SampleRecall]:
    """The recall of the labels from each of the set's `limit` newest completeness samples,
    human only and prediction-powered with `source`'s labels (module docstring)."""
    samples = list(samples_of(golden_set)[:limit])
    if not samples:
        return []
    threshold = golden_set.relevance_threshold
    pair_labels = sample_pair_labels(samples)
    live = set(Query.objects.filter(golden_set=golden_set, retired_at=None).values_list("pk", flat=True))
    relevant_labelled = {(q, p) for q, p, grade in resolved_labels(golden_set) if grade >= threshold and q in live}
    model_rows = ModelJudgment.objects.filter(golden_set=golden_set, model=source.model, prompt_hash=source.prompt_hash)
    model = {(q, p): grade for q, p, grade in model_rows.values_list("query_id", "page_id", "grade").iterator(chunk_size=20_000)}
    # Pair codes query * span + page, span above every page key of the corpus.
    span = (Page.objects.filter(corpus_id=golden_set.corpus_id).aggregate(top=Max("pk"))["top"] or 0) + 1
    model_pairs = list(model)
    model_codes = _pair_codes(
        np.asarray([q for q, _ in model_pairs], dtype=np.int64), np.asarray([p for _, p in model_pairs], dtype=np.int64), span,
    )
    found = []
    for sample in samples:
        labels = pair_labels[sample.pk]
        sample_pairs = set(JudgingTask.objects.filter(sample=sample).values_list("query_id", "page_id"))
        found_relevant = len(relevant_labelled - sample_pairs)
        judged = len(labels)
        relevant = sum(grade >= threshold for grade in labels.values())
        human = recall_estimate(found_relevant, sample.population, human_share(relevant, judged)) if judged else None

        query_pks, page_pks = sample_population(sample)
        in_population = member(model_codes, _pair_codes(query_pks, page_pks, span))
        population_calls = np.asarray([model[pair] >= threshold for pair, inside in zip(model_pairs, in_population.tolist()) if inside], dtype=bool)
        judged_model = [pair for pair in labels if pair in model]

        why_not = ""
        if not judged:
            why_not = "no pair of the sample is judged yet"
        elif len(judged_model) < judged:
            why_not = f"the model labelled {len(judged_model)} of the {judged} judged sample pairs; it needs all of them"
        elif not len(query_pks):
            why_not = "the sample's population cannot be drawn up again (its pool was deleted, or every pair of it is judged or pooled now)"
        elif len(population_calls) < MIN_POPULATION_SHARE * len(query_pks):
            why_not = (
                f"the model labelled {len(population_calls)} of the {len(query_pks)} pairs of the sample's population; "
                f"it needs {MIN_POPULATION_SHARE:.0%} of them"
            )
        ppi = None
        if not why_not:
            share = ppi_share(
                population_calls, [labels[pair] >= threshold for pair in judged_model], [model[pair] >= threshold for pair in judged_model],
            )
            ppi = recall_estimate(found_relevant, sample.population, share)
        found.append(SampleRecall(
            sample=sample, model=source.model, prompt_hash=source.prompt_hash, found=found_relevant, judged=judged,
            relevant=relevant, population_now=len(query_pks), model_called=len(population_calls), judged_model=len(judged_model),
            human=human, ppi=ppi, why_not=why_not,
        ))
    return found
