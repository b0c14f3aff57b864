"""Generators: how a team makes an answer from a question and a context. `generator_add`
records one of either kind, every field checked first and every fault named by its field,
nothing recorded when any is wrong:

- `openai`: a model behind an OpenAI-compatible chat API (`base_url` ending in /v1), with a
  prompt holding {{question}} and {{context}} (DEFAULT_PROMPT unless the manager writes
  one), kept with its hash: an edit is a new hash, its answers apart. The API key is never
  stored: `api_key_env` names the variable the worker reads it from, and must start with
  JUDGE_, the prefix of every model's key (lib.llm_judging.api_key_env_problem). One prefix,
  not a GENERATOR_ of its own: a team's generator and judge are often the same hosted API
  and key, the operator's JUDGE_..._HOSTS list already says where such keys may go, and a
  second prefix would only widen what a manager may name; DATABASE_URL or SECRET_KEY never.
- `endpoint`: the team's own answer endpoint, its request made and checked as a retrieval
  endpoint's is (monitoring.endpoints.spec: URL, method, headers with ${SEARCH_...}
  secrets, a JSON body template), with {{query}} and {{context}} (the passages as a JSON
  list of {"id", "text"}, so it stands outside quotes), and `answer_path`, the dotted path
  to the answer's text in the endpoint's JSON (the endpoint mapping's path reading).
"""

import json
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from answers.checks import base_url_problems, limits_problems, name_problem, prices_problems
from answers.generation import (
    CONTEXT_SLOT,
    DEFAULT_PROMPT,
    ENDPOINT_SAMPLES,
    QUESTION_SLOT,
    endpoint_hash,
    endpoint_spec,
    prompt_hash,
)
from answers.models import Generator
from goldenset.models import GoldenSet
from lib.errors import ConflictError, ProblemCollector
from monitoring.endpoints import mapping
from monitoring.endpoints.spec import spec_problems

REQUEST_FIELDS = ("url", "method", "body_template", "params_template", "headers")
MAX_TEMPERATURE = 2.0


def prompt_problem(prompt: str) -> str | None:
    """Why `prompt` cannot be a generator's prompt, or None: it must hold both slots."""
    if not prompt or not prompt.strip():
        return "the prompt is empty"
    missing = [slot for slot in (QUESTION_SLOT, CONTEXT_SLOT) if slot not in prompt]
    if missing:
        return f"the prompt must hold {' and '.join(missing)}, where the question and its context go"
    return None


def _holds_sample_context(value) -> bool:
    """Whether the sample context list stands as a value somewhere in `value`."""
    if value == ENDPOINT_SAMPLES["context"]:
        return True
    if isinstance(value, dict):
        return any(_holds_sample_context(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_sample_context(item) for item in value)
    return False


def _request_problems(problems: ProblemCollector, request: object, answer_path: str) -> dict:
    """The endpoint's request checked (each fault added, naming its field); the request as stored."""
    if not isinstance(request, dict):
        problems.add("request: an endpoint generator needs its request: url, method, body_template, headers")
        return {}
    unknown = sorted(set(request) - set(REQUEST_FIELDS))
    if unknown:
        problems.add(f"request: {', '.join(unknown)} not a field of a request ({', '.join(REQUEST_FIELDS)})")
    headers = request.get("headers", [])
    if not isinstance(headers, list | tuple) or not all(
        isinstance(h, list | tuple) and len(h) == 2 and all(isinstance(p, str) for p in h) for h in headers
    ):
        problems.add('headers: a list of [name, value] pairs, like [["Authorization", "Bearer ${SEARCH_TOKEN}"]]')
        headers = []
    stored = {
        "url": str(request.get("url", "")).strip(),
        "method": str(request.get("method", "POST")).upper(),
        "body_template": str(request.get("body_template", "")),
        "params_template": str(request.get("params_template", "")),
        "headers": [[name, value] for name, value in headers],
    }
    spec = endpoint_spec(Generator(request=stored))
    template_bad = False
    for problem in spec_problems(spec, env_prefix=settings.RETRIEVAL_HEADER_ENV_PREFIX, samples=ENDPOINT_SAMPLES):
        # The bounds are the generator's own fields, checked with them.
        if not problem.startswith(("timeout_seconds:", "retries:", "max_in_flight:", "max_per_second:")):
            problems.add(problem)
            template_bad = template_bad or problem.startswith(("body_template:", "url:", "params_template:"))
    for field in ("url", "params_template"):
        if "context" in {mapping.placeholder_base(name) for name in mapping.placeholders_in(stored[field])}:
            problems.add(f"{field}: {{{{context}}}} is a list of passages; it goes in the JSON body only")
    if stored["method"] == "GET":
        problems.add("method: the passages are sent in a JSON body, so an answer endpoint is asked with POST")
    elif template_bad:
        pass  # rendered with the samples only once spec_problems finds the templates sound
    elif "context" not in {mapping.placeholder_base(name) for name in mapping.placeholders_in(stored["body_template"])}:
        problems.add("body_template: no {{context}} placeholder, so the endpoint would never get the passages to answer from")
    else:
        sample = json.loads(mapping.render_json(stored["body_template"], ENDPOINT_SAMPLES))
        if not _holds_sample_context(sample):
            problems.add('body_template: {{context}} must stand outside quotes, where a JSON list goes, like {"context": {{context}}}')
    if not answer_path:
        problems.add("answer_path: say where the answer's text is in the endpoint's JSON, like data.answer")
    else:
        try:
            mapping.parse_path(answer_path)
        except mapping.PathSyntaxError as exc:
            problems.add(f"answer_path: {exc}")
    return stored


def generator_add(
    *,
    golden_set: GoldenSet,
    name: str,
    kind: str = Generator.Kind.OPENAI,
    base_url: str = "",
    model: str = "",
    prompt: str = DEFAULT_PROMPT,
    temperature: float = 0.0,
    api_key_env: str = "",
    max_in_flight: int = 4,
    timeout_seconds: float = 60.0,
    retries: int = 3,
    request: dict | None = None,
    answer_path: str = "",
    price_in: Decimal | None = None,
    price_out: Decimal | None = None,
    user: AbstractBaseUser | None = None,
) -> Generator:
    """Record a generator of `golden_set` (see the module's docstring for each kind).
    GoldsetError with every fault ("field: why") and nothing recorded; ConflictError when
    the set has a generator of that name. An endpoint generator's `base_url` is stored as
    its request's URL, and its prompt hash is the hash of its request and answer path."""
    problems = ProblemCollector()
    problem = name_problem(name)
    if problem:
        problems.add(problem)
    stored_request: dict = {}
    if kind == Generator.Kind.OPENAI:
        base_url_problems(problems, base_url, "a generator's base URL")
        limits_problems(
            problems,
            model=model,
            api_key_env=api_key_env,
            max_in_flight=max_in_flight,
            timeout_seconds=timeout_seconds,
            retries=retries,
            price_in=price_in,
            price_out=price_out,
        )
        problem = prompt_problem(prompt)
        if problem:
            problems.add(f"prompt: {problem}")
        if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not 0 <= temperature <= MAX_TEMPERATURE:
            problems.add(f"temperature: from 0 to {MAX_TEMPERATURE:g}, got {temperature!r}")
        if request or answer_path:
            problems.add("request: only a generator of kind endpoint has a request and an answer path")
    elif kind == Generator.Kind.ENDPOINT:
        stored_request = _request_problems(problems, request, answer_path)
        if api_key_env:
            problems.add("api_key_env: an answer endpoint's secrets go in its headers, like Authorization: Bearer ${SEARCH_TOKEN}")
        limits_problems(
            problems,
            model=model or "endpoint",
            api_key_env="",
            max_in_flight=max_in_flight,
            timeout_seconds=timeout_seconds,
            retries=retries,
            price_in=price_in,
            price_out=price_out,
        )
    else:
        problems.add(f"kind: {kind!r} is not a kind of generator ({', '.join(Generator.Kind.values)})")
        prices_problems(problems, price_in=price_in, price_out=price_out)
    problems.raise_if_any("the generator cannot be added")
    if Generator.objects.filter(golden_set=golden_set, name=name.strip()).exists():
        raise ConflictError(f"golden set {golden_set.slug!r} has a generator named {name.strip()!r} already", field="name")
    endpoint = kind == Generator.Kind.ENDPOINT
    return Generator.objects.create(
        golden_set=golden_set,
        name=name.strip(),
        kind=kind,
        base_url=stored_request["url"] if endpoint else base_url.strip(),
        model=(model or "").strip(),
        prompt="" if endpoint else prompt,
        prompt_hash=endpoint_hash(stored_request, answer_path) if endpoint else prompt_hash(prompt),
        temperature=0.0 if endpoint else float(temperature),
        api_key_env=api_key_env or "",
        max_in_flight=max_in_flight,
        timeout_seconds=float(timeout_seconds),
        retries=retries,
        request=stored_request,
        answer_path=answer_path,
        price_in=price_in,
        price_out=price_out,
        created_by=user,
    )
