"""The issue's walk in headless Chromium, through the UI alone: a manager uploads a small
test run that is weak on the German queries, sees the coverage flags it causes, archives it
from the runs list and sees the flags go. Screenshots go to test-artifacts/lifecycle-*.png."""

from pathlib import Path

import pytest

from tests.browser import login
from tests.evaluation.lifecycle.conftest import ENGLISH, GERMAN, LIFECYCLE_SET, SLUG, run_lines

ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), LIFECYCLE_SET]


def test_archiving_the_test_run_takes_its_coverage_flags_away(browser_page, live_server, golden_set):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser_page
    login(page, live_server, "owner", "pw-owner")
    coverage = f"{live_server.url}/admin/coverage/{SLUG}/"
    page.goto(coverage)
    assert page.locator("tr.flagged").count() == 0

    # Upload: every English query and 50 German ones, every German one missed (200 of 300:
    # not partial). Scoring and the alerts run on commit, in-process in the tests.
    page.goto(f"{live_server.url}/sets/{SLUG}/runs/")
    body = "".join(run_lines(ENGLISH + GERMAN[:50], missed=set(GERMAN))).encode()
    page.set_input_files('input[name="file"]', files=[{"name": "test.run", "mimeType": "text/plain", "buffer": body}])
    page.fill('input[name="system"]', "test")
    page.fill('input[name="name"]', "test")
    with page.expect_navigation():
        page.click('button:has-text("Upload")')
    assert page.locator("h1").inner_text().startswith("test")

    page.goto(coverage)
    assert page.locator('tr.flagged[data-slice="query:lang=de"]').count() == 1
    page.screenshot(path=str(ARTIFACTS / "lifecycle-coverage-flagged.png"), full_page=True)

    page.goto(f"{live_server.url}/sets/{SLUG}/runs/")
    page.screenshot(path=str(ARTIFACTS / "lifecycle-runs-before.png"), full_page=True)
    with page.expect_navigation():
        page.click('a[aria-label="Archive: run test"]')
    page.screenshot(path=str(ARTIFACTS / "lifecycle-archive-confirm.png"), full_page=True)
    with page.expect_navigation():
        page.click("button:has-text('Archive test')")
    assert "show archived (1)" in page.inner_text("main")
    assert page.locator("table.grid tbody tr").count() == 1
    page.screenshot(path=str(ARTIFACTS / "lifecycle-runs-archived.png"), full_page=True)

    page.goto(coverage)
    assert page.locator("tr.flagged").count() == 0
    assert "Left out of the figures and flags" in page.inner_text("main")
    page.screenshot(path=str(ARTIFACTS / "lifecycle-coverage-after.png"), full_page=True)

    page.goto(f"{live_server.url}/sets/{SLUG}/runs/?archived=1")
    page.set_viewport_size({"width": 390, "height": 900})
    assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
    page.screenshot(path=str(ARTIFACTS / "lifecycle-runs-shown-390.png"), full_page=True)
