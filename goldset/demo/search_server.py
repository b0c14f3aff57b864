"""The demo search service over HTTP (goldset.demo.search behind the standard library's
ThreadingHTTPServer), speaking the JSON contract Goldset calls a live endpoint with:

    POST /first-stage/search  {"query": TEXT, "query_id": ID, "k": K, "exact": false}
                              -> {"results": [{"doc_id": ..., "score": ..., "shard": S}], "index_size": N}
                              "exact": true answers from every shard as if refreshed (the
                              exact mode an index probe compares with); "shard" is the
                              hit's shard, 1 to 6
    POST /reranked/search     the same; k defaults to K_FINAL (8)
    GET  /count               -> {"count": N}
    GET  /healthz             -> {"ok": true, "stale_shards": n}
    GET  /admin/shards        -> the shards' state
    POST /admin/shards        {"stale": N} -> sets how many shards are stale, answers the state
    POST /v1/chat/completions the demo's generator, OpenAI-compatible: {"model", "messages"}
                              -> {"choices": [{"message": {"content": ANSWER}}], "usage"},
                              ANSWER by the demo's extractive rule from the prompt's question
                              and passages (goldset.demo.answering.prompt_answer), so that
                              the demo's oracle experiment needs no model and no other process

A bad body answers 400 and an unknown path 404, in the API's one error shape
(api.errors.error_body): {"error": {"code", "message", "problems", "field"}}. No database:
the command `serve_demo_search` and the tests start it in-process.
"""

import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from goldset.demo.answering import prompt_answer
from goldset.demo.search import FIRST_STAGE_K, K_FINAL, SHARD_COUNT, DemoSearch

MAX_K = 1000
# A search body is a few hundred bytes; anything far larger is refused before it is read.
MAX_BODY_BYTES = 64 * 1024
# A generator's prompt holds k_final pages of context: tens of kilobytes, a megabyte at most.
MAX_CHAT_BODY_BYTES = 1024 * 1024
CHAT_PATH = "/v1/chat/completions"
SEARCH_PATHS = {"/first-stage/search": ("first_stage", FIRST_STAGE_K), "/reranked/search": ("reranked", K_FINAL)}


class BadRequest(Exception):
    def __init__(self, message: str, field: str | None = None, status: HTTPStatus = HTTPStatus.BAD_REQUEST):
        super().__init__(message)
        self.message, self.field, self.status = message, field, status


def error_body(code: str, message: str, field: str | None = None) -> dict:
    """The API's error shape (api.errors.error_body), so one client reads both."""
    return {"error": {"code": code, "message": message, "problems": [], "field": field}}


def chat_request_parse(body: object) -> str:
    """The prompt of a chat-completions body: its last message's content; BadRequest naming
    the field at fault."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        raise BadRequest("messages is required: a non-empty list of {role, content}", "messages")
    content = messages[-1].get("content")
    if not isinstance(content, str):
        raise BadRequest("the last message's content must be a string", "messages")
    return content


def chat_completion(model: object, prompt: str) -> dict:
    """The demo generator's chat completion for `prompt`; usage counts words, as no tokenizer runs."""
    answer = prompt_answer(prompt)
    usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(answer.split())}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {
        "id": "chatcmpl-demo",
        "object": "chat.completion",
        "model": model if isinstance(model, str) else "goldset-demo-extractive",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
        "usage": usage,
    }


def search_request_parse(body: object, default_k: int) -> tuple[str, int, bool]:
    """(query text, k, exact) from a search body; raises BadRequest naming the field at fault."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        raise BadRequest("query is required: a non-empty string", "query")
    query_id = body.get("query_id")
    if query_id is not None and (isinstance(query_id, bool) or not isinstance(query_id, (str, int))):
        raise BadRequest("query_id must be a string or an integer", "query_id")
    k = body.get("k", default_k)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise BadRequest(f"k must be an integer from 1 to {MAX_K}, not {json.dumps(k)}", "k")
    exact = body.get("exact", False)
    if not isinstance(exact, bool):
        raise BadRequest(f"exact must be true or false, not {json.dumps(exact)}", "exact")
    return query, k, exact


class DemoSearchServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer answering from one DemoSearch; `verbose` logs each request."""

    daemon_threads = True
    # The default of 5 refuses connections when many clients connect at once.
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], search: DemoSearch, *, verbose: bool = False):
        super().__init__(address, _Handler)
        self.search = search
        self.verbose = verbose

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def shards_state(self) -> dict:
        return {
            "shards": SHARD_COUNT,
            "stale": self.search.stale_shards,
            "stale_shard_numbers": self.search.stale_shard_numbers,
            # The same shards as the hits name them (1 to 6): what an index probe reports.
            "stale_shard_names": [str(number + 1) for number in self.search.stale_shard_numbers],
            "index_size": self.search.index_size,
            "new_since": self.search.new_since.isoformat(),
        }


class _Handler(BaseHTTPRequestHandler):
    server: DemoSearchServer
    protocol_version = "HTTP/1.1"  # keep-alive: a client's connection pool is reused
    timeout = 60  # seconds an idle kept-alive connection holds its thread
    # Headers and body go out in two writes: without TCP_NODELAY, Nagle's algorithm holds the
    # body back until the client's delayed ACK, about 40 ms per kept-alive request.
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        if self.server.verbose:
            super().log_message(format, *args)

    def do_GET(self):
        self._answer(self._get)

    def do_POST(self):
        self._answer(self._post)

    def _get(self) -> dict:
        search = self.server.search
        if self.path == "/count":
            return {"count": search.index_size}
        if self.path == "/healthz":
            return {"ok": True, "stale_shards": search.stale_shards}
        if self.path == "/admin/shards":
            return self.server.shards_state()
        raise self._not_found()

    def _post(self) -> dict:
        body = self._body(MAX_CHAT_BODY_BYTES if self.path == CHAT_PATH else MAX_BODY_BYTES)
        if self.path == CHAT_PATH:
            return chat_completion(body.get("model") if isinstance(body, dict) else None, chat_request_parse(body))
        if self.path in SEARCH_PATHS:
            stage, default_k = SEARCH_PATHS[self.path]
            query, k, exact = search_request_parse(body, default_k)
            search = self.server.search
            hits = search.search(query, k, stage, exact=exact)
            results = [{"doc_id": hit.doc_id, "score": hit.score, "shard": hit.shard} for hit in hits]
            return {"results": results, "index_size": search.index_size}
        if self.path == "/admin/shards":
            stale = body.get("stale") if isinstance(body, dict) else None
            if isinstance(stale, bool) or not isinstance(stale, int) or not 0 <= stale <= SHARD_COUNT:
                raise BadRequest(f"stale must be an integer from 0 to {SHARD_COUNT}", "stale")
            self.server.search.set_stale(stale)
            return self.server.shards_state()
        raise self._not_found()

    def _not_found(self) -> BadRequest:
        return BadRequest(f"no such endpoint: {self.command} {self.path}", status=HTTPStatus.NOT_FOUND)

    def _body(self, limit: int) -> object:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise BadRequest("Content-Length must be a number") from None
        if length > limit:
            self.close_connection = True  # the unread body would be taken for the next request
            raise BadRequest(f"the body is over {limit} bytes", status=HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadRequest(f"the body is not JSON: {exc}") from None

    def _answer(self, handle) -> None:
        try:
            status, payload = HTTPStatus.OK, handle()
        except BadRequest as exc:
            code = "not_found" if exc.status == HTTPStatus.NOT_FOUND else "invalid"
            status, payload = exc.status, error_body(code, exc.message, exc.field)
        except Exception as exc:  # a bug answers 500 in the error shape rather than a dropped connection
            self.log_error("%s %s failed: %r", self.command, self.path, exc)
            self.close_connection = True
            status, payload = HTTPStatus.INTERNAL_SERVER_ERROR, error_body("server_error", "the search failed")
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def demo_search_server_started(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    stale_shards: int | None = None,
    search: DemoSearch | None = None,
    verbose: bool = False,
) -> Iterator[DemoSearchServer]:
    """A DemoSearchServer serving from a background thread until the block ends; port 0
    picks a free port (read it from `server.base_url`). Pass `search` to share one built
    index (about a second to build) between servers; `stale_shards`, when given, is set on it."""
    if search is None:
        search = DemoSearch(stale_shards=stale_shards or 0)
    elif stale_shards is not None:
        search.set_stale(stale_shards)
    server = DemoSearchServer((host, port), search, verbose=verbose)
    # A short poll, so that leaving the block (shutdown) takes milliseconds, not half a second.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="demo-search", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def demo_search_serve(server: DemoSearchServer, *, out=sys.stdout) -> None:
    """Serve in this thread until interrupted (Ctrl-C), then close the socket."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        out.write("stopped\n")
    finally:
        server.server_close()
