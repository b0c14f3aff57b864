"""A local HTTP server that speaks the OpenAI chat-completions protocol, for the judge's tests.

No hosted LLM can run here (no network, no weights of a chat model), so this server, started
by the test in a thread, stands in for one: `POST /v1/chat/completions` with {"model",
"messages", "temperature"} answered by {"choices": [{"message": {"content": ...}}], "usage":
{...}}, as vLLM, Ollama and hosted APIs answer. What it answers is up to the test (`reply`),
and it keeps every request and the most requests it held open at once. A prompt holding a
batch of numbered passages ("[1] title d3 ...", as the judge sends with a batch size above
1) is answered with one "[i] ##final score: N" line per passage by default.
"""

import asyncio
import json
import re
import threading
from dataclasses import dataclass, field

from aiohttp import web


@dataclass
class Reply:
    content: str | None = None
    status: int = 200
    headers: dict = field(default_factory=dict)
    delay: float = 0.0
    body: str | None = None


@dataclass
class Seen:
    headers: dict
    body: dict
    prompt: str


class ChatServer:
    """`reply(seen, attempt)` -> Reply, where `attempt` counts the requests for this prompt
    (1 for the first). By default a pair's grade is its doc number modulo 4, and a batch
    gets one numbered line per passage (batch_answer)."""

    def __init__(self):
        self.seen: list[Seen] = []
        self.open = 0
        self.most_open = 0
        self.hold = 0.0  # seconds each answer waits, so requests overlap
        self.reply = lambda seen, attempt: Reply(
            content=batch_answer(seen.prompt) if is_batch(seen.prompt) else f"The passage is fine.\n##final score: {grade_of(seen.prompt)}"
        )
        self._attempts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "ChatServer":
        self._thread.start()
        self._started.wait(10)
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        runner = web.AppRunner(app)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self._started.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        prompt = body["messages"][-1]["content"]
        seen = Seen(dict(request.headers), body, prompt)
        with self._lock:
            self.seen.append(seen)
            self._attempts[prompt] = attempt = self._attempts.get(prompt, 0) + 1
            self.open += 1
            self.most_open = max(self.most_open, self.open)
        try:
            reply = self.reply(seen, attempt)
            await asyncio.sleep(reply.delay or self.hold)
            if reply.body is not None:
                return web.Response(text=reply.body, status=reply.status, headers=reply.headers, content_type="application/json")
            if reply.status != 200:
                return web.Response(
                    text='{"error": {"message": "busy"}}', status=reply.status, headers=reply.headers, content_type="application/json"
                )
            answer = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
            }
            return web.Response(text=json.dumps(answer), content_type="application/json")
        finally:
            with self._lock:
                self.open -= 1


def grade_of(prompt: str) -> int:
    """The default grade: the doc number in the passage ("text of d6") modulo 4."""
    marker = prompt.index("text of d") + len("text of d")
    digits = ""
    while prompt[marker].isdigit():
        digits += prompt[marker]
        marker += 1
    return int(digits) % 4


def is_batch(prompt: str) -> bool:
    """Whether the prompt grades several numbered passages (lib.llm_judging.BATCH_INSTRUCTIONS)."""
    return "passages above, numbered [1]" in prompt


def batch_docs(prompt: str) -> list[int]:
    """The doc numbers of a batch's passages ("[2] title d6 ... text of d6"), in their order."""
    return [int(number) for number in re.findall(r"^\[\d+\] title d(\d+)", prompt, re.MULTILINE)]


def batch_answer(prompt: str, grades: dict[int, str] | None = None) -> str:
    """A batch's answer, one line per passage: "[i] ##final score: N" with N its doc number
    modulo 4, or the line `grades` gives for passage i (a test's malformed one)."""
    grades = grades or {}
    return "\n".join(grades.get(i, f"[{i}] ##final score: {doc % 4}") for i, doc in enumerate(batch_docs(prompt), start=1))


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts every connection and never answers a byte: an
    endpoint that hangs. The connections are held open until `stop`."""

    def __init__(self):
        import socket

        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(128)
        self.port = self._socket.getsockname()[1]
        self.accepted: list = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "SilentServer":
        self._thread.start()
        return self

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:  # closed by stop
                return
            self.accepted.append(connection)

    def stop(self) -> None:
        self._socket.close()
        for connection in self.accepted:
            connection.close()
