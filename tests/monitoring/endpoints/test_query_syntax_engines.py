"""Query-syntax escapes against the engines themselves (issue 30 item 3): a template that puts
the query inside an engine's own query syntax, Lucene's query_string or Groonga's --query,
broke on a query holding that syntax's special characters ("recall@k?", a path, a quote).
`{{query|lucene}}` and `{{query|groonga}}` make the query literal words again.

The engines are real servers started here: osmem-server (an OpenSearch-compatible server
from PyPI) and Groonga's own HTTP server (Debian's groonga-bin, which .ci/run installs).
"""

import json
import shutil
import socket
import subprocess
import time
from dataclasses import replace

import pytest
import requests

from monitoring.endpoints.client import fetch_rankings_sync, probe_sync
from monitoring.endpoints.spec import spec_from_preset, spec_problems

LOOPBACK = ("127.0.0.0/8",)
PAGES = {
    "d1": "what recall at k means for a retrieval system",
    "d2": "how to read a path like a/b in the index",
    "d3": "shards that were not refreshed after indexing",
    "d4": 'the "recall@k" figure (top-k) is 0.9: good, see a/b',
}
# Each engine's documented special characters, in queries people type. Lucene's analyzer
# drops punctuation, so its queries are words among symbols (matched with OR); Groonga's
# bigrams keep symbols, so its queries are text of a page, symbols included (matched with AND).
GROONGA_QUERIES = ['"recall@k" (top-k)', "figure (top-k) is 0.9: good", "see a/b", "0.9: good, see"]
HOSTILE = [
    'what does "recall@k" mean?',
    "read a/b (the path) AND the index: shards!",
    "refreshed shards ~ [stale] {index} ^2 * -not + OR \\ end",
    "recall > k < indexing = system | retrieval & shards",
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            requests.get(url, timeout=5)
            return
        except requests.ConnectionError:
            assert process.poll() is None and time.monotonic() < deadline, "the engine did not start"
            time.sleep(0.1)


@pytest.fixture
def opensearch():
    osmem = pytest.importorskip("osmem_server")
    port = free_port()
    process = subprocess.Popen(
        [osmem.resolve_binary(), "-addr", f"127.0.0.1:{port}"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(base, process)
        requests.put(f"{base}/wiki", json={"mappings": {"properties": {"text": {"type": "text"}}}}, timeout=10).raise_for_status()
        for doc_id, text in PAGES.items():
            requests.put(f"{base}/wiki/_doc/{doc_id}?refresh=true", json={"text": text}, timeout=10).raise_for_status()
        yield base
    finally:
        process.kill()
        process.wait()


@pytest.fixture
def groonga(tmp_path):
    binary = shutil.which("groonga")
    if binary is None:
        pytest.skip("groonga (Debian's groonga-bin) is not installed")
    port = free_port()
    database = tmp_path / "db" / "wiki"
    database.parent.mkdir()
    subprocess.run([binary, "-n", str(database), "quit"], check=True, capture_output=True)
    process = subprocess.Popen(
        [binary, "-s", "--protocol", "http", "--port", str(port), "--bind-address", "127.0.0.1", str(database)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{base}/d/status", process)
        for command, params in (
            ("table_create", {"name": "Pages", "flags": "TABLE_HASH_KEY", "key_type": "ShortText"}),
            ("column_create", {"table": "Pages", "name": "text", "flags": "COLUMN_SCALAR", "type": "Text"}),
            (
                "table_create",
                {
                    "name": "Terms",
                    "flags": "TABLE_PAT_KEY",
                    "key_type": "ShortText",
                    "default_tokenizer": "TokenBigram",
                    "normalizer": "NormalizerAuto",
                },
            ),
            (
                "column_create",
                {"table": "Terms", "name": "pages_text", "flags": "COLUMN_INDEX|WITH_POSITION", "type": "Pages", "source": "text"},
            ),
        ):
            requests.get(f"{base}/d/{command}", params=params, timeout=10).raise_for_status()
        records = [{"_key": doc_id, "text": text} for doc_id, text in PAGES.items()]
        requests.post(f"{base}/d/load", params={"table": "Pages"}, json=records, timeout=10).raise_for_status()
        yield base
    finally:
        process.kill()
        process.wait()


def lucene_spec(base: str, escape: str):
    placeholder = "{{query" + escape + "}}"
    body = '{"size": {{k}}, "query": {"query_string": {"query": "' + placeholder + '", "default_field": "text", "default_operator": "OR"}}}'
    return replace(spec_from_preset("opensearch", f"{base}/wiki/_search", body_template=body), retries=0)


def groonga_spec(base: str, escape: str):
    return replace(
        spec_from_preset(
            "generic",
            f"{base}/d/select",
            method="GET",
            body_template="",
            params_template="table=Pages&match_columns=text&command_version=3&output_columns=_key,_score"
            f"&limit={{{{k}}}}&query={{{{query{escape}}}}}",
            hits_path="body.records",
            doc_id_path="0",
            score_path="1",
            index_size_path="",
        ),
        retries=0,
        count_url="",
        count_path="",
    )


@pytest.mark.parametrize(("engine", "make_spec"), [("opensearch", lucene_spec), ("groonga", groonga_spec)])
def test_a_query_with_the_engines_special_characters_is_asked_as_words_once_escaped(engine, make_spec, request):
    base = request.getfixturevalue(engine)
    escape = "|lucene" if engine == "opensearch" else "|groonga"
    escaped, raw = make_spec(base, escape), make_spec(base, "")
    assert spec_problems(escaped) == []
    texts = HOSTILE if engine == "opensearch" else GROONGA_QUERIES
    queries = [(f"q{n}", text) for n, text in enumerate(texts, start=1)]
    report = fetch_rankings_sync(escaped, queries, 3, allowed_networks=LOOPBACK)
    assert report.failed == 0, [answer.error for answer in report.answers if answer.error]
    assert all(answer.ranking for answer in report.answers), [(a.query_id, a.ranking) for a in report.answers]  # every query found pages
    if engine == "opensearch":
        assert report.answers[0].ranking[0][0] in ("d1", "d4")  # "recall": the pages about recall at k
    else:
        assert [answer.ranking[0][0] for answer in report.answers[:3]] == ["d4", "d4", "d4"]
    unescaped = fetch_rankings_sync(raw, queries, 3, allowed_networks=LOOPBACK)
    assert unescaped.failed > 0  # without the escape the engine refuses the syntax: what users hit


def test_an_unknown_escape_is_refused_naming_the_known_ones():
    spec = spec_from_preset("goldset", "http://search:8000/goldset", body_template='{"query": "{{query|solr}}"}')
    [problem] = [p for p in spec_problems(spec) if "unknown placeholder" in p]
    assert "{{query|solr}}" in problem and "{{query|lucene}}" in problem and "{{query|groonga}}" in problem


def test_a_probe_shows_the_escaped_query_as_sent(opensearch):
    answer = probe_sync(lucene_spec(opensearch, "|lucene"), "q1", 'what is "recall@k"?', 3, allowed_networks=LOOPBACK)
    assert answer.error is None and answer.ranking
    sent = json.loads(answer.body)["query"]["query_string"]["query"]
    assert sent == 'what is \\"recall@k\\"\\?'  # the quote and ? escaped for Lucene (and then for JSON)
