"""The demo's oracle table: its generator is the demo search service's chat route, asked
over real HTTP (goldset.demo.search_server, started in this process on a free port, as
`make run` starts it before the load). The stale-shard night loses answers to retrieval;
the deliberately short context loses them to generation. With the service down, the load
still succeeds and says how to run the experiments."""

import socket

import pytest

from answers.models import Generator, OracleExperiment
from answers.report import experiment_report
from evaluation.models import Run
from goldset.demo.generate import DEFAULT_SEED
from goldset.demo.monitoring import demo_monitoring_load
from goldset.demo.oracle import DEMO_GENERATOR, SHORT_CONTEXT_TOKENS, demo_oracle_lines, demo_oracle_load
from goldset.demo.search import DemoSearch
from goldset.demo.search_server import demo_search_server_started
from goldset.demo.services import demo_golden_set_load
from tests.support.fixtures import kept_for_the_module

pytestmark = pytest.mark.whole_system


@pytest.fixture(scope="module")
def service():
    with demo_search_server_started(search=DemoSearch()) as server:
        yield server


@pytest.fixture(scope="module")
def demo(request, service, django_db_setup, django_db_blocker):
    """The demo set with three nights of its endpoints (the last with two stale shards) and
    its oracle experiments, loaded once for the module."""

    def build():
        loaded = demo_golden_set_load(seed=DEFAULT_SEED)
        demo_monitoring_load(golden_set=loaded.golden_set, search=service.search, base_url=service.base_url, nights=3, stale_nights=1)
        return loaded.golden_set, demo_oracle_load(golden_set=loaded.golden_set, base_url=service.base_url)

    yield from kept_for_the_module(request, django_db_blocker, build)


def figures(experiment):
    report = experiment_report(experiment)
    contexts = report.overall.contexts
    return report, contexts["oracle"].exact_match.value, contexts["retrieved"].exact_match.value


def test_the_demo_generator_is_the_search_services_chat_route(demo, service, db):
    golden_set, oracle = demo
    generator = Generator.objects.get(golden_set=golden_set, name=DEMO_GENERATOR)
    assert generator.base_url == service.base_url + "/v1" and generator.kind == "openai"
    assert oracle.created and oracle.note == "" and len(oracle.experiments) == 2


def test_the_stale_night_shows_retrieval_loss(demo, db):
    _, oracle = demo
    stale = oracle.experiments[0]
    assert stale.status == "done" and stale.answers_failed == 0 and stale.context_token_budget is None
    assert stale.run.measured_at == Run.objects.filter(series=stale.run.series).order_by("-measured_at")[0].measured_at
    report, with_oracle, retrieved = figures(stale)
    # The reference answers were cut by the generator's own rule from each query's best page.
    assert with_oracle > 0.9
    assert report.loss("exact_match").retrieval.value == pytest.approx(with_oracle - retrieved, abs=1e-9)
    assert report.loss("exact_match").retrieval.low > 0.05  # lost to the stale shards, beyond chance
    assert report.retrieval_misses


def test_the_short_context_shows_generation_loss(demo, db):
    _, oracle = demo
    stale, short = oracle.experiments
    assert short.status == "done" and short.context_token_budget == SHORT_CONTEXT_TOKENS
    assert short.run.measured_at < stale.run.measured_at  # the fresh first night
    report, with_oracle, _ = figures(short)
    stale_report, _, _ = figures(stale)
    generation, full = report.loss("exact_match").generation, stale_report.loss("exact_match").generation
    assert generation.value == pytest.approx(1 - with_oracle)
    # The cut context loses answers the whole one keeps, beyond chance: the intervals part.
    assert generation.low > full.high
    # The set's own budget is left as the manager set it.
    assert short.golden_set.context_token_budget is None


def test_a_second_load_writes_nothing(demo, service, db):
    golden_set, _ = demo
    before = OracleExperiment.objects.filter(golden_set=golden_set).count()
    again = demo_oracle_load(golden_set=golden_set, base_url=service.base_url)
    assert not again.created and again.experiments == []
    assert OracleExperiment.objects.filter(golden_set=golden_set).count() == before


def test_with_the_service_down_the_load_succeeds_and_says_how_to_run_them(demo, db):
    golden_set, _ = demo
    Generator.objects.filter(golden_set=golden_set, name=DEMO_GENERATOR).update(name="earlier")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{closed.getsockname()[1]}"  # bound, never listening: refused
        result = demo_oracle_load(golden_set=golden_set, base_url=down)
    assert result.created and result.experiments == [] and result.generator.base_url == down + "/v1"
    assert "was not up" in result.note
    told = " ".join(demo_oracle_lines(result))
    assert f"oracle_experiment {golden_set.slug} --run" in told and f"--generator {DEMO_GENERATOR}" in told
    assert "once `python manage.py serve_demo_search` is up" in told
    # Under `make run` (--serving) the service is started for the user: they are not told to.
    assert "serve_demo_search" not in " ".join(demo_oracle_lines(result, serving=True))


def test_the_load_prints_the_oracle_table_with_both_losses(demo, db):
    _, oracle = demo
    lines = demo_oracle_lines(oracle)
    assert len(lines) == 2 and all("exact match oracle" in line and ", retrieved " in line for line in lines)
    assert "retrieval loss +" in lines[0] and f"context cut to {SHORT_CONTEXT_TOKENS} tokens" in lines[1]
