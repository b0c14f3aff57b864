"""generate_answers against a real local chat server (tests/support/chat_server.py, a
stand-in for a hosted LLM that cannot run here) and its answer endpoint: what is sent, what
is read back, and every fault a model's endpoint has: down, slow, 429, 500, garbage."""

import threading

import pytest

from answers.generation import (
    DEFAULT_PROMPT,
    AnswerRequest,
    ContextPassage,
    context_text,
    generate_answers,
    prompt_filled,
    prompt_hash,
    prompt_read,
)
from answers.models import Generator
from lib.chat import NOT_A_COMPLETION, Waiting
from lib.errors import GoldsetError
from lib.outbound import UNREACHABLE
from tests.support.chat_server import ChatServer

PARIS = ContextPassage("d1", "Lyon is a city on the Rhone. The capital of France is Paris.")
BERLIN = ContextPassage("d2", "Berlin is the capital of Germany.")
QUESTION = "What is the capital of France?"


@pytest.fixture
def server():
    with ChatServer() as chat:
        yield chat


class NoWait(Waiting):
    """Backoffs are recorded, not waited."""

    def __init__(self):
        async def sleep(seconds):
            return None

        super().__init__(sleep=sleep, random=lambda: 0.0)


def chat_generator(server, **fields) -> Generator:
    fields = {
        "name": "local",
        "kind": Generator.Kind.OPENAI,
        "base_url": server.base_url,
        "model": "extractive-1",
        "prompt": DEFAULT_PROMPT,
        "prompt_hash": prompt_hash(DEFAULT_PROMPT),
        "max_in_flight": 4,
        "timeout_seconds": 10.0,
        "retries": 3,
        **fields,
    }
    return Generator(**fields)


def test_the_context_is_written_as_numbered_passages_with_their_ids_and_read_back():
    prompt = prompt_filled(DEFAULT_PROMPT, "What is\nthe capital?", [PARIS, BERLIN])
    assert "Question: What is the capital?\n" in prompt
    assert "[1] id: d1\nLyon is a city" in prompt and "[2] id: d2\nBerlin" in prompt
    assert prompt_read(prompt) == ("What is the capital?", [PARIS.text, BERLIN.text])
    assert context_text(()) == "(no passages)"
    assert prompt_read(prompt_filled(DEFAULT_PROMPT, "Why?", ())) == ("Why?", [])
    assert prompt_read("Tell me a story") is None


def test_answers_come_from_the_context_given_and_a_closed_book_does_not_know(server):
    requests = [
        AnswerRequest("oracle", QUESTION, (BERLIN, PARIS)),
        AnswerRequest("wrong pages", QUESTION, (BERLIN,)),
        AnswerRequest("closed book", QUESTION, ()),
    ]
    results = generate_answers(chat_generator(server), requests)
    assert [r.key for r in results] == ["oracle", "wrong pages", "closed book"]
    assert [r.text for r in results] == ["The capital of France is Paris.", "Berlin is the capital of Germany.", "I don't know"]
    assert all(r.error is None and r.requests == 1 and r.prompt_hash == prompt_hash(DEFAULT_PROMPT) for r in results)
    sent = server.requests[0]
    assert sent.body["model"] == "extractive-1" and sent.body["temperature"] == 0.0
    assert sent.body["messages"] == [{"role": "user", "content": prompt_filled(DEFAULT_PROMPT, QUESTION, (BERLIN, PARIS))}]
    # usage: the stand-in counts words, prompt and answer.
    assert results[0].prompt_tokens == len(sent.prompt.split()) and results[0].completion_tokens == 6


def test_the_generators_temperature_and_an_edited_prompt_are_what_is_sent(server):
    prompt = "Q: {{question}}\nPassages:\n{{context}}\nShort answer please."
    generator = chat_generator(server, prompt=prompt, prompt_hash=prompt_hash(prompt), temperature=0.7)
    [result] = generate_answers(generator, [AnswerRequest(1, QUESTION, (PARIS,))])
    assert server.requests[0].body["temperature"] == 0.7
    assert server.requests[0].prompt == f"Q: {QUESTION}\nPassages:\n[1] id: d1\n{PARIS.text}\nShort answer please."
    assert result.text == "I don't know" and result.prompt_hash == prompt_hash(prompt) != prompt_hash(DEFAULT_PROMPT)


def test_the_key_is_read_from_its_variable_at_call_time_and_sent_only_in_authorization(server, monkeypatch):
    monkeypatch.setenv("JUDGE_GEN_KEY", "sk-very-secret")
    monkeypatch.setenv("JUDGE_GEN_KEY_HOSTS", "127.0.0.1")
    generator = chat_generator(server, api_key_env="JUDGE_GEN_KEY")
    [result] = generate_answers(generator, [AnswerRequest(1, QUESTION, (PARIS,))])
    assert result.text == "The capital of France is Paris."
    seen = server.requests[0]
    assert seen.headers["Authorization"] == "Bearer sk-very-secret"
    others = {name: value for name, value in seen.headers.items() if name != "Authorization"}
    assert "sk-very-secret" not in repr(others) + repr(seen.body)
    monkeypatch.setenv("JUDGE_GEN_KEY", "sk-rotated")
    generate_answers(generator, [AnswerRequest(1, QUESTION, (PARIS,))])
    assert server.requests[1].headers["Authorization"] == "Bearer sk-rotated"


def test_a_key_that_is_unset_or_not_allowed_to_the_host_sends_nothing(server, monkeypatch):
    monkeypatch.delenv("JUDGE_GEN_KEY", raising=False)
    with pytest.raises(GoldsetError, match="JUDGE_GEN_KEY is not set where the worker runs; nothing was sent"):
        generate_answers(chat_generator(server, api_key_env="JUDGE_GEN_KEY"), [AnswerRequest(1, QUESTION, ())])
    monkeypatch.setenv("JUDGE_GEN_KEY", "sk-very-secret")
    monkeypatch.setenv("JUDGE_GEN_KEY_HOSTS", "api.example.org")
    with pytest.raises(GoldsetError, match="JUDGE_GEN_KEY_HOSTS"):
        generate_answers(chat_generator(server, api_key_env="JUDGE_GEN_KEY"), [AnswerRequest(1, QUESTION, ())])
    assert server.requests == []


def test_a_generator_that_is_down_fails_each_answer_after_its_retries(server):
    server.down()
    waiting = NoWait()
    results = generate_answers(chat_generator(server, retries=2), [AnswerRequest(n, QUESTION, (PARIS,)) for n in range(3)], waiting=waiting)
    assert [r.text for r in results] == [None, None, None]
    assert {r.error for r in results} == {"the connection failed (ClientConnectorError) after 3 attempts"}
    assert [r.requests for r in results] == [3, 3, 3] and len(waiting.delays) == 6
    server.up()
    [result] = generate_answers(chat_generator(server), [AnswerRequest(1, QUESTION, (PARIS,))])
    assert result.text == "The capital of France is Paris."


def test_an_answer_slower_than_the_timeout_is_a_failure_after_its_retries(server):
    server.slow = 1.0
    [result] = generate_answers(
        chat_generator(server, timeout_seconds=0.2, retries=1), [AnswerRequest(1, QUESTION, (PARIS,))], waiting=NoWait()
    )
    assert result.text is None and result.error == "no answer within 0.2 s after 2 attempts" and result.requests == 2


def test_a_429_is_waited_out_by_its_retry_after_and_then_answered(server):
    server.fail_next(2, status=429, retry_after=7)
    waiting = NoWait()
    [result] = generate_answers(chat_generator(server), [AnswerRequest(1, QUESTION, (PARIS,))], waiting=waiting)
    assert result.text == "The capital of France is Paris." and result.error is None
    assert result.requests == 3 and waiting.delays == [7.0, 7.0]


def test_a_500_every_time_is_a_failure_once_the_retries_are_spent(server):
    server.fail_next(10, status=500)
    waiting = NoWait()
    [result] = generate_answers(chat_generator(server, retries=3), [AnswerRequest(1, QUESTION, (PARIS,))], waiting=waiting)
    assert result.text is None and result.error == "HTTP 500 after 4 attempts" and result.requests == 4
    assert '"busy"' in result.raw
    # Exponential backoff with jitter 0: half of 0.5, 1, 2 seconds (lib.llm_judging's caps).
    assert waiting.delays == [0.25, 0.5, 1.0]


def test_a_garbage_body_is_a_failure_with_its_raw_text_and_is_not_retried(server):
    server.garbage_next(1)
    results = generate_answers(chat_generator(server), [AnswerRequest(1, QUESTION, (PARIS,)), AnswerRequest(2, QUESTION, (PARIS,))])
    failed, answered = sorted(results, key=lambda r: r.text is not None)
    assert failed.error == NOT_A_COMPLETION and failed.raw == "<html>upstream hiccup</html>" and failed.requests == 1
    assert answered.text == "The capital of France is Paris."


def test_an_empty_answer_is_a_failure_not_an_answer(server):
    server.content = "   "
    [result] = generate_answers(chat_generator(server), [AnswerRequest(1, QUESTION, (PARIS,))])
    assert result.text is None and result.error == "the answer is empty"


def test_no_more_requests_are_in_flight_than_the_generator_allows(server):
    server.slow = 0.05
    requests = [AnswerRequest(n, QUESTION, (PARIS,)) for n in range(12)]
    results = generate_answers(chat_generator(server, max_in_flight=3), requests)
    assert len(server.requests) == 12 and all(r.text for r in results)
    assert server.most_in_flight <= 3


def test_an_internal_address_outside_the_allowed_networks_is_never_sent_to(server, settings):
    settings.JUDGE_ALLOWED_NETWORKS = []
    results = generate_answers(chat_generator(server), [AnswerRequest(n, QUESTION, (PARIS,)) for n in range(2)])
    assert [(r.text, r.error, r.requests) for r in results] == [(None, UNREACHABLE, 0)] * 2
    assert server.requests == []


def test_progress_is_told_in_the_callers_thread_of_every_answer_and_each_retry(server):
    server.fail_next(1, status=503)
    calls = []

    def progress(settled, note):
        calls.append((threading.current_thread(), [r.key for r in settled], note))

    requests = [AnswerRequest(n, QUESTION, (PARIS,)) for n in range(5)]
    results = generate_answers(chat_generator(server, max_in_flight=1), requests, progress=progress, every=0.01, waiting=NoWait())
    assert all(thread is threading.current_thread() for thread, _, _ in calls)
    assert sorted(key for _, keys, _ in calls for key in keys) == [0, 1, 2, 3, 4]
    assert any(note and note.startswith("HTTP 503 (attempt 1 of 4); trying again") for _, _, note in calls)
    assert all(r.text == "The capital of France is Paris." for r in results)


def test_a_cloud_metadata_address_is_never_sent_to_even_inside_the_allowed_networks(settings):
    settings.JUDGE_ALLOWED_NETWORKS = ["0.0.0.0/0", "169.254.0.0/16"]
    generator = Generator(name="g", base_url="http://169.254.169.254/v1", model="m", prompt=DEFAULT_PROMPT, retries=0, timeout_seconds=2)
    [result] = generate_answers(generator, [AnswerRequest(1, QUESTION, (PARIS,))])
    assert (result.text, result.error, result.requests) == (None, UNREACHABLE, 0)


def test_no_requests_ask_nothing(server):
    assert generate_answers(chat_generator(server), []) == []
    assert server.requests == []
