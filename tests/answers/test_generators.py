"""generator_add (both kinds), what it refuses and why, the endpoint kind asked over HTTP
(the local stand-in's answer endpoint, tests/support/chat_server.py), and the command."""

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from answers.generation import DEFAULT_PROMPT, AnswerRequest, ContextPassage, endpoint_hash, generate_answers, prompt_hash
from answers.generators import generator_add
from answers.models import Generator
from lib.errors import ConflictError, GoldsetError
from tests.support import factories
from tests.support.chat_server import ChatServer

pytestmark = pytest.mark.django_db

PARIS = ContextPassage("d1", "Lyon is a city on the Rhone. The capital of France is Paris.")
BODY = '{"question": {{query}}, "passages": {{context}}}'


@pytest.fixture
def golden_set(owner):
    return factories.golden_set("gen", manager=owner)


@pytest.fixture
def server():
    with ChatServer() as chat:
        yield chat


def refusal(**fields) -> list[str]:
    with pytest.raises(GoldsetError) as caught:
        generator_add(**fields)
    assert Generator.objects.count() == 0
    return caught.value.problems


def test_a_chat_generator_is_recorded_with_the_default_prompt_and_its_hash(golden_set, owner):
    generator = generator_add(
        golden_set=golden_set, name="local", base_url="http://127.0.0.1:8000/v1", model="llama-3.1-8b", user=owner, price_in=Decimal("0.2")
    )
    assert (generator.kind, generator.model, generator.created_by) == ("openai", "llama-3.1-8b", owner)
    assert generator.prompt == DEFAULT_PROMPT and generator.prompt_hash == prompt_hash(DEFAULT_PROMPT)
    assert "I don't know" in DEFAULT_PROMPT and "{{question}}" in DEFAULT_PROMPT and "{{context}}" in DEFAULT_PROMPT


def test_every_bad_field_of_a_chat_generator_is_named_at_once_and_nothing_is_recorded(golden_set):
    problems = refusal(
        golden_set=golden_set,
        name="",
        base_url="ftp://example.org/v1",
        model="",
        prompt="Answer {{question}} please",
        temperature=3,
        api_key_env="DATABASE_URL",
        max_in_flight=0,
        timeout_seconds=0,
        retries=-1,
        price_in=Decimal("-1"),
    )
    fields = [problem.split(":", 1)[0] for problem in problems]
    assert fields == [
        "name",
        "base_url",
        "model",
        "api_key_env",
        "max_in_flight",
        "timeout_seconds",
        "retries",
        "price_in",
        "prompt",
        "temperature",
    ]
    assert "starting with JUDGE_" in problems[3]
    assert "{{context}}" in problems[8]


def test_a_base_url_with_the_completions_path_is_refused_with_what_to_give_instead(golden_set):
    [problem] = refusal(golden_set=golden_set, name="g", base_url="http://127.0.0.1:8000/v1/chat/completions", model="m")
    assert problem.startswith("base_url: give the API's base URL, ending in /v1")


def test_a_cloud_metadata_address_is_refused_and_a_name_taken_is_a_conflict(golden_set):
    assert refusal(golden_set=golden_set, name="g", base_url="http://user:pw@169.254.169.254/v1", model="m")[0].startswith("base_url:")
    generator_add(golden_set=golden_set, name="g", base_url="http://127.0.0.1:8000/v1", model="m")
    with pytest.raises(ConflictError, match="has a generator named 'g' already"):
        generator_add(golden_set=golden_set, name="g", base_url="http://127.0.0.1:8000/v1", model="m")


def endpoint(golden_set, server, **fields):
    request = {"url": server.answer_url, "method": "POST", "body_template": BODY, "headers": fields.pop("headers", [])}
    return generator_add(
        golden_set=golden_set, name=fields.pop("name", "rag"), kind="endpoint", request=request, answer_path="data.answer", **fields
    )


def test_an_endpoint_generator_is_asked_with_the_question_and_the_passages_as_a_json_list(golden_set, server):
    generator = endpoint(golden_set, server)
    assert generator.base_url == server.answer_url and generator.prompt == ""
    assert generator.prompt_hash == endpoint_hash(generator.request, "data.answer")
    results = generate_answers(
        generator, [AnswerRequest("q1", 'What is the "capital" of France?', (PARIS,)), AnswerRequest("q2", "Why?", ())]
    )
    assert [r.text for r in results] == ["The capital of France is Paris.", "I don't know"]
    assert results[0].prompt_hash == generator.prompt_hash and results[0].prompt_tokens == 0
    assert server.requests[0].body == {"question": 'What is the "capital" of France?', "passages": [{"id": "d1", "text": PARIS.text}]}


def test_an_endpoint_answer_without_text_at_the_answer_path_is_a_failure_naming_what_it_holds(golden_set, server):
    generator = endpoint(golden_set, server)
    generator.answer_path = "data.text"
    [result] = generate_answers(generator, [AnswerRequest(1, "Why?", (PARIS,))])
    assert result.text is None and result.error == "answer_path 'data.text' is not in the answer (top-level keys: data)"
    generator.answer_path = "data"
    [result] = generate_answers(generator, [AnswerRequest(1, "Why?", (PARIS,))])
    assert result.error == "answer_path 'data' holds an object, not the answer's text"


def test_an_endpoint_header_secret_is_read_from_its_variable_and_scrubbed_from_what_is_kept(golden_set, server, monkeypatch):
    monkeypatch.setenv("SEARCH_RAG_TOKEN", "tok-very-secret")
    monkeypatch.setenv("SEARCH_RAG_TOKEN_HOSTS", "127.0.0.1")
    generator = endpoint(golden_set, server, headers=[["Authorization", "Bearer ${SEARCH_RAG_TOKEN}"]])
    server.content = "echo tok-very-secret"
    [result] = generate_answers(generator, [AnswerRequest(1, "Why?", (PARIS,))])
    assert server.requests[0].headers["Authorization"] == "Bearer tok-very-secret"
    assert result.raw == "echo ${SEARCH_RAG_TOKEN}"
    monkeypatch.delenv("SEARCH_RAG_TOKEN")
    with pytest.raises(GoldsetError, match="SEARCH_RAG_TOKEN"):
        generate_answers(generator, [AnswerRequest(1, "Why?", (PARIS,))])
    assert len(server.requests) == 1


def test_an_endpoints_request_is_checked_as_a_retrieval_endpoints_with_context_in_the_body(golden_set, server):
    base = {"url": server.answer_url, "method": "POST", "body_template": BODY, "headers": []}
    cases = [
        ({"body_template": '{"question": {{query}}}'}, "body_template: no {{context}} placeholder"),
        ({"body_template": '{"question": {{query}}, "passages": "{{context}}"}'}, "body_template: {{context}} must stand outside quotes"),
        ({"body_template": '{"question": {{query}}, "k": {{k}}, "passages": {{context}}}'}, "body_template: unknown placeholder {{k}}"),
        ({"body_template": '{"question": {{query}} "passages": {{context}}}'}, "body_template: not valid JSON"),
        ({"url": server.answer_url + "?c={{context}}"}, "url: {{context}} is a list of passages"),
        ({"method": "GET", "body_template": ""}, "method: the passages are sent in a JSON body"),
        ({"headers": [["Authorization", "Bearer sk-pasted-123456"]]}, "headers: Authorization looks like it carries a secret"),
        ({"headers": [["X-Key", "${DATABASE_URL}"]]}, "headers: X-Key names ${DATABASE_URL}; only variables starting with SEARCH_"),
        ({"url": "http://169.254.169.254/answer"}, "url: 169.254.169.254 is a link-local/metadata address"),
        ({"extra": 1}, "request: extra not a field of a request"),
    ]
    for change, expected in cases:
        problems = refusal(golden_set=golden_set, name="rag", kind="endpoint", request={**base, **change}, answer_path="data.answer")
        assert any(problem.startswith(expected) for problem in problems), (change, problems)
    problems = refusal(golden_set=golden_set, name="rag", kind="endpoint", request=base, answer_path="data..answer", api_key_env="JUDGE_X")
    assert [p.split(":", 1)[0] for p in problems] == ["answer_path", "api_key_env"]
    assert refusal(golden_set=golden_set, name="rag", kind="endpoint", request=base, answer_path="")[0].startswith("answer_path: say where")
    assert refusal(golden_set=golden_set, name="rag", kind="magic")[0].startswith("kind: 'magic' is not a kind of generator")


def test_the_command_adds_a_chat_generator_with_a_prompt_file(golden_set, tmp_path):
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Q: {{question}}\n{{context}}\nA:", encoding="utf-8")
    out = StringIO()
    call_command(
        "generator_add", "gen", "--name", "local", "--preset", "openai", "--url", "http://127.0.0.1:8000/v1", "--model", "m-7b",
        "--prompt-file", str(prompt), "--temperature", "0.3", "--api-key-env", "JUDGE_LOCAL", "--max-in-flight", "8",
        "--price-in", "0.15", "--price-out", "0.6", stdout=out,
    )  # fmt: skip
    generator = Generator.objects.get(name="local")
    assert (generator.temperature, generator.api_key_env, generator.max_in_flight) == (0.3, "JUDGE_LOCAL", 8)
    assert (generator.price_in, generator.price_out) == (Decimal("0.15"), Decimal("0.6"))
    assert generator.prompt_hash == prompt_hash("Q: {{question}}\n{{context}}\nA:")
    assert out.getvalue() == f"generator 'local' of gen: m-7b at http://127.0.0.1:8000/v1, prompt {generator.prompt_hash[:12]}\n"


def test_the_command_adds_an_endpoint_generator(golden_set, server):
    out = StringIO()
    call_command(
        "generator_add", "gen", "--name", "rag", "--preset", "endpoint", "--url", server.answer_url, "--body-template", BODY,
        "--answer-path", "data.answer", "--header", "X-Team: search", stdout=out,
    )  # fmt: skip
    generator = Generator.objects.get(name="rag")
    assert generator.request["headers"] == [["X-Team", "search"]] and generator.answer_path == "data.answer"
    assert "answer endpoint" in out.getvalue()


def test_the_command_names_what_is_wrong(golden_set):
    with pytest.raises(CommandError) as caught:
        call_command(
            "generator_add", "gen", "--name", "x", "--preset", "openai", "--url", "http://127.0.0.1/v1", "--api-key-env", "SECRET_KEY"
        )
    assert str(caught.value).splitlines() == [
        "the generator cannot be added",
        "model: the model's name must be 1 to 200 printable characters",
        "api_key_env: 'SECRET_KEY' is not a variable Goldset reads: name one starting with JUDGE_ (capitals, digits, _)",
    ]
    with pytest.raises(CommandError, match="no golden set 'nope'"):
        call_command("generator_add", "nope", "--name", "x", "--preset", "openai", "--url", "http://127.0.0.1/v1", "--model", "m")
    with pytest.raises(CommandError, match="--price-in: 'cheap' is not a price"):
        call_command(
            "generator_add",
            "gen",
            "--name",
            "x",
            "--preset",
            "openai",
            "--url",
            "http://127.0.0.1/v1",
            "--model",
            "m",
            "--price-in",
            "cheap",
        )
    with pytest.raises(CommandError, match="--prompt-file: cannot read"):
        call_command(
            "generator_add",
            "gen",
            "--name",
            "x",
            "--preset",
            "openai",
            "--url",
            "http://127.0.0.1/v1",
            "--model",
            "m",
            "--prompt-file",
            "/nonexistent",
        )
    assert Generator.objects.count() == 0
