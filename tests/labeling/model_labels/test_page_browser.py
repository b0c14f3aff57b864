"""The model labels page in a real browser, at a phone's width and a wide screen's: every
section of the hand-made set shows, the two rankings stand side by side on a wide screen,
and nothing scrolls the page sideways. Screenshots go to GOLDSET_SCREENSHOTS."""

import os
from pathlib import Path

import pytest
from django.urls import reverse

from tests.browser import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_page_shows_agreement_disagreements_and_both_rankings_at_any_width(browser_page, live_server, golden_set, owner):
    login(browser_page, live_server, "owner", "pw-owner")
    browser_page.goto(reverse("model_labels", args=[golden_set.slug]))
    shots = os.environ.get("GOLDSET_SCREENSHOTS")
    for width in (390, 1440):
        browser_page.set_viewport_size({"width": width, "height": 900})
        assert browser_page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            browser_page.screenshot(path=str(Path(shots) / f"model-labels-{width}.png"), full_page=True)
    assert browser_page.locator("[data-figure=tau]").inner_text().startswith("0.333")
    assert browser_page.locator(".model-worst tbody tr").count() == 3
    human, filled = browser_page.locator(".model-rank-human"), browser_page.locator(".model-rank-filled")
    assert human.locator("tbody tr").first.inner_text().split()[:2] == ["1", "alpha"]
    assert filled.locator("tbody tr").first.inner_text().split()[:2] == ["1", "beta"]
    # Side by side on a wide screen: the filled ranking starts to the right of the human one, at its height.
    left, right = human.bounding_box(), filled.bounding_box()
    assert right["x"] > left["x"] + left["width"] - 1 and abs(right["y"] - left["y"]) < 5


def _axe_source() -> str:
    import axe_playwright_python

    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text()


def test_the_filled_scores_and_both_recall_intervals_fit_a_phone_and_pass_axe(browser_page, live_server, sampled, owner):
    login(browser_page, live_server, "owner", "pw-owner")
    browser_page.goto(reverse("model_labels", args=[sampled.slug]))
    for width in (390, 1440):
        browser_page.set_viewport_size({"width": width, "height": 900})
        assert browser_page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
    assert "prediction-powered (judge-7b + 10 human labels)" in browser_page.locator(".model-recall").inner_text()
    assert browser_page.locator(".model-filled tbody tr").count() == 2
    browser_page.evaluate(_axe_source())
    found = browser_page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations.map(v => [v.impact, v.id])"
    )
    assert [v for v in found if v[0] in ("serious", "critical")] == []
