"""Finding 13 (no Content-Security-Policy) and the client half of finding 9 (the htmx judging
screen showed nothing when the server did not answer).

Every page carries a strict policy: scripts only from the app's static files, no inline
script anywhere, htmx without eval. The browser tests load pages in headless Chromium and
collect every policy violation the page reports; the judging screen's keys still work. The
outage test answers the judging screen's grade with a 503 once (Playwright's routing, the
one fault a running test server cannot be made to give on cue) and checks what the
annotator is told and that the grade is sent again and saved."""

import pytest
from django.test import Client

from goldenset.models import Judgment
from tests.browser import login
from tests.labeling.judging.judging_data import annotator_of, pooled_set
from tests.support import factories

VIOLATIONS = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => window.cspViolations.push(e.violatedDirective + " " + e.blockedURI));
"""


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/", "/accounts/login/", "/api/docs/", "/admin/login/"])
def test_every_page_carries_a_policy_without_inline_script(path, owner):
    client = Client()
    client.force_login(owner)
    policy = client.get(path)["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["script-src"] == "'self'"
    assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'"
    assert "unsafe-eval" not in policy
    # Only Swagger UI, which draws its own <style> elements, may add inline styles.
    assert ("unsafe-inline" in directives["style-src"]) == (path == "/api/docs/")


@pytest.mark.django_db
def test_no_template_holds_an_inline_script():
    from pathlib import Path

    templates = Path(__file__).resolve().parents[2] / "templates"
    inline = [str(path) for path in templates.rglob("*.html") if "<script>" in path.read_text() or " on" + "click=" in path.read_text()]
    assert inline == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_judging_screen_works_under_the_policy_and_reports_no_violation(browser_page, live_server, make_user):
    pool = pooled_set("csp")
    annotator_of(pool.golden_set, make_user, "ann")
    page = browser_page
    page.add_init_script(VIOLATIONS)
    login(page, live_server, "ann", "pw-ann")
    page.goto("/label/csp/")
    first = page.get_attribute("#pair", "data-task-id")
    page.keyboard.press("2")
    page.wait_for_function("(first) => document.querySelector('#pair').dataset.taskId !== first", arg=first)
    assert Judgment.objects.filter(annotator__username="ann", grade=2).count() == 1
    assert page.evaluate("window.cspViolations") == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_managers_pages_report_no_violation(browser_page, live_server, owner):
    golden_set = factories.golden_set("tiny", manager=owner)
    from goldenset.services import version_publish

    version_publish(golden_set=golden_set)
    factories.run(golden_set, "bm25", {"q1": ["d1", "d2"], "q2": ["d3"]})
    page = browser_page
    page.add_init_script(VIOLATIONS)
    login(page, live_server, "owner", "pw-owner")
    for path in ("/", "/sets/tiny/", "/sets/tiny/results/", "/sets/tiny/runs/", "/sets/tiny/completeness/", "/api/docs/"):
        page.goto(path)
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.cspViolations") == [], path
    assert page.locator(".swagger-ui").count() == 1  # Swagger UI started from its script file


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_grade_the_server_could_not_take_is_announced_and_sent_again(browser_page, live_server, make_user):
    pool = pooled_set("outage")
    annotator_of(pool.golden_set, make_user, "ann")
    page = browser_page
    login(page, live_server, "ann", "pw-ann")
    page.goto("/label/outage/")
    first = page.get_attribute("#pair", "data-task-id")
    refused = []

    def once_unavailable(route):
        if not refused:
            refused.append(route.request.url)
            route.fulfill(status=503, headers={"Retry-After": "1"}, body="database away")
        else:
            route.continue_()

    page.route("**/judge/**", once_unavailable)
    page.keyboard.press("1")
    status = page.locator("#judging-status")
    status.wait_for(state="visible")
    assert "not saved yet" in status.text_content() and "503" in status.text_content()
    page.wait_for_function("(first) => document.querySelector('#pair').dataset.taskId !== first", arg=first, timeout=10_000)
    assert status.is_hidden()
    assert len(refused) == 1
    assert list(Judgment.objects.filter(annotator__username="ann").values_list("grade", flat=True)) == [1]
