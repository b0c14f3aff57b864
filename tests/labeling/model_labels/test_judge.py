"""A model judge grading a pool's pairs through an OpenAI-compatible chat-completions API.

No hosted LLM can run on these machines (no network to one, no chat model's weights), so
each test starts a local HTTP server that speaks the same protocol (chat_server.ChatServer,
an aiohttp server in a thread): the judge cannot tell it from vLLM, Ollama or a hosted API,
and the test decides what it answers: grades, malformed answers, slow answers, 429 and 500.
"""

from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import OperationalError
from django.urls import reverse
from django.utils import timezone

from goldenset.models import Judgment, Membership, ModelJudgment, ModelPrompt
from goldenset.services import membership_grant
from labeling.model_labels import jobs as judge_jobs
from labeling.model_labels.jobs import judge_job_run, judge_job_submit
from labeling.model_labels.judges import Waiting
from labeling.models import JudgeFailure, JudgeJob
from labeling.pools.services import pool_build
from lib.errors import GoldsetError
from lib.llm_judging import DEFAULT_PROMPT
from tests.labeling.model_labels.chat_server import ChatServer, Reply, grade_of
from tests.support import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def server():
    chat = ChatServer().start()
    yield chat
    chat.stop()


@pytest.fixture
def pooled(owner):
    """Three queries over eight pages, one pair labelled by people; a pool of 10 unlabelled pairs."""
    golden_set = factories.golden_set(
        "judged",
        manager=owner,
        pages=factories.pages(*(f"d{n}" for n in range(1, 9))),
        qrels={("q1", "d1"): 2},
    )
    run = factories.run(golden_set, "bm25", {"q1": ["d1", "d2", "d3", "d4"], "q2": ["d3", "d4", "d5", "d6"], "q3": ["d6", "d7", "d8"]})
    pool = pool_build(golden_set=golden_set, runs=[run], depth=4, strategy="depth").pool
    assert pool.pair_count == 10
    return golden_set, pool


class NoWait(Waiting):
    """Backoffs are recorded, not waited."""

    def __init__(self):
        async def sleep(seconds):
            return None

        super().__init__(sleep=sleep, random=lambda: 0.0)


def run_job(golden_set, pool, server, waiting=None, **options):
    job = judge_job_submit(
        golden_set=golden_set,
        pool_id=pool.pk,
        base_url=server.base_url,
        model=options.pop("model", "judge-8b"),
        prompt_text=options.pop("prompt_text", DEFAULT_PROMPT),
        job_task=None,
        **options,
    )
    return judge_job_run(job.pk, waiting=waiting or NoWait())


def labels(golden_set) -> dict[tuple[str, str], int]:
    rows = ModelJudgment.objects.filter(golden_set=golden_set).values_list("query__query_id", "page__doc_id", "grade")
    return {(q, d): g for q, d, g in rows}


def test_grades_are_read_from_the_answers_and_stored_as_model_labels_never_as_human_labels(pooled, server):
    golden_set, pool = pooled
    human_before = Judgment.objects.filter(query__golden_set=golden_set).count()
    job = run_job(golden_set, pool, server, price_in=Decimal("0.15"), price_out=Decimal("0.60"))
    assert job.status == "done"
    stored = labels(golden_set)
    assert len(stored) == 10 and all(grade == int(doc[1:]) % 4 for (_, doc), grade in stored.items())
    assert Judgment.objects.filter(query__golden_set=golden_set).count() == human_before
    row = ModelJudgment.objects.filter(golden_set=golden_set).first()
    assert row.model == "judge-8b" and row.raw_answer.endswith(f"##final score: {row.grade}")
    assert ModelPrompt.objects.get(prompt_hash=row.prompt_hash).text == DEFAULT_PROMPT
    assert (job.pairs_total, job.pairs_done, job.pairs_failed, job.requests) == (10, 10, 0, 10)
    assert (job.prompt_tokens, job.completion_tokens) == (1000, 100)
    # 1000 * 0.15 / 1e6 + 100 * 0.60 / 1e6
    assert judge_jobs.cost(job.prompt_tokens, job.completion_tokens, job.price_in, job.price_out) == Decimal("0.000210")


def test_each_request_asks_for_the_model_at_temperature_zero_with_the_pair_in_the_prompt(pooled, server):
    golden_set, pool = pooled
    run_job(golden_set, pool, server, sample_size=1)
    (seen,) = server.seen
    assert seen.body["model"] == "judge-8b" and seen.body["temperature"] == 0
    assert "Query: question q" in seen.prompt and "Passage: title d" in seen.prompt and "{query}" not in seen.prompt


def test_an_edited_prompt_is_a_new_prompt_hash_and_its_labels_a_new_source(pooled, server):
    golden_set, pool = pooled
    run_job(golden_set, pool, server, sample_size=2)
    run_job(golden_set, pool, server, sample_size=2, prompt_text=DEFAULT_PROMPT + "\nBe strict.")
    hashes = set(ModelJudgment.objects.filter(golden_set=golden_set).values_list("prompt_hash", flat=True))
    assert len(hashes) == 2 and ModelPrompt.objects.filter(prompt_hash__in=hashes).count() == 2


def test_a_malformed_answer_is_a_failure_kept_with_its_raw_text_never_a_guess(pooled, server):
    golden_set, pool = pooled

    def reply(seen, attempt):
        if "text of d2" in seen.prompt:
            return Reply(content="Fairly relevant, I would say.")
        if "text of d4" in seen.prompt:
            return Reply(content="##final score: 7")
        if "text of d5" in seen.prompt:
            return Reply(body='{"choices": []}')
        return Reply(content=f"##final score: {grade_of(seen.prompt)}")

    server.reply = reply
    job = run_job(golden_set, pool, server)
    failures = {(f.page.doc_id, f.error, f.raw_answer) for f in JudgeFailure.objects.filter(job=job).select_related("page")}
    assert (
        "d2",
        "no score found in the answer (expected “##final score: N” or a number alone)",
        "Fairly relevant, I would say.",
    ) in failures
    assert ("d4", "score 7 is not on the set's scale 0-3", "##final score: 7") in failures
    assert any(doc == "d5" and "not a chat completion" in error and raw == '{"choices": []}' for doc, error, raw in failures)
    # d2 is pooled for q1, d4 for q1 and q2, d5 for q2.
    assert job.pairs_failed == 4 == len(failures) + 1 and job.pairs_done == 6
    assert not {doc for _, doc in labels(golden_set)} & {"d2", "d4", "d5"}


def test_a_judge_key_goes_only_to_the_hosts_its_operator_named(pooled, server, monkeypatch):
    """Hardening #31 item 7: a set manager could send a JUDGE_* key to any URL they typed."""
    golden_set, pool = pooled
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-very-secret")
    monkeypatch.setenv("JUDGE_TEST_KEY_HOSTS", "api.example.org")
    job = run_job(golden_set, pool, server, api_key_env="JUDGE_TEST_KEY", sample_size=2)
    assert job.status == "failed" and "JUDGE_TEST_KEY_HOSTS (api.example.org), and 127.0.0.1 is not one of them" in job.error
    assert server.seen == []


def test_a_usage_that_is_not_a_count_is_counted_as_nothing_and_the_job_goes_on(pooled, server):
    """Hardening #31 item 10: a usage that was not a number failed the whole job, and a
    negative token count gave a negative cost."""
    import json as json_module

    golden_set, pool = pooled

    def reply(seen, attempt):
        usage = {"prompt_tokens": "lots", "completion_tokens": -5} if "text of d2" in seen.prompt else {"prompt_tokens": -100}
        return Reply(
            body=json_module.dumps(
                {
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": f"##final score: {grade_of(seen.prompt)}"}}],
                    "usage": usage,
                }
            )
        )

    server.reply = reply
    job = run_job(golden_set, pool, server, price_in=Decimal("3"), price_out=Decimal("15"))
    assert job.status == "done" and job.pairs_failed == 0 and job.pairs_done > 0
    from labeling.model_labels.jobs import job_money

    assert (job.prompt_tokens, job.completion_tokens) == (0, 0) and job_money(job) == 0


def test_the_jobs_list_shows_a_jobs_first_failures_with_what_the_model_answered(client, owner, pooled, server):
    golden_set, pool = pooled
    server.reply = lambda seen, attempt: Reply(content="Hard to say." if "text of d4" in seen.prompt else "1")
    run_job(golden_set, pool, server)
    client.force_login(owner)
    listed = client.get(reverse("judge_jobs", args=[golden_set.slug])).content.decode()
    assert "2 pairs not graded</summary>" in listed and listed.count("Hard to say.") == 2
    assert "<code>q1</code> · <code>d4</code>: no score found in the answer" in listed


def test_an_answer_that_does_not_come_in_time_is_a_failure_after_its_retries(pooled, server, settings):
    golden_set, pool = pooled
    settings.JUDGE_TIMEOUT_SECONDS = 0.2
    server.reply = lambda seen, attempt: Reply(delay=1.0) if "text of d7" in seen.prompt else Reply(content="2")
    job = run_job(golden_set, pool, server)
    failure = JudgeFailure.objects.get(job=job)
    assert failure.page.doc_id == "d7" and failure.error == "no answer within 0.2 s after 4 attempts"
    assert job.pairs_done == 9 and job.requests == 9 + 4


def test_a_429_is_retried_after_the_servers_retry_after_and_then_graded(pooled, server):
    golden_set, pool = pooled
    server.reply = lambda seen, attempt: (
        Reply(status=429, headers={"Retry-After": "7"})
        if attempt == 1 and "text of d8" in seen.prompt
        else Reply(content="##final score: 1")
    )
    waiting = NoWait()
    job = run_job(golden_set, pool, server, waiting=waiting)
    assert waiting.delays == [7.0]
    assert job.pairs_done == 10 and job.pairs_failed == 0 and job.requests == 11


def test_a_500_is_retried_with_backoff_and_then_graded(pooled, server):
    golden_set, pool = pooled
    server.reply = lambda seen, attempt: Reply(status=500) if attempt <= 2 and "text of d6" in seen.prompt else Reply(content="3")
    waiting = NoWait()
    job = run_job(golden_set, pool, server, waiting=waiting)
    # d6 is pooled for q2 and q3: two failed attempts each, backoffs of 0.25 s then 0.5 s.
    assert sorted(waiting.delays) == [0.25, 0.25, 0.5, 0.5]
    assert job.pairs_done == 10 and job.requests == 14


def test_a_400_is_not_retried(pooled, server):
    golden_set, pool = pooled
    server.reply = lambda seen, attempt: Reply(status=400, body='{"error": "no such model"}')
    job = run_job(golden_set, pool, server, sample_size=1)
    assert job.requests == 1 and JudgeFailure.objects.get(job=job).raw_answer == '{"error": "no such model"}'


def test_no_more_requests_are_open_at_once_than_the_bound(pooled, server):
    golden_set, pool = pooled
    server.hold = 0.05
    run_job(golden_set, pool, server, max_in_flight=2)
    assert len(server.seen) == 10 and 1 <= server.most_open <= 2


def test_a_job_that_stopped_keeps_what_it_graded_and_a_run_again_continues_without_duplicates(pooled, server, monkeypatch):
    golden_set, pool = pooled
    monkeypatch.setattr(judge_jobs, "CHUNK_PER_WORKER", 3)
    real, calls = judge_jobs.grade_pairs_sync, []

    def crashing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("worker lost")
        return real(*args, **kwargs)

    monkeypatch.setattr(judge_jobs, "grade_pairs_sync", crashing)
    job = JudgeJob.objects.get(
        pk=judge_job_submit(
            golden_set=golden_set,
            pool_id=pool.pk,
            base_url=server.base_url,
            model="judge-8b",
            prompt_text=DEFAULT_PROMPT,
            job_task=None,
            max_in_flight=1,
        ).pk
    )
    with pytest.raises(RuntimeError):
        judge_job_run(job.pk, waiting=NoWait())
    job.refresh_from_db()
    assert job.status == "failed" and "run it again to continue" in job.error and job.pairs_done == 3
    assert len(labels(golden_set)) == 3

    monkeypatch.setattr(judge_jobs, "grade_pairs_sync", real)
    again = run_job(golden_set, pool, server, max_in_flight=1)
    assert (again.pairs_total, again.pairs_skipped, again.pairs_done) == (10, 3, 7)
    assert ModelJudgment.objects.filter(query__golden_set=golden_set).count() == 10 == len(labels(golden_set))
    assert len(server.seen) == 10  # no pair was asked twice


def test_a_database_gone_for_a_moment_puts_the_job_back_in_the_queue_for_its_retry(pooled, server, monkeypatch):
    golden_set, pool = pooled
    job = judge_job_submit(
        golden_set=golden_set, pool_id=pool.pk, base_url=server.base_url, model="m", prompt_text=DEFAULT_PROMPT, job_task=None
    )

    def gone(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(judge_jobs, "model_labels_record", gone)
    with pytest.raises(OperationalError):
        judge_job_run(job.pk, waiting=NoWait())
    job.refresh_from_db()
    assert job.status == "queued" and job.started_at is None


def test_a_sample_draws_the_same_pairs_when_run_again(pooled, server):
    golden_set, pool = pooled
    first = run_job(golden_set, pool, server, sample_size=4)
    again = run_job(golden_set, pool, server, sample_size=4)
    assert (first.pairs_done, again.pairs_skipped, again.pairs_done) == (4, 4, 0)
    assert len(labels(golden_set)) == 4


def test_the_api_key_is_read_from_the_named_variable_and_sent_as_a_bearer_token_never_stored(pooled, server, monkeypatch):
    golden_set, pool = pooled
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-very-secret")
    job = run_job(golden_set, pool, server, api_key_env="JUDGE_TEST_KEY", sample_size=2)
    assert {seen.headers["Authorization"] for seen in server.seen} == {"Bearer sk-very-secret"}
    stored = [str(value) for value in JudgeJob.objects.filter(pk=job.pk).values().get().values()]
    stored += list(ModelJudgment.objects.values_list("raw_answer", flat=True)) + list(ModelPrompt.objects.values_list("text", flat=True))
    assert job.api_key_env == "JUDGE_TEST_KEY" and not any("sk-very-secret" in value for value in stored)


def test_an_unset_key_variable_fails_the_job_before_anything_is_sent(pooled, server, monkeypatch):
    golden_set, pool = pooled
    monkeypatch.delenv("JUDGE_MISSING_KEY", raising=False)
    job = run_job(golden_set, pool, server, api_key_env="JUDGE_MISSING_KEY")
    assert job.status == "failed" and "JUDGE_MISSING_KEY is not set" in job.error and server.seen == []


def test_a_key_variable_outside_the_judge_prefix_is_refused_so_no_secret_of_the_server_can_be_sent(pooled, server):
    golden_set, pool = pooled
    with pytest.raises(GoldsetError) as refused:
        run_job(golden_set, pool, server, api_key_env="SECRET_KEY")
    assert any(problem.startswith("api_key_env: 'SECRET_KEY' is not a variable Goldset reads") for problem in refused.value.problems)
    assert not JudgeJob.objects.exists()


def test_every_bad_field_is_named_at_once_and_nothing_is_recorded(pooled, server):
    golden_set, pool = pooled
    with pytest.raises(GoldsetError) as refused:
        judge_job_submit(
            golden_set=golden_set, pool_id=999, base_url="ftp://x", model="", prompt_text="grade it", job_task=None, max_in_flight=0
        )
    fields = [problem.split(":")[0] for problem in refused.value.problems]
    assert fields == ["pool", "base_url", "model", "prompt", "max_in_flight"]
    assert not JudgeJob.objects.exists() and not ModelPrompt.objects.exists()


def test_a_base_url_on_a_cloud_metadata_address_is_never_sent_to(pooled, server):
    golden_set, pool = pooled
    job = judge_job_submit(
        golden_set=golden_set,
        pool_id=pool.pk,
        base_url="http://169.254.169.254/v1",
        model="m",
        prompt_text=DEFAULT_PROMPT,
        job_task=None,
        sample_size=1,
    )
    job = judge_job_run(job.pk, waiting=NoWait())
    assert JudgeFailure.objects.get(job=job).error.startswith("the receiver could not be reached") and job.requests == 0


# The page: managers start jobs, managers and adjudicators follow them.


def form_data(pool, server, **changes):
    # The prompt's lines end in CRLF, as a browser sends a textarea's.
    data = {
        "pool": pool.pk,
        "base_url": server.base_url,
        "model": "judge-8b",
        "api_key_env": "",
        "prompt": DEFAULT_PROMPT.replace("\n", "\r\n"),
        "sample": "3",
        "max_in_flight": "2",
        "price_in": "1.5",
        "price_out": "",
    }
    return {**data, **changes}


def test_a_manager_starts_a_job_from_the_page_and_finds_it_listed_with_its_counts(
    client, owner, pooled, server, django_capture_on_commit_callbacks
):
    golden_set, pool = pooled
    client.force_login(owner)
    page = client.get(reverse("model_labels", args=[golden_set.slug]))
    assert b'id="judge-form"' in page.content and b"##final score: N" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("judge_job_start", args=[golden_set.slug]), form_data(pool, server))
    assert response.status_code == 302 and response["Location"].endswith("#judge-jobs")
    job = JudgeJob.objects.get()
    assert job.status == "done" and job.created_by == owner and job.pairs_done == 3
    assert ModelPrompt.objects.get(prompt_hash=job.prompt_hash).text == DEFAULT_PROMPT
    listed = client.get(reverse("judge_jobs", args=[golden_set.slug])).content.decode()
    assert "3 of 3 pairs settled: 3 graded, 0 failed, 0 labelled already" in listed
    assert (
        "3 requests · 300 prompt tokens · 30 completion tokens · 0.000450 at the manager's prices (1.5 in, 0 out per million tokens)"
        in listed
    )
    assert "hx-trigger" not in listed  # nothing going: no polling


def test_a_bad_form_is_shown_again_with_the_field_at_fault_and_nothing_recorded(client, owner, pooled, server):
    golden_set, pool = pooled
    client.force_login(owner)
    response = client.post(
        reverse("judge_job_start", args=[golden_set.slug]), form_data(pool, server, api_key_env="DATABASE_URL", prompt="no slots here")
    )
    assert response.status_code == 400
    form = response.context["judge_form"]
    assert "not a variable Goldset reads" in form.errors["api_key_env"][0]
    assert "{query} and {passage}" in form.errors["prompt"][0]
    assert not JudgeJob.objects.exists()


def test_the_jobs_list_follows_a_job_still_going(client, owner, pooled, server, django_assert_num_queries):
    golden_set, pool = pooled
    for _ in range(3):
        judge_job_submit(
            golden_set=golden_set, pool_id=pool.pk, base_url=server.base_url, model="m", prompt_text=DEFAULT_PROMPT, job_task=None
        )
    client.force_login(owner)
    url = reverse("judge_jobs", args=[golden_set.slug])
    client.get(url)
    # session and user, the set and the roles, the jobs
    with django_assert_num_queries(5):
        listed = client.get(url).content.decode()
    assert 'hx-trigger="every 3s"' in listed and listed.count("Waiting for a worker.") == 3


def test_an_adjudicator_follows_the_jobs_but_cannot_start_one(client, teammate, pooled, server):
    golden_set, pool = pooled
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    client.force_login(teammate)
    page = client.get(reverse("model_labels", args=[golden_set.slug]))
    assert page.status_code == 200 and b"Judge jobs" in page.content and b'id="judge-form"' not in page.content
    assert client.get(reverse("judge_jobs", args=[golden_set.slug])).status_code == 200
    assert client.post(reverse("judge_job_start", args=[golden_set.slug]), form_data(pool, server)).status_code == 404
    assert not JudgeJob.objects.exists()


def test_an_annotator_and_a_stranger_get_not_found_and_anonymous_is_sent_to_log_in(client, teammate, stranger, pooled, server):
    golden_set, pool = pooled
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    for user in (teammate, stranger):
        client.force_login(user)
        assert client.get(reverse("judge_jobs", args=[golden_set.slug])).status_code == 404
        assert client.post(reverse("judge_job_start", args=[golden_set.slug]), form_data(pool, server)).status_code == 404
    client.logout()
    for response in (
        client.get(reverse("judge_jobs", args=[golden_set.slug])),
        client.post(reverse("judge_job_start", args=[golden_set.slug]), form_data(pool, server)),
    ):
        assert response.status_code == 302 and "/login" in response["Location"]
    assert not JudgeJob.objects.exists()


def test_the_start_url_takes_no_get(client, owner, pooled):
    golden_set, _ = pooled
    client.force_login(owner)
    assert client.get(reverse("judge_job_start", args=[golden_set.slug])).status_code == 405


# The command.


def test_the_command_grades_the_pool_and_says_what_it_did(pooled, server, monkeypatch, tmp_path):
    golden_set, pool = pooled
    monkeypatch.setenv("JUDGE_LOCAL", "token-1")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Query: {query}\nPassage: {passage}\nAnswer with the score only.", encoding="utf-8")
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
        "--api-key-env",
        "JUDGE_LOCAL",
        "--sample",
        "5",
        "--prompt-file",
        str(prompt),
        "--price-in",
        "2",
        stdout=out,
    )
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("judge job ") and "local-7b" in lines[0]
    assert lines[-3:] == [
        "pairs: 5 (5 graded, 0 failed, 0 labelled already)",
        "requests: 5, prompt tokens: 500, completion tokens: 50, cost at your prices: 0.001000",
        "model labels are kept apart: no version, export or score reads them",
    ]
    assert ModelJudgment.objects.filter(model="local-7b").count() == 5


def test_the_command_names_what_is_wrong(pooled, server):
    golden_set, pool = pooled
    with pytest.raises(CommandError, match="api_key_env: 'HOME' is not a variable Goldset reads"):
        call_command(
            "model_judge", golden_set.slug, "--pool", str(pool.pk), "--base-url", server.base_url, "--model", "m", "--api-key-env", "HOME"
        )


def test_the_sweeper_sends_a_lost_job_again_and_fails_one_whose_worker_vanished(pooled, server):
    golden_set, pool = pooled
    lost, stuck = (
        judge_job_submit(
            golden_set=golden_set, pool_id=pool.pk, base_url=server.base_url, model="m", prompt_text=DEFAULT_PROMPT, job_task=None
        )
        for _ in range(2)
    )
    now = timezone.now()
    JudgeJob.objects.filter(pk=stuck.pk).update(status="running", started_at=now - timedelta(hours=7))
    sent = []

    class Task:
        @staticmethod
        def delay(job_id):
            sent.append(job_id)

    assert judge_jobs.judge_jobs_sweep(job_task=Task, now=now) == (1, 1)
    stuck.refresh_from_db()
    assert sent == [lost.pk] and stuck.status == "failed" and "run it again to continue" in stuck.error


def test_the_beat_runs_the_judge_job_sweeper(settings):
    from labeling import tasks

    entry = settings.CELERY_BEAT_SCHEDULE["sweep-judge-jobs"]
    assert entry["task"] == tasks.sweep_judge_jobs_task.name
