"""The judging screen in headless Chromium: judging from the keyboard alone, undo, and a
reload that keeps the annotator's place; a set one does not annotate stays closed."""

import os
from pathlib import Path

import pytest

from goldenset.models import Judgment
from lib.formats import JsonRecord
from tests.browser import login
from tests.labeling.judging.judging_data import annotator_of, pooled_set
from tests.support import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HOSTILE = '<p>Runbook</p><img src="x" onerror="window.pwned = 1"><script>window.pwned = 2</script>'


def shown_task(page) -> str:
    return page.get_attribute("#pair", "data-task-id")


def wait_for_new_pair(page, previous: str) -> str:
    page.wait_for_function("(previous) => document.querySelector('#pair').dataset.taskId !== previous", arg=previous)
    return shown_task(page)


def judged_by_you(page) -> str:
    return page.text_content("#pair .judged-by-you")


def place(page) -> str:
    return " ".join(page.text_content("#pair .query-place").split())


def test_an_annotator_judges_five_pairs_from_the_keyboard_undoes_one_and_a_reload_keeps_their_place(
    browser_page,
    live_server,
    make_user,
):
    records = [JsonRecord(line=1, id="d1", title="<script>window.pwned = 3</script>Runbook", text=HOSTILE)]
    records += factories.pages(*(f"d{n}" for n in range(2, 9)))
    pool = pooled_set("keys", page_records=records)
    golden_set = pool.golden_set
    ann = annotator_of(golden_set, make_user, "ann")
    page = browser_page
    login(page, live_server, "ann", "pw-ann")
    page.goto(f"/label/{golden_set.slug}/")

    shown = [shown_task(page)]
    assert shown[0]
    assert place(page) == "· page 1 of 4 for this query"
    if os.environ.get("GOLDSET_SCREENSHOTS"):
        page.screenshot(path=str(Path(os.environ["GOLDSET_SCREENSHOTS"]) / "judging-page-1-of-4-1280.png"), full_page=True)
    page.keyboard.press("n")
    page.keyboard.type("only the title matches")
    page.keyboard.press("Escape")
    for grade in ["2", "0", "1", "3", "1"]:
        page.keyboard.press(grade)
        shown.append(wait_for_new_pair(page, shown[-1]))
    assert len(set(shown)) == 6
    # One query at a time: q1's four pages, then q2's first two.
    assert place(page) == "· page 2 of 4 for this query"
    assert judged_by_you(page) == "5"
    assert list(Judgment.objects.filter(annotator=ann).order_by("id").values_list("grade", flat=True)) == [2, 0, 1, 3, 1]
    assert Judgment.objects.filter(annotator=ann).order_by("id").first().note == "only the title matches"
    assert all(seconds is not None and seconds >= 0 for seconds in Judgment.objects.values_list("seconds_spent", flat=True))

    page.keyboard.press("u")
    assert wait_for_new_pair(page, shown[-1]) == shown[4]  # the fifth pair is back
    assert judged_by_you(page) == "4"
    assert "you gave this pair 1" in page.text_content("#pair").lower()

    page.reload()
    assert shown_task(page) == shown[4]
    assert judged_by_you(page) == "4"

    page.keyboard.press("3")
    wait_for_new_pair(page, shown[4])
    assert judged_by_you(page) == "5"
    assert Judgment.objects.filter(annotator=ann).count() == 6  # the undone grade stays in history
    assert page.evaluate("window.pwned") is None  # the hostile page ran nothing


def test_an_annotator_cannot_open_another_golden_sets_pairs(browser_page, live_server, make_user):
    mine = pooled_set("mine").golden_set
    other = pooled_set("theirs").golden_set
    annotator_of(mine, make_user, "ann")
    page = browser_page
    login(page, live_server, "ann", "pw-ann")
    page.goto("/label/")
    assert page.locator(f'a[href="/label/{mine.slug}/"]').count() == 1
    assert page.locator(f'a[href="/label/{other.slug}/"]').count() == 0
    assert page.goto(f"/label/{other.slug}/").status == 404
    assert page.goto(f"/label/{other.slug}/next/").status == 404
