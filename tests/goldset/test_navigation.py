"""The set menu by role, and every link every role can reach: none leads to a 4xx or 5xx.

Each role (manager, adjudicator, annotator, staff) logs in and follows, breadth first, every
link of every page it can open from the home page, the set page and the judging home, as
far as they lead inside the app. Forms are not sent (their targets are tested with their
pages). The Django admin's own pages are left out: tests/test_admin.py opens every list
and form of it; the app's coverage page, which lives under /admin/coverage/, is followed.
"""

import pytest
from django.urls import reverse

from goldset.navigation import SET_PAGES
from tests.goldset.site import crawl, team  # noqa: F401 - team is a fixture

pytestmark = [pytest.mark.django_db, pytest.mark.whole_system]


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
    menu = html[html.index('<nav class="set-nav"') :]
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
