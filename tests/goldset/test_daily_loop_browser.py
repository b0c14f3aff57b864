"""The daily loop of a team, walked through the pages alone in Chromium (#13's acceptance):
a manager uploads a test run and pools it, one annotator judges 30 pairs from the
keyboard and a second judges the overlap pairs, an adjudicator decides a disagreement, the
manager publishes from the set page after reading the preview, sees the results move to
the new version, archives the test run and sees the coverage flags it caused go away.

Nothing here calls a service after the set-up: every step is a click or a key."""

import os
import re
from pathlib import Path

import pytest
from django.urls import reverse

from evaluation.models import EvaluationSettings, Run
from goldenset.models import Judgment, Membership, Version
from goldenset.services import membership_grant, version_publish
from labeling.models import JudgingTask, QueueSettings
from lib.formats import JsonRecord
from tests.browser import login
from tests.support import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUERIES = 12
POOLED_PAGES = 4  # pages a query of the test run brings that nobody judged yet
GERMAN = {f"q{n}" for n in range(1, QUERIES + 1) if n % 3 == 0}


def loop_set(manager):
    """12 queries (every third German), each with one relevant page judged before and, for
    the German ones, two more relevant pages the test run will miss; 4 unjudged pages per
    query for the pool. Published as v1, slices by language, one query enough per slice."""
    page_records, query_records, qrels = [], [], {}
    line = 0
    for n in range(1, QUERIES + 1):
        query_id = f"q{n}"
        query_records.append(
            JsonRecord(line=n, id=query_id, text=f"how do I rotate key {n}", metadata={"lang": "de" if query_id in GERMAN else "en"})
        )
        names = [f"d{n}-rel"] + [f"d{n}-new{m}" for m in range(1, POOLED_PAGES + 1)]
        if query_id in GERMAN:
            names += [f"d{n}-missed1", f"d{n}-missed2"]
        for name in names:
            line += 1
            page_records.append(JsonRecord(line=line, id=name, title=f"Runbook {name}", text=f"Steps for {name}."))
        qrels[(query_id, f"d{n}-rel")] = 2
        if query_id in GERMAN:
            qrels[(query_id, f"d{n}-missed1")] = 2
            qrels[(query_id, f"d{n}-missed2")] = 1
    golden_set = factories.golden_set(
        "loop",
        manager=manager,
        qrels=qrels,
        pages=page_records,
        queries=query_records,
        k_first=10,
        k_final=5,
        query_slice_fields=["lang"],
        page_slice_fields=[],
    )
    version_publish(golden_set=golden_set, note="labels before the loop")
    return golden_set


def weak_run_lines() -> str:
    """The test run: each query's judged relevant page first, then its four unjudged pages;
    it misses the German queries' other relevant pages, so the German slice's recall is
    under the 0.75 floor."""
    lines = []
    for n in range(1, QUERIES + 1):
        docs = [f"d{n}-rel"] + [f"d{n}-new{m}" for m in range(1, POOLED_PAGES + 1)]
        lines += [f"q{n} Q0 {doc} {rank} {20 - rank} test\n" for rank, doc in enumerate(docs, 1)]
    return "".join(lines)


def shown_task(page) -> str | None:
    return page.get_attribute("#pair", "data-task-id") if page.locator("#pair").count() else None


def judge_from_the_keyboard(page, grade: str, limit: int) -> list[str]:
    """Press `grade` on each pair shown until `limit` pairs are judged or none is left."""
    judged = []
    while len(judged) < limit:
        task = shown_task(page)
        if not task:
            break
        page.keyboard.press(grade)
        page.wait_for_function(
            "(previous) => { const pair = document.querySelector('#pair'); return !pair || pair.dataset.taskId !== previous; }",
            arg=task,
        )
        judged.append(task)
    return judged


def screenshot(page, name: str) -> None:
    folder = os.environ.get("GOLDSET_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"daily-loop-{name}.png"), full_page=True)


def test_a_team_walks_the_daily_loop_through_the_pages_alone(browser, live_server, make_user, tmp_path):
    manager, first, second, judge = (make_user(name) for name in ("boss", "ann", "bob", "judge"))
    golden_set = loop_set(manager)
    for user, role in ((first, Membership.Role.ANNOTATOR), (second, Membership.Role.ANNOTATOR), (judge, Membership.Role.ADJUDICATOR)):
        membership_grant(user=user, golden_set=golden_set, role=role)
    # Every third pair goes to two annotators, so the second annotator has overlap to judge;
    # one query per slice is enough to average, so the only flags are the test run's.
    QueueSettings.objects.update_or_create(golden_set=golden_set, defaults={"overlap_share": 0.34, "overlap_annotators": 2})
    EvaluationSettings.objects.update_or_create(golden_set=golden_set, defaults={"min_queries_per_slice": 1})
    slug = golden_set.slug

    def person(username: str):
        context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(15_000)
        login(page, live_server, username, f"pw-{username}")
        return page

    boss = person("boss")

    # 1. The manager uploads the test run from the runs page.
    run_file = tmp_path / "test.run"
    run_file.write_text(weak_run_lines())
    boss.goto(reverse("runs", args=[slug]))
    boss.set_input_files("input[name=file]", str(run_file))
    boss.fill("input[name=system]", "test")
    boss.fill("input[name=name]", "test run")
    with boss.expect_navigation():
        boss.click("form.upload button[type=submit]")
    run = Run.objects.get(golden_set=golden_set, name="test run")
    assert "test run" in boss.locator("main").inner_text()

    # 2. ... and pools it at depth 5 from the completeness page.
    boss.goto(reverse("completeness", args=[slug]))
    boss.check(f"#run-{run.pk}")
    boss.fill("#pool-form input[name=depth]", "5")
    with boss.expect_navigation():
        boss.click("#pool-form button[type=submit]")
    boss.wait_for_function("() => !document.querySelector('[data-job-status=queued], [data-job-status=running]')")
    assert JudgingTask.objects.filter(golden_set=golden_set).exists()
    screenshot(boss, "pool")

    # 3. The first annotator judges 30 pairs from the keyboard: nothing here is relevant.
    ann = person("ann")
    ann.goto(reverse("judging_screen", args=[slug]))
    ann.wait_for_load_state("load")
    assert len(judge_from_the_keyboard(ann, "0", 30)) == 30
    assert Judgment.objects.filter(annotator=first).count() == 30

    # 4. The second annotator judges the overlap pairs the first one judged, and disagrees.
    overlap = set(JudgingTask.objects.filter(golden_set=golden_set, judgments_required=2, judgments_done=1).values_list("pk", flat=True))
    assert overlap, "the queue gave no pair to two annotators"
    bob = person("bob")
    bob.goto(reverse("judging_screen", args=[slug]))
    bob.wait_for_load_state("load")
    judged_by_bob = judge_from_the_keyboard(bob, "2", 60)
    assert overlap <= {int(task) for task in judged_by_bob}

    # 5. The adjudicator decides the first disagreement: relevant after all.
    adjudicator = person("judge")
    adjudicator.goto(reverse("adjudicate", args=[slug]))
    with adjudicator.expect_navigation():
        adjudicator.click("a.start")
    adjudicator.keyboard.press("1")
    with adjudicator.expect_navigation():
        adjudicator.keyboard.press("Enter")
    assert Judgment.objects.filter(source=Judgment.Source.ADJUDICATED, annotator=judge, grade=1).count() == 1

    # 6. The manager publishes from the set page after reading the preview.
    boss.goto(reverse("golden_set", args=[slug]))
    with boss.expect_navigation():
        boss.click("a:has-text('Publish a new version')")
    preview = boss.locator("main").inner_text()
    assert re.search(r"\bv2\b", preview) and "added" in preview
    screenshot(boss, "publish-preview")
    boss.fill("[name=note]", "the test run's pool, judged")
    with boss.expect_navigation():
        boss.click("form.publish-form button[type=submit]")
    boss.wait_for_selector("a[href$='/versions/2/']")
    screenshot(boss, "published")
    assert Version.objects.filter(golden_set=golden_set, number=2).exists()

    # 7. The results page moves to v2, with the test run scored on it.
    boss.goto(reverse("results", args=[slug]))
    boss.wait_for_function("() => !document.querySelector('[hx-trigger*=every]')")
    results = boss.locator("main").inner_text()
    assert "v2" in results and "test run" in results
    screenshot(boss, "results-v2")

    # 8. The coverage page flags the German slice because of the test run; archiving the
    # run makes the flags it caused go away.
    def flags_naming_the_test_run() -> list[str]:
        boss.goto(reverse("coverage", args=[slug]))
        titles = boss.locator("tr.flagged td.flags").evaluate_all("cells => cells.map(cell => cell.title)")
        return [title for title in titles if "test run" in title]

    flagged = flags_naming_the_test_run()
    assert any("under the recall floor" in title for title in flagged), flagged
    assert boss.locator("tr.flagged[data-slice='query:lang=de']").count() == 1
    screenshot(boss, "coverage-flagged")
    boss.goto(reverse("run", args=[slug, run.pk]))
    with boss.expect_navigation():
        boss.click("a:has-text('Archive')")  # it asks first
    with boss.expect_navigation():
        boss.click("button:has-text('Archive')")
    assert flags_naming_the_test_run() == []
    assert boss.locator("tr.flagged").count() == 0
    screenshot(boss, "coverage-after-archive")
