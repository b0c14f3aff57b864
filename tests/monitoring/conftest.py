"""A golden set whose queries a real engine server answers (tests.monitoring.endpoints.engines).

The engine ranks the corpus d1..d40 by a pure function of the query text; the set's
labels are the engine's own top pages for each query (two relevant, one not), so a healthy
night scores recall 1.0 at k_first and every fault shows as a change.
"""

import pytest

from evaluation.models import Run
from goldenset.services import version_publish
from monitoring.endpoints.services import endpoint_add
from tests.monitoring.endpoints import engines as engine_server
from tests.support import factories

QUERY_IDS = [f"q{n}" for n in range(1, 11)]


def text_of(query_id: str) -> str:
    return f"question {query_id}"  # tests.support.factories.queries' text


@pytest.fixture
def engines():
    server = engine_server.start()
    try:
        yield server
    finally:
        engine_server.stop(server)


@pytest.fixture
def watched_set(db):
    qrels = {}
    for query_id in QUERY_IDS:
        top = [doc for doc, _ in engine_server.ranking_for(text_of(query_id), 3)]
        qrels.update({(query_id, top[0]): 2, (query_id, top[1]): 1, (query_id, top[2]): 0})
    made = factories.golden_set(
        "watched",
        qrels=qrels,
        pages=factories.pages(*engine_server.CORPUS),
        queries=factories.queries(*QUERY_IDS),
        k_first=10,
        k_final=3,
    )
    version_publish(golden_set=made, note="v1")
    return made


@pytest.fixture
def endpoint(watched_set, engines):
    return endpoint_add(
        golden_set=watched_set,
        name="prod-first",
        system="prod",
        stage=Run.Stage.FIRST_STAGE,
        preset="goldset",
        url=engines.base + "/goldset",
        timeout_seconds=0.5,
        retries=1,
        max_in_flight=4,
        max_per_second=1000,
    )
