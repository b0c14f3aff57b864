"""The set menu by role, and every link every role can reach: none leads to a 4xx or 5xx.

Each role (manager, adjudicator, annotator, staff) logs in and follows, breadth first, every
link of every page it can open from the home page, the set page and the judging home, as
far as they lead inside the app. Forms are not sent (their targets are tested with their
pages). The Django admin's own pages are left out: tests/test_admin.py opens every list
and form of it; the app's coverage page, which lives under /admin/coverage/, is followed.
"""

from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.urls import reverse

from goldenset.models import Membership
from goldenset.services import membership_grant
from goldset.navigation import SET_PAGES
from labeling.models import QueueSettings
from labeling.pools.services import pool_build
from evaluation.models import Run
from tests import factories

pytestmark = pytest.mark.django_db

PAGE_LIMIT = 400  # a runaway crawl (a link that makes new links) fails instead of running on


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def _followed(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        return False  # another site, mailto:, a fragment
    if parts.path.startswith("/admin/") and not parts.path.startswith("/admin/coverage/"):
        return False
    return not parts.path.startswith(("/static/", "/accounts/logout"))


def crawl(client, starts: list[str]) -> tuple[dict[str, int], set[str]]:
    """Every page reachable from `starts` by links: {url: status}, and the html pages seen."""
    seen: dict[str, int] = {}
    queue = list(starts)
    while queue:
        url = queue.pop(0)
        if url in seen:
            continue
        assert len(seen) < PAGE_LIMIT, f"more than {PAGE_LIMIT} pages reached; last {url}"
        response = client.get(url, follow=True)  # a redirect counts by where it leads
        seen[url] = response.status_code
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        parser = _Links()
        parser.feed(response.content.decode())
        for href in parser.hrefs:
            target = urljoin(url, href).split("#")[0]
            if target and _followed(target) and target not in seen:
                queue.append(target)
    return seen, {url for url, status in seen.items() if status == 200}


@pytest.fixture
def team(make_user):
    """The sliced set (v1, a scored run, slices) with a judging pool and one member per role."""
    people = {role: make_user(role) for role in ("manager", "adjudicator", "annotator")}
    golden_set = factories.sliced_set("navset", manager=people["manager"])
    membership_grant(user=people["adjudicator"], golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    membership_grant(user=people["annotator"], golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    QueueSettings.objects.create(golden_set=golden_set)
    pool_build(golden_set=golden_set, runs=list(Run.objects.filter(golden_set=golden_set)), depth=2, strategy="depth")
    people["staff"] = make_user("staff", is_staff=True, is_superuser=True)
    return golden_set, people


@pytest.mark.parametrize("role", ["manager", "adjudicator", "annotator", "staff"])
def test_every_link_a_role_can_reach_answers(client, team, role):
    golden_set, people = team
    client.force_login(people[role])
    starts = ["/", reverse("judging_home")]
    if role != "annotator":
        starts.append(reverse("golden_set", args=[golden_set.slug]))
    seen, pages = crawl(client, starts)
    broken = {url: status for url, status in seen.items() if status >= 400}
    assert broken == {}
    must_reach = {"judging_screen"} if role == "annotator" else {"results", "runs", "completeness", "alerts"}
    assert {reverse(name, args=[golden_set.slug]) for name in must_reach} <= pages


@pytest.mark.parametrize("role", ["manager", "adjudicator", "annotator", "staff"])
def test_the_set_menu_offers_exactly_the_pages_the_role_opens(client, team, role):
    """Every page of SET_PAGES is tried directly: the menu shows it if and only if it opens."""
    golden_set, people = team
    client.force_login(people[role])
    opens = {page.label for page in SET_PAGES if client.get(reverse(page.url_name, args=[golden_set.slug])).status_code == 200}
    # The menu as a page of the set shows it: the set page for readers, the judging screen for annotators.
    page = reverse("judging_screen" if role == "annotator" else "golden_set", args=[golden_set.slug])
    html = client.get(page).content.decode()
    menu = html[html.index('<nav class="set-nav"'):]
    menu = menu[: menu.index("</nav>")]
    shown = {page.label for page in SET_PAGES if f">{page.label}</a>" in menu}
    assert shown == opens
    assert 'aria-current="page"' in menu


def test_a_page_the_role_cannot_open_is_a_404_in_the_sites_layout(client, team):
    golden_set, people = team
    client.force_login(people["adjudicator"])
    response = client.get(reverse("golden_set_members", args=[golden_set.slug]))
    assert response.status_code == 404
    html = response.content.decode()
    assert 'class="topbar"' in html and "Not found (404)" in html and "Back to your golden sets" in html
    assert "Traceback" not in html and "technical_404" not in html
