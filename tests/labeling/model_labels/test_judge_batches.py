"""The OpenAI-compatible judge grading several passages of one query in one request.

As in test_judge.py, the endpoint is a local HTTP server that speaks the chat-completions
protocol (chat_server.ChatServer, started by each test): no hosted model can be reached
from here. It answers a batch's numbered passages with one "[i] ##final score: N" line per
passage, unless the test makes it answer short, garbled or off the scale.
"""

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from goldenset.models import ModelJudgment
from labeling.model_labels.jobs import judge_job_run, judge_job_submit
from labeling.models import JudgeFailure, JudgeJob
from lib.errors import GoldsetError
from lib.llm_judging import DEFAULT_PROMPT
from tests.labeling.model_labels.chat_server import Reply, batch_answer, batch_docs, is_batch

# The chat server and the pool of 10 unlabelled pairs (q1 d2-d4, q2 d3-d6, q3 d6-d8) are test_judge.py's.
from tests.labeling.model_labels.test_judge import NoWait, form_data, pooled, server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db


def run_job(golden_set, pool, server, **options):
    job = judge_job_submit(
        golden_set=golden_set,
        pool_id=pool.pk,
        base_url=server.base_url,
        model="judge-8b",
        prompt_text=DEFAULT_PROMPT,
        job_task=None,
        **options,
    )
    return judge_job_run(job.pk, waiting=NoWait())


def labels(golden_set) -> dict[tuple[str, str], int]:
    rows = ModelJudgment.objects.filter(golden_set=golden_set).values_list("query__query_id", "page__doc_id", "grade")
    return {(q, d): g for q, d, g in rows}


def failures(job) -> dict[tuple[str, str], tuple[str, str]]:
    rows = JudgeFailure.objects.filter(job=job).values_list("query__query_id", "page__doc_id", "error", "raw_answer")
    return {(q, d): (error, raw) for q, d, error, raw in rows}


def test_a_batch_grades_the_passages_of_one_query_in_one_request_and_counts_each_request_once(pooled, server):
    golden_set, pool = pooled
    job = run_job(golden_set, pool, server, batch_size=2)
    assert job.status == "done" and job.batch_size == 2
    stored = labels(golden_set)
    assert len(stored) == 10 and all(grade == int(doc[1:]) % 4 for (_, doc), grade in stored.items())
    # q1: [d2 d3] [d4]; q2: [d3 d4] [d5 d6]; q3: [d6 d7] [d8]. A lone pair is asked as one pair always is.
    assert sorted(batch_docs(seen.prompt) for seen in server.seen if is_batch(seen.prompt)) == [[2, 3], [3, 4], [5, 6], [6, 7]]
    singles = [seen.prompt for seen in server.seen if not is_batch(seen.prompt)]
    assert len(singles) == 2 and all("[1]" not in prompt for prompt in singles)
    assert (job.pairs_done, job.pairs_failed, job.requests, job.prompt_tokens, job.completion_tokens) == (10, 0, 6, 600, 60)


def test_the_batch_prompt_numbers_the_passages_of_one_query_and_asks_for_a_line_each(pooled, server):
    golden_set, pool = pooled
    run_job(golden_set, pool, server, batch_size=4)
    assert len(server.seen) == 3  # one request per query
    prompts = {batch_docs(seen.prompt)[0]: seen.prompt for seen in server.seen}
    q2 = prompts[3] if "question q2" in prompts[3] else prompts[2]
    assert "Query: question q2" in q2 and batch_docs(q2) == [3, 4, 5, 6]
    assert "There are 4 passages above, numbered [1] to [4]" in q2 and "[1] ##final score: N" in q2
    assert all("{passage}" not in seen.prompt and "question q" in seen.prompt for seen in server.seen)
    row = ModelJudgment.objects.filter(golden_set=golden_set, query__query_id="q2", page__doc_id="d5").get()
    assert row.raw_answer == batch_answer(q2)  # the whole answer is kept with each of its grades


def test_a_short_or_garbled_batch_answer_fails_just_those_pairs_and_keeps_the_raw_text(pooled, server):
    golden_set, pool = pooled
    garbled = {2: "[2] somewhat relevant", 3: "[3] ##final score: 9"}  # q2's d4 and d5; d6 ([4]) left out

    def reply(seen, attempt):
        if "question q2" in seen.prompt:
            return Reply(content=batch_answer(seen.prompt, garbled).replace("\n[4] ##final score: 2", ""))
        if "question q3" in seen.prompt:
            return Reply(content="All of these look relevant to me.")
        return Reply(content=batch_answer(seen.prompt))

    server.reply = reply
    job = run_job(golden_set, pool, server, batch_size=4)
    q2_raw = "[1] ##final score: 3\n[2] somewhat relevant\n[3] ##final score: 9"
    assert failures(job) == {
        ("q2", "d4"): ("the batch answer gives no score for passage [2] of 4", q2_raw),
        ("q2", "d5"): ("score 9 is not on the set's scale 0-3", q2_raw),
        ("q2", "d6"): ("the batch answer gives no score for passage [4] of 4", q2_raw),
        **{
            ("q3", doc): (f"the batch answer gives no score for passage [{i}] of 3", "All of these look relevant to me.")
            for i, doc in enumerate(["d6", "d7", "d8"], start=1)
        },
    }
    assert set(labels(golden_set)) == {("q1", "d2"), ("q1", "d3"), ("q1", "d4"), ("q2", "d3")}
    assert (job.pairs_done, job.pairs_failed, job.requests) == (4, 6, 3)


def test_a_batch_answer_that_is_not_a_chat_completion_fails_its_pairs_alike(pooled, server):
    golden_set, pool = pooled
    server.reply = lambda seen, attempt: (
        Reply(body='{"choices": []}') if "question q1" in seen.prompt else Reply(content=batch_answer(seen.prompt))
    )
    job = run_job(golden_set, pool, server, batch_size=4)
    failed = failures(job)
    assert set(failed) == {("q1", "d2"), ("q1", "d3"), ("q1", "d4")}
    assert all("not a chat completion" in error and raw == '{"choices": []}' for error, raw in failed.values())


def test_a_batch_answered_429_is_sent_again_whole_and_then_graded(pooled, server):
    golden_set, pool = pooled
    server.reply = lambda seen, attempt: (
        Reply(status=429, headers={"Retry-After": "2"}) if attempt == 1 else Reply(content=batch_answer(seen.prompt))
    )
    job = run_job(golden_set, pool, server, batch_size=4)
    assert len(labels(golden_set)) == 10 and job.pairs_failed == 0
    assert job.requests == 6  # each of the three batches twice


@pytest.mark.parametrize("size", [0, 21, True])
def test_a_batch_size_out_of_bounds_is_refused_by_name_and_nothing_recorded(pooled, server, size):
    golden_set, pool = pooled
    with pytest.raises(GoldsetError) as caught:
        run_job(golden_set, pool, server, batch_size=size)
    assert any(problem.startswith("batch_size: from 1 to 20 passages") for problem in caught.value.problems)
    assert not JudgeJob.objects.exists() and not server.seen


def test_the_command_sends_batches_when_asked(pooled, server):
    golden_set, pool = pooled
    out = StringIO()
    call_command(
        "model_judge",
        golden_set.slug,
        "--pool",
        str(pool.pk),
        "--base-url",
        server.base_url,
        "--model",
        "local-7b",
        "--batch",
        "4",
        stdout=out,
    )
    assert "pairs: 10 (10 graded, 0 failed, 0 labelled already)" in out.getvalue()
    assert re.search(r"^requests: 3,", out.getvalue(), re.MULTILINE)


def test_a_manager_sets_the_batch_size_on_the_form_and_a_bad_one_is_shown_beside_its_field(
    client,
    owner,
    pooled,
    server,
    django_capture_on_commit_callbacks,
):
    golden_set, pool = pooled
    client.force_login(owner)
    assert 'name="batch_size"' in client.get(reverse("model_labels", args=[golden_set.slug])).content.decode()
    response = client.post(reverse("judge_job_start", args=[golden_set.slug]), form_data(pool, server, batch_size="30"))
    assert response.status_code == 400 and not JudgeJob.objects.exists()
    assert "Ensure this value is less than or equal to 20." in response.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("judge_job_start", args=[golden_set.slug]), form_data(pool, server, batch_size="3"))
    assert response.status_code == 302
    assert JudgeJob.objects.get().batch_size == 3


def test_an_annotator_cannot_start_a_batched_job(client, teammate, pooled, server):
    golden_set, pool = pooled
    from goldenset.models import Membership
    from goldenset.services import membership_grant

    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    client.force_login(teammate)
    response = client.post(reverse("judge_job_start", args=[golden_set.slug]), form_data(pool, server, batch_size="3"))
    assert response.status_code == 404 and not JudgeJob.objects.exists() and not server.seen
