"""A local OpenAI-compatible chat server for the tests of generators, answer judges and the
oracle experiment: it stands in for a hosted LLM, which cannot run here (no network to one,
no chat model's weights). Started by a test on 127.0.0.1, on a free port, an aiohttp
server in a thread; clients cannot tell it from vLLM, Ollama or a hosted API.

It answers deterministically from the prompt it is sent:
- as a generator (a prompt laid out as answers.generation's DEFAULT_PROMPT): the demo's
  rule, goldset.demo.answering.best_sentence of the question over the passages, or
  "I don't know";
- as an answer judge (a prompt laid out as answers.answer_judging's DEFAULT_RUBRIC):
  "grade: correct" when the SQuAD-normalised answer equals the reference or a variant,
  "partly" when they share a word, else "wrong"; "supported: yes" when the normalised
  answer is in the normalised context;
- any other prompt: "I don't know".
`usage` counts the prompt's and the answer's words.

It also serves a team's own answer endpoint, `POST /rag/answer` with {"question",
"passages": [{"id", "text"}]}, answered {"data": {"answer": TEXT}} by the same generator rule.

Faults a test sets: `slow` (seconds every answer waits), `fail_next(n, status, retry_after)`
(the next n requests answered 429 or 500), `garbage_next(n)` (bodies that are no chat
completion), `content` (every answer's text, say a judge's garbage), `down()` / `up()`
(the port closed: connections refused). It records `requests` (headers, body, prompt) and
`most_in_flight`, the most requests it held open at once.

    with ChatServer() as server:
        generator.base_url = server.base_url   # http://127.0.0.1:PORT/v1
"""

import asyncio
import json
import re
import string
import threading
from dataclasses import dataclass

from aiohttp import web

from answers.answer_judging import rubric_read
from goldset.demo.answering import best_sentence, prompt_answer


@dataclass
class Seen:
    path: str
    headers: dict
    body: dict
    prompt: str


def squad_normalize(text: str) -> str:
    """SQuAD v1.1's normalize_answer: lower case, punctuation and the articles a, an, the
    dropped, whitespace collapsed."""
    text = text.lower()
    text = "".join(char for char in text if char not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def verdict(answer: str, reference: str, aliases: list[str], context: str) -> str:
    """The stand-in judge's two lines for an answer (see the module's docstring)."""
    said = squad_normalize(answer)
    accepted = [squad_normalize(text) for text in [reference, *aliases]]
    if said and said in accepted:
        grade = "correct"
    elif said and any(set(said.split()) & set(text.split()) for text in accepted):
        grade = "partly"
    else:
        grade = "wrong"
    supported = "yes" if said and said in squad_normalize(context) else "no"
    return f"grade: {grade}\nsupported: {supported}"


def answer_of(prompt: str) -> str:
    """What the server answers to `prompt`: a judge's verdict or a generator's answer."""
    rubric = rubric_read(prompt)
    if rubric is not None:
        return verdict(rubric["answer"], rubric["reference"], rubric["aliases"], rubric["context"])
    return prompt_answer(prompt)


class ChatServer:
    def __init__(self):
        self.requests: list[Seen] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.slow = 0.0
        self.content: str | None = None
        self._failures: list[tuple[int, float | None]] = []
        self._garbage = 0
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="chat-server")
        self._site = None
        self.port = 0

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ending in /v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def answer_url(self) -> str:
        """The stand-in answer endpoint's URL."""
        return f"http://127.0.0.1:{self.port}/rag/answer"

    def fail_next(self, count: int, status: int = 429, retry_after: float | None = None) -> None:
        """The next `count` requests are answered `status`, with Retry-After when given."""
        with self._lock:
            self._failures.extend([(status, retry_after)] * count)

    def garbage_next(self, count: int) -> None:
        """The next `count` requests are answered 200 with a body that is no chat completion."""
        with self._lock:
            self._garbage += count

    def down(self) -> None:
        """Close the port: connections are refused until `up`."""
        asyncio.run_coroutine_threadsafe(self._site.stop(), self._loop).result(10)

    def up(self) -> None:
        asyncio.run_coroutine_threadsafe(self._listen(self.port), self._loop).result(10)

    def start(self) -> "ChatServer":
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("the chat server did not start")
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def __enter__(self) -> "ChatServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    async def _listen(self, port: int) -> None:
        self._site = web.TCPSite(self._runner, "127.0.0.1", port)
        await self._site.start()
        self.port = self._site._server.sockets[0].getsockname()[1]

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/rag/answer", self._rag)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        self._loop.run_until_complete(self._listen(0))
        self._started.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())

    async def _answer(self, request: web.Request, prompt_of, respond) -> web.Response:
        body = await request.json()
        seen = Seen(request.path, dict(request.headers), body, prompt_of(body))
        with self._lock:
            self.requests.append(seen)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            failure = self._failures.pop(0) if self._failures else None
            garbage = self._garbage > 0
            self._garbage -= garbage
        try:
            await asyncio.sleep(self.slow)
            if failure is not None:
                status, retry_after = failure
                headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
                return web.json_response({"error": {"message": "busy"}}, status=status, headers=headers)
            if garbage:
                return web.Response(text="<html>upstream hiccup</html>", content_type="text/html")
            return respond(body, seen)
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _chat(self, request: web.Request) -> web.Response:
        def respond(body, seen):
            content = self.content if self.content is not None else answer_of(seen.prompt)
            usage = {"prompt_tokens": len(seen.prompt.split()), "completion_tokens": len(content.split())}
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            return web.json_response(
                {
                    "id": "chatcmpl-local",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                    "usage": usage,
                }
            )

        return await self._answer(request, lambda body: body["messages"][-1]["content"], respond)

    async def _rag(self, request: web.Request) -> web.Response:
        def respond(body, seen):
            passages = "\n".join(passage["text"] for passage in body["passages"])
            text = self.content if self.content is not None else (best_sentence(body["question"], passages) or "I don't know")
            return web.json_response({"data": {"answer": text}})

        return await self._answer(request, lambda body: json.dumps(body), respond)
