"""Evidence spans in headless Chromium: an annotator selects the words that answer the
query with the mouse's selection, marks a sentence from the keyboard, names the hop and
grades; the spans are stored with the offsets of Page.text exactly, across a tag, a
character reference and non-ASCII text. Then a manager reads two chunkings side by side on
the compare page. Screenshots go to GOLDSET_SCREENSHOTS; both pages pass axe."""

import os
from pathlib import Path

import pytest
from django.urls import reverse

from evaluation.services import evaluation_compute
from goldenset.models import EvidenceSpan, Judgment, Membership
from goldenset.services import membership_grant, version_publish
from labeling.pools.services import pool_build
from lib.formats import JsonRecord
from tests.browser import axe_violations, login
from tests.support import chunks, factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEXT = (
    "<p>Café &amp; crème: the first line.</p>\n"
    "<p>To rotate it, open the <b>VPN</b> console. The new key: the answer is 42 &amp; more 🎉 after that.</p>\n"
    "<p>Ünïcode tail, nothing else.</p>"
)
# Select on screen "VPN console. The new key: the answer is 42 & more": it starts inside <b>
# and ends after a character reference.
SHOWN = "VPN console. The new key: the answer is 42 & more"
START = TEXT.index("VPN</b>")
END = TEXT.index("&amp; more") + len("&amp; more")
FIRST_SENTENCE = (TEXT.index("Café"), TEXT.index("line.") + len("line."))

SELECT = """(needle) => {
  const root = document.querySelector('#pair .page-text');
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = []; let flat = '';
  for (let node = walker.nextNode(); node; node = walker.nextNode()) { nodes.push([node, flat.length]); flat += node.data; }
  const at = flat.indexOf(needle);
  if (at < 0) throw new Error('not on screen: ' + needle);
  const point = (index) => { for (let i = nodes.length - 1; i >= 0; i--) if (nodes[i][1] <= index) return [nodes[i][0], index - nodes[i][1]]; };
  const range = document.createRange();
  range.setStart(...point(at)); range.setEnd(...point(at + needle.length));
  const selection = window.getSelection(); selection.removeAllRanges(); selection.addRange(range);
}"""


def screenshot(page, name: str) -> None:
    folder = os.environ.get("GOLDSET_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"spans-{name}.png"), full_page=True)


def chunked_set(manager=None):
    records = [JsonRecord(line=1, id="d1", title="Rotating the VPN key", text=TEXT)] + factories.pages("d2", "d3", "d4")
    golden_set = factories.golden_set(
        "spans", manager=manager, pages=records, queries=factories.queries("q1", "q2"), qrels={}, k_first=4, k_final=2
    )
    golden_set.queries.filter(query_id="q1").update(text="which key opens the VPN console")
    second = TEXT.index("<p>To rotate")
    passages = chunks.chunking(
        golden_set,
        "passages",
        {
            "d1#1": ("d1", 0, second),
            "d1#2": ("d1", second, TEXT.index("<p>Ünïcode")),
            **{f"d{n}#1": (f"d{n}", 0, 9) for n in range(2, 5)},
        },
    )
    return golden_set, passages


def test_an_annotator_marks_evidence_with_the_mouse_and_the_keyboard_and_it_is_stored_exactly(browser_page, live_server, make_user):
    golden_set, passages = chunked_set()
    run = chunks.chunk_run(golden_set, passages, "passage-run", {"q1": ["d1#2", "d2#1"], "q2": ["d3#1"]})
    pool_build(golden_set=golden_set, runs=[run], depth=2, strategy="depth")
    user = make_user("ann")
    membership_grant(user=user, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    page = browser_page
    login(page, live_server, "ann", "pw-ann")
    page.goto(f"/label/{golden_set.slug}/")
    assert "Rotating the VPN key" in page.text_content("#pair .page-title")
    # The passage that brought the page in is highlighted.
    assert "the answer is 42" in "".join(page.locator("#pair .page-text .chunk").all_inner_texts())
    assert "Café" not in "".join(page.locator("#pair .page-text .chunk").all_inner_texts())

    page.evaluate(SELECT, SHOWN)
    page.keyboard.press("m")
    page.keyboard.press("j")  # the caret on the first sentence
    page.keyboard.press("m")
    items = page.locator("#pair .span-list li")
    assert items.count() == 2
    assert "Café & crème: the first line." in items.nth(0).inner_text()
    assert SHOWN in items.nth(1).inner_text()
    page.keyboard.press("h")
    page.keyboard.type("console")
    page.keyboard.press("Escape")
    screenshot(page, "judging-marked-1280")
    assert axe_violations(page) == []

    task = page.get_attribute("#pair", "data-task-id")
    page.keyboard.press("2")
    page.wait_for_function("(previous) => document.querySelector('#pair').dataset.taskId !== previous", arg=task)
    judgment = Judgment.objects.get(annotator=user)
    assert (judgment.grade, judgment.hop) == (2, "console")
    spans = list(EvidenceSpan.objects.filter(judgment=judgment).order_by("start").values_list("start", "end", "text"))
    assert spans == [(*FIRST_SENTENCE, TEXT[slice(*FIRST_SENTENCE)]), (START, END, TEXT[START:END])]
    # The next pair is of the same query: the hop is kept for it.
    assert page.input_value("#pair input[name=hop]") == "console"


def test_a_manager_reads_two_chunkings_side_by_side_on_the_compare_page(browser_page, live_server, make_user):
    manager = make_user("boss")
    golden_set, passages = chunked_set(manager)
    judge = make_user("judge")
    membership_grant(user=judge, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    from goldenset.services import judgment_record

    query = golden_set.queries.get(query_id="q1")
    judgment_record(query=query, page=golden_set.corpus.pages.get(doc_id="d1"), grade=2, annotator=judge)
    judgment_record(query=golden_set.queries.get(query_id="q2"), page=golden_set.corpus.pages.get(doc_id="d3"), grade=1, annotator=judge)
    version = version_publish(golden_set=golden_set)
    pages_run = factories.run(golden_set, "pages-reranked", {"q1": ["d2", "d4", "d1"], "q2": ["d3"]}, stage="reranked")
    evaluation_compute(run=pages_run, version=version)
    passage_run = chunks.chunk_run(golden_set, passages, "passages-reranked", {"q1": ["d1#2", "d1#1"], "q2": ["d3#1"]}, stage="reranked")
    chunks.chunk_run_scored(passage_run, version)

    page = browser_page
    login(page, live_server, "boss", "pw-boss")
    page.goto(reverse("compare", args=[golden_set.slug]) + f"?a={pages_run.pk}&b={passage_run.pk}&version={version.number}")
    reading = page.text_content(".chunkings .chunking-reading")
    # The pages run misses q1's d1 in its top 2, whose two passages hold most of it; both find
    # q2's d3. Its top 2 are two short pages, the passages' two long ones.
    assert "passages finds 35.6 points more of the evidence than documents in the top 2, at 417% more prompt tokens." in reading
    screenshot(page, "compare-chunkings-1280")
    assert axe_violations(page) == []
    page.set_viewport_size({"width": 390, "height": 900})
    screenshot(page, "compare-chunkings-390")


PLAIN = "Ünïcode 🎉🎉 then a < b & c > d: the answer 𝔁 is here.\r\n\r\nSecond paragraph, 42 €."


def test_offsets_count_characters_as_stored_past_astral_ones_in_plain_text(browser_page, live_server, make_user):
    records = [JsonRecord(line=1, id="d1", title="plain", text=PLAIN)] + factories.pages("d2")
    golden_set = factories.golden_set("plain", pages=records, queries=factories.queries("q1"), qrels={})
    pool_build(golden_set=golden_set, runs=[factories.run(golden_set, "bm25", {"q1": ["d1", "d2"]})], depth=2, strategy="depth")
    user = make_user("ann")
    membership_grant(user=user, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    page = browser_page
    login(page, live_server, "ann", "pw-ann")
    page.goto(f"/label/{golden_set.slug}/")
    assert not page.locator("#pair .page-text .chunk").count()  # a pool of document runs highlights nothing
    page.evaluate(SELECT, "a < b & c > d: the answer 𝔁 is")
    page.click("#pair [data-action=mark]")
    page.keyboard.press("j")
    page.keyboard.press("j")  # the second sentence: the second paragraph
    page.keyboard.press("m")
    task = page.get_attribute("#pair", "data-task-id")
    page.keyboard.press("1")
    page.wait_for_function("(previous) => document.querySelector('#pair').dataset.taskId !== previous", arg=task)
    start = PLAIN.index("a < b")
    end = PLAIN.index(" is here") + len(" is")
    second = PLAIN.index("Second")
    spans = list(EvidenceSpan.objects.filter(judgment__annotator=user).order_by("start").values_list("start", "end"))
    assert spans == [(start, end), (second, len(PLAIN))]
