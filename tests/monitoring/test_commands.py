"""The monitoring commands, against a real engine server: register, try, run now."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from monitoring.models import Endpoint, NightlyRun

pytestmark = pytest.mark.django_db


def test_endpoint_add_registers_an_endpoint_with_its_series_and_secret_by_name(watched_set, engines, capsys, monkeypatch):
    monkeypatch.setenv("SEARCH_TOKEN", "only-the-worker-knows")
    call_command(
        "endpoint_add",
        "watched",
        "--name",
        "os-first",
        "--system",
        "prod",
        "--stage",
        "first_stage",
        "--preset",
        "opensearch",
        "--url",
        engines.base + "/wiki/_search",
        "--header",
        "Authorization: Bearer ${SEARCH_TOKEN}",
        "--count-url",
        engines.base + "/wiki/_count",
        "--max-in-flight",
        "4",
    )
    out = capsys.readouterr().out
    assert "endpoint os-first of watched: prod first_stage, OpenSearch _search" in out and "series 'os-first nightly'" in out
    endpoint = Endpoint.objects.get(name="os-first")
    assert endpoint.headers == [["Authorization", "Bearer ${SEARCH_TOKEN}"]]
    assert (endpoint.hits_path, endpoint.doc_id_path, endpoint.max_in_flight) == ("hits.hits", "_id", 4)


def test_endpoint_add_refuses_a_literal_secret_and_a_bad_cron_line_naming_the_fields(watched_set, engines):
    with pytest.raises(CommandError) as refused:
        call_command(
            "endpoint_add",
            "watched",
            "--name",
            "x",
            "--system",
            "prod",
            "--stage",
            "first_stage",
            "--preset",
            "goldset",
            "--url",
            engines.base + "/goldset",
            "--header",
            "Authorization: Bearer abc123",
            "--run-schedule",
            "0 2 * *",
        )
    message = str(refused.value)
    assert "headers:" in message and "${SEARCH_" in message
    assert "run_schedule: a cron line has 5 fields" in message
    assert "abc123" not in message
    assert not Endpoint.objects.filter(name="x").exists()


@pytest.mark.parametrize(("schedule", "every"), [("* * * * *", 1), ("*/30 * * * *", 30), ("0,15 3 * * *", 15)])
def test_a_run_schedule_more_often_than_hourly_is_refused_naming_its_interval(watched_set, engines, schedule, every):
    """Hardening #31 item 10: `* * * * *` (a full nightly run every minute) was accepted."""
    with pytest.raises(CommandError) as refused:
        call_command(
            "endpoint_add",
            "watched",
            "--name",
            "x",
            "--system",
            "prod",
            "--stage",
            "first_stage",
            "--preset",
            "goldset",
            "--url",
            engines.base + "/goldset",
            "--run-schedule",
            schedule,
        )
    assert f"run_schedule: {schedule!r} runs every {every} minute(s)" in str(refused.value) and "at most once an hour" in str(refused.value)
    assert not Endpoint.objects.filter(name="x").exists()
    for hourly in ("0 * * * *", "0 2 * * 1-5"):
        call_command(
            "endpoint_add",
            "watched",
            "--name",
            f"ok{len(hourly)}",
            "--system",
            "prod",
            "--stage",
            "first_stage",
            "--preset",
            "goldset",
            "--url",
            engines.base + "/goldset",
            "--run-schedule",
            hourly,
        )


@pytest.mark.parametrize(
    ("preset", "path", "count_url"),
    [
        ("opensearch", "/wiki/_search", "/wiki/_count"),
        ("solr", "/solr/wiki/select", "/solr/wiki/select?q=*:*&rows=0&wt=json"),
    ],
)
def test_an_engine_endpoint_typed_with_its_search_url_alone_is_taken_and_counts_its_index(watched_set, engines, preset, path, count_url):
    """Issue 30 item 3: `--preset opensearch --url .../_search` (and Solr's /select) was refused,
    "count_path is set but there is no count URL", though the count URL follows from it."""
    call_command(
        "endpoint_add",
        "watched",
        "--name",
        preset,
        "--system",
        "prod",
        "--stage",
        "first_stage",
        "--preset",
        preset,
        "--url",
        engines.base + path,
    )
    endpoint = Endpoint.objects.get(name=preset)
    assert endpoint.count_url == engines.base + count_url
    from monitoring.endpoints.client import fetch_index_size_sync
    from monitoring.endpoints.services import endpoint_spec

    assert fetch_index_size_sync(endpoint_spec(endpoint), allowed_networks=("127.0.0.0/8",)) == engines.index_size


def test_a_generic_get_endpoint_is_registered_as_a_new_user_types_it_and_answers(watched_set, engines, capsys):
    """Issue 30 item 3: `--method GET --body-template ''` was refused ("a GET sends no body"):
    the empty body was dropped and the preset's POST body kept."""
    call_command(
        "endpoint_add",
        "watched",
        "--name",
        "house",
        "--system",
        "prod",
        "--stage",
        "first_stage",
        "--preset",
        "generic",
        "--url",
        engines.base + "/house/v2/find",
        "--method",
        "GET",
        "--body-template",
        "",
        "--params-template",
        "text={{query}}&limit={{k}}&qid={{query_id}}",
        "--hits-path",
        "data.matches",
        "--doc-id-path",
        "doc.key",
        "--score-path",
        "relevance.value",
    )
    endpoint = Endpoint.objects.get(name="house")
    assert (endpoint.method, endpoint.body_template, endpoint.count_url) == ("GET", "", "")
    call_command("endpoint_probe", "watched", "house", "--query", "question q1", "--k", "3")
    assert "GET " + engines.base + "/house/v2/find?text=question%20q1&limit=3&qid=" in capsys.readouterr().out
    assert engines.seen[-1]["method"] == "GET"


def test_endpoint_probe_prints_the_request_the_raw_answer_and_the_ranking_read(endpoint, capsys):
    call_command("endpoint_probe", "watched", "prod-first", "--query", 'a "quoted" question', "--k", "3")
    out = capsys.readouterr().out
    assert f"request: POST {endpoint.url}" in out
    assert '"query": "a \\"quoted\\" question"' in out  # the body as sent, the text JSON-escaped
    assert "answer: HTTP 200" in out and '"results"' in out
    assert "ranking read (3 of k=3):" in out


def test_nightly_run_runs_every_endpoint_now_and_says_what_it_made(endpoint, capsys):
    call_command("nightly_run", "watched")
    out = capsys.readouterr().out
    night = NightlyRun.objects.get(endpoint=endpoint)
    assert f"prod-first: run {night.run.name!r}, 10 queries asked, 0 failed" in out
    assert night.trigger == NightlyRun.Trigger.MANUAL


def test_nightly_run_does_not_ask_an_endpoint_whose_scheduled_night_is_running(endpoint, engines, capsys):
    from datetime import UTC, datetime

    from monitoring.nightly.services import nightly_run_request

    nightly_run_request(endpoint=endpoint, slot=datetime(2026, 12, 1, 2, tzinfo=UTC))  # sent to a worker, not done yet
    with pytest.raises(CommandError, match="1 of 1 nightly run"):
        call_command("nightly_run", "watched")
    assert "prod-first: not started: the night of prod-first at 2026-12-01 02:00:00 UTC" in capsys.readouterr().out
    assert engines.seen == [] and NightlyRun.objects.count() == 1


def test_nightly_run_fails_loudly_when_no_run_was_made(watched_set):
    from monitoring.endpoints.services import endpoint_add

    endpoint_add(
        golden_set=watched_set,
        name="down",
        system="prod",
        stage="first_stage",
        preset="goldset",
        url="http://127.0.0.1:9/goldset",
        retries=0,
        timeout_seconds=0.5,
    )
    with pytest.raises(CommandError, match="1 of 1 nightly run"):
        call_command("nightly_run", "watched", "--endpoint", "down")
    with pytest.raises(CommandError, match="has no endpoint 'nope'"):
        call_command("nightly_run", "watched", "--endpoint", "nope")


def test_an_endpoint_may_not_be_named_as_a_page_of_its_own(watched_set, engines):
    with pytest.raises(CommandError, match="'add' is taken by the pages"):
        call_command(
            "endpoint_add",
            "watched",
            "--name",
            "add",
            "--system",
            "prod",
            "--stage",
            "first_stage",
            "--preset",
            "goldset",
            "--url",
            engines.base + "/goldset",
        )
