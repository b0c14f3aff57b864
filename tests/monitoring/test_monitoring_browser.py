"""The monitoring page in headless Chromium, on the demo's monitoring: its live search service
as two endpoints (first stage and reranked), fourteen nights of which the last three ran with
two stale shards, and an hour of canary probes that miss the new runbooks.

The screenshots go to GOLDSET_SCREENSHOTS (`make test` sets it; test-artifacts/ at the
repository root, git-ignored, when it is not set), for a person to look at: the page at 1280 px, with the age slice chosen, and at 390 px (a phone), where
nothing may be wider than the screen.
"""

import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from evaluation.selectors import evaluation_settings
from goldenset.models import Page, Query
from goldenset.services import judgment_record, version_publish
from goldset.demo.generate import DEFAULT_SEED
from goldset.demo.monitoring import NIGHTS, demo_monitoring_load
from goldset.demo.search import DemoSearch
from goldset.demo.search_server import demo_search_server_started
from goldset.demo.services import demo_golden_set_load
from tests.browser import axe_violations, login

ARTIFACTS = Path(os.environ.get("GOLDSET_SCREENSHOTS") or Path(__file__).resolve().parents[2] / "test-artifacts")
PHONE = {"width": 390, "height": 844}

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo():
    # Today's dates, as `make run` has them: the new runbooks are in the last-30-days slice.
    with demo_search_server_started(search=DemoSearch()) as service:
        loaded = demo_golden_set_load(seed=DEFAULT_SEED)
        demo_monitoring_load(golden_set=loaded.golden_set, search=service.search, base_url=service.base_url)
        yield loaded.golden_set, service


# The elements that reach past the right edge of the viewport, for the failure message.
_TOO_WIDE = """() => Array.from(document.querySelectorAll("body *"))
  .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5 && !(e.parentElement && e.parentElement.closest(".scroll")))
  .slice(0, 8).map(e => e.tagName.toLowerCase() + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))"""


def _fits(page, width: int) -> None:
    """The page is no wider than `width` CSS pixels (wide tables scroll inside their box)."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width, page.evaluate(_TOO_WIDE)


def test_a_manager_sees_the_drop_the_rerank_loss_and_the_missed_canaries_at_1280_and_390(browser_page, live_server, demo):
    demo, service = demo
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser_page
    refused, missing = [], []
    page.on("console", lambda message: refused.append(message.text) if message.type == "error" and "404" not in message.text else None)
    page.on("response", lambda response: missing.append(response.url) if response.status == 404 and "favicon" not in response.url else None)
    login(page, live_server, "manager", "goldset-demo-manager")

    # From the golden set's page to its monitoring page.
    page.goto(f"{live_server.url}/sets/{demo.slug}/")
    with page.expect_navigation():
        page.click(f'a[href="/sets/{demo.slug}/monitoring/"]')
    assert page.locator("h1").inner_text().startswith("Monitoring")

    # Two series trends and one rerank-loss chart; the trend has a dot per night.
    assert page.locator("section.series svg.chart-svg").count() == 2
    assert page.locator("section.rerank svg.chart-svg").count() == 1
    first_trend = page.locator("section.series").first
    assert first_trend.locator("polyline").count() == 2
    assert first_trend.locator("circle").count() == 2 * NIGHTS
    # The latest night's figures say their version and k; the canary strip shows misses in words.
    latest = page.locator("table.latest-nights").inner_text()
    assert "recall@100" in latest and "recall@8" in latest and "v" in latest
    strip = page.locator("table.canary-strip")
    assert strip.count() == 1
    assert strip.locator("td.cell.missed").count() > 0
    assert "missed" in strip.locator("td.cell.missed").first.get_attribute("title")
    assert page.locator(".open-alerts").count() == 1
    # The stale nights' alerts are listed above the trends: the overnight drop and the age slice.
    night_alerts = page.locator(".night-alerts").inner_text()
    assert "previous night" in night_alerts and "page:age=0-30d" in night_alerts
    assert page.locator("a[href$='/run-now/']").count() == 2  # each asks first (a page of its own)
    assert page.locator("form[action$='/probe-now/'] button").count() == 1
    _fits(page, 1280)
    page.screenshot(path=str(ARTIFACTS / "monitoring-demo-1280.png"), full_page=True)

    # The age slice, first of the chooser's suggestions: its nights dashed against the floor.
    suggestion = page.locator(".slice-chooser .hint a").first
    assert suggestion.inner_text().startswith("page:age=")
    with page.expect_navigation():
        suggestion.click()
    assert "slice=page" in page.url
    assert first_trend.locator("polyline[stroke-dasharray]").count() == 2
    assert "slice floor" in first_trend.locator("svg").text_content()
    first_trend.screenshot(path=str(ARTIFACTS / "monitoring-demo-age-slice.png"))

    # The shards refreshed, "probe now" finds the canaries again: a column of found cells.
    service.search.set_stale(0)
    rounds = strip.locator("tr.round-ticks th").count()
    with page.expect_navigation():
        page.click("form[action$='/probe-now/'] button")
    # A worker's round (in-process here, run on the request's commit) whose results the page shows.
    assert "Probing the canaries on" in page.locator(".messages").inner_text()
    assert page.locator("table.canary-strip tr.round-ticks th").count() == min(rounds + 1, 48)
    assert page.locator("table.canary-strip td.cell.found").count() == page.locator("table.canary-strip tbody tr").count()
    page.locator("section.strip").first.screenshot(path=str(ARTIFACTS / "monitoring-demo-canaries.png"))

    # A phone: one column, nothing wider than the screen; wide tables scroll in their box.
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/sets/{demo.slug}/monitoring/")
    page.screenshot(path=str(ARTIFACTS / "monitoring-demo-390.png"), full_page=True)
    _fits(page, PHONE["width"])
    assert page.locator("svg.chart-svg").first.bounding_box()["width"] <= PHONE["width"]
    # The canary strip, wider than the phone, opens on its newest round and the missed counts.
    newest = page.locator("table.canary-strip tbody tr").first.locator("td.cell").last.bounding_box()
    missed = page.locator("table.canary-strip tbody tr").first.locator("td.num").bounding_box()
    assert 0 <= newest["x"] and missed["x"] + missed["width"] <= PHONE["width"]
    page.locator("section.strip").first.screenshot(path=str(ARTIFACTS / "monitoring-demo-canaries-390.png"))

    for path in ("endpoints/", "endpoints/add/", "endpoints/wiki-search-first/", "endpoints/wiki-search-first/try/"):
        page.goto(f"{live_server.url}/sets/{demo.slug}/{path}")
        _fits(page, PHONE["width"])
    page.fill("#id_query", "how do I rotate the kafka credentials")
    with page.expect_navigation():
        page.click("form.try-form button[type=submit]")
    assert page.locator("table.ranking-read tbody tr").count() > 0
    page.screenshot(path=str(ARTIFACTS / "monitoring-demo-try-390.png"), full_page=True)
    _fits(page, PHONE["width"])

    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=str(ARTIFACTS / "monitoring-demo-try-1280.png"), full_page=True)
    page.goto(f"{live_server.url}/sets/{demo.slug}/endpoints/")
    page.screenshot(path=str(ARTIFACTS / "monitoring-demo-endpoints-1280.png"), full_page=True)
    page.goto(f"{live_server.url}/sets/{demo.slug}/endpoints/add/?preset=generic")
    assert page.locator("details.request-fields[open]").count() == 1
    page.screenshot(path=str(ARTIFACTS / "monitoring-demo-endpoint-add-1280.png"), full_page=True)
    # Issue 30 item 9: the demo's leaderboard showed 8 of its 14 columns at 1280 px.
    page.goto(f"{live_server.url}/sets/{demo.slug}/results/")
    board = page.locator("table.grid.results").first
    # The table scrolls in its box (div.scroll) when it is too wide: the box must not need to.
    widths = board.evaluate("table => [table.parentElement.scrollWidth, table.parentElement.clientWidth]")
    assert widths[0] <= widths[1] + 1, f"the leaderboard scrolls sideways at 1280 px: {widths}"
    page.screenshot(path=str(ARTIFACTS / "results-demo-1280.png"), full_page=True)

    # A new version re-scores the latest nights only: the older ones keep v3's scores, and
    # each trend marks the night from which its figures are on v4.
    manager = get_user_model().objects.get(username="manager")
    query = Query.objects.filter(golden_set=demo).order_by("query_id").first()
    unjudged = Page.objects.filter(corpus=demo.corpus).exclude(judgments__query=query).order_by("doc_id").first()
    judgment_record(query=query, page=unjudged, grade=0, annotator=manager, note="checked: not about it")
    version_publish(golden_set=demo, user=manager, note="one more label")
    page.goto(f"{live_server.url}/sets/{demo.slug}/monitoring/")
    rescored = evaluation_settings(demo).series_rescore_nights
    for trend in (page.locator("section.series").nth(0), page.locator("section.series").nth(1)):
        mark = trend.locator("g.rule.boundary")
        assert mark.count() == 1 and mark.locator("text").text_content() == "v4"
        assert mark.locator("title").text_content().endswith("the nights are scored on v4")
    assert page.locator("section.series").first.locator("circle title").nth(NIGHTS - rescored).text_content().endswith("on v4")
    assert page.locator("section.series").first.locator("circle title").nth(NIGHTS - rescored - 1).text_content().endswith("on v3")
    page.locator("section.series").first.screenshot(path=str(ARTIFACTS / "monitoring-demo-version-mark.png"))
    # Nothing the Content-Security-Policy refused, no script that failed.
    assert refused == [] and missing == []


def test_a_manager_sees_an_underpowered_slice_and_acknowledges_an_open_incident_on_the_monitoring_page(browser_page, live_server, demo):
    """Issue 27's browser acceptance: the monitoring page marks the slices whose drop test cannot
    see the set's threshold as underpowered (with the queries they would need), lists the
    incidents its stale-shard nights opened, and a manager acknowledges one there."""
    from evaluation.models import Incident

    golden_set, service = demo
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser_page
    login(page, live_server, "manager", "goldset-demo-manager")
    page.goto(f"{live_server.url}/sets/{golden_set.slug}/monitoring/")

    powers = page.locator("table.slice-power").first
    assert "underpowered" in powers.inner_text() and "would need" in powers.inner_text()
    card = page.locator("#incidents")
    incident = Incident.objects.filter(golden_set=golden_set, state=Incident.State.OPEN).order_by("-opened_at", "-id").first()
    assert incident is not None, "the demo's stale-shard nights open an incident"
    row = card.locator(f"#monitoring-incident-{incident.pk}")
    assert "open" in row.inner_text() and incident.subject in row.inner_text()
    assert axe_violations(page) == []
    page.screenshot(path=str(ARTIFACTS / "monitoring-incident-open-1280.png"), full_page=True)

    with page.expect_navigation():
        row.get_by_role("button", name=f"Acknowledge incident {incident.pk}").click()
    assert page.url.endswith("/monitoring/#incidents")
    assert f"Incident {incident.pk} is acknowledged, owned by manager." in page.locator("body").inner_text()
    row = page.locator(f"#monitoring-incident-{incident.pk}")
    assert "acknowledged" in row.inner_text() and "manager" in row.inner_text() and row.get_by_role("button").count() == 0
    incident.refresh_from_db()
    assert incident.state == Incident.State.ACKNOWLEDGED and incident.owner.username == "manager"
    page.screenshot(path=str(ARTIFACTS / "monitoring-incident-acknowledged-1280.png"), full_page=True)
    page.set_viewport_size(PHONE)
    page.reload()
    _fits(page, PHONE["width"])
