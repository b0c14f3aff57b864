"""lib.chat, the one chat client, asked directly against a real local chat server
(tests/support/chat_server.py: a stand-in for a hosted LLM that cannot run here)."""

import pytest

from lib.chat import NOT_A_COMPLETION, ChatRequest, ChatSettings, Waiting, chat_complete_sync
from lib.outbound import UNREACHABLE
from tests.support.chat_server import ChatServer


@pytest.fixture
def server():
    with ChatServer() as chat:
        yield chat


class NoWait(Waiting):
    def __init__(self):
        async def sleep(seconds):
            return None

        super().__init__(sleep=sleep, random=lambda: 0.0)


def settings_for(server, **fields) -> ChatSettings:
    return ChatSettings(base_url=server.base_url, model="m", allowed_networks=("127.0.0.0/8",), **fields)


def ask(text: str, key="k", **fields) -> ChatRequest:
    return ChatRequest(key, [{"role": "user", "content": text}], **fields)


def test_a_request_sends_its_model_messages_temperature_and_max_tokens_and_reads_content_and_usage(server):
    [result] = chat_complete_sync(settings_for(server), [ask("Say hi", temperature=0.2, max_tokens=16)])
    assert server.requests[0].body == {
        "model": "m",
        "messages": [{"role": "user", "content": "Say hi"}],
        "temperature": 0.2,
        "max_tokens": 16,
    }
    assert (result.key, result.content, result.error, result.requests) == ("k", "I don't know", None, 1)
    assert (result.prompt_tokens, result.completion_tokens) == (2, 3)
    chat_complete_sync(settings_for(server), [ask("Again")])
    assert "max_tokens" not in server.requests[1].body


def test_the_key_goes_in_authorization_only_and_no_key_sends_no_authorization(server):
    chat_complete_sync(settings_for(server, api_key="sk-1"), [ask("a")])
    chat_complete_sync(settings_for(server), [ask("b")])
    assert server.requests[0].headers["Authorization"] == "Bearer sk-1"
    assert "Authorization" not in server.requests[1].headers


def test_a_400_is_not_retried_and_keeps_what_the_server_said(server):
    server.fail_next(1, status=400)
    [result] = chat_complete_sync(settings_for(server), [ask("a")], waiting=NoWait())
    assert result.error == "HTTP 400 (not retried: the request is at fault)" and result.requests == 1 and "busy" in result.raw


def test_an_answer_past_the_size_limit_is_cut_and_fails_as_no_chat_completion(server):
    server.content = "x" * (2 * 1024 * 1024)
    [result] = chat_complete_sync(settings_for(server), [ask("a")])
    assert result.content is None and result.error == NOT_A_COMPLETION and len(result.raw) == 4000


def test_results_keep_the_requests_order_and_the_bound_holds_across_many(server):
    server.slow = 0.02
    results = chat_complete_sync(settings_for(server, max_in_flight=5), [ask(f"q{n}", key=n) for n in range(30)])
    assert [r.key for r in results] == list(range(30)) and server.most_in_flight <= 5
    assert len(server.requests) == 30


def test_a_host_outside_the_allowed_networks_gets_nothing_and_every_request_says_so(server):
    results = chat_complete_sync(ChatSettings(base_url=server.base_url, model="m"), [ask("a", key=1), ask("b", key=2)])
    assert [(r.error, r.requests) for r in results] == [(UNREACHABLE, 0), (UNREACHABLE, 0)] and server.requests == []
