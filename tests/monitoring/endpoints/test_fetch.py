"""fetch_rankings against a real server on 127.0.0.1: each engine's shape, faults, bounds.

Waits go through a fake clock (conftest.FakeTime), so retries and the rate limit are
checked by what the client asked to wait, never by elapsed time."""

import asyncio

import pytest

from monitoring.endpoints.client import Pacing, QueryAnswer, TokenBucket, backoff_delay, fetch_rankings, fetch_rankings_sync
from monitoring.endpoints.spec import spec_from_preset
from tests.monitoring.endpoints.conftest import LOOPBACK
from tests.monitoring.endpoints.engines import INDEX_SIZE, ranking_for

ENGINE_URLS = {
    "goldset": "/goldset",
    "opensearch": "/wiki/_search",
    "elasticsearch": "/wiki/_search",
    "solr": "/solr/wiki/select",
    "vespa": "/search/",
}
QUERIES = [("q1", "what is a golden set"), ("q2", "recall at 100"), ("q3", "ndcg")]


def spec_for(engines, preset="goldset", **overrides):
    return spec_from_preset(preset, engines.base + ENGINE_URLS[preset], **{"max_per_second": 1000.0, **overrides})


def fetch(spec, queries, k=10, **options):
    return fetch_rankings_sync(spec, queries, k, allowed_networks=LOOPBACK, **options)


@pytest.mark.parametrize("preset", list(ENGINE_URLS))
def test_each_preset_reads_its_engines_documented_answer(engines, preset):
    report = fetch(spec_for(engines, preset), QUERIES, k=5)
    assert (report.ok, report.failed) == (3, 0)
    assert [answer.query_id for answer in report.answers] == ["q1", "q2", "q3"]
    for (_, text), answer in zip(QUERIES, report.answers, strict=True):
        assert answer.ranking == ranking_for(text, 5)
        assert (answer.status, answer.attempts, answer.error) == (200, 1, None)
    assert report.index_size == (INDEX_SIZE if preset == "goldset" else None)


def test_a_generic_endpoint_is_asked_and_read_as_its_form_says(engines, monkeypatch):
    """A house API: GET with the query, its id and k in the query string, a header naming
    an environment variable, the hits two levels down, the id and score nested in each."""
    monkeypatch.setenv("SEARCH_HOUSE_KEY", "k-123")
    spec = spec_from_preset(
        "generic",
        engines.base + "/house/v2/find",
        method="GET",
        body_template="",
        params_template="text={{query}}&limit={{k}}&qid={{query_id}}",
        headers=(("X-Api-Key", "${SEARCH_HOUSE_KEY}"),),
        hits_path="data.matches",
        doc_id_path="doc.key",
        score_path="relevance.value",
        max_per_second=1000.0,
    )
    report = fetch(spec, [("q/1#a", "what & why?")], k=4)
    assert report.answers[0].ranking == ranking_for("what & why?", 4)
    [request] = engines.seen
    assert request["method"] == "GET" and request["headers"]["X-Api-Key"] == "k-123"
    assert "qid=q%2F1%23a" in request["path"] and "limit=4" in request["path"]


def test_a_query_text_with_quotes_stays_valid_json(engines):
    text = 'the "best" \\ query\nwith {{k}} & é'
    for preset in ("goldset", "opensearch", "vespa", "solr"):
        engines.seen.clear()
        report = fetch(spec_for(engines, preset), [('q-"1"', text)])
        assert report.ok == 1, report.answers[0].error
        assert engines.texts_seen() == [text]
    goldset = fetch(spec_for(engines), [('q-"1"', text)])
    assert goldset.answers[0].ranking == ranking_for(text, 10)


def test_at_most_k_hits_are_kept_in_the_engines_order(engines):
    answer = fetch(
        spec_for(engines, "opensearch", body_template='{"size": 20, "query": {"multi_match": {"query": {{query}}}}}'), QUERIES[:1], k=3
    ).answers[0]
    assert answer.ranking == ranking_for(QUERIES[0][1], 3)


def test_duplicate_doc_ids_keep_the_first_and_are_counted(engines):
    engines.faults["dupes"] = "duplicates"
    report = fetch(spec_for(engines), [("q1", "dupes")], k=6)
    answer = report.answers[0]
    engine = ranking_for("dupes", 6)
    assert [doc for doc, _ in answer.ranking] == [doc for doc, _ in engine]
    assert (answer.duplicates, report.duplicates) == (2, 2)


def test_without_a_score_path_scores_fall_with_rank(engines):
    answer = fetch(spec_for(engines, "solr", score_path=""), QUERIES[:1], k=4).answers[0]
    assert [doc for doc, _ in answer.ranking] == [doc for doc, _ in ranking_for(QUERIES[0][1], 4)]
    assert [score for _, score in answer.ranking] == [4.0, 3.0, 2.0, 1.0]


def test_an_answer_of_500_is_retried_then_recorded_as_that_querys_error(engines, fake_time):
    engines.faults["broken"] = "500"
    report = fetch(spec_for(engines), [("q1", "fine"), ("q2", "broken")], pacing=fake_time.pacing())
    fine, broken = report.answers
    assert fine.ok and (report.ok, report.failed) == (1, 1)
    assert broken.error == "HTTP 500 after 3 attempts"
    assert (broken.status, broken.attempts, broken.ranking) == (500, 3, [])
    assert engines.texts_seen().count("broken") == 3
    backoffs = [seconds for seconds in fake_time.slept if seconds > 0.01]  # not the rate's 1 ms spacing
    assert backoffs == [backoff_delay(1, fake_time.pacing()), backoff_delay(2, fake_time.pacing())]


def test_backoff_doubles_with_jitter_and_is_capped():
    low, high = (lambda: 0.0), (lambda: 1.0)

    assert [backoff_delay(n, Pacing(random=low)) for n in (1, 2, 3)] == [0.25, 0.5, 1.0]
    assert [backoff_delay(n, Pacing(random=high)) for n in (1, 2, 3)] == [0.5, 1.0, 2.0]
    assert backoff_delay(30, Pacing(random=high)) == 10.0
    assert backoff_delay(1, Pacing(random=low), retry_after=120) == 30.0


def test_a_429_is_retried_after_its_retry_after(engines, fake_time):
    engines.faults["busy"] = "429"
    answer = fetch(spec_for(engines), [("q1", "busy")], pacing=fake_time.pacing()).answers[0]
    assert (answer.ok, answer.status, answer.attempts) == (True, 200, 2)
    assert answer.ranking == ranking_for("busy", 10)
    assert 1.0 in fake_time.slept  # the server's Retry-After, longer than the first backoff


def test_an_answer_that_is_not_json_is_that_querys_error(engines):
    engines.faults["html"] = "malformed"
    answer = fetch(spec_for(engines), [("q1", "html")]).answers[0]
    assert answer.error == "answer is not JSON: Expecting value at line 1 column 1"
    assert (answer.status, answer.attempts) == (200, 1)


def test_a_hit_without_a_doc_id_is_that_querys_error(engines):
    engines.faults["holed"] = "no-doc-id"
    report = fetch(spec_for(engines, "vespa"), [("q1", "holed"), ("q2", "fine")])
    assert report.answers[0].error == "hit 3 has no doc id at 'id'"
    assert report.answers[1].ok


def test_hits_that_are_not_a_list_or_not_there_are_told_with_the_path(engines):
    engines.faults["odd"] = "not-a-list"
    odd = fetch(spec_for(engines), [("q1", "odd")]).answers[0]
    assert odd.error == "hits_path 'results' holds an object, not a list of hits"
    wrong_path = fetch(spec_for(engines, "opensearch", hits_path="hits.docs"), [("q1", "x")]).answers[0]
    assert wrong_path.error == "hits_path 'hits.docs' not found in the answer (top-level keys: took, timed_out, hits)"


def test_an_endpoint_slower_than_the_timeout_is_each_querys_error(engines, fake_time):
    engines.faults["slow"] = "slow"
    spec = spec_for(engines, timeout_seconds=0.2, retries=1)
    report = fetch(spec, [("q1", "slow"), ("q2", "quick")], pacing=fake_time.pacing())
    slow, quick = report.answers
    assert slow.error == "no answer within 0.2 s (2 attempts)"
    assert (slow.status, slow.attempts) == (None, 2)
    assert quick.ok


def test_an_endpoint_that_is_down_is_each_querys_error_not_a_crash(closed_port, fake_time):
    spec = spec_from_preset("goldset", f"http://127.0.0.1:{closed_port}/goldset", max_per_second=1000.0)
    report = fetch(spec, QUERIES, pacing=fake_time.pacing())
    assert (report.ok, report.failed) == (0, 3)
    for answer in report.answers:
        assert answer.error.startswith(f"could not connect to 127.0.0.1:{closed_port} (")
        assert answer.error.endswith("(3 attempts)")


def test_requests_in_flight_never_exceed_the_bound(engines):
    engines.hold_seconds = 0.03
    queries = [(f"q{n}", f"query {n}") for n in range(40)]
    report = fetch(spec_for(engines, max_in_flight=4), queries)
    assert report.ok == 40
    assert 2 <= engines.max_in_flight <= 4
    engines.max_in_flight = 0
    fetch(spec_for(engines, max_in_flight=1), queries[:8])
    assert engines.max_in_flight == 1


def test_queries_are_pulled_from_the_iterator_as_workers_free_up(engines):
    """No task per query up front: with 2 workers, at most 2 queries are taken ahead of
    the answers given back (so 10,000 queries hold 2, not 10,000, in memory)."""
    taken, answered = [], []

    def queries():
        for n in range(12):
            taken.append(n)
            assert len(taken) - len(answered) <= 2
            yield f"q{n}", f"text {n}"

    spec = spec_for(engines, max_in_flight=2)
    report = asyncio.run(fetch_rankings(spec, queries(), 5, on_answer=answered.append, keep_answers=False, allowed_networks=LOOPBACK))
    assert (report.ok, report.answers, len(answered)) == (12, [], 12)


def test_the_token_bucket_spaces_starts_by_the_rate(fake_time):
    bucket = TokenBucket(4.0, pacing=fake_time.pacing())

    async def starts() -> list[float]:
        moments = []
        for _ in range(5):
            await bucket.take()
            moments.append(fake_time.now - 1000.0)
        return moments

    assert asyncio.run(starts()) == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_the_rate_bounds_the_whole_fetch(engines, fake_time):
    """Five queries at two a second: the client waits a half second before each start but the first."""
    report = fetch(spec_for(engines, max_per_second=2.0), [(f"q{n}", f"t{n}") for n in range(5)], pacing=fake_time.pacing())
    assert report.ok == 5
    assert fake_time.now - 1000.0 == pytest.approx(2.0)


def test_an_on_answer_that_fails_stops_the_fetch_and_its_error_is_raised(engines):
    def fail(answer: QueryAnswer) -> None:
        raise RuntimeError("the store is gone")

    questions = [(f"q{n}", f"t{n}") for n in range(50)]
    with pytest.raises(RuntimeError, match="the store is gone"):
        asyncio.run(fetch_rankings(spec_for(engines, max_in_flight=2), questions, 5, on_answer=fail, allowed_networks=LOOPBACK))
    assert len(engines.seen) < 50


def test_the_async_fetch_calls_on_answer_on_the_loop(engines):
    seen = []
    report = asyncio.run(fetch_rankings(spec_for(engines), QUERIES, 3, on_answer=seen.append, allowed_networks=LOOPBACK))
    assert sorted(answer.query_id for answer in seen) == ["q1", "q2", "q3"]
    assert report.answers[0].ranking == ranking_for(QUERIES[0][1], 3)


def test_a_spec_with_problems_is_refused_before_anything_is_sent(engines):
    with pytest.raises(ValueError, match="max_in_flight"):
        fetch(spec_for(engines, max_in_flight=0), QUERIES)
    assert engines.seen == []
