"""A nightly run: ask a live endpoint every query of the set's latest version, store the
answers as a run of its series.

Exactly one run per night, whatever the broker and the workers do:

- `nightly_run_request` makes the NightlyRun of (endpoint, slot) once (a unique constraint);
  the tick of every beat, a redelivered task and a second "run now" of the same slot meet
  there;
- `nightly_run_execute` claims a pending night with one conditional UPDATE (a second
  worker that gets the same message finds it claimed and leaves), queries the endpoint,
  and stores the run in the transaction that marks the night done, with the night's row
  locked: a copy that ran beside it (the sweeper re-sent a night whose worker stopped
  answering) finds the run there and stores nothing.
- Its life as a background job (claim, transient errors, the sweeper) is
  lib.background_jobs's (NIGHTS). A worker killed half way leaves the night "running"; the
  sweeper (the tick, monitoring.tasks) sends it again once the worker start that held it no
  longer answers (a worker restarted under the same name included), and the night starts
  over: the endpoint's answers were never written half. A transient database error hands
  the night back to pending before the task's retry claims it again.

Depth: k_first of the version for a first-stage endpoint, k_final for a reranked one
(what the prompt sees). The run is measured at the slot (the night it stands for), so the
first-stage and reranked runs of one night pair for the rerank-loss rule.
"""

import asyncio
import logging
import time
from array import array
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np
import uvloop
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from evaluation.alerts.rules import run_is_failing
from evaluation.alerts.services import endpoint_failing_raise
from evaluation.models import Run
from evaluation.selectors import evaluation_settings
from evaluation.services import run_from_entries
from goldenset.models import Version, VersionQuery
from lib.background_jobs import NO_HOLDER, Holder, JobKind, job_run
from lib.errors import ConflictError, GoldsetError, ProblemCollector
from lib.ids import natural_key
from lib.runs import RunEntriesBuilder
from monitoring.endpoints.services import endpoint_spec
from monitoring.models import Endpoint, NightlyRun

if TYPE_CHECKING:
    from monitoring.endpoints.client import QueryAnswer

logger = logging.getLogger(__name__)

# Progress is written at most this often (seconds): often enough for the page's bar
# (polled every 3 s), rarely enough that the writer thread seldom takes the interpreter
# from the event loop (each hand-over of the GIL can stall the loop for milliseconds).
PROGRESS_SECONDS = 1.0
NIGHTS = JobKind(
    NightlyRun,
    # A pending night whose task was sent this long ago and never started was lost with a broker.
    send_again_after=timedelta(minutes=10),
    # A night running this long is stuck (its worker answers but never finishes): sent again.
    give_up_after=timedelta(hours=6),
    stuck_sent_again=True,
    stopped="",
    claimed=lambda: {"attempts": F("attempts") + 1, "queries_done": 0, "failed_count": 0, "error": ""},
)


def nightly_run_request(*, endpoint: Endpoint, slot: datetime, trigger: str = NightlyRun.Trigger.SCHEDULE) -> NightlyRun | None:
    """The NightlyRun of (endpoint, slot), made now; None when that slot has one already."""
    try:
        with transaction.atomic():
            return NightlyRun.objects.create(endpoint=endpoint, slot=slot, trigger=trigger)
    except IntegrityError:
        return None


def nightly_run_now(*, endpoint: Endpoint) -> NightlyRun:
    """A manual night at this second ("run now", `nightly_run`); ConflictError-free: two
    clicks in one second share one night."""
    slot = timezone.now().replace(microsecond=0)
    made = nightly_run_request(endpoint=endpoint, slot=slot, trigger=NightlyRun.Trigger.MANUAL)
    return made or NightlyRun.objects.get(endpoint=endpoint, slot=slot)


def nightly_run_start(*, endpoint: Endpoint) -> NightlyRun:
    """ "Run now" from a page, the API or `nightly_run`: a manual night at this second,
    unless a night of the endpoint is pending or running, which is never doubled (a
    production system is asked once at a time): then ConflictError naming that night.
    The endpoint's row is locked for the check, so two requests at once start one night."""
    with transaction.atomic():
        Endpoint.objects.select_for_update().filter(pk=endpoint.pk).first()
        busy = NightlyRun.objects.filter(endpoint=endpoint, status__in=NightlyRun.ACTIVE).order_by("slot").first()
        if busy is not None:
            raise ConflictError(
                f"the night of {endpoint.name} at {busy.slot:%Y-%m-%d %H:%M:%S} UTC (id {busy.pk}) is {busy.status} "
                f"({busy.queries_done} of {busy.queries_total} queries asked); it goes on, and a lost one is sent again within minutes",
            )
        return nightly_run_now(endpoint=endpoint)


def latest_version(golden_set_id: int) -> Version | None:
    return Version.objects.filter(golden_set_id=golden_set_id).order_by("-number").first()


def version_questions(version: Version) -> list[tuple[str, str]]:
    """(query id, text) of every query of `version` that has a text, in natural id order."""
    rows = VersionQuery.objects.filter(version=version, query__has_text=True).values_list("query__query_id", "query__text")
    return sorted(((query_id, text) for query_id, text in rows), key=lambda row: natural_key(row[0]))


def endpoint_depth(endpoint: Endpoint, version: Version) -> int:
    """How deep the endpoint is asked: k_first for a first stage, k_final for a reranked one."""
    return version.k_final if endpoint.stage == Endpoint.Stage.RERANKED else version.k_first


def run_name(endpoint: Endpoint, night: NightlyRun) -> str:
    pattern = "%Y-%m-%d %H:%M" if night.trigger == NightlyRun.Trigger.SCHEDULE else "%Y-%m-%d %H:%M:%S"
    return f"{endpoint.series.name} {night.slot.strftime(pattern)}"


class _Answers:
    """Takes each answer as it comes (fetch_rankings' on_answer): its ranking goes into the
    run's compact entries at once, a failure into the list, the latency into an array, and
    the progress is written at most every PROGRESS_SECONDS; nothing else of the answer is kept, so a
    night's memory does not grow with its queries beyond the run itself."""

    def __init__(self, night_id: int, source: str, progress: Callable[[int, int], None]):
        self.night_id = night_id
        self.progress = progress
        self.problems = ProblemCollector()
        # The client keeps the first of a doc id an answer names twice: rankings are distinct.
        self.builder = RunEntriesBuilder(source, self.problems, distinct_rankings=True)
        self.failures: list[tuple[str, str, int | None]] = []
        self.latencies = array("d")
        self.done = 0
        self.answered = 0
        self._written_at = time.monotonic()

    def __call__(self, answer: "QueryAnswer") -> None:
        self.done += 1
        if answer.error is not None:
            self.failures.append((answer.query_id, answer.error, answer.status))
        else:
            self.latencies.append(answer.latency_ms)
            if answer.ranking:
                self.builder.add(answer.query_id, answer.ranking, columns=answer.columns)
                self.answered += 1
        if self.done % 50 == 0 and (now := time.monotonic()) - self._written_at >= PROGRESS_SECONDS:
            self._written_at = now
            self.progress(self.done, len(self.failures))


def _fetch(night_id: int, spec, questions, k: int, answers_source: str, options: dict) -> tuple["_Answers", object]:
    def write(done: int, failed: int) -> None:
        NightlyRun.objects.filter(pk=night_id).update(queries_done=done, failed_count=failed)

    return fetch_answers(write, spec, questions, k, answers_source, options)


def fetch_answers(
    write: Callable[[int, int], None], spec, questions, k: int, answers_source: str, options: dict
) -> tuple["_Answers", object]:
    """Ask every question at depth `k` on an event loop in this thread, each answer taken
    by _Answers on the loop itself (pure work, no hop between threads, which cost as much as
    the answers), and the progress written by `write(done, failed)` on a thread of its own,
    where the ORM may run. A night asks through it, and so does a one-off ask at a depth of
    the manager's choosing (answers.endpoint_depth)."""
    # The client brings aiohttp, which no process needs at start (every command and web
    # worker would pay its import): loaded by the night that asks an endpoint.
    from monitoring.endpoints.client import fetch_rankings

    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="goldset-night-progress")
    answers = _Answers(0, answers_source, lambda done, failed: writer.submit(write, done, failed))
    try:
        # uvloop's event loop: a night is ten thousand requests, each a few loop turns, and
        # the loop's own cost is a third of the client's time with asyncio's.
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            report = runner.run(fetch_rankings(spec, questions, k, on_answer=answers, keep_answers=False, **options))
    finally:
        writer.submit(connection.close)  # the writer thread's own connection
        writer.shutdown(wait=True)
    return answers, report


def _fail(night_id: int, error: str) -> None:
    NightlyRun.objects.filter(pk=night_id).update(status=NightlyRun.Status.FAILED, error=error[:5000], finished_at=timezone.now())


def nightly_run_execute(*, night_id: int, holder: Holder = NO_HOLDER) -> NightlyRun:
    """Query the endpoint for the night `night_id` and store its run (see the module
    docstring), claimed for `holder` (the worker start running it, lib.background_jobs).
    Returns the night as it stands: done with its run, failed with why, or as another
    worker holds it. A transient database error (the connection lost while storing, say)
    hands the night back to pending and is raised, so the task's retry starts it over
    instead of finding it held by itself."""
    job_run(
        NIGHTS,
        night_id,
        holder=holder,
        load=lambda pk: pk,
        work=_work,
        refused=lambda exc: {"error": exc.message[:5000]},
        broke=lambda exc: {"error": f"the night stopped on an internal error ({type(exc).__name__}: {exc})"[:5000]},
    )
    return NightlyRun.objects.get(pk=night_id)


def _work(night_id: int) -> None:
    _execute(night_id)  # a night finishes itself, done or failed, with its figures


def _execute(night_id: int) -> NightlyRun:
    night = NightlyRun.objects.select_related("endpoint__golden_set", "endpoint__series").get(pk=night_id)
    endpoint = night.endpoint
    version = latest_version(endpoint.golden_set_id)
    if version is None:
        _fail(night_id, "the golden set has no published version: there are no queries to ask")
        return NightlyRun.objects.get(pk=night_id)
    questions = version_questions(version)
    if not questions:
        _fail(night_id, f"{version} has no query with a text to ask")
        return NightlyRun.objects.get(pk=night_id)
    k = endpoint_depth(endpoint, version)
    NightlyRun.objects.filter(pk=night_id).update(version=version, queries_total=len(questions))
    spec = endpoint_spec(endpoint)
    options = {"allowed_networks": settings.RETRIEVAL_ALLOWED_NETWORKS, "env_prefix": settings.RETRIEVAL_HEADER_ENV_PREFIX}
    try:
        answers, report = _fetch(night_id, spec, questions, k, endpoint.url, options)
    except ValueError as exc:  # the spec no longer passes its checks (an environment changed)
        _fail(night_id, f"the endpoint cannot be queried: {exc}")
        return NightlyRun.objects.get(pk=night_id)
    index_size = report.index_size
    if index_size is None and spec.count_url:
        from monitoring.endpoints.client import fetch_index_size_sync  # loaded by _fetch already

        try:
            index_size = fetch_index_size_sync(spec, **options)
        except Exception as exc:  # the count is a nicety: a night is not lost over it
            logger.warning("endpoint %s: index size not read: %s", endpoint.name, exc)
    return _store(night, version, answers, index_size, report.seconds)


def _store(night: NightlyRun, version: Version, answers: _Answers, index_size: int | None, seconds: float) -> NightlyRun:
    endpoint = night.endpoint
    failures = answers.failures
    latencies = np.frombuffer(answers.latencies, dtype=np.float64) if len(answers.latencies) else np.zeros(0)
    figures = {
        "queries_done": answers.done,
        "failed_count": len(failures),
        "seconds": seconds,
        "latency_p50_ms": float(np.percentile(latencies, 50)) if len(latencies) else None,
        "latency_p95_ms": float(np.percentile(latencies, 95)) if len(latencies) else None,
        "finished_at": timezone.now(),
    }
    with transaction.atomic():
        locked = NightlyRun.objects.select_for_update().get(pk=night.pk)
        if locked.run_id is not None or locked.status != NightlyRun.Status.RUNNING:
            return locked  # a copy beside this one stored it, or it was reset meanwhile
        if not answers.answered:
            example = failures[0][1] if failures else "the endpoint returned no page for any query"
            NightlyRun.objects.filter(pk=night.pk).update(
                status=NightlyRun.Status.FAILED,
                error=f"no query was answered: {example}"[:5000],
                **figures,
            )
            endpoint_failing_raise(
                version=version,
                endpoint_name=endpoint.name,
                run=None,
                failed=len(failures) or answers.done,
                asked=answers.done,
                example=example,
                series_name=endpoint.series.name,
            )
            return NightlyRun.objects.get(pk=night.pk)
        try:
            run = run_from_entries(
                golden_set=endpoint.golden_set,
                entries=answers.builder.entries(),
                problems=answers.problems,
                source_name=endpoint.url,
                system=endpoint.system,
                stage=endpoint.stage,
                name=run_name(endpoint, night),
                series=endpoint.series,
                measured_at=night.slot,
                failures=failures,
                index_size=index_size,
                version_asked=version,
                chunking=endpoint.chunking,
            )
        except GoldsetError as exc:
            problems = "; ".join(exc.problems[:5])
            NightlyRun.objects.filter(pk=night.pk).update(
                status=NightlyRun.Status.FAILED,
                error=f"{exc.message}: {problems}"[:5000],
                **figures,
            )
            return NightlyRun.objects.get(pk=night.pk)
        NightlyRun.objects.filter(pk=night.pk).update(status=NightlyRun.Status.DONE, run=run, **figures)
        if failures and _failing(run):
            endpoint_failing_raise(
                version=version,
                endpoint_name=endpoint.name,
                run=run,
                failed=len(failures),
                asked=answers.done,
                example=f"query {failures[0][0]}: {failures[0][1]}",
                series_name=endpoint.series.name,
            )
    return NightlyRun.objects.get(pk=night.pk)


def _failing(run: Run) -> bool:
    return run_is_failing(run, evaluation_settings(run.golden_set))
