"""EndpointSpec's checks and presets: every problem named by its field, no secret stored."""

import json
from dataclasses import replace
from urllib.parse import urlsplit

import pytest

from monitoring.endpoints import mapping
from monitoring.endpoints.spec import (
    PRESETS,
    EndpointSpec,
    MissingVariable,
    headers_shown,
    preset_defaults,
    resolve_headers,
    spec_from_preset,
    spec_problems,
    suggested_count_url,
)

URLS = {
    "goldset": "http://search:8000/goldset",
    "opensearch": "http://search:9200/wiki/_search",
    "elasticsearch": "http://search:9200/wiki/_search",
    "solr": "http://solr:8983/solr/wiki/select",
    "vespa": "http://vespa:8080/search/",
    "generic": "http://search:8000/api/search",
}


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_gives_a_spec_without_problems(preset):
    spec = (
        spec_from_preset(preset, URLS[preset], hits_path="results", doc_id_path="id")
        if preset == "generic"
        else spec_from_preset(preset, URLS[preset])
    )
    assert spec_problems(spec) == []


def test_the_presets_follow_each_engines_documented_shape():
    assert preset_defaults("opensearch")["hits_path"] == "hits.hits"
    assert (preset_defaults("elasticsearch")["doc_id_path"], preset_defaults("elasticsearch")["score_path"]) == ("_id", "_score")
    solr = preset_defaults("solr")
    assert (solr["method"], solr["hits_path"], solr["count_path"]) == ("GET", "response.docs", "response.numFound")
    assert "fl=id,score" in solr["params_template"] and "wt=json" in solr["params_template"]
    vespa = preset_defaults("vespa")
    assert (vespa["hits_path"], vespa["doc_id_path"], vespa["score_path"]) == ("root.children", "id", "relevance")
    body = json.loads(mapping.render_json(vespa["body_template"], mapping.SAMPLE_VALUES))
    assert set(body) == {"yql", "query", "hits"} and "userQuery()" in body["yql"]
    goldset = json.loads(mapping.render_json(preset_defaults("goldset")["body_template"], mapping.SAMPLE_VALUES))
    assert goldset == {"query": mapping.SAMPLE_VALUES["query"], "query_id": "q-1", "k": 10}


def test_the_count_url_is_suggested_beside_the_search_url():
    assert suggested_count_url("opensearch", "http://search:9200/wiki/_search") == "http://search:9200/wiki/_count"
    assert suggested_count_url("solr", "http://solr:8983/solr/wiki/select") == "http://solr:8983/solr/wiki/select?q=*:*&rows=0&wt=json"
    assert suggested_count_url("vespa", "http://vespa:8080/search/").startswith("http://vespa:8080/search/?yql=")
    assert suggested_count_url("goldset", "http://search:8000/goldset") == ""
    assert spec_from_preset("goldset", URLS["goldset"]).count_path == ""


def base(**changes) -> EndpointSpec:
    return replace(spec_from_preset("goldset", URLS["goldset"]), **changes)


def fields_at_fault(spec: EndpointSpec) -> list[str]:
    return [problem.split(":", 1)[0] for problem in spec_problems(spec)]


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"preset": "lucene"}, "preset", "not one of"),
        ({"method": "PUT"}, "method", "not GET or POST"),
        ({"url": "ftp://search/"}, "url", "not an http:// or https:// URL"),
        ({"url": "http://user:pw@search/"}, "url", "may not carry a user name or password"),
        ({"url": "http://169.254.169.254/latest/"}, "url", "link-local/metadata"),
        ({"url": "http://metadata.google.internal/"}, "url", "cloud metadata service"),
        ({"body_template": '{"query": {{query}}, "k": {{depth}}}'}, "body_template", "unknown placeholder {{depth}}"),
        ({"body_template": '{"query": {{query}} "k": {{k}}}'}, "body_template", "not valid JSON once a sample query is put in"),
        ({"body_template": '{"k": {{k}}}'}, "body_template", "no {{query}} placeholder"),
        ({"body_template": ""}, "body_template", "a POST needs a JSON body template"),
        ({"method": "GET"}, "body_template", "a GET sends no body"),
        ({"hits_path": "hits..hits"}, "hits_path", "not a dotted path"),
        ({"doc_id_path": "doc id"}, "doc_id_path", "not a dotted path"),
        ({"count_url": "http://search:8000/count"}, "count_path", "say where the count URL's answer holds"),
        ({"count_path": "count"}, "count_url", "no count URL"),
        ({"timeout_seconds": 0.0}, "timeout_seconds", "from 0.1 to 120"),
        ({"timeout_seconds": 600}, "timeout_seconds", "from 0.1 to 120"),
        ({"retries": -1}, "retries", "from 0 to 5"),
        ({"retries": 9}, "retries", "from 0 to 5"),
        ({"max_in_flight": 0}, "max_in_flight", "from 1 to 64"),
        ({"max_in_flight": 500}, "max_in_flight", "from 1 to 64"),
        ({"max_per_second": 0}, "max_per_second", "more than 0"),
        ({"max_per_second": 50_000}, "max_per_second", "at most 10,000"),
    ],
)
def test_each_problem_names_its_field(changes, field, words):
    problems = spec_problems(base(**changes))
    assert any(problem.startswith(f"{field}: ") and words in problem for problem in problems), problems


def test_every_problem_is_told_at_once():
    spec = base(method="PUT", retries=9, max_in_flight=0, hits_path="a..b")
    assert fields_at_fault(spec) == ["method", "hits_path", "retries", "max_in_flight"]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("Authorization", "Bearer abc123"),
        ("Authorization", "Bearer sk-live-abcdef ${SEARCH_TOKEN}"),
        ("X-Api-Key", "0f9e8d7c6b5a"),
        ("X-Auth-Token", "abc"),
        ("Cookie", "session=9f8e7d"),
        ("Proxy-Authorization", "Basic dXNlcjpwYXNz"),
        ("X-Client-Secret", "hunter2"),
    ],
)
def test_secrets_in_headers_must_name_an_environment_variable(name, value):
    problems = spec_problems(base(headers=((name, value),)))
    assert len(problems) == 1 and problems[0].startswith("headers: ")
    assert "no secret is stored in the database" in problems[0]
    assert "${" in problems[0]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("Authorization", "Bearer ${SEARCH_TOKEN}"),
        ("Authorization", "Basic ${SEARCH_BASIC}"),
        ("X-Api-Key", "${SEARCH_API_KEY}"),
        ("Cookie", "session=${SEARCH_SESSION}"),
        ("X-Tenant", "wiki-en"),
    ],
)
def test_headers_that_name_their_secret_are_accepted(name, value):
    assert spec_problems(base(headers=((name, value),))) == []


def test_only_variables_meant_for_search_may_be_sent():
    """Else a manager could send the worker's DJANGO_SECRET_KEY to a server of theirs."""
    problems = spec_problems(base(headers=(("X-Debug", "${DJANGO_SECRET_KEY}"),)))
    assert problems and "only variables starting with SEARCH_" in problems[0]
    assert spec_problems(base(headers=(("X-Debug", "${DJANGO_SECRET_KEY}"),)), env_prefix="DJANGO_") == []


@pytest.mark.parametrize("value", ["Bearer ${1TOKEN}", "Bearer ${SEARCH-TOKEN}", "Bearer ${SEARCH_TOKEN"])
def test_an_invalid_variable_reference_is_a_problem(value):
    problems = spec_problems(base(headers=(("Authorization", value),)))
    assert problems and all(problem.startswith("headers: ") for problem in problems)


def test_headers_are_shown_as_typed_and_resolved_only_when_sent():
    spec = base(headers=(("Authorization", "Bearer ${SEARCH_TOKEN}"), ("X-Tenant", "wiki")))
    assert headers_shown(spec) == [("Authorization", "Bearer ${SEARCH_TOKEN}"), ("X-Tenant", "wiki")]
    resolved = resolve_headers(spec, environ={"SEARCH_TOKEN": "s3cr3t", "SEARCH_TOKEN_HOSTS": urlsplit(spec.url).hostname})
    assert resolved == {"Authorization": "Bearer s3cr3t", "X-Tenant": "wiki"}


def test_a_missing_variable_names_the_variable_and_the_header():
    spec = base(headers=(("Authorization", "Bearer ${SEARCH_TOKEN}"),))
    with pytest.raises(MissingVariable, match=r"header 'Authorization' names \$\{SEARCH_TOKEN\}, which is not set"):
        resolve_headers(spec, environ={})
