"""A real HTTP server on 127.0.0.1 that answers like the engines do, with faults on demand.

One threaded stdlib server speaks every preset's documented shape at the path of a
typical deployment:

| preset | request | answer |
| --- | --- | --- |
| goldset | POST /goldset {"query", "query_id", "k"} | {"results": [{"doc_id", "score"}], "index_size"} |
| (a reranked stage) | POST /reranked, the same | the same |
| opensearch / elasticsearch | POST /wiki/_search {"size", "query": {"multi_match": {"query"}}} | {"hits": {"hits": [{"_id", "_score"}]}} |
| (their count) | GET /wiki/_count | {"count": n} |
| solr | GET /solr/wiki/select?q=&rows=&fl=id,score&wt=json | {"response": {"numFound", "docs": [{"id", "score"}]}} |
| generic (a house API) | GET /house/v2/find?text=&limit=&qid= | {"data": {"matches": [{"doc": {"key"}, "relevance": {"value"}}]}} |
| vespa | POST /search/ {"yql", "query", "hits"} | {"root": {"fields": {"totalCount"}, "children": [{"id": "id:wiki:doc::d7", "relevance", "fields"}]}} |

The ranking of a query is a pure function of its text (`ranking_for`), so a test knows
what the engine sent. `faults` maps a query text to a fault: "500", "malformed",
"slow" (sleeps past the client's timeout), "429" (Retry-After: 1, then answers),
"duplicates", "no-doc-id", "not-a-list"; the texts in `demoted` lose their top two pages
at /reranked and /wiki/_search, and /wiki/_count answers `index_size`. Every request is recorded in `seen`, and
`max_in_flight` is the most requests the server held open at once.
"""

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from tests.support.servers import serve_in_thread

CORPUS = [f"d{number}" for number in range(1, 41)]
INDEX_SIZE = len(CORPUS)


def ranking_for(text: str, size: int) -> list[tuple[str, float]]:
    """The engine's answer for `text`: `size` distinct docs, scores strictly decreasing."""
    order = sorted(CORPUS, key=lambda doc: hashlib.sha256(f"{text}|{doc}".encode()).hexdigest())
    return [(doc, round(20.0 - rank * 0.5, 3)) for rank, doc in enumerate(order[:size])]


class Engines(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.faults: dict[str, str] = {}
        self.seen: list[dict] = []
        self.slow_seconds = 1.0
        self.hold_seconds = 0.0  # each answer waits this long, so requests overlap
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.answered_429: set[str] = set()
        self.demoted: set[str] = set()  # query texts whose top two /reranked and /wiki/_search lose
        self.index_size = INDEX_SIZE  # what /wiki/_count answers

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"

    def texts_seen(self) -> list[str]:
        return [request["text"] for request in self.seen]


class _Handler(BaseHTTPRequestHandler):
    server: Engines

    def log_message(self, *args):
        pass

    def do_GET(self):
        self._serve()

    def do_POST(self):
        self._serve()

    def _serve(self):
        engines = self.server
        with engines.lock:
            engines.in_flight += 1
            engines.max_in_flight = max(engines.max_in_flight, engines.in_flight)
        self._in_flight = True
        try:
            self._answer(engines)
        finally:
            self._answered()

    def _answered(self):
        """The request leaves the count before its answer is sent: once the client has the
        answer it may send its next request, which must not meet this one still counted."""
        if self._in_flight:
            self._in_flight = False
            with self.server.lock:
                self.server.in_flight -= 1

    def _send(self, status: int, body: bytes | str, headers: dict | None = None):
        self._answered()
        body = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass

    def _answer(self, engines: Engines):
        parts = urlsplit(self.path)
        params = {name: values[0] for name, values in parse_qs(parts.query).items()}
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw) if raw else {}
        route = parts.path
        if route == "/wiki/_count":
            return self._send(
                200, json.dumps({"count": engines.index_size, "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0}})
            )
        if route == "/search/" and params.get("hits") == "0":
            return self._send(200, json.dumps({"root": {"id": "toplevel", "relevance": 1.0, "fields": {"totalCount": INDEX_SIZE}}}))
        text, size = self._query(route, params, body)
        engines.seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body, "text": text})
        if text is None:
            return self._send(404, json.dumps({"error": f"no engine at {route}"}))
        if engines.hold_seconds:
            time.sleep(engines.hold_seconds)
        fault = engines.faults.get(text)
        if fault == "500":
            return self._send(500, json.dumps({"error": "shard failure", "status": 500}))
        if fault == "malformed":
            return self._send(200, "<html>Bad gateway</html>")
        if fault == "slow":
            time.sleep(engines.slow_seconds)
        if fault == "429" and text not in engines.answered_429:
            engines.answered_429.add(text)
            return self._send(429, json.dumps({"error": "too many requests"}), {"Retry-After": "1"})
        ranking = ranking_for(text, size)
        if route in ("/reranked", "/wiki/_search") and text in engines.demoted:
            ranking = ranking_for(text, size + 2)[2:]  # the reranker pushed the engine's top two out
        if fault == "duplicates":
            ranking = ranking[:2] + ranking[:2] + ranking[2:]
        self._send(200, json.dumps(self._shape(route, ranking, fault)))

    @staticmethod
    def _query(route: str, params: dict, body: dict) -> tuple[str | None, int]:
        if route in ("/goldset", "/reranked"):
            return body["query"], int(body["k"])
        if route == "/wiki/_search":
            return body["query"]["multi_match"]["query"], int(body["size"])
        if route == "/solr/wiki/select":
            return params["q"], int(params["rows"])
        if route == "/search/":
            return body["query"], int(body["hits"])
        if route == "/house/v2/find":
            return params["text"], int(params["limit"])
        return None, 0

    @staticmethod
    def _shape(route: str, ranking: list[tuple[str, float]], fault: str | None) -> dict:
        if route in ("/goldset", "/reranked"):
            results = [{"doc_id": doc, "score": score} for doc, score in ranking]
            if fault == "no-doc-id":
                del results[2]["doc_id"]
            return {"results": results if fault != "not-a-list" else {"doc_id": "d1"}, "index_size": INDEX_SIZE}
        if route == "/wiki/_search":
            hits = [{"_index": "wiki", "_id": doc, "_score": score} for doc, score in ranking]
            top = ranking[0][1] if ranking else None
            return {
                "took": 3,
                "timed_out": False,
                "hits": {"total": {"value": INDEX_SIZE, "relation": "eq"}, "max_score": top, "hits": hits},
            }
        if route == "/house/v2/find":
            return {"data": {"matches": [{"doc": {"key": doc}, "relevance": {"value": score}} for doc, score in ranking]}}
        if route == "/solr/wiki/select":
            docs = [{"id": doc, "score": score} for doc, score in ranking]
            return {"responseHeader": {"status": 0, "QTime": 1}, "response": {"numFound": INDEX_SIZE, "start": 0, "docs": docs}}
        # Vespa's hit: "id" is the document id (id:<namespace>:<type>::<id fed>), the
        # default summary repeats it in fields.documentid.
        children = [
            {
                "id": f"id:wiki:doc::{doc}",
                "relevance": score,
                "source": "wiki",
                "fields": {"sddocname": "doc", "documentid": f"id:wiki:doc::{doc}", "title": f"page {doc}"},
            }
            for doc, score in ranking
        ]
        if fault == "no-doc-id":
            del children[2]["id"]
        coverage = {"coverage": 100, "documents": INDEX_SIZE, "full": True, "nodes": 1, "results": 1, "resultsFull": 1}
        return {
            "root": {"id": "toplevel", "relevance": 1.0, "fields": {"totalCount": INDEX_SIZE}, "coverage": coverage, "children": children}
        }


def start() -> Engines:
    engines = Engines()
    serve_in_thread(engines)
    return engines


def stop(engines: Engines) -> None:
    engines.shutdown()
    engines.server_close()
