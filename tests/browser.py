"""A headless Chromium for browser tests (Playwright driving Debian's /usr/bin/chromium).

Use the `browser_page` fixture (a fresh page whose base URL is pytest-django's
live_server) and `login()`; mark the test `@pytest.mark.browser`. Without
/usr/bin/chromium the tests skip, saying so (`apt-get install -y chromium`).
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connections

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture
def browser() -> Iterator:
    """A Chromium browser, launched for one test and closed after it."""
    if not CHROMIUM.exists():
        pytest.skip(f"browser tests need Chromium at {CHROMIUM} (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; Django would then refuse
    # the test's own ORM calls as made "from an async context". They are not: allow them
    # for this test only.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            # --no-sandbox: the test machines run as root, where Chromium's sandbox cannot start.
            launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                yield launched
            finally:
                launched.close()
                # ORM calls made while Playwright's loop runs get a connection of their
                # own context, which nothing else closes; left open, it keeps the test
                # database from being dropped at the end of the session.
                connections.close_all()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def browser_page(browser, live_server):
    """A new page in a fresh context (no cookies), its base URL the live server."""
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        yield page
    finally:
        context.close()


def login(page, live_server, username: str, password: str) -> None:
    """Log in through the login form and wait for the page it leads to."""
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    with page.expect_navigation():
        page.click("form button[type=submit]")
    if "/accounts/login/" in page.url:
        raise AssertionError(f"could not log in as {username!r}")


def axe_violations(page) -> list:
    """The serious and critical [impact, rule id] axe-core finds on the page as it stands (axe
    comes packaged with axe-playwright-python: nothing is fetched)."""
    import axe_playwright_python

    page.evaluate((Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text())
    found = page.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations.map(v => [v.impact, v.id])")
    return [v for v in found if v[0] in ("serious", "critical")]
