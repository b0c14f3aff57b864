"""The quality pages in a real browser: Debian's chromium driven by Playwright
(the browser_page fixture of tests/browser.py, which skips without /usr/bin/chromium)."""

import os
from pathlib import Path

import pytest
from django.urls import reverse

from goldenset.models import Judgment, Membership, Page, Query
from goldenset.services import judgment_record, membership_grant
from tests.browser import login
from tests.support import factories

pytestmark = pytest.mark.browser


@pytest.fixture
def judged_set(make_user):
    """Two annotators on five pairs of q3: they agree on three; d4 and d5 are disputes."""
    boss, judge = make_user("boss"), make_user("judge")
    golden_set = factories.golden_set(manager=boss)
    membership_grant(user=judge, golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    query = Query.objects.select_related("golden_set").get(golden_set=golden_set, query_id="q3")
    for name, grades in (("ann", [0, 1, 2, 3, 3]), ("bob", [0, 1, 2, 1, 0])):
        user = make_user(name)
        membership_grant(user=user, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
        for doc_id, grade in zip(("d1", "d2", "d3", "d4", "d5"), grades):
            page = Page.objects.get(corpus=golden_set.corpus, doc_id=doc_id)
            judgment_record(query=query, page=page, grade=grade, annotator=user, note=f"{name} thinks {grade}", seconds_spent=12)
    return golden_set


def test_a_manager_sees_the_agreement_page(browser_page, live_server, judged_set):
    login(browser_page, live_server, "boss", "pw-boss")
    browser_page.goto(live_server.url + reverse("agreement", args=[judged_set.slug]))
    assert browser_page.locator("h1").inner_text().startswith("Inter-annotator agreement")
    assert browser_page.locator("[data-figure=percent]").inner_text().startswith("60.0 %")
    assert browser_page.locator("[data-figure=kappa]").inner_text().split()[0] not in ("", "n/a")
    assert browser_page.locator("[data-figure=alpha]").inner_text().split()[0] not in ("", "n/a")
    row = browser_page.locator("table.agreement-pairs tbody tr").first
    assert "ann · bob" in row.inner_text() and "60.0 %" in row.inner_text()
    # The pair's confusion matrix opens in place.
    row.locator("summary").click()
    assert row.locator("table.confusion").is_visible()
    # The overall matrix: five comparisons, three on the diagonal.
    diagonal = browser_page.locator("h2:has-text('Grade confusion matrix') + table td.diagonal").all_inner_texts()
    assert sum(map(int, diagonal)) == 3
    screenshots = os.environ.get("GOLDSET_SCREENSHOTS")
    if screenshots:
        browser_page.screenshot(path=str(Path(screenshots) / "agreement.png"), full_page=True)


def test_an_adjudicator_decides_a_pair_from_the_keyboard(browser_page, live_server, judged_set):
    login(browser_page, live_server, "judge", "pw-judge")
    browser_page.goto(live_server.url + reverse("adjudicate", args=[judged_set.slug]))
    assert "2 pairs to decide" in browser_page.locator("main").inner_text()
    # Wait for the pair's page to load: its keyboard script is deferred, and a key pressed
    # before it runs is lost.
    with browser_page.expect_navigation():
        browser_page.click("a.start")
    assert "ann thinks 3" in browser_page.locator("table.judgments").inner_text()
    # Nothing is chosen for the adjudicator, so Enter alone decides nothing.
    assert browser_page.locator("input[name=grade]:checked").count() == 0
    browser_page.keyboard.press("Enter")
    assert not Judgment.objects.filter(source=Judgment.Source.ADJUDICATED).exists()
    browser_page.keyboard.press("2")
    assert browser_page.locator("input[name=grade][value='2']").is_checked()
    with browser_page.expect_navigation():
        browser_page.keyboard.press("Enter")
    decided = Judgment.objects.get(source=Judgment.Source.ADJUDICATED)
    assert (decided.page.doc_id, decided.grade, decided.annotator.username) == ("d4", 2, "judge")
    # On to the other dispute.
    assert "d5" in browser_page.locator("h1").inner_text()
    following = Page.objects.get(corpus=judged_set.corpus, doc_id="d5")
    assert browser_page.url.endswith(f"/{following.pk}/")  # the address names the pair shown
