"""The "try it" probe, the count URL, headers from the environment, and refused addresses."""

import asyncio
from dataclasses import replace

import pytest

from monitoring.endpoints import client
from monitoring.endpoints.addresses import AddressRefused, CheckedResolver, check_url
from monitoring.endpoints.client import RAW_SHOWN_CHARS, IndexSizeError, fetch_index_size_sync, fetch_rankings_sync, probe_sync
from monitoring.endpoints.spec import spec_from_preset
from tests.monitoring.endpoints.conftest import LOOPBACK
from tests.monitoring.endpoints.engines import INDEX_SIZE, ranking_for


def test_a_probe_shows_the_request_as_sent_and_the_raw_answer(engines, monkeypatch):
    monkeypatch.setenv("SEARCH_TOKEN", "s3cr3t")
    spec = spec_from_preset("opensearch", engines.base + "/wiki/_search", headers=(("Authorization", "Bearer ${SEARCH_TOKEN}"),))
    answer = probe_sync(spec, "q1", 'a "quoted" query', 3, allowed_networks=LOOPBACK)
    assert (answer.method, answer.url, answer.status, answer.error) == ("POST", engines.base + "/wiki/_search", 200, None)
    assert answer.headers == [("Authorization", "Bearer ${SEARCH_TOKEN}")]
    assert '"query": "a \\"quoted\\" query"' in answer.body
    assert '"hits"' in answer.raw_text and not answer.truncated
    assert answer.ranking == ranking_for('a "quoted" query', 3)
    assert engines.seen[0]["headers"]["Authorization"] == "Bearer s3cr3t"  # sent resolved, shown not


def test_a_probe_of_a_long_answer_shows_its_start_and_says_it_was_cut(engines, monkeypatch):
    spec = spec_from_preset(
        "opensearch", engines.base + "/wiki/_search", body_template='{"size": {{k}}, "query": {"multi_match": {"query": {{query}}}}}'
    )
    engines.faults["x"] = "duplicates"
    answer = probe_sync(spec, "q1", "x", 40, allowed_networks=LOOPBACK)
    assert answer.ranking and answer.problems == ["2 duplicate doc id(s) dropped, the first of each kept"]
    assert RAW_SHOWN_CHARS == 20_000 and not answer.truncated
    monkeypatch.setattr(client, "RAW_SHOWN_CHARS", 200)
    cut = probe_sync(spec, "q1", "x", 40, allowed_networks=LOOPBACK)
    assert cut.truncated and cut.raw_text.startswith(answer.raw_text[:200])
    assert "truncated: the answer has" in cut.raw_text and cut.ranking == answer.ranking


def test_a_probe_tells_what_it_could_not_read(engines):
    engines.faults["html"] = "malformed"
    answer = probe_sync(spec_from_preset("goldset", engines.base + "/goldset"), "q1", "html", 5, allowed_networks=LOOPBACK)
    assert (answer.status, answer.raw_text, answer.ranking) == (200, "<html>Bad gateway</html>", [])
    assert answer.problems == ["answer is not JSON: Expecting value at line 1 column 1"]


def test_a_missing_environment_variable_is_each_querys_error(engines, monkeypatch):
    monkeypatch.delenv("SEARCH_TOKEN", raising=False)
    spec = spec_from_preset("goldset", engines.base + "/goldset", headers=(("Authorization", "Bearer ${SEARCH_TOKEN}"),))
    report = fetch_rankings_sync(spec, [("q1", "a"), ("q2", "b")], 5, allowed_networks=LOOPBACK)
    assert report.failed == 2 and engines.seen == []
    assert report.answers[0].error == "header 'Authorization' names ${SEARCH_TOKEN}, which is not set in the worker's environment"


def test_the_index_size_comes_from_the_count_url(engines):
    for preset, path in (("opensearch", "/wiki/_search"), ("solr", "/solr/wiki/select"), ("vespa", "/search/")):
        spec = spec_from_preset(preset, engines.base + path)
        assert fetch_index_size_sync(spec, allowed_networks=LOOPBACK) == INDEX_SIZE, preset
    assert fetch_index_size_sync(spec_from_preset("goldset", engines.base + "/goldset"), allowed_networks=LOOPBACK) is None


def test_a_count_answer_without_the_count_says_so(engines):
    spec = spec_from_preset("opensearch", engines.base + "/wiki/_search", count_path="total")
    with pytest.raises(IndexSizeError, match="count_path 'total' holds nothing in the count answer"):
        fetch_index_size_sync(spec, allowed_networks=LOOPBACK)


def test_a_metadata_address_is_refused_even_when_its_network_is_allowed():
    message = asyncio.run(check_url("http://169.254.169.254/latest/meta-data/", ("169.254.0.0/16",)))
    assert (
        message
        == "http://169.254.169.254/latest/meta-data/ resolves to 169.254.169.254, a link-local/metadata address Goldset never queries"
    )
    assert "link-local/metadata" in asyncio.run(check_url("http://100.100.100.200/", ("0.0.0.0/0",)))


def test_a_probe_of_a_metadata_url_sends_nothing_and_says_why():
    spec = replace(spec_from_preset("opensearch", "http://search:9200/wiki/_search"), url="http://169.254.169.254/wiki/_search")
    answer = probe_sync(spec, "q1", "x", 3, allowed_networks=("169.254.0.0/16",))
    assert answer.status is None and "link-local/metadata address, which Goldset never queries" in answer.error


def test_a_private_address_is_refused_naming_the_setting_and_never_queried():
    report = fetch_rankings_sync(
        spec_from_preset("opensearch", "http://10.1.2.3:9200/wiki/_search"), [("q1", "x")], 3, allowed_networks=LOOPBACK
    )
    error = report.answers[0].error
    assert (
        error
        == "http://10.1.2.3:9200/wiki/_search resolves to 10.1.2.3, an internal address; allow its network in RETRIEVAL_ALLOWED_NETWORKS"
    )
    assert (report.refused, report.answers[0].attempts) == (error, 0)


def test_loopback_is_refused_unless_its_network_is_allowed(engines):
    spec = spec_from_preset("goldset", engines.base.replace("127.0.0.1", "localhost") + "/goldset")
    refused = fetch_rankings_sync(spec, [("q1", "x")], 3, allowed_networks=())
    assert "an internal address; allow its network in RETRIEVAL_ALLOWED_NETWORKS" in refused.answers[0].error
    assert engines.seen == []
    allowed = fetch_rankings_sync(spec, [("q1", "x")], 3, allowed_networks=("127.0.0.0/8", "::1/128"))
    assert allowed.ok == 1


def test_the_resolver_refuses_a_name_whose_addresses_are_not_allowed():
    """What aiohttp connects to comes from this resolver, so a name that resolves
    differently at connect time (DNS rebinding) is checked again there."""

    async def resolve(host, networks):
        return await CheckedResolver(networks).resolve(host, 80)

    with pytest.raises(AddressRefused, match="internal address"):
        asyncio.run(resolve("localhost", ()))
    with pytest.raises(AddressRefused, match="metadata"):
        asyncio.run(resolve("metadata.google.internal", ("0.0.0.0/0",)))
    assert {result["host"] for result in asyncio.run(resolve("localhost", ("127.0.0.0/8", "::1/128")))} <= {"127.0.0.1", "::1"}
