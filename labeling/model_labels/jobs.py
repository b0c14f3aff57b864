"""Judge jobs: a model grading a pool's pairs (or a sample of them) in the background, of
two kinds: `chat`, a model behind an OpenAI-compatible API (labeling.model_labels.judges),
and `local`, the packaged all-MiniLM-L6-v2 run on the worker (labeling.model_labels.local_judge),
whose "prompt" is its thresholds' text. Both run the same machinery below; a local job's
requests count forward passes, its prompt tokens word pieces, and it costs nothing.

`judge_job_submit` checks the form's fields (every fault names its field), keeps the
prompt by its hash (goldenset.model_labels.model_prompt_store: an edit is a new hash),
records a JudgeJob and sends the task the caller hands in (labeling.tasks.judge_job_task;
this module never imports the tasks) once the transaction commits. `judge_job_run` claims
the job once (queued -> running) and grades the pairs chunk after chunk: each chunk's
grades are written as model labels (model_labels_record), its failures kept with the raw
answer, and the job's counts moved on, in one transaction. So a job that stops keeps what
it wrote, and a second run of the same model and prompt skips the pairs labelled already:
it continues where the first stopped, and writes no pair twice.

A sample of n pairs is drawn with a seed made of the pool, model, prompt and n, so a run
again after a crash draws the same pairs. The job's life (claim, transient errors,
finish, the sweeper) is lib.background_jobs's: the sweeper sends again a job whose message
was lost or whose holder is gone (the run again continues it), and fails one whose holder
answers but runs past GIVE_UP_AFTER.
"""

import hashlib
import logging
import os
from datetime import timedelta
from decimal import Decimal
from urllib.parse import urlsplit

import numpy as np
from celery import Task
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F

from goldenset.model_labels import (
    MAX_MODEL_NAME,
    ModelLabel,
    model_labels_record,
    model_prompt_store,
)
from goldenset.models import GoldenSet, ModelJudgment, ModelPrompt, Page, Query, VersionLabel
from labeling.model_labels.judges import (
    JudgeSettings,
    PairText,
    Waiting,
    grade_pairs_sync,
)
from labeling.model_labels.local_judge import LocalJudge, config_problem
from labeling.models import JudgeFailure, JudgeJob, Pool
from labeling.pools.selectors import pool_pairs
from lib import minilm, outbound
from lib.background_jobs import (
    NO_HOLDER,
    Holder,
    JobKind,
    job_run,
    job_send_on_commit,
    jobs_sweep,
)
from lib.errors import GoldsetError, ProblemCollector
from lib.llm_judging import MAX_BATCH, api_key_env_problem, cost, prompt_problem
from lib.outbound import url_problem

logger = logging.getLogger(__name__)

SEND_AGAIN_AFTER = timedelta(minutes=10)
GIVE_UP_AFTER = timedelta(hours=6)
MAX_IN_FLIGHT = 64
CHUNK_PER_WORKER = 8  # pairs whose texts are read at once, per request in flight
# What settled is written at most this often, in seconds, while a chunk goes.
PROGRESS_SECONDS = 1.0
# A local job's pairs between two writes: eight forward passes of pages (minutes at most on
# two cores), so its progress moves and a stop loses little.
LOCAL_CHUNK = 8 * minilm.BATCH_SIZE


def judge_job_check(
    *,
    golden_set: GoldenSet,
    pool_id: int | None,
    base_url: str,
    model: str,
    api_key_env: str,
    prompt_text: str,
    sample_size: int | None,
    max_in_flight: int,
    price_in: Decimal | None,
    price_out: Decimal | None,
    kind: str = JudgeJob.Kind.CHAT,
    batch_size: int = 1,
    pairs: str = JudgeJob.Pairs.POOL,
) -> Pool | None:
    """Every fault of the fields at once (GoldsetError with problems "field: why"); the pool
    (None for a job on the pairs people judged, which needs no pool)."""
    problems = ProblemCollector()
    pool = Pool.objects.filter(golden_set=golden_set, pk=pool_id).first() if pool_id is not None else None
    if pairs not in JudgeJob.Pairs.values:
        problems.add(f"pairs: {pairs!r} is not a choice (pool or judged)")
    elif pairs == JudgeJob.Pairs.JUDGED:
        pool = None
        if not golden_set.versions.exists():
            problems.add("pairs: the pairs people judged are read from the latest version, and the set has none: publish one first")
    elif pool is None:
        problems.add(f"pool: golden set {golden_set.slug!r} has no pool {pool_id}")
    if kind == JudgeJob.Kind.LOCAL:
        _local_check(problems, golden_set, prompt_text, sample_size)
        problems.raise_if_any("the judge job cannot start")
        return pool
    if kind != JudgeJob.Kind.CHAT:
        problems.add(f"kind: {kind!r} is not a judge Goldset has (chat or local)")
    problem = url_problem(base_url or "", what="a judge's base URL")
    if problem:
        problems.add(f"base_url: {problem}")
    model = (model or "").strip()
    if not model or len(model) > MAX_MODEL_NAME or not model.isprintable():
        problems.add(f"model: the model's name must be 1 to {MAX_MODEL_NAME} printable characters")
    problem = api_key_env_problem(api_key_env or "")
    if problem:
        problems.add(f"api_key_env: {problem}")
    problem = prompt_problem(prompt_text or "")
    if problem:
        problems.add(f"prompt: {problem}")
    if sample_size is not None and sample_size < 1:
        problems.add("sample: a sample holds at least 1 pair (leave it empty for the whole pool)")
    if not 1 <= max_in_flight <= MAX_IN_FLIGHT:
        problems.add(f"max_in_flight: from 1 to {MAX_IN_FLIGHT} requests in flight")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH:
        problems.add(f"batch_size: from 1 to {MAX_BATCH} passages of a query in one request, got {batch_size!r}")
    for name, price in (("price_in", price_in), ("price_out", price_out)):
        if price is not None and price < 0:
            problems.add(f"{name}: a price is not negative")
    problems.raise_if_any("the judge job cannot start")
    return pool


def _local_check(problems: ProblemCollector, golden_set: GoldenSet, config: str, sample_size: int | None) -> None:
    # Refused here too, not only on the worker: the web process and the worker share the
    # set-up, so a manager learns at once that the extra is missing and how to install it.
    problem = minilm.install_problem()
    if problem:
        problems.add(f"kind: {problem}")
    problem = config_problem(config, golden_set.grade_values())
    if problem:
        problems.add(f"config: {problem}")
    if sample_size is not None and sample_size < 1:
        problems.add("sample: a sample holds at least 1 pair (leave it empty for the whole pool)")


def judge_job_submit(
    *,
    golden_set: GoldenSet,
    pool_id: int | None,
    base_url: str,
    model: str,
    prompt_text: str,
    job_task: Task | None,
    api_key_env: str = "",
    sample_size: int | None = None,
    max_in_flight: int = 4,
    price_in: Decimal | None = None,
    price_out: Decimal | None = None,
    user: AbstractBaseUser | None = None,
    kind: str = JudgeJob.Kind.CHAT,
    batch_size: int = 1,
    pairs: str = JudgeJob.Pairs.POOL,
) -> JudgeJob:
    """Record a judge job (and its prompt) and send it through `job_task` once the caller's
    transaction commits (None: the caller runs it, as the command does). A local job takes
    its thresholds' text as `prompt_text`; its URL, model, key, in-flight bound, batch and
    prices are not asked for and are stored empty (its model is the packaged one). A chat
    job sends `batch_size` passages of a query in one request (1: one request per pair).
    `pairs`: the pool's (JudgeJob.Pairs.POOL) or those of the latest version's labels (JUDGED,
    no pool: what calibration needs, since it compares the model with people on pairs both graded)."""
    pool = judge_job_check(
        golden_set=golden_set,
        pool_id=pool_id,
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        prompt_text=prompt_text,
        sample_size=sample_size,
        max_in_flight=max_in_flight,
        price_in=price_in,
        price_out=price_out,
        kind=kind,
        batch_size=batch_size,
        pairs=pairs,
    )
    if kind == JudgeJob.Kind.LOCAL:
        base_url, model, api_key_env, max_in_flight, batch_size, price_in, price_out = "", minilm.MODEL_NAME, "", 1, 1, None, None
    with transaction.atomic():
        digest = model_prompt_store(text=prompt_text)
        job = JudgeJob.objects.create(
            golden_set=golden_set,
            pool=pool,
            kind=kind,
            pairs=pairs,
            base_url=base_url,
            model=model.strip(),
            api_key_env=api_key_env or "",
            prompt_hash=digest,
            sample_size=sample_size,
            max_in_flight=max_in_flight,
            batch_size=batch_size,
            price_in=price_in,
            price_out=price_out,
            created_by=user,
        )
        if job_task is not None:
            job_send_on_commit(JudgeJob, job.pk, job_task)
    return job


def _pairs_of(job: JudgeJob) -> list[tuple[int, int]]:
    if job.pairs == JudgeJob.Pairs.JUDGED:
        # The version the job was started on may have a successor by the time it runs: the
        # latest is what calibration compares with.
        version = job.golden_set.latest_version()
        labels = VersionLabel.objects.filter(version=version).order_by("position") if version else VersionLabel.objects.none()
        keys = list(labels.values_list("query_id", "page_id"))
    else:
        pairs = pool_pairs(job.pool)
        keys = list(zip(pairs.query_pks.tolist(), pairs.page_pks.tolist()))
    if job.sample_size is not None and job.sample_size < len(keys):
        seed_text = f"{job.pool_id}\n{job.model}\n{job.prompt_hash}\n{job.sample_size}"
        seed = int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:8], "little")
        chosen = np.sort(np.random.default_rng(seed).choice(len(keys), size=job.sample_size, replace=False))
        keys = [keys[i] for i in chosen.tolist()]
    return keys


def _texts(keys: list[tuple[int, int]]) -> list[PairText]:
    queries = dict(Query.objects.filter(pk__in={q for q, _ in keys}).values_list("pk", "text"))
    pages = {pk: (title, text) for pk, title, text in Page.objects.filter(pk__in={p for _, p in keys}).values_list("pk", "title", "text")}
    return [PairText((q, p), queries.get(q, ""), "\n".join(part for part in pages.get(p, ("", "")) if part)) for q, p in keys]


JUDGE_JOBS = JobKind(
    JudgeJob,
    send_again_after=SEND_AGAIN_AFTER,
    give_up_after=GIVE_UP_AFTER,
    stopped="what it graded is kept: run it again to continue",
)


def judge_job_run(job_id: int, *, waiting: Waiting | None = None, on_chunk=None, holder: Holder = NO_HOLDER) -> JudgeJob | None:
    """Claim the job for `holder` (the worker start running it, lib.background_jobs) and grade
    its pairs; None when there is no such job or it was claimed already. `on_chunk(job)`
    runs after each chunk is written (the command prints progress). A database that went
    away for a moment puts it back in the queue for the task's retry, which skips what was
    written already."""

    def work(job: JudgeJob) -> dict:
        _grade(job, waiting, on_chunk)
        return {"error": ""}

    job = job_run(
        JUDGE_JOBS,
        job_id,
        holder=holder,
        work=work,
        load=lambda pk: JudgeJob.objects.select_related("golden_set", "pool").get(pk=pk),
        refused=lambda exc: {"error": exc.message},
        broke=lambda exc: {
            "error": f"the job stopped on an internal error ({type(exc).__name__}); what it graded is kept: run it again to continue",
        },
    )
    if job is not None:
        job.refresh_from_db()
    return job


def _ungraded(job: JudgeJob) -> list[tuple[int, int]]:
    """The job's pairs this model and prompt have not labelled; the counts saved."""
    keys = _pairs_of(job)
    taken = set(
        ModelJudgment.objects.filter(golden_set=job.golden_set, model=job.model, prompt_hash=job.prompt_hash).values_list(
            "query_id", "page_id"
        )
    )
    ungraded = [key for key in keys if key not in taken]
    job.pairs_total, job.pairs_skipped = len(keys), len(keys) - len(ungraded)
    JudgeJob.objects.filter(pk=job.pk).update(pairs_total=job.pairs_total, pairs_skipped=job.pairs_skipped)
    return ungraded


def _grade(job: JudgeJob, waiting: Waiting | None, on_chunk) -> None:
    if job.pool is None and job.pairs == JudgeJob.Pairs.POOL:
        raise GoldsetError("the pool was deleted")
    if job.kind == JudgeJob.Kind.LOCAL:
        _grade_locally(job, on_chunk)
        return
    api_key = None
    if job.api_key_env:
        api_key = os.environ.get(job.api_key_env)
        if not api_key:
            raise GoldsetError(f"the variable {job.api_key_env} is not set where the worker runs; nothing was sent")
        # The key goes only where its operator said (JUDGE_..._HOSTS), not to any URL a manager types.
        problem = outbound.secret_host_problem(job.api_key_env, urlsplit(job.base_url).hostname or "", os.environ)
        if problem:
            raise GoldsetError(f"{problem}; nothing was sent")
    prompt = ModelPrompt.objects.get(prompt_hash=job.prompt_hash).text
    ungraded = _ungraded(job)
    grades = job.golden_set.grade_values()
    scale = (min(grades), max(grades))
    judge = JudgeSettings(
        base_url=job.base_url,
        model=job.model,
        api_key=api_key,
        max_in_flight=job.max_in_flight,
        timeout_seconds=settings.JUDGE_TIMEOUT_SECONDS,
        allowed_networks=tuple(settings.JUDGE_ALLOWED_NETWORKS),
        batch_size=job.batch_size,
    )
    # Pairs come sorted by query, so a chunk holds whole batches but where a query straddles two chunks.
    chunk = job.max_in_flight * CHUNK_PER_WORKER * job.batch_size
    for start in range(0, len(ungraded), chunk):
        # What settled is written every PROGRESS_SECONDS, and the latest attempt that failed
        # is shown (JudgeJob.retrying): an endpoint that never answers shows so at its first
        # timeout, not once the chunk used up its retries.
        def write(results, retrying: str | None) -> None:
            _write_chunk(
                job,
                results,
                sum(r.requests for r in results),
                sum(r.prompt_tokens for r in results),
                sum(r.completion_tokens for r in results),
                retrying=retrying,
            )
            if on_chunk is not None and results:
                job.refresh_from_db()
                on_chunk(job)

        grade_pairs_sync(judge, prompt, _texts(ungraded[start : start + chunk]), scale, waiting, progress=write, every=PROGRESS_SECONDS)


def _grade_locally(job: JudgeJob, on_chunk) -> None:
    problem = minilm.install_problem()
    if problem:
        raise GoldsetError(f"{problem}; nothing was graded")
    try:
        judge = LocalJudge(ModelPrompt.objects.get(prompt_hash=job.prompt_hash).text, job.golden_set.grade_values())
    except ValueError as exc:
        raise GoldsetError(f"the local judge's configuration cannot be read: {exc}") from exc
    ungraded = _ungraded(job)
    for start in range(0, len(ungraded), LOCAL_CHUNK):
        graded = judge.grade(_texts(ungraded[start : start + LOCAL_CHUNK]))
        # Forward passes stand for requests and word pieces for prompt tokens: what the
        # model did, counted where the chat judge counts what it asked for.
        _write_chunk(job, graded.results, graded.batches, graded.word_pieces, 0)
        if on_chunk is not None:
            job.refresh_from_db()
            on_chunk(job)


def _write_chunk(job: JudgeJob, results, requests: int, prompt_tokens: int, completion_tokens: int, *, retrying: str | None = None) -> None:
    labels = [ModelLabel(r.key[0], r.key[1], r.grade, r.raw, getattr(r, "score", None)) for r in results if r.error is None]
    failures = [
        JudgeFailure(job=job, query_id=r.key[0], page_id=r.key[1], error=r.error, raw_answer=r.raw.replace("\x00", ""))
        for r in results
        if r.error is not None
    ]
    with transaction.atomic():
        written = (
            model_labels_record(golden_set=job.golden_set, model=job.model, prompt_hash=job.prompt_hash, labels=labels) if labels else 0
        )
        JudgeFailure.objects.bulk_create(failures)
        JudgeJob.objects.filter(pk=job.pk).update(
            pairs_done=F("pairs_done") + written,
            # A pair another run wrote meanwhile was graded for nothing, but is labelled.
            pairs_skipped=F("pairs_skipped") + len(labels) - written,
            pairs_failed=F("pairs_failed") + len(failures),
            requests=F("requests") + requests,
            prompt_tokens=F("prompt_tokens") + prompt_tokens,
            completion_tokens=F("completion_tokens") + completion_tokens,
            # The latest attempt that failed and is tried again; cleared once a request settles.
            **({"retrying": retrying[:300]} if retrying else {"retrying": ""} if results else {}),
        )


def job_money(job: JudgeJob) -> Decimal | None:
    """What the job's tokens cost at the manager's prices (None when none were given)."""
    return cost(job.prompt_tokens, job.completion_tokens, job.price_in, job.price_out)


def judge_jobs_sweep(*, job_task: Task, now=None, sweeper: Task | None = None) -> tuple[int, int]:
    """Send again the jobs whose message was lost or whose holder is gone, fail those
    running past GIVE_UP_AFTER (lib.background_jobs); their written labels stay. Returns
    (sent again, failed)."""
    return jobs_sweep(JUDGE_JOBS, job_task=job_task, now=now, sweeper=sweeper)
