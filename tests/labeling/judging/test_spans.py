"""Evidence spans and hops from the judging screen: the judge form's `spans` and `hop` go
with the grade (judgment_submit -> goldenset.services.judgment_record), as character
offsets into the page's text as stored."""

import re

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from goldenset.models import EvidenceSpan, Judgment
from goldenset.spans import Span
from labeling.judging.services import judgment_submit, judgment_undo, task_next
from labeling.judging.views import posted_spans
from lib.errors import GoldsetError
from lib.formats import JsonRecord
from tests.labeling.judging.judging_data import annotator_of, pooled_set
from tests.support import factories

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
# Non-ASCII, an astral character and HTML-ish characters that are not a tag.
TEXT = 'Ünïcode 🎉 first. The answer: 3<4 & "5>2" holds.\r\n\r\nLast line, café.'


@pytest.fixture
def pool():
    records = [JsonRecord(line=1, id="d1", title="the page", text=TEXT)] + factories.pages("d2", "d3", "d4")
    return pooled_set("spans", queries=2, pages=4, depth=2, page_records=records)


@pytest.fixture
def ann(golden_set, make_user, client):
    user = annotator_of(golden_set, make_user, "ann")
    client.force_login(user)
    return user


def _task_id(body: str) -> int:
    return int(re.search(r'id="pair"[^>]*data-task-id="(\d+)"', body).group(1))


def test_a_grade_with_spans_and_a_hop_stores_them_on_the_judgment(client, golden_set, ann):
    body = client.get(reverse("judging_screen", args=[golden_set.slug])).content.decode()
    task = _task_id(body)
    assert 'name="spans"' in body and 'name="hop"' in body
    start = TEXT.index("The answer")
    end = TEXT.index(" holds") + len(" holds.")
    client.post(reverse("judging_judge", args=[golden_set.slug, task]), {"grade": "2", "spans": f"{start}-{end},0-7", "hop": "who"}, **HTMX)
    judgment = Judgment.objects.get(annotator=ann)
    assert judgment.hop == "who"
    spans = list(EvidenceSpan.objects.filter(judgment=judgment).order_by("start").values_list("start", "end", "grade", "text"))
    assert spans == [(0, 7, 2, "Ünïcode"), (start, end, 2, 'The answer: 3<4 & "5>2" holds.')]


def test_a_grade_without_spans_grades_the_page_as_a_whole(client, golden_set, ann):
    task = _task_id(client.get(reverse("judging_screen", args=[golden_set.slug])).content.decode())
    client.post(reverse("judging_judge", args=[golden_set.slug, task]), {"grade": "1", "spans": "", "hop": ""}, **HTMX)
    judgment = Judgment.objects.get(annotator=ann)
    assert judgment.hop == "" and not EvidenceSpan.objects.filter(judgment=judgment).exists()


@pytest.mark.parametrize(
    ("spans", "message"),
    [("3-x", "is not start-end"), ("40-20", "is empty or reversed"), ("0-9999", "ends past the document"), ("0-10,5-12", "overlaps")],
)
def test_a_bad_span_is_refused_with_the_grade_and_nothing_is_written(client, golden_set, ann, spans, message):
    task = _task_id(client.get(reverse("judging_screen", args=[golden_set.slug])).content.decode())
    response = client.post(reverse("judging_judge", args=[golden_set.slug, task]), {"grade": "2", "spans": spans}, **HTMX)
    assert message in response.content.decode()
    assert not Judgment.objects.filter(annotator=ann).exists()
    assert _task_id(response.content.decode()) == task  # the same pair, still theirs


def test_a_hop_with_spaces_is_refused(client, golden_set, ann):
    task = _task_id(client.get(reverse("judging_screen", args=[golden_set.slug])).content.decode())
    response = client.post(reverse("judging_judge", args=[golden_set.slug, task]), {"grade": "2", "hop": "two words"}, **HTMX)
    assert "without spaces" in response.content.decode()
    assert not Judgment.objects.exists()


def test_the_span_field_reads_offsets_and_refuses_too_many():
    assert [(s.start, s.end, s.grade) for s in posted_spans(" 1-4 , 7-9,")] == [(1, 4, None), (7, 9, None)]
    with pytest.raises(GoldsetError, match="more than the 50"):
        posted_spans(",".join(f"{n}-{n + 1}" for n in range(0, 200, 2)))


def test_the_undo_hands_the_pair_back_and_the_new_grade_brings_its_own_spans(golden_set, make_user):
    user = annotator_of(golden_set, make_user, "ann")
    task = task_next(golden_set=golden_set, annotator=user)
    judgment_submit(task=task, annotator=user, grade=2, spans=[Span(0, 7)], hop="1")
    judgment_undo(annotator=user, golden_set=golden_set)
    again = task_next(golden_set=golden_set, annotator=user)
    assert again.pk == task.pk
    judgment_submit(task=again, annotator=user, grade=1, spans=[], hop="")
    first, second = Judgment.objects.filter(annotator=user).order_by("id")
    assert (first.grade, first.hop, EvidenceSpan.objects.filter(judgment=first).count()) == (2, "1", 1)
    assert (second.grade, second.hop, EvidenceSpan.objects.filter(judgment=second).count()) == (1, "", 0)


def test_a_judgment_with_spans_costs_one_statement_more_than_one_without(golden_set, make_user):
    user = annotator_of(golden_set, make_user, "ann")
    task = task_next(golden_set=golden_set, annotator=user)
    counts = []
    for spans in ([], [Span(0, 7)]):
        with transaction.atomic():  # the same pair, the same cycle, rolled back after each
            with CaptureQueriesContext(connection) as statements:
                judgment_submit(task=task, annotator=user, grade=2, spans=spans)
            counts.append(len(statements))
            transaction.set_rollback(True)
    assert counts[1] == counts[0] + 1  # the spans' one INSERT


def test_the_screen_shows_the_text_in_runs_that_carry_their_offsets(client, golden_set, ann):
    body = client.get(reverse("judging_screen", args=[golden_set.slug])).content.decode()
    assert 'class="page-text" data-spans' in body
    assert '<span data-o="0">Ünïcode 🎉 first. The answer: 3&lt;4 &amp; &quot;5&gt;2&quot; holds.</span>' in body
    assert f'<span data-o="{TEXT.index("Last")}">Last line, café.</span>' in body
    assert "labeling/spans.js" in body


def test_a_pair_handed_back_by_an_undo_shows_its_spans_and_hop_again(client, golden_set, ann):
    task = _task_id(client.get(reverse("judging_screen", args=[golden_set.slug])).content.decode())
    client.post(reverse("judging_judge", args=[golden_set.slug, task]), {"grade": "2", "spans": "0-7,9-15", "hop": "who"}, **HTMX)
    body = client.post(reverse("judging_undo", args=[golden_set.slug]), **HTMX).content.decode()
    assert _task_id(body) == task
    assert 'name="spans" value="0-7,9-15"' in body and 'name="hop" value="who"' in body
