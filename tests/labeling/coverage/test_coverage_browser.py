"""The coverage page in headless Chromium, on the demo: what an admin sees, saved as screenshots.

The screenshots go to test-artifacts/ at the repository root (git-ignored), for a person
to look at: the whole page, and the flagged rows of the slice table.
"""

from datetime import timedelta
from pathlib import Path

import pytest

from evaluation.canaries import canary_add
from evaluation.models import Run
from evaluation.selectors import run_ranked
from goldenset.models import VersionLabel
from goldset.demo.generate import DEFAULT_SEED
from goldset.demo.services import demo_golden_set_load, demo_runs_load
from tests.browser import login

ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo():
    result = demo_golden_set_load(seed=DEFAULT_SEED)
    demo_runs_load(golden_set=result.golden_set, seed=DEFAULT_SEED)
    # Canaries: the first two relevant new pages of the latest version that the latest
    # hybrid first stage missed (the seed's stale shards), and one it found.
    version = result.golden_set.latest_version()
    ranked = run_ranked(Run.objects.get(golden_set=result.golden_set, name="hybrid-2026-11 first stage"))
    labels = (
        VersionLabel.objects.filter(
            version=version,
            grade__gte=2,
            page__published_at__gte=version.created_at - timedelta(days=30),
        )
        .select_related("query", "page")
        .order_by("position")
    )
    missed, found = [], []
    for label in labels:
        in_top = label.page_id in ranked.doc_keys[ranked.rows(label.query.query_id)][: version.k_first].tolist()
        (found if in_top else missed).append(label)
    for label in missed[:2] + found[:1]:
        canary_add(golden_set=result.golden_set, query=label.query, page=label.page, note="newest runbook")
    return result


def test_staff_see_the_new_pages_flagged_and_get_there_from_the_admin(browser_page, live_server, demo, make_user):
    ARTIFACTS.mkdir(exist_ok=True)
    make_user("root", is_staff=True, is_superuser=True)
    page = browser_page
    login(page, live_server, "root", "pw-root")

    # From the golden set's admin page to its coverage page.
    page.goto(f"{live_server.url}/admin/goldenset/goldenset/{demo.golden_set.pk}/change/")
    with page.expect_navigation():
        page.click(f'a[href="/admin/coverage/{demo.golden_set.slug}/"]')
    assert page.url.endswith(f"/admin/coverage/{demo.golden_set.slug}/")

    row = page.locator('tr[data-slice="page:age=0-30d"]')
    assert "flagged" in row.get_attribute("class")
    assert "recall < 0.75" in row.inner_text() and "under the recall floor" in row.locator("td.flags").get_attribute("title")
    assert page.locator("svg.chart-svg").count() == 2
    assert "Canary missed" in page.locator(".coverage-summary").inner_text()
    page.screenshot(path=str(ARTIFACTS / "coverage-demo.png"), full_page=True)
    page.locator("table.coverage").screenshot(path=str(ARTIFACTS / "coverage-demo-slices.png"))


def test_a_manager_sees_the_page_without_the_admin_links(browser_page, live_server, demo):
    page = browser_page
    login(page, live_server, "manager", "goldset-demo-manager")
    page.goto(f"{live_server.url}/admin/coverage/{demo.golden_set.slug}/")
    assert page.locator("h1").inner_text().startswith("Slice coverage of version")
    assert page.locator("text=add one in the admin").count() == 0
    page.locator("#canaries").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "coverage-demo-manager.png"))
