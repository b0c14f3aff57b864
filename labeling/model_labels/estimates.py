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
from django.db.models import Max

from goldenset.model_labels import ModelSource
from goldenset.models import GoldenSet, ModelJudgment, Page, Query
from goldenset.selectors import resolved_labels
from labeling.completeness.selectors import sample_classes, sample_pair_labels, sampled_union, samples_of
from labeling.models import CompletenessSample, JudgingTask
from labeling.pools.selectors import pool_runs
from labeling.pools.union import dense_queries, member
from lib.ppi import RecallEstimate, human_share, ppi_share, recall_estimate

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


def sample_own_pairs(sample: CompletenessSample) -> np.ndarray:
    """The sample's own pairs, (query pk, page pk) rows."""
    rows = JudgingTask.objects.filter(sample=sample).values_list("query_id", "page_id")
    return np.asarray(list(rows), dtype=np.int64).reshape(-1, 2)


def sample_population(sample: CompletenessSample, own_pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(query pks, page pks) of the sample's population as drawn up now (module docstring):
    what its draw would count as unjudged today, plus `own_pairs` (the sample's own
    (query pk, page pk) rows, judged since). Empty when the sample's pool was deleted."""
    runs = pool_runs(sample.pool) if sample.pool_id is not None else []
    if not runs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    union, in_range = sampled_union(sample.golden_set, runs, sample.depth_from, sample.depth_to)
    masks = sample_classes(sample.golden_set, union, in_range, but_sample=sample)
    own_keys = union.pair_keys(dense_queries(union, own_pairs[:, 0]), own_pairs[:, 1])
    chosen = masks["new_tasks"] | (in_range & member(union.keys, own_keys[own_keys >= 0]))
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
    model_array = np.asarray([(q, p, grade) for (q, p), grade in model.items()], dtype=np.int64).reshape(-1, 3)
    model_codes = _pair_codes(model_array[:, 0], model_array[:, 1], span)
    found = []
    for sample in samples:
        labels = pair_labels[sample.pk]
        own_pairs = sample_own_pairs(sample)
        found_relevant = len(relevant_labelled - set(map(tuple, own_pairs.tolist())))
        judged = len(labels)
        relevant = sum(grade >= threshold for grade in labels.values())
        human = recall_estimate(found_relevant, sample.population, human_share(relevant, judged)) if judged else None

        query_pks, page_pks = sample_population(sample, own_pairs)
        in_population = member(model_codes, _pair_codes(query_pks, page_pks, span))
        population_calls = model_array[in_population, 2] >= threshold
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
                population_calls,
                [labels[pair] >= threshold for pair in judged_model],
                [model[pair] >= threshold for pair in judged_model],
            )
            ppi = recall_estimate(found_relevant, sample.population, share)
        found.append(
            SampleRecall(
                sample=sample,
                model=source.model,
                prompt_hash=source.prompt_hash,
                found=found_relevant,
                judged=judged,
                relevant=relevant,
                population_now=len(query_pks),
                model_called=len(population_calls),
                judged_model=len(judged_model),
                human=human,
                ppi=ppi,
                why_not=why_not,
            )
        )
    return found
