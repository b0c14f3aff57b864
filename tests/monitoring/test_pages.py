"""The monitoring page and the endpoint pages: who may see and do what, what they show, the
forms' errors on their fields, "run now" and "probe now", headers never resolved, and a query
count that does not grow with the nights.

Data is made through the real services: a published set, a tiny search service speaking the
Goldset contract, `endpoint_add`, and nights stored as a nightly run stores them
(tests/monitoring/conftest.py).
"""

import re
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from evaluation.canaries import canary_add
from evaluation.models import Alert, Run
from evaluation.settings_service import evaluation_settings_update
from goldenset.models import Page, Query
from goldenset.services import judgment_record, version_publish
from monitoring.models import Endpoint, NightlyRun, ProbeRound
from monitoring.nightly.services import nightly_run_execute, nightly_run_request
from monitoring.probes.services import probe_now
from tests.monitoring.page_data import endpoints_add, night_store, nights_store, people, search_service, watched  # noqa: F401

pytestmark = pytest.mark.django_db

SECRET = "s3cr3t-token-value-never-shown"


def _login(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def endpoints(watched, search_service, monkeypatch):
    monkeypatch.setenv("SEARCH_TOKEN", SECRET)
    return endpoints_add(watched, search_service, headers="Authorization: Bearer ${SEARCH_TOKEN}\nX-Team: search")


@pytest.fixture
def nights(endpoints, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return nights_store(endpoints, 5, stale_last=2)


def _canary(golden_set, query_id: str, doc_id: str):
    query = Query.objects.get(golden_set=golden_set, query_id=query_id)
    page = Page.objects.get(corpus_id=golden_set.corpus_id, doc_id=doc_id)
    return canary_add(golden_set=golden_set, query=query, page=page, note="newest runbook")


# --- who may see and do what -------------------------------------------------------------


def _gets(slug):
    return [
        reverse("monitoring", args=[slug]),
        reverse("monitoring_progress", args=[slug]),
        reverse("endpoints", args=[slug]),
        reverse("endpoint_add", args=[slug]),
        reverse("endpoint_edit", args=[slug, "hybrid-first"]),
        reverse("endpoint_try", args=[slug, "hybrid-first"]),
        reverse("endpoint_delete", args=[slug, "hybrid-first"]),
        reverse("endpoint_run_now", args=[slug, "hybrid-first"]),
    ]


def _posts(slug):
    return [
        reverse("endpoint_add", args=[slug]),
        reverse("endpoint_edit", args=[slug, "hybrid-first"]),
        reverse("endpoint_try", args=[slug, "hybrid-first"]),
        reverse("endpoint_run_now", args=[slug, "hybrid-first"]),
        reverse("endpoint_probe_now", args=[slug, "hybrid-first"]),
        reverse("endpoint_index_probe_now", args=[slug, "hybrid-first"]),
        reverse("endpoint_delete", args=[slug, "hybrid-first"]),
    ]


READ_PAGES = {"monitoring", "monitoring_progress"}


def test_anonymous_visitors_are_sent_to_the_login_page_from_every_page_and_action(client, endpoints, watched):
    for url in _gets(watched.slug):
        response = client.get(url)
        assert response.status_code == 302 and response.url.startswith(reverse("login")), url
    for url in _posts(watched.slug):
        response = client.post(url)
        assert response.status_code == 302 and response.url.startswith(reverse("login")), url
    assert NightlyRun.objects.count() == 0 and ProbeRound.objects.count() == 0


@pytest.mark.parametrize("who", ["stranger", "annotator"])
def test_strangers_and_annotators_get_a_404_from_every_page_and_action(client, endpoints, watched, people, who):
    # Annotators judge blind: like the results pages, monitoring names systems' scores and
    # the canary pages a query must find, so they get the 404 a stranger gets.
    _login(client, people[who])
    for url in _gets(watched.slug):
        assert client.get(url).status_code == 404, url
    for url in _posts(watched.slug):
        assert client.post(url).status_code == 404, url
    assert NightlyRun.objects.count() == 0 and ProbeRound.objects.count() == 0


def test_an_adjudicator_reads_the_monitoring_page_but_no_endpoint_page_and_starts_nothing(client, endpoints, watched, people):
    _login(client, people["adjudicator"])
    page = client.get(reverse("monitoring", args=[watched.slug]))
    assert page.status_code == 200
    assert b"Run now" not in page.content and b"Probe now" not in page.content
    assert reverse("endpoints", args=[watched.slug]).encode() not in page.content
    assert client.get(reverse("monitoring_progress", args=[watched.slug])).status_code == 200
    for url in _gets(watched.slug):
        if not any(url == reverse(name, args=[watched.slug]) for name in READ_PAGES):
            assert client.get(url).status_code == 404, url
    for url in _posts(watched.slug):
        assert client.post(url, {"query": "x", "name": "n"}).status_code == 404, url
    assert NightlyRun.objects.count() == 0 and ProbeRound.objects.count() == 0


def test_a_manager_opens_every_page(client, endpoints, watched, people):
    _canary(watched, "q7", "d7")
    _login(client, people["manager"])
    for url in _gets(watched.slug):
        assert client.get(url).status_code == 200, url
    page = client.get(reverse("monitoring", args=[watched.slug]))
    assert b"Run now" in page.content and b"Probe now" in page.content


def test_the_golden_set_page_links_to_monitoring(client, watched, people):
    _login(client, people["adjudicator"])
    page = client.get(reverse("golden_set", args=[watched.slug]))
    assert reverse("monitoring", args=[watched.slug]).encode() in page.content


def test_a_manager_deletes_an_endpoint_after_being_asked_and_its_runs_stay(client, nights, endpoints, watched, people):
    """Issue 30 item 7: an endpoint could not be deleted."""
    first, _ = endpoints
    runs = set(Run.objects.filter(series=first.series).values_list("pk", flat=True))
    _login(client, people["manager"])
    url = reverse("endpoint_delete", args=[watched.slug, first.name])
    assert url in client.get(reverse("endpoint_edit", args=[watched.slug, first.name])).content.decode()
    asked = client.get(url).content.decode()
    assert f"Delete endpoint <code>{first.name}</code>?" in asked and "stay in the series" in asked
    assert Endpoint.objects.filter(pk=first.pk).exists()  # asking deletes nothing
    done = client.post(url, follow=True).content.decode()
    assert f"Endpoint {first.name} deleted" in done and not Endpoint.objects.filter(pk=first.pk).exists()
    assert runs and set(Run.objects.filter(series__name=first.series.name).values_list("pk", flat=True)) == runs


def test_an_endpoint_with_a_night_under_way_is_not_deleted(client, endpoints, watched, people):
    first, _ = endpoints
    NightlyRun.objects.create(endpoint=first, slot=timezone.now(), status=NightlyRun.Status.RUNNING)
    _login(client, people["manager"])
    refused = client.post(reverse("endpoint_delete", args=[watched.slug, first.name]))
    assert refused.status_code == 409 and "is under way" in refused.content.decode()
    assert Endpoint.objects.filter(pk=first.pk).exists()


def test_an_unknown_endpoint_is_a_404(client, endpoints, watched, people):
    _login(client, people["manager"])
    assert client.get(reverse("endpoint_edit", args=[watched.slug, "nope"])).status_code == 404
    assert client.post(reverse("endpoint_run_now", args=[watched.slug, "nope"])).status_code == 404


# --- the monitoring page --------------------------------------------------------------------


def test_the_page_shows_each_series_trend_and_its_latest_night_with_version_and_k(client, nights, watched, people):
    _login(client, people["adjudicator"])
    html = client.get(reverse("monitoring", args=[watched.slug])).content.decode()
    assert html.count('<svg class="chart-svg"') == 3  # two series trends and one rerank-loss chart
    assert "hybrid-first nightly" in html and "hybrid-reranked nightly" in html
    assert "recall@5" in html and "recall@2" in html and "v1" in html
    # The last two nights lost the six new pages: first stage 6 of 12 found.
    assert "0.500" in html
    assert "Rerank loss" in html and "hybrid: rerank loss per night" in html
    assert "Canary probes" in html


def test_the_latest_night_table_says_when_queries_failed_and_flags_a_failing_night(
    client,
    endpoints,
    watched,
    people,
    django_capture_on_commit_callbacks,
):
    first, final = endpoints
    moment = (timezone.now() - timedelta(days=1)).replace(microsecond=0)
    with django_capture_on_commit_callbacks(execute=True):
        night_store(first, moment, failed=("q1", "q2", "q3"))
        night_store(final, moment)
    _login(client, people["manager"])
    html = client.get(reverse("monitoring", args=[watched.slug])).content.decode()
    assert "3 of 12 failed" in html and "25.0%" in html
    assert "failing night" in html
    assert html.count('class="failing"') == 1  # the first stage's row only


def test_an_empty_set_tells_a_manager_to_add_an_endpoint_and_a_reader_whose_job_it_is(client, watched, people):
    _login(client, people["manager"])
    html = client.get(reverse("monitoring", args=[watched.slug])).content.decode()
    assert "No endpoint is monitored yet" in html and reverse("endpoint_add", args=[watched.slug]) in html
    client.logout()
    _login(client, people["adjudicator"])
    html = client.get(reverse("monitoring", args=[watched.slug])).content.decode()
    assert "A manager of this set adds them" in html and reverse("endpoint_add", args=[watched.slug]) not in html


def test_a_first_stage_without_canaries_says_how_to_add_one(client, endpoints, watched, people):
    _login(client, people["manager"])
    html = client.get(reverse("monitoring", args=[watched.slug])).content.decode()
    assert "No canary in v1" in html and "canary_add" in html and reverse("coverage", args=[watched.slug]) in html


def test_the_canary_strip_shows_found_and_missed_per_round_in_words_as_well_as_colour(
    client,
    endpoints,
    watched,
    people,
    search_service,
):
    _canary(watched, "q7", "d7")
    _canary(watched, "q1", "d1")
    first, _ = endpoints
    probe_now(endpoint=first)
    search_service.stale = True
    probe_now(endpoint=first)
    _login(client, people["adjudicator"])
    html = client.get(reverse("monitoring", args=[watched.slug])).content.decode()
    assert 'class="canary-strip"' in html
    assert html.count('class="cell found"') == 3 and html.count('class="cell missed"') == 1
    assert "found at rank 1 (top 5)" in html and "missed, not in the top 5" in html
    assert "missed now" in html and "1 of 2 canaries missed" in html
    # The open probe alert is listed, with the way to every alert.
    assert "canary probe missed" in html and reverse("alerts", args=[watched.slug]) in html


def test_the_slice_chooser_suggests_the_age_slice_first_and_draws_the_slice_against_its_floor(client, nights, watched, people):
    _login(client, people["adjudicator"])
    html = client.get(reverse("monitoring", args=[watched.slug])).content.decode()
    assert html.index("page:age=0-30d") < html.index("query:lang=de")
    html = client.get(reverse("monitoring", args=[watched.slug]), {"slice": "page:age=0-30d"}).content.decode()
    assert "slice floor 0.75" in html and "recall@5 of page:age=0-30d" in html
    assert "stroke-dasharray" in html
    html = client.get(reverse("monitoring", args=[watched.slug]), {"slice": "no-such-slice"}).content.decode()
    assert "has no score for this slice" in html


def test_the_alerts_of_the_weeks_nights_are_listed_above_the_trends(
    client,
    endpoints,
    watched,
    people,
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=True):
        nights_store(endpoints, 4, stale_last=1)  # the new pages lost on the last night
    _login(client, people["adjudicator"])
    html = client.get(reverse("monitoring", args=[watched.slug])).content.decode()
    listed = html[html.index('id="night-alerts"') : html.index('id="latest"')]
    assert "on each series' last 7 nights" in listed
    rows = re.findall(
        r'<tr title="([^"]*)"><td>[^<]*</td><td><code>([^<]*)</code></td><td>([^<]*)</td>\s*<td[^>]*>(?:<code>|<span class="muted">)?([^<]*)',
        listed,
    )
    overall = [(series, kind) for _, series, kind, where in rows if where == "overall"]
    assert ("hybrid-first nightly", "drop against the series&#x27; previous night") in overall
    assert any(kind == "slice under the recall floor" and where == "page:age=0-30d" for _, _, kind, where in rows)
    assert rows.index(next(r for r in rows if r[3] != "overall")) == len(overall)  # the overall figures first
    assert all("dropped" in message or "under the floor" in message or "rerank" in message for message, *_ in rows)
    assert "0.500 (−50.0 points)" in listed  # the first stage found 6 of 12 pages the night before: 1.000 → 0.500


def test_a_mark_on_each_trend_shows_the_night_from_which_the_nights_are_scored_on_a_new_version(
    client,
    nights,
    watched,
    people,
    django_capture_on_commit_callbacks,
):
    """A publish re-scores the latest nights only (here 2): the older ones keep v1's scores,
    so the trend changes version between them, and says where."""
    evaluation_settings_update(golden_set=watched, user=None, series_rescore_nights=2)
    with django_capture_on_commit_callbacks(execute=True):
        judgment_record(
            query=Query.objects.get(golden_set=watched, query_id="q1"),
            page=Page.objects.get(doc_id="x1"),
            grade=0,
            annotator=people["manager"],
        )
        version_publish(golden_set=watched, note="one more label")
    _login(client, people["adjudicator"])
    html = client.get(reverse("monitoring", args=[watched.slug])).content.decode()
    fourth_night = nights[3].strftime("%m-%d")
    marks = re.findall(r'<g class="rule boundary"><title>([^<]*)</title>.*?<text[^>]*>([^<]*)</text>', html, re.S)
    assert marks == [(f"from {fourth_night} the nights are scored on v2", "v2")] * 2  # one on each series' trend
    assert "on v1" in html and "on v2" in html  # each night's dot says the version it is shown on


def test_the_page_reads_a_constant_number_of_queries_however_many_nights(
    client,
    endpoints,
    watched,
    people,
    django_capture_on_commit_callbacks,
):
    _canary(watched, "q7", "d7")
    _login(client, people["manager"])
    url = reverse("monitoring", args=[watched.slug])
    start = (timezone.now() - timedelta(days=20)).replace(hour=2, minute=0, second=0, microsecond=0)

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        return len(queries)

    with django_capture_on_commit_callbacks(execute=True):
        nights_store(endpoints, 3, start=start)
    probe_now(endpoint=endpoints[0])
    with_three = count()
    with django_capture_on_commit_callbacks(execute=True):
        nights_store(endpoints, 7, start=start + timedelta(days=3), stale_last=3)
    probe_now(endpoint=endpoints[0])
    probe_now(endpoint=endpoints[0])
    assert Run.objects.filter(series__isnull=False).count() == 20
    assert count() == with_three


# --- run now, probe now ----------------------------------------------------------------------


def test_run_now_starts_one_night_that_asks_the_endpoint_and_stores_its_run(
    client,
    endpoints,
    watched,
    people,
    search_service,
    django_capture_on_commit_callbacks,
):
    first, _ = endpoints
    _login(client, people["manager"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("endpoint_run_now", args=[watched.slug, first.name]))
    assert response.status_code == 302 and response.url.endswith(reverse("monitoring", args=[watched.slug]) + "#running")
    night = NightlyRun.objects.get()
    assert night.endpoint == first and night.trigger == NightlyRun.Trigger.MANUAL
    assert night.status == NightlyRun.Status.DONE, night.error
    assert night.run.series == first.series and night.queries_done == 12
    # It asked the service every query, the header resolved at send time (and only then).
    assert len(search_service.requests) == 12
    assert search_service.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"
    html = client.get(reverse("monitoring", args=[watched.slug])).content.decode()
    assert "Night of hybrid-first started" in html
    assert night.run.name in Run.objects.values_list("name", flat=True)


def test_run_now_asks_first_how_many_queries_go_to_which_host_and_sends_none(client, endpoints, watched, people):
    first, _ = endpoints
    _login(client, people["manager"])
    monitoring = client.get(reverse("monitoring", args=[watched.slug])).content.decode()
    assert f'href="{reverse("endpoint_run_now", args=[watched.slug, first.name])}"' in monitoring
    page = client.get(reverse("endpoint_run_now", args=[watched.slug, first.name]))
    html = page.content.decode()
    assert page.status_code == 200 and "Run a night of" in html
    host = urlsplit(first.url).netloc
    assert "<strong>12</strong> queries of version" in html and f"<code>{host}</code>" in html
    assert "Send 12 queries now" in html
    assert NightlyRun.objects.count() == 0


def test_run_now_is_refused_while_a_night_of_the_endpoint_is_pending(client, endpoints, watched, people):
    first, _ = endpoints
    nightly_run_request(endpoint=first, slot=timezone.now() - timedelta(minutes=1))
    _login(client, people["manager"])
    response = client.post(reverse("endpoint_run_now", args=[watched.slug, first.name]), follow=True)
    assert NightlyRun.objects.count() == 1
    html = response.content.decode()
    assert "Not started" in html and "is pending" in html
    assert 'id="running" hx-get=' in html  # the page polls the night's progress


def test_the_progress_fragment_asks_for_a_reload_once_no_night_runs(client, endpoints, watched, people):
    first, _ = endpoints
    night = nightly_run_request(endpoint=first, slot=timezone.now() - timedelta(minutes=1))
    NightlyRun.objects.filter(pk=night.pk).update(status=NightlyRun.Status.RUNNING, queries_total=12, queries_done=5)
    _login(client, people["adjudicator"])
    url = reverse("monitoring_progress", args=[watched.slug])
    response = client.get(url, headers={"HX-Request": "true"})
    assert "5 of 12 queries asked" in response.content.decode() and "HX-Refresh" not in response
    NightlyRun.objects.filter(pk=night.pk).update(status=NightlyRun.Status.DONE)
    assert client.get(url, headers={"HX-Request": "true"})["HX-Refresh"] == "true"


def test_probe_now_probes_every_canary_of_a_first_stage(
    client,
    endpoints,
    watched,
    people,
    search_service,
    django_capture_on_commit_callbacks,
):
    _canary(watched, "q7", "d7")
    search_service.stale = True
    first, final = endpoints
    _login(client, people["manager"])
    with django_capture_on_commit_callbacks(execute=True):  # the worker's round, run here
        response = client.post(reverse("endpoint_probe_now", args=[watched.slug, first.name]), follow=True)
    assert "Probing the canaries on hybrid-first" in response.content.decode()
    assert ProbeRound.objects.get().missed == 1
    assert Alert.objects.filter(kind=Alert.Kind.PROBE_MISSED, subject=first.name, resolved_at=None).count() == 1
    response = client.post(reverse("endpoint_probe_now", args=[watched.slug, final.name]), follow=True)
    assert "is a reranked endpoint" in response.content.decode() and ProbeRound.objects.count() == 1


def test_probe_now_asks_nothing_in_the_request_and_not_twice_while_a_round_is_under_way(
    client,
    endpoints,
    watched,
    people,
    search_service,
    django_capture_on_commit_callbacks,
):
    """Hardening #31 item 9: "probe now" ran in the web request, so a slow endpoint held the
    web workers; now a worker runs the round, and a second click waits for it."""
    _canary(watched, "q7", "d7")
    first, _ = endpoints
    _login(client, people["manager"])
    url = reverse("endpoint_probe_now", args=[watched.slug, first.name])
    with django_capture_on_commit_callbacks(execute=False) as sent:
        client.post(url)
    assert search_service.requests == [] and len(sent) == 1  # the round's task, sent on commit
    [probe_round] = ProbeRound.objects.all()
    assert probe_round.finished_at is None and probe_round.trigger == NightlyRun.Trigger.MANUAL
    again = client.post(url, follow=True).content.decode()
    assert "Not probed: a probe round of hybrid-first is under way" in again and ProbeRound.objects.count() == 1


def test_a_round_is_sent_again_only_after_its_task_was_surely_stopped():
    from monitoring.tasks import ROUND_LIMITS, ROUND_LOST_AFTER

    assert ROUND_LOST_AFTER.total_seconds() > ROUND_LIMITS["time_limit"] > ROUND_LIMITS["soft_time_limit"]
    assert ROUND_LIMITS["time_limit"] < 5 * 60  # within the shortest probe schedule people use


def test_try_it_waits_at_most_its_own_deadline_whatever_the_endpoints_timeout(client, endpoints, watched, people, monkeypatch):
    """Hardening #31 item 9: three clicks on an endpoint with the allowed 120 s timeout held
    every web worker for 120 s."""
    import socket

    from monitoring.endpoints import trying

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections, never answers
    first, _ = endpoints
    first.url = f"http://127.0.0.1:{silent.getsockname()[1]}/search"
    first.timeout_seconds = 120
    first.save(update_fields=["url", "timeout_seconds"])
    monkeypatch.setattr(trying, "TRY_IT_SECONDS", 0.5)
    _login(client, people["manager"])
    try:
        html = client.post(reverse("endpoint_try", args=[watched.slug, first.name]), {"query": "question 1"}, follow=True).content.decode()
    finally:
        silent.close()
    assert "no answer within 0.5 s" in html and "A try waits at most 0.5 s for the answer; the endpoint's nights wait 120 s." in html


# --- the endpoint pages ----------------------------------------------------------------------


def _form(service, **changes) -> dict:
    data = {
        "name": "bm25-first",
        "system": "bm25",
        "stage": "first_stage",
        "preset": "goldset",
        "url": f"{service.base_url}/first-stage/search",
        "headers": "",
        "run_schedule": "",
        "probe_schedule": "",
        "enabled": "on",
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


def test_a_manager_adds_an_endpoint_through_the_form_and_is_sent_to_try_it(client, watched, people, search_service):
    _login(client, people["manager"])
    response = client.post(reverse("endpoint_add", args=[watched.slug]), _form(search_service, run_schedule="30 3 * * *"))
    assert response.status_code == 302 and response.url == reverse("endpoint_try", args=[watched.slug, "bm25-first"])
    endpoint = Endpoint.objects.get(name="bm25-first")
    assert endpoint.run_schedule == "30 3 * * *" and endpoint.hits_path == "results" and endpoint.series.name == "bm25-first nightly"
    assert endpoint.created_by == people["manager"]


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"url": "ftp://nowhere"}, "url", ""),
        ({"run_schedule": "every night"}, "run_schedule", ""),
        ({"name": "no spaces please"}, "name", "letters, digits"),
        ({"preset": "generic", "body_template": '{"query": {{query}}, '}, "body_template", "not valid JSON"),
        ({"timeout_seconds": "soon"}, "timeout_seconds", "number"),
        ({"timeout_seconds": "500"}, "timeout_seconds", "0.1 to 120"),
        ({"headers": "Authorization: Bearer abc123"}, "headers", "environment variable"),
    ],
)
def test_the_add_form_shows_each_error_on_its_field(client, watched, people, search_service, changes, field, words):
    _login(client, people["manager"])
    response = client.post(reverse("endpoint_add", args=[watched.slug]), _form(search_service, **changes))
    assert response.status_code == 400
    form = response.context["form"]
    assert form.errors.get(field), form.errors
    assert words in " ".join(form.errors[field])
    assert not Endpoint.objects.exists()
    html = response.content.decode()
    assert 'class="field has-errors' in html


def test_the_request_fields_are_open_for_a_generic_endpoint_or_when_one_has_an_error(client, watched, people, search_service):
    _login(client, people["manager"])
    url = reverse("endpoint_add", args=[watched.slug])
    opened = '<details class="request-fields" data-generic-opens open>'
    assert opened not in client.get(url).content.decode()
    assert opened in client.get(url, {"preset": "generic"}).content.decode()
    response = client.post(url, _form(search_service, hits_path="hits..hits"))
    assert response.status_code == 400 and response.context["form"].errors["hits_path"]
    assert opened in response.content.decode()


def test_a_name_taken_is_shown_on_the_name(client, endpoints, watched, people, search_service):
    _login(client, people["manager"])
    response = client.post(reverse("endpoint_add", args=[watched.slug]), _form(search_service, name="hybrid-first"))
    assert response.status_code == 400 and "already has an endpoint named" in " ".join(response.context["form"].errors["name"])


def test_a_manager_edits_schedules_limits_templates_and_enabled(client, endpoints, watched, people):
    first, _ = endpoints
    _login(client, people["manager"])
    url = reverse("endpoint_edit", args=[watched.slug, first.name])
    data = dict(client.get(url).context["form"].initial)
    data.update({"run_schedule": "15 1 * * *", "probe_schedule": "*/10 * * * *", "max_per_second": "5", "retries": "1"})
    data.pop("enabled")
    data = {key: ("" if value is None else value) for key, value in data.items()}
    response = client.post(url, data)
    assert response.status_code == 302, response.context["form"].errors
    first.refresh_from_db()
    assert (first.run_schedule, first.probe_schedule, first.max_per_second, first.retries, first.enabled) == (
        "15 1 * * *",
        "*/10 * * * *",
        5.0,
        1,
        False,
    )
    assert first.headers == [["Authorization", "Bearer ${SEARCH_TOKEN}"], ["X-Team", "search"]]


def test_the_edit_form_refuses_a_bad_cron_line_on_its_field_and_changes_nothing(client, endpoints, watched, people):
    first, _ = endpoints
    _login(client, people["manager"])
    url = reverse("endpoint_edit", args=[watched.slug, first.name])
    data = {key: ("" if value is None else value) for key, value in client.get(url).context["form"].initial.items()}
    data.update({"run_schedule": "61 * * * *", "enabled": "on"})
    response = client.post(url, data)
    assert response.status_code == 400 and response.context["form"].errors["run_schedule"]
    first.refresh_from_db()
    assert first.run_schedule == "0 2 * * *"


def test_try_it_shows_the_request_the_raw_answer_and_the_ranking_read(client, endpoints, watched, people):
    first, _ = endpoints
    _login(client, people["manager"])
    response = client.post(
        reverse("endpoint_try", args=[watched.slug, first.name]), {"query": "question <7>", "query_id": "q7"}, follow=True
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "Request as sent" in html and "POST " + first.url in html
    assert "Authorization: Bearer ${SEARCH_TOKEN}" in html
    assert "&quot;query&quot;: &quot;question &lt;7&gt;&quot;" in html  # the body as sent, escaped
    assert "HTTP 200" in html and "&quot;results&quot;: [" in html  # pretty-printed JSON
    assert response.context["ranking"][0][:2] == (1, "d7") and "Ranking read (5 of k = 5)" in html


def test_try_it_marks_doc_ids_the_corpus_does_not_have_and_lists_the_problems(client, endpoints, watched, people):
    first, _ = endpoints
    first.doc_id_path = "score"  # a wrong path: reads the scores as doc ids
    first.save(update_fields=["doc_id_path"])
    _login(client, people["manager"])
    html = client.post(
        reverse("endpoint_try", args=[watched.slug, first.name]), {"query": "question 1", "k": "3"}, follow=True
    ).content.decode()
    assert "3 doc ids of the answer are not in the corpus" in html
    first.hits_path = "hits.hits"
    first.save(update_fields=["hits_path"])
    response = client.post(reverse("endpoint_try", args=[watched.slug, first.name]), {"query": "question 1"}, follow=True)
    assert "Problems found" in response.content.decode() and response.context["answer"].problems


def test_no_page_shows_a_resolved_secret(client, nights, endpoints, watched, people):
    _canary(watched, "q7", "d7")
    probe_now(endpoint=endpoints[0])
    _login(client, people["manager"])
    pages = [client.get(url) for url in _gets(watched.slug)]
    pages.append(client.post(reverse("endpoint_try", args=[watched.slug, "hybrid-first"]), {"query": "question 1"}, follow=True))
    pages.append(client.post(reverse("endpoint_edit", args=[watched.slug, "hybrid-first"]), {"run_schedule": "bad"}))
    for response in pages:
        assert SECRET not in response.content.decode()
    endpoints_list = pages[2].content.decode()
    assert "Authorization: Bearer ${SEARCH_TOKEN}" in endpoints_list


def test_a_night_run_through_the_service_appears_on_the_page(
    client,
    endpoints,
    watched,
    people,
    search_service,
    django_capture_on_commit_callbacks,
):
    first, final = endpoints
    slot = (timezone.now() - timedelta(days=1)).replace(hour=2, minute=0, second=0, microsecond=0)
    for endpoint in (first, final):
        night = nightly_run_request(endpoint=endpoint, slot=slot)
        with django_capture_on_commit_callbacks(execute=True):
            assert nightly_run_execute(night_id=night.pk).status == NightlyRun.Status.DONE
    _login(client, people["adjudicator"])
    html = client.get(reverse("monitoring", args=[watched.slug])).content.decode()
    assert "Last night " + f"{slot:%Y-%m-%d %H:%M}" in html
    assert " ms</td>" in html  # latency p50 / p95 from the nightly run
    assert "Index size" in html and ">17<" in html


@pytest.mark.django_db(transaction=True)  # the worker thread reads the endpoint on its own connection
def test_try_it_is_asked_by_a_worker_and_the_request_returns_while_the_endpoint_is_silent(client, endpoints, watched, people, monkeypatch):
    """Hardening #31 item 9: the web request only records the try and sends its task (here
    to the in-process background thread that stands for the outbound worker); the page it
    comes back to polls, and shows the answer once the worker has one. Another manager's
    request for that try is refused."""
    import socket
    import threading

    from goldset.celery import tasks_inline, tasks_off_request_thread
    from monitoring.endpoints import trying

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections, never answers
    first, _ = endpoints
    first.url = f"http://127.0.0.1:{silent.getsockname()[1]}/search"
    first.save(update_fields=["url"])
    monkeypatch.setattr(trying, "TRY_IT_SECONDS", 3.0)
    answered = threading.Event()
    real = trying.try_execute
    monkeypatch.setattr("monitoring.tasks.try_execute", lambda token: (real(token), answered.set())[0])
    _login(client, people["manager"])
    tasks_off_request_thread()
    try:
        response = client.post(reverse("endpoint_try", args=[watched.slug, first.name]), {"query": "question 1"})
        assert response.status_code == 302 and "/try/" in response.url
        waiting = client.get(response.url)
        assert not answered.is_set()  # the request came back while the endpoint was silent
        assert 'hx-trigger="every 1s"' in waiting.content.decode() and "from a worker" in waiting.content.decode()
        assert client.get(response.url, HTTP_HX_REQUEST="true").status_code == 204  # nothing new yet
        assert answered.wait(30)
        assert client.get(response.url, HTTP_HX_REQUEST="true")["HX-Refresh"] == "true"
        assert "no answer within" in client.get(response.url).content.decode()
        client.force_login(people["adjudicator"])
        assert client.get(response.url).status_code == 404
    finally:
        tasks_inline()
        silent.close()
