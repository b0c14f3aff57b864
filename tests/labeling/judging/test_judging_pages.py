"""The judging screen and its htmx fragments, through the test client."""

import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from goldenset.models import Judgment
from labeling.judging.views import highlight, query_terms
from labeling.models import JudgingTask
from lib.formats import JsonRecord
from tests.labeling.judging.judging_data import annotator_of, pooled_set
from tests.support import factories

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def pool():
    return pooled_set(guidelines="Grade 3 only when the page answers the question fully.")


@pytest.fixture
def ann(golden_set, make_user, client):
    user = annotator_of(golden_set, make_user, "ann")
    client.force_login(user)
    return user


def task_id(response) -> int:
    found = re.search(r'id="pair"[^>]*data-task-id="(\d*)"', response.content.decode())
    assert found, "no #pair fragment with data-task-id"
    return int(found.group(1)) if found.group(1) else 0


def test_the_judging_list_names_a_set_once_when_its_corpus_has_its_name(client, golden_set, ann):
    """Issue 30 item 8: an imported set's corpus takes the set's name, printed twice."""
    row = re.search(r"<tr>\s*<td>(.*?)</td>", client.get(reverse("judging_home")).content.decode(), re.S).group(1)
    assert row.count(golden_set.name) == 1 and "corpus" not in row
    golden_set.corpus.name = "Support wiki"
    golden_set.corpus.save(update_fields=["name"])
    row = re.search(r"<tr>\s*<td>(.*?)</td>", client.get(reverse("judging_home")).content.decode(), re.S).group(1)
    assert "corpus Support wiki" in row


def test_the_judging_list_shows_only_the_sets_one_annotates(client, golden_set, ann):
    factories.golden_set("other")
    response = client.get(reverse("judging_home"))
    assert response.status_code == 200
    assert reverse("judging_screen", args=[golden_set.slug]) in response.content.decode()
    assert "/label/other/" not in response.content.decode()


def test_the_judging_list_says_what_waits_and_what_you_judged_today(client, golden_set, ann):
    before = client.get(reverse("judging_home")).content.decode()
    waiting = JudgingTask.objects.filter(golden_set=golden_set).count()
    assert re.search(rf'<td class="num">{waiting}</td>\s*<td class="num">0</td>', before)
    assert "Start judging" in before
    task = JudgingTask.objects.get(pk=task_id(client.get(reverse("judging_screen", args=[golden_set.slug]))))
    client.post(reverse("judging_judge", args=[golden_set.slug, task.pk]), {"grade": "1"})
    cache.clear()  # the set's counts are kept for a few seconds
    after = client.get(reverse("judging_home")).content.decode()
    assert re.search(rf'<td class="num">{waiting - 1}</td>\s*<td class="num">1</td>\s*<td class="num">1</td>', after)


def test_the_counts_stop_at_a_pools_budget_and_today_counts_pairs_as_judged_by_you_does(client, golden_set, ann):
    """Issue 30 item 5: "pairs waiting 6035" and "58 of 6093 done" ignored the pool's budget
    (400); "judged by you today 162" stood beside "judged by you 160" (a pair judged again
    after an undo counted twice)."""
    from labeling.judging.selectors import judging_progress
    from labeling.models import Pool
    from labeling.pools.services import pool_build

    extra = pool_build(
        golden_set=golden_set, runs=list(Pool.objects.get(golden_set=golden_set).runs.all()), depth=8, strategy="depth", budget=2
    ).pool
    assert extra.pair_count == 12  # d5 to d8 of three queries, two of which may be judged
    first = judging_progress(golden_set=golden_set, annotator=ann)
    assert first.total == JudgingTask.objects.filter(golden_set=golden_set, pool__budget__isnull=True).count() + 2
    screen = reverse("judging_screen", args=[golden_set.slug])
    task = JudgingTask.objects.get(pk=task_id(client.get(screen)))
    client.post(reverse("judging_judge", args=[golden_set.slug, task.pk]), {"grade": "1"}, **HTMX)
    client.post(reverse("judging_undo", args=[golden_set.slug]), **HTMX)
    client.post(reverse("judging_judge", args=[golden_set.slug, task.pk]), {"grade": "2"}, **HTMX)
    cache.clear()  # the set's counts are kept for a few seconds
    home = client.get(reverse("judging_home")).content.decode()
    assert re.search(r'<td class="num">1</td>\s*<td class="num">1</td>', home)  # today 1, judged by you 1


def test_an_annotator_who_reads_no_set_lands_on_their_judging(client, golden_set, ann):
    response = client.get(reverse("home"))
    assert response.status_code == 302 and response["Location"] == reverse("judging_home")


def test_the_screen_shows_the_pair_guidelines_and_the_grade_legend(client, golden_set, ann):
    response = client.get(reverse("judging_screen", args=[golden_set.slug]))
    body = response.content.decode()
    task = JudgingTask.objects.get(pk=task_id(response))
    assert task.leased_to_id == ann.pk
    assert task.query.text in body
    assert "Grade 3 only when the page answers the question fully." in body
    for key, label in [("0", "not relevant"), ("1", "related"), ("2", "highly relevant"), ("3", "perfectly relevant")]:
        assert re.search(rf'data-key="{key}"[^>]*><kbd>{key}</kbd> {label}', body)
    assert "Skip" in body or "skip" in body


def test_the_screen_is_blind_to_systems_ranks_and_other_grades(client, golden_set, ann, make_user):
    other = annotator_of(golden_set, make_user, "bob")
    from labeling.judging.services import task_next, task_submit

    task_submit(task=task_next(golden_set=golden_set, annotator=other), annotator=other, grade=3)
    body = client.get(reverse("judging_screen", args=[golden_set.slug])).content.decode()
    assert "bm25" not in body  # the run's name and system
    assert "rank" not in body.lower()
    assert "bob" not in body


def test_the_querys_terms_are_highlighted_in_the_page(make_user, client):
    records = [JsonRecord(line=1, id="d1", title="Rotate the VPN certificates", text="How to rotate a <b>VPN</b> certificate &amp; keys.")]
    records += factories.pages(*(f"d{n}" for n in range(2, 5)))
    pool = pooled_set("vpn", queries=1, pages=4, depth=1, page_records=records)
    golden_set = pool.golden_set
    golden_set.queries.filter(query_id="q1").update(text="rotate vpn certificate")
    client.force_login(annotator_of(golden_set, make_user, "ann"))
    body = client.get(reverse("judging_next", args=[golden_set.slug])).content.decode()
    assert "<mark>Rotate</mark> the <mark>VPN</mark> <mark>certificates</mark>" in body
    # The page's text comes in runs that carry their offsets (lib.text_offsets): read without them.
    text = re.sub(r"</?span[^>]*>", "", body)
    assert "How to <mark>rotate</mark> a <b><mark>VPN</mark></b> <mark>certificate</mark> &amp; keys." in text


def test_highlighting_never_touches_tags_or_character_references():
    assert query_terms("How is the amp on a b?") == ["amp"]
    assert highlight('<a href="/amp">amp</a> &amp;', ["amp"]) == '<a href="/amp"><mark>amp</mark></a> &amp;'


def test_a_page_with_script_or_event_handlers_runs_nothing(make_user, client):
    hostile = '<img src="x" onerror="window.pwned=1">Hello<script>window.pwned=2</script> <a href="javascript:alert(1)">link</a>'
    records = [JsonRecord(line=1, id="d1", title="<script>window.pwned=3</script>title", text=hostile)]
    pool = pooled_set("hostile", queries=1, pages=1, depth=1, page_records=records)
    golden_set = pool.golden_set
    client.force_login(annotator_of(golden_set, make_user, "ann"))
    body = client.get(reverse("judging_next", args=[golden_set.slug])).content.decode()
    assert "Hello" in body
    assert "onerror" not in body
    assert "<script>window.pwned" not in body
    assert "javascript:" not in body
    assert "&lt;script&gt;window.pwned=3&lt;/script&gt;title" in body  # the title is text, escaped


def test_the_next_fragment_is_the_pair_alone(client, golden_set, ann):
    response = client.get(reverse("judging_next", args=[golden_set.slug]), **HTMX)
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="pair"')
    assert "<html" not in body
    assert task_id(response) == JudgingTask.objects.get(leased_to=ann).pk


def test_judging_through_htmx_records_the_grade_and_returns_the_next_pair(client, golden_set, ann):
    first = task_id(client.get(reverse("judging_next", args=[golden_set.slug])))
    response = client.post(
        reverse("judging_judge", args=[golden_set.slug, first]),
        {"grade": "2", "note": "close", "seconds": "3.25"},
        **HTMX,
    )
    assert response.status_code == 200
    judgment = Judgment.objects.get(annotator=ann)
    assert (judgment.grade, judgment.note, judgment.seconds_spent) == (2, "close", 3.2)
    following = task_id(response)
    assert following and following != first
    assert '<strong class="judged-by-you">1</strong> judged by you' in response.content.decode()


def test_the_time_spent_falls_back_to_the_time_since_the_pair_was_shown(client, golden_set, ann):
    first = task_id(client.get(reverse("judging_next", args=[golden_set.slug])))
    client.post(reverse("judging_judge", args=[golden_set.slug, first]), {"grade": "1"}, **HTMX)
    assert 0 <= Judgment.objects.get(annotator=ann).seconds_spent < 60


def test_the_screen_says_which_page_of_the_query_the_pair_is(client, golden_set, ann):
    # The set's default order: one query at a time, its pages in turn (pooled_set: 4 a query).
    response = client.get(reverse("judging_screen", args=[golden_set.slug]))
    body = response.content.decode()
    assert "page 1 of 4 for this query" in body
    query_text = re.search(r'<h2 class="query-text">([^<]*)</h2>', body).group(1)
    for page in (2, 3, 4):
        response = client.post(reverse("judging_judge", args=[golden_set.slug, task_id(response)]), {"grade": "1"}, **HTMX)
        body = response.content.decode()
        assert f"page {page} of 4 for this query" in body
        assert f'<h2 class="query-text">{query_text}</h2>' in body  # still the same query, shown as prominently
    response = client.post(reverse("judging_judge", args=[golden_set.slug, task_id(response)]), {"grade": "1"}, **HTMX)
    body = response.content.decode()
    assert "page 1 of 4 for this query" in body and f'<h2 class="query-text">{query_text}</h2>' not in body


def test_judging_without_htmx_redirects_to_the_screen(client, golden_set, ann):
    first = task_id(client.get(reverse("judging_next", args=[golden_set.slug])))
    response = client.post(reverse("judging_judge", args=[golden_set.slug, first]), {"grade": "0"})
    assert response.status_code == 302
    assert response["Location"] == reverse("judging_screen", args=[golden_set.slug])


def test_a_bad_grade_shows_the_same_pair_with_a_message(client, golden_set, ann):
    first = task_id(client.get(reverse("judging_next", args=[golden_set.slug])))
    response = client.post(reverse("judging_judge", args=[golden_set.slug, first]), {"grade": "9"}, **HTMX)
    assert "grade 9 is not on the scale" in response.content.decode()
    assert task_id(response) == first
    assert not Judgment.objects.exists()


def test_a_task_of_another_set_is_not_found(client, golden_set, ann, make_user):
    other = pooled_set("other-set")
    foreign = JudgingTask.objects.filter(pool=other).first()
    response = client.post(reverse("judging_judge", args=[golden_set.slug, foreign.pk]), {"grade": "1"}, **HTMX)
    assert response.status_code == 404
    assert not Judgment.objects.exists()


def test_skip_and_undo_through_htmx(client, golden_set, ann):
    first = task_id(client.get(reverse("judging_next", args=[golden_set.slug])))
    response = client.post(reverse("judging_skip", args=[golden_set.slug, first]), **HTMX)
    second = task_id(response)
    assert second != first
    response = client.post(reverse("judging_judge", args=[golden_set.slug, second]), {"grade": "3"}, **HTMX)
    assert task_id(response) not in (first, second)  # the skipped pair does not come back to its skipper
    response = client.post(reverse("judging_undo", args=[golden_set.slug]), **HTMX)
    body = response.content.decode()
    assert task_id(response) == second
    assert "you gave this pair 3 (perfectly relevant)" in body.lower()
    assert '<strong class="judged-by-you">0</strong>' in body
    client.post(reverse("judging_judge", args=[golden_set.slug, second]), {"grade": "1"}, **HTMX)
    assert list(Judgment.objects.filter(annotator=ann).order_by("id").values_list("grade", flat=True)) == [3, 1]


def test_an_undo_says_so_once_and_skipping_the_pair_it_hands_back_keeps_the_grade(client, golden_set, ann):
    """Issue 30 item 8: undo showed two banners saying the same thing, and "skip to keep that
    grade" beside a key help saying a skipped pair goes to someone else."""
    first = task_id(client.get(reverse("judging_next", args=[golden_set.slug])))
    client.post(reverse("judging_judge", args=[golden_set.slug, first]), {"grade": "2"}, **HTMX)
    body = client.post(reverse("judging_undo", args=[golden_set.slug]), **HTMX).content.decode()
    assert body.lower().count("you gave this pair 2") == 1
    assert "skipping keeps it" in body
    skipped = client.post(reverse("judging_skip", args=[golden_set.slug, first]), **HTMX).content.decode()
    assert "your earlier grade of the pair stands" in skipped and "goes to someone else" not in skipped
    assert list(Judgment.objects.filter(annotator=ann).values_list("grade", flat=True)) == [2]


def test_undo_with_nothing_to_undo_says_so(client, golden_set, ann):
    response = client.post(reverse("judging_undo", args=[golden_set.slug]), **HTMX)
    assert "nothing to undo" in response.content.decode()


def test_a_set_without_a_pool_asks_for_one(client, make_user):
    golden_set = factories.golden_set("bare")
    client.force_login(annotator_of(golden_set, make_user, "ann"))
    response = client.get(reverse("judging_screen", args=[golden_set.slug]))
    assert "ask a manager to build a pool" in response.content.decode()
    assert task_id(response) == 0


def test_a_set_with_its_own_scale_gets_its_own_keys(make_user, client):
    scale = [{"value": -1, "label": "harmful"}, {"value": 0, "label": "off topic"}, {"value": 5, "label": "answer"}]
    pool = pooled_set("scaled", grade_scale=scale)
    golden_set = pool.golden_set
    client.force_login(annotator_of(golden_set, make_user, "ann"))
    response = client.get(reverse("judging_screen", args=[golden_set.slug]))
    body = response.content.decode()
    assert re.search(r'value="-1" data-key="1"[^>]*><kbd>1</kbd> harmful', body)
    assert re.search(r'value="5" data-key="3"[^>]*><kbd>3</kbd> answer', body)
    client.post(reverse("judging_judge", args=[golden_set.slug, task_id(response)]), {"grade": "-1"}, **HTMX)
    assert Judgment.objects.get().grade == -1


def test_next_and_judge_make_a_bounded_number_of_queries(client, golden_set, ann):
    client.get(reverse("judging_screen", args=[golden_set.slug]))  # counts what the annotator judged, once
    JudgingTask.objects.filter(leased_to=ann).update(leased_to=None, lease_expires_at=None)
    # In a test every transaction is a savepoint: SAVEPOINT and RELEASE stand for BEGIN and COMMIT.
    with CaptureQueriesContext(connection) as handed_out:
        first = task_id(client.get(reverse("judging_next", args=[golden_set.slug]), **HTMX))
    with CaptureQueriesContext(connection) as held:
        client.get(reverse("judging_next", args=[golden_set.slug]), **HTMX)  # the held pair again
    with CaptureQueriesContext(connection) as judged:
        client.post(reverse("judging_judge", args=[golden_set.slug, first]), {"grade": "1", "seconds": "2", "judged": "0"}, **HTMX)
    # Session, user, the set and the annotator's roles (4), then their leases, and the
    # hand-out's transaction: the queue settings, the query they were on (the one of their
    # latest judgment, judging one query at a time), overlap, the set's pools, the head of
    # each pool's queue, of its samples and of its stale labels, the lease, the task; the set's
    # progress comes from the cache the screen filled. "Page i of n" rides in the task's SELECT.
    assert len(handed_out) <= 16
    # The four, then the lease they hold.
    assert len(held) <= 5
    # The four, the task; one transaction for the judgment (locks, task, judgment, settings,
    # close, the query's pairs and their tasks, the window's moves) and the next pair's
    # hand-out (their leases, settings; the judged pair's query has one: lease, task). No
    # session write.
    assert len(judged) <= 20
    statements = [query["sql"] for query in judged.captured_queries]
    assert sum(sql.startswith("SAVEPOINT") for sql in statements) == 1  # one transaction (COMMIT outside a test)
    assert not any("django_session" in sql for sql in statements if not sql.startswith("SELECT"))


def test_the_judged_count_rides_in_the_fragment_so_judging_writes_no_session(client, golden_set, ann):
    response = client.get(reverse("judging_screen", args=[golden_set.slug]))
    for expected in (1, 2):
        carried = re.search(r'name="judged" value="(\d+)"', response.content.decode()).group(1)
        with CaptureQueriesContext(connection) as judged:
            response = client.post(
                reverse("judging_judge", args=[golden_set.slug, task_id(response)]),
                {"grade": "1", "judged": carried},
                **HTMX,
            )
        assert f'<strong class="judged-by-you">{expected}</strong> judged by you' in response.content.decode()
        assert not any(query["sql"].startswith('UPDATE "django_session"') for query in judged.captured_queries)
    # A fresh visit counts again from the judgments.
    body = client.get(reverse("judging_screen", args=[golden_set.slug])).content.decode()
    assert '<strong class="judged-by-you">2</strong> judged by you' in body


def test_a_refused_grade_leaves_nothing_written_and_shows_the_held_pair_again(client, golden_set, ann, make_user):
    first = task_id(client.get(reverse("judging_screen", args=[golden_set.slug])))
    JudgingTask.objects.filter(pk=first).update(leased_to=make_user("carl"))  # someone else holds it now
    response = client.post(reverse("judging_judge", args=[golden_set.slug, first]), {"grade": "1", "judged": "0"}, **HTMX)
    assert "is now with another annotator" in response.content.decode()
    assert not Judgment.objects.filter(annotator=ann).exists()
    assert task_id(response) not in (0, first)  # a pair of their own to judge
    assert JudgingTask.objects.filter(leased_to=ann).count() == 1


def test_a_post_without_the_carried_count_falls_back_to_the_session(client, golden_set, ann):
    first = task_id(client.get(reverse("judging_screen", args=[golden_set.slug])))
    response = client.post(reverse("judging_judge", args=[golden_set.slug, first]), {"grade": "1"}, **HTMX)
    assert '<strong class="judged-by-you">1</strong> judged by you' in response.content.decode()
    assert client.session["judging_counts"][golden_set.slug] == 1


def test_a_query_in_two_pools_names_the_pool_its_page_count_is_of(client, golden_set, ann):
    """Issue 30 item 5: "page 2 of 7, page 2 of 10" flipped between two pools of one query."""
    from labeling.pools.services import pool_build

    first = client.get(reverse("judging_next", args=[golden_set.slug])).content.decode()
    assert " in pool " not in first
    run = factories.run(golden_set, "other", {query_id: ["d8", "d7", "d6"] for query_id in ("q1", "q2", "q3")})
    second = pool_build(golden_set=golden_set, runs=[run], depth=3, strategy="depth").pool
    task = JudgingTask.objects.filter(pool=second).first()
    place = re.search(r'class="query-place hint">([^<]*)<', client.get(reverse("judging_next", args=[golden_set.slug])).content.decode())
    assert place and " in pool " in place.group(1), place
    assert task is not None
