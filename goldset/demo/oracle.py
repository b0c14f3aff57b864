"""The demo's oracle experiments, so that `make run` shows a filled oracle table offline.

The demo's generator is the demo search service's own `/v1/chat/completions`
(goldset.demo.search_server), which answers by the demo's rule (goldset.demo.answering: the
context's sentence sharing the most words with the question), the rule the demo's
reference answers were cut by. So the figures need no model and mean what they say:

- on the reranked endpoint's latest night, answered by two stale shards, the oracle context
  holds the page each reference answer came from and the retrieved one often does not:
  *retrieval loss*;
- on its first night (fresh shards), with the context cut to SHORT_CONTEXT_TOKENS tokens,
  the oracle context loses the sentence past its first lines: *generation loss* (what a
  context assembly too tight for its pages costs, whatever the retrieval).

When the service is not up at load time the generator is still registered and the load
succeeds; `DemoOracleResult.note` says how to run the experiments once it is.
"""

import socket
from dataclasses import dataclass, field
from decimal import Decimal
from urllib.parse import urlsplit

from answers.experiments import oracle_experiment_run, oracle_experiment_submit
from answers.generation import DEFAULT_PROMPT
from answers.generators import generator_add
from answers.models import Generator, OracleExperiment
from answers.report import experiment_report
from evaluation.models import Run
from goldenset.models import GoldenSet
from goldset.demo.monitoring import DEMO_ENDPOINTS
from lib.progress import Progress, no_progress
from monitoring.models import Endpoint

DEMO_GENERATOR = "demo-extractive"
# Tokens of context the short experiment keeps (4 characters a token, answers.contexts):
# about a page's title and first sentence, so most reference sentences are cut off.
SHORT_CONTEXT_TOKENS = 24
# The seed's price of input tokens, and a typical output price, so the demo counts money.
PRICE_IN = Decimal("3")
PRICE_OUT = Decimal("15")


@dataclass
class DemoOracleResult:
    created: bool
    generator: Generator | None = None
    experiments: list[OracleExperiment] = field(default_factory=list)
    note: str = ""  # why no experiment was run, when none was
    # When the service was not up: where it was looked for, and the commands to run.
    down_at: str = ""
    to_run: list[str] = field(default_factory=list)


def _reranked_nights(golden_set: GoldenSet) -> list[Run]:
    reranked = next(one.name for one in DEMO_ENDPOINTS if one.stage == Run.Stage.RERANKED)
    endpoint = Endpoint.objects.filter(golden_set=golden_set, name=reranked).first()
    if endpoint is None:
        return []
    return list(Run.objects.filter(golden_set=golden_set, series=endpoint.series_id).order_by("measured_at", "pk"))


def _up(base_url: str) -> bool:
    """Whether something listens at `base_url`'s host and port (a second at most)."""
    parts = urlsplit(base_url)
    try:
        with socket.create_connection((parts.hostname, parts.port or 80), timeout=1):
            return True
    except OSError:
        return False


def demo_oracle_load(*, golden_set: GoldenSet, base_url: str, progress: Progress = no_progress) -> DemoOracleResult:
    """Register the demo's generator at `base_url` (the demo search service) and run the two
    experiments of the module's docstring on the latest version; writes nothing when the
    set has the generator already."""
    if Generator.objects.filter(golden_set=golden_set, name=DEMO_GENERATOR).exists():
        return DemoOracleResult(created=False, generator=Generator.objects.get(golden_set=golden_set, name=DEMO_GENERATOR))
    nights = _reranked_nights(golden_set)
    version = golden_set.latest_version()
    generator = generator_add(
        golden_set=golden_set,
        name=DEMO_GENERATOR,
        base_url=base_url.rstrip("/") + "/v1",
        model="demo-extractive",
        prompt=DEFAULT_PROMPT,
        max_in_flight=8,
        timeout_seconds=10,
        price_in=PRICE_IN,
        price_out=PRICE_OUT,
    )
    result = DemoOracleResult(created=True, generator=generator)
    if not nights or version is None:
        result.note = "the demo has no nights of its reranked endpoint: no oracle experiment was run"
        return result
    stale, fresh = nights[-1], nights[0]
    if not _up(base_url):
        result.note = f"the demo search service was not up at {base_url}, so no oracle experiment was run"
        result.down_at = base_url
        result.to_run = [f'python manage.py oracle_experiment {golden_set.slug} --run "{stale.name}" --generator {DEMO_GENERATOR}']
        return result
    for run, budget in progress([(stale, None), (fresh, SHORT_CONTEXT_TOKENS)], "demo oracle experiments"):
        experiment = oracle_experiment_submit(
            golden_set=golden_set, version=version, run=run, generator=generator, context_token_budget=budget, user=None, send=None
        )
        result.experiments.append(oracle_experiment_run(experiment.pk))
    return result


def demo_oracle_lines(result: DemoOracleResult, *, serving: bool = False) -> list[str]:
    """What `load_demo` prints of the experiments: exact match per context and both losses
    (fractions; a figure not whole is not printed), or how to run them (`serving`: `make
    run` starts the service itself, so it is not told to start one)."""
    lines = []
    for experiment in result.experiments:
        if experiment is None:
            continue
        report = experiment_report(experiment)
        contexts = report.overall.contexts
        shown = ", ".join(
            f"{name} {figures.exact_match.value:.3f}" for name, figures in contexts.items() if figures.exact_match is not None
        )
        loss = report.loss()
        if loss is not None and loss.retrieval is not None and loss.generation is not None:
            losses = f"retrieval loss {loss.retrieval.value:+.3f}, generation loss {loss.generation.value:.3f}"
        else:
            losses = experiment.progress_note or experiment.get_status_display()
        budget = f", context cut to {experiment.context_token_budget} tokens" if experiment.context_token_budget else ""
        lines.append(f"oracle experiment {experiment.pk} on {experiment.run.name!r}{budget}: exact match {shown or '–'}; {losses}")
    if result.note:
        lines.append(f"oracle: {result.note}")
    if result.to_run:
        commands = " and ".join(f"`{command}`" for command in result.to_run)
        start = "once the app is up" if serving else "once `python manage.py serve_demo_search` is up"
        lines.append(f"oracle: to fill the demo's oracle table, run {commands} {start}")
    return lines
