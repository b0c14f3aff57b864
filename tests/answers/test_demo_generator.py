"""The demo's generator: the demo search server (goldset/demo/search_server.py, what
`make run` serves) answers chat completions by the demo's extractive rule, driven here over
HTTP through generate_answers as any generator is."""

import json
import urllib.error
import urllib.request

import pytest

from answers.generation import DEFAULT_PROMPT, AnswerRequest, ContextPassage, generate_answers, prompt_hash
from answers.models import Generator
from goldset.demo.answering import best_sentence
from goldset.demo.generate import demo_generate
from goldset.demo.search_server import demo_search_server_started

PAGES = demo_generate().pages[:3]


@pytest.fixture(scope="module")
def server():
    with demo_search_server_started() as started:
        yield started


def demo_generator(server) -> Generator:
    return Generator(
        name="demo",
        kind=Generator.Kind.OPENAI,
        base_url=server.base_url + "/v1",
        model="goldset-demo-extractive",
        prompt=DEFAULT_PROMPT,
        prompt_hash=prompt_hash(DEFAULT_PROMPT),
        max_in_flight=4,
        timeout_seconds=10,
        retries=1,
    )


def test_the_demo_generator_answers_with_the_best_sentence_of_the_context_it_is_given(server):
    page, other = PAGES[0], PAGES[1]
    requests = [
        AnswerRequest("with the page", page.title, (ContextPassage(other.id, other.text), ContextPassage(page.id, page.text))),
        AnswerRequest("closed book", page.title, ()),
    ]
    with_page, closed = generate_answers(demo_generator(server), requests)
    assert with_page.error is None
    assert with_page.text == best_sentence(page.title, other.text + "\n" + page.text) is not None
    assert closed.text == "I don't know"
    assert with_page.prompt_tokens > 0 and with_page.completion_tokens == len(with_page.text.split())


def test_the_demo_generator_refuses_a_body_that_is_no_chat_request_by_its_field(server):
    request = urllib.request.Request(server.base_url + "/v1/chat/completions", data=json.dumps({"messages": []}).encode(), method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 400
    assert json.load(caught.value)["error"]["field"] == "messages"
