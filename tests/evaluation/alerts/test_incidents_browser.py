"""An open incident in headless Chromium: the set's home says it needs someone, the alerts
page lists it above the alerts, and a manager acknowledges it with one click; axe-core finds
no serious or critical problem on the alerts page, which fits a phone.

Screenshots go to GOLDSET_SCREENSHOTS (test-artifacts/ at the repository root when unset).
"""

import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from evaluation.alerts.rules import alerts_check
from evaluation.models import Incident
from goldenset.services import version_publish
from tests.browser import login
from tests.support.factories import alerting_run as upload
from tests.support.factories import alerting_set as make_set
from tests.support.factories import score as evaluate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(os.environ.get("GOLDSET_SCREENSHOTS") or Path(__file__).resolve().parents[3] / "test-artifacts")
PHONE = {"width": 390, "height": 844}


def axe_violations(page) -> list:
    import axe_playwright_python

    page.evaluate((Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text())
    found = page.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations.map(v => [v.impact, v.id])")
    return [v for v in found if v[0] in ("serious", "critical")]


@pytest.fixture
def incident():
    manager = get_user_model().objects.create_user("lead", email="lead@example.com", password="incident-lead-pw")
    golden_set = make_set(manager=manager)
    v1 = version_publish(golden_set=golden_set, note="first labels")
    evaluate(upload(golden_set, "monday"), v1)
    alerts_check(evaluation=evaluate(upload(golden_set, "tuesday", ranks={"q1": 2, "q17": 4, "q18": 4}), v1))
    return Incident.objects.get()


def test_a_manager_sees_the_open_incident_and_acknowledges_it(browser_page, live_server, incident):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser_page
    login(page, live_server, "lead", "incident-lead-pw")

    page.goto(f"{live_server.url}/sets/alerting/")
    today = page.locator("#today")
    assert "1 open incident" in today.inner_text() and f"#{incident.pk}" in today.inner_text()
    page.screenshot(path=str(ARTIFACTS / "incidents-home-1280.png"), full_page=True)
    with page.expect_navigation():
        today.locator("a", has_text="open incident").click()

    row = page.locator(f"#incident-{incident.pk}")
    assert "open" in row.inner_text() and "3" in row.inner_text()
    assert axe_violations(page) == []
    page.screenshot(path=str(ARTIFACTS / "incidents-open-1280.png"), full_page=True)

    with page.expect_navigation():
        row.locator('button[value="acknowledge"]').click()
    assert f"Incident {incident.pk} is acknowledged, owned by lead." in page.locator("body").inner_text()
    row = page.locator(f"#incident-{incident.pk}")
    assert "acknowledged" in row.inner_text() and "lead" in row.inner_text()
    assert row.locator('button[value="acknowledge"]').count() == 0
    page.screenshot(path=str(ARTIFACTS / "incidents-acknowledged-1280.png"), full_page=True)
    incident.refresh_from_db()
    assert incident.state == Incident.State.ACKNOWLEDGED

    page.set_viewport_size(PHONE)
    page.reload()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert axe_violations(page) == []
    page.screenshot(path=str(ARTIFACTS / "incidents-acknowledged-390.png"), full_page=True)
