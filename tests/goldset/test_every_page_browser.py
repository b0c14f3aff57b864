"""Every page a manager or an annotator can reach, in a real browser at 390 and 1280 px: no
page-level horizontal scroll (wide tables scroll inside their own box), and axe-core finds no
serious or critical accessibility violation at either width. A screenshot of each page at each width goes to
GOLDSET_SCREENSHOTS (test-artifacts/screens by default under `make test`).

The pages are those tests/goldset/test_navigation.py's crawl reaches, one per route (the pages
of a route, and the query string variants of a page, share its layout). axe-core is the copy that the PyPI package
axe-playwright-python ships (installed by the set-up; nothing is fetched): it is evaluated in
the page through the DevTools protocol, which the page's Content-Security-Policy does not
govern.
"""

import json
import os
import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import resolve

from tests.browser import login
from tests.goldset.site import crawl, team  # noqa: F401 - team is a fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (390, 1280)
IMPACTS = ("serious", "critical")
# The API's Swagger UI is drf-spectacular's vendored swagger-ui bundle, not the app's markup:
# its widths are checked, axe is not asked about it.
NOT_OURS = ("/api/docs/",)


def _axe_source() -> str:
    import axe_playwright_python

    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text()


def _pages_of(user, starts: list[str]) -> list[str]:
    """One page of each route the crawl reaches: the pages of one route share one template
    (a query's page for each of the set's queries, a sweep for each run), so checking each
    of them would only check the template again."""
    client = Client()
    client.force_login(user)
    _, pages = crawl(client, starts)
    one_per_route: dict[str, str] = {}
    for url in sorted(pages):
        path = url.split("?")[0]
        match = resolve(path)
        one_per_route.setdefault(match.view_name or path, url)
    return sorted(one_per_route.values())


def _check(page, url: str, axe: str, shots: Path | None, role: str) -> list[str]:
    problems = []
    page.goto(url)
    page.wait_for_load_state("networkidle")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        # Two frames: the page's resize handlers (static/goldset/scroll_regions.js) have run.
        page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        if overflow > 0:
            wide = page.evaluate(
                """() => {
                    const inScrollBox = e => { for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
                        if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(a).overflowX)) return true; } return false; };
                    return [...document.querySelectorAll('body *')]
                        .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !inScrollBox(e))
                        .slice(0, 4).map(e => e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).split(' ')[0] : ''));
                }"""
            )
            problems.append(f"{url} at {width} px: the page scrolls sideways by {overflow} px ({', '.join(wide)})")
        if shots is not None:
            name = re.sub(r"[^A-Za-z0-9]+", "-", url.strip("/")) or "home"
            page.screenshot(path=str(shots / f"{role}-{name}-{width}.png"), full_page=True)
        if url.startswith(NOT_OURS):
            continue
        # At each width: a table that fits at 1280 px may scroll in its box on a phone, and a
        # box the keyboard cannot reach is a finding there only.
        if not page.evaluate("typeof axe !== 'undefined'"):
            page.evaluate(axe)
        found = page.evaluate("async () => JSON.stringify((await axe.run(document, {resultTypes: ['violations']})).violations)")
        for violation in json.loads(found):
            if violation["impact"] in IMPACTS:
                targets = ", ".join(str(node["target"][0]) for node in violation["nodes"][:3])
                problems.append(f"{url} at {width} px: axe {violation['impact']} {violation['id']} ({violation['help']}) at {targets}")
    return problems


@pytest.mark.parametrize("role", ["manager", "annotator"])
def test_every_page_fits_a_phone_and_a_wide_screen_and_passes_axe(browser_page, live_server, team, role):
    from django.urls import reverse

    golden_set, people = team
    starts = ["/", reverse("judging_home")] + ([] if role == "annotator" else [reverse("golden_set", args=[golden_set.slug])])
    urls = _pages_of(people[role], starts)
    assert len(urls) > (2 if role == "annotator" else 15)
    shots = os.environ.get("GOLDSET_SCREENSHOTS")
    shots_dir = Path(shots) if shots else None
    if shots_dir:
        shots_dir.mkdir(parents=True, exist_ok=True)
    login(browser_page, live_server, role, f"pw-{role}")
    axe = _axe_source()
    problems = []
    for url in urls:
        problems += _check(browser_page, url, axe, shots_dir, role)
    assert problems == [], "\n".join(problems)


def test_an_organisation_admins_pages_fit_and_pass_axe_and_make_a_team(browser_page, live_server, make_user):
    """The organisation's pages as its admin has them (with the forms that make teams and
    grant roles, and the organisation's audit trail), crawled as the other roles' are; then
    a team made and a role granted through the pages themselves."""
    from goldenset.models import Membership, Organisation, TeamMembership
    from goldenset.services import membership_grant
    from goldenset.teams import organisation_member_set
    from tests.support import factories

    # A small set of the default team, with a manager and an annotator: the organisation's
    # pages list them; the set's own pages are the other roles' test, above.
    golden_set = factories.golden_set("orgset", manager=make_user("manager"))
    membership_grant(user=make_user("annotator"), golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    admin = make_user("orgadmin")
    organisation_member_set(organisation=Organisation.objects.get(slug="default"), user=admin, role="admin")
    urls = [url for url in _pages_of(admin, ["/orgs/"]) if url.startswith("/orgs/")]
    assert {"/orgs/default/", "/orgs/default/audit/", "/orgs/default/teams/default/"} <= set(urls)
    shots = os.environ.get("GOLDSET_SCREENSHOTS")
    shots_dir = Path(shots) if shots else None
    if shots_dir:
        shots_dir.mkdir(parents=True, exist_ok=True)
    login(browser_page, live_server, "orgadmin", "pw-orgadmin")
    axe = _axe_source()
    problems = []
    for url in urls:
        problems += _check(browser_page, url, axe, shots_dir, "orgadmin")
    assert problems == [], "\n".join(problems)

    page = browser_page
    page.goto(f"{live_server.url}/orgs/default/")
    page.get_by_label("Team slug").fill("ads")
    page.get_by_label("Name", exact=True).fill("Ads")
    page.get_by_role("button", name="Make the team").click()
    page.get_by_text("Team ads made").wait_for()
    page.get_by_role("link", name="Ads").click()
    page.get_by_label("Username").fill("annotator")
    page.get_by_label("Role").select_option("annotator")
    page.get_by_role("button", name="Grant").click()
    page.get_by_text("annotator is now annotator of every set of team ads").wait_for()
    if shots_dir:
        page.screenshot(path=str(shots_dir / "orgadmin-team-granted-1280.png"), full_page=True)
    assert TeamMembership.objects.filter(team__slug="ads", user__username="annotator", role="annotator").exists()
