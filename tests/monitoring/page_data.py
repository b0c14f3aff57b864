"""What the page tests of monitoring (test_pages) build their data from: a set with
old and new pages, people of every role, a tiny search service speaking the Goldset JSON
contract, endpoints registered through the real service, and nights stored as a nightly run
stores them. The fixtures are imported by the test modules that use them.

The set: queries q1-q12, qN's one relevant page is dN; d1-d6 are old (400 days), d7-d12 new
(5 days), so `page:age=0-30d` is a slice; q1-q6 are English, q7-q12 German. k_first 5,
k_final 2.
"""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from evaluation.services import run_from_rankings
from goldenset.models import GoldenSet, Membership
from goldenset.services import membership_grant, version_publish
from lib.formats import JsonRecord
from monitoring.endpoints.services import endpoint_add
from monitoring.models import Endpoint
from tests.support import factories
from tests.support.servers import serve_in_thread

QUERY_IDS = [f"q{n}" for n in range(1, 13)]
NEW = {f"q{n}" for n in range(7, 13)}  # their relevant page is new
FILLER = ["x1", "x2", "x3", "x4", "x5"]  # pages of the corpus no query is judged on


def relevant(query_id: str) -> str:
    return "d" + query_id[1:]


def monitored_set(slug: str = "watched") -> GoldenSet:
    now = timezone.now()
    page_records = [
        JsonRecord(
            line=n,
            id=f"d{n}",
            title=f"page {n}",
            text=f"text {n}",
            metadata={"published_at": (now - timedelta(days=400 if n <= 6 else 5)).isoformat()},
        )
        for n in range(1, 13)
    ] + [JsonRecord(line=12 + i, id=doc, title=doc, text=doc, metadata={}) for i, doc in enumerate(FILLER, 1)]
    query_records = [
        JsonRecord(line=n, id=query_id, text=f"question {n}", metadata={"lang": "en" if n <= 6 else "de"})
        for n, query_id in enumerate(QUERY_IDS, 1)
    ]
    return factories.golden_set(
        slug,
        qrels={(query_id, relevant(query_id)): 2 for query_id in QUERY_IDS},
        pages=page_records,
        queries=query_records,
        k_first=5,
        k_final=2,
        query_slice_fields=["lang"],
        page_slice_fields=[],
    )


def ranking(query_id: str, *, stale: bool = False, reranked: bool = False) -> list[tuple[str, float]]:
    """The service's answer: the relevant page first, unless the index is stale and the page
    new (then it is missing); the reranker pushes q1's page to rank 3, past k_final."""
    docs = list(FILLER)
    if not (stale and query_id in NEW):
        docs.insert(2 if reranked and query_id == "q1" else 0, relevant(query_id))
    return [(doc, float(10 - i)) for i, doc in enumerate(docs)]


@dataclass
class SearchService:
    """State of the tiny search service: flip `stale` to lose the new pages, `down` to fail."""

    base_url: str = ""
    stale: bool = False
    down: bool = False
    requests: list[dict] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def do_POST(self):
        service: SearchService = self.server.service
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        service.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
        if service.down:
            self._send(503, {"error": {"code": "unavailable", "message": "down", "problems": [], "field": None}})
            return
        query_id, k = str(body.get("query_id", "")), int(body.get("k", 10))
        hits = ranking(query_id, stale=service.stale, reranked=self.path.startswith("/reranked"))[:k]
        self._send(200, {"results": [{"doc_id": d, "score": s} for d, s in hits], "index_size": 17})

    def _send(self, status: int, payload: dict):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def search_service_started() -> Iterator[SearchService]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.service = SearchService(base_url=f"http://127.0.0.1:{server.server_address[1]}")
    serve_in_thread(server)
    try:
        yield server.service
    finally:
        server.shutdown()
        server.server_close()


def endpoints_add(golden_set: GoldenSet, service: SearchService, **options) -> tuple[Endpoint, Endpoint]:
    """A first-stage and a reranked endpoint of one system, "hybrid"."""
    first = endpoint_add(
        golden_set=golden_set,
        name="hybrid-first",
        system="hybrid",
        stage=Endpoint.Stage.FIRST_STAGE,
        preset="goldset",
        url=f"{service.base_url}/first-stage/search",
        **options,
    )
    final = endpoint_add(
        golden_set=golden_set,
        name="hybrid-reranked",
        system="hybrid",
        stage=Endpoint.Stage.RERANKED,
        preset="goldset",
        url=f"{service.base_url}/reranked/search",
        **options,
    )
    return first, final


def night_store(endpoint: Endpoint, measured_at: datetime, *, stale: bool = False, failed: tuple[str, ...] = ()):
    """A night of `endpoint` as nightly_run_execute stores one (without asking the service):
    a run of its series measured at `measured_at`, with `failed` queries unanswered."""
    reranked = endpoint.stage == Endpoint.Stage.RERANKED
    depth = 2 if reranked else 5
    rankings = [(q, ranking(q, stale=stale, reranked=reranked)[:depth]) for q in QUERY_IDS if q not in failed]
    return run_from_rankings(
        golden_set=endpoint.golden_set,
        rankings=rankings,
        source_name=endpoint.url,
        system=endpoint.system,
        stage=endpoint.stage,
        name=f"{endpoint.series.name} {measured_at:%Y-%m-%d %H:%M}",
        series=endpoint.series,
        measured_at=measured_at,
        failures=[(q, "HTTP 503", 503) for q in failed],
        index_size=17,
    )


def nights_store(endpoints, count: int, *, stale_last: int = 0, start: datetime | None = None) -> list[datetime]:
    """`count` nights of each endpoint at 02:00, oldest first; the last `stale_last` stale."""
    start = start or (timezone.now() - timedelta(days=count)).replace(hour=2, minute=0, second=0, microsecond=0)
    moments = [start + timedelta(days=i) for i in range(count)]
    for i, moment in enumerate(moments):
        for endpoint in endpoints:
            night_store(endpoint, moment, stale=i >= count - stale_last)
    return moments


@pytest.fixture
def search_service():
    with search_service_started() as service:
        yield service


@pytest.fixture
def people(make_user):
    """One user per role, and a stranger; each password is "pw-<name>"."""
    return {name: make_user(name) for name in ("manager", "adjudicator", "annotator", "stranger")}


@pytest.fixture
def watched(people, django_capture_on_commit_callbacks) -> GoldenSet:
    golden_set = monitored_set()
    membership_grant(user=people["manager"], golden_set=golden_set, role=Membership.Role.MANAGER)
    membership_grant(user=people["adjudicator"], golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    membership_grant(user=people["annotator"], golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    with django_capture_on_commit_callbacks(execute=True):
        version_publish(golden_set=golden_set, note="first labels")
    return golden_set
