"""A live endpoint asked once at a depth of the manager's choosing, for the depth-and-cost
sweep (answers.models.EndpointDepthRun): a reranked endpoint's nights stop at k_final, so
the sweep of a night cannot show what a larger k would buy.

`endpoint_depth_submit` checks the fields (each fault names its field) and refuses while the
endpoint is being asked (a night pending or running, or another depth ask): a production
system is asked once at a time, as "run now" does (monitoring.nightly.services). The job asks
every query of the latest version through the nightly asker (`fetch_answers`, with the
endpoint's own in-flight and rate bounds) at the depth asked, and stores the answers as a run
outside the endpoint's series (nights compare to nights; this one is a probe), named
"<endpoint> depth K <date>", its system and stage the endpoint's. The run and the job's
"done" are written in one transaction with the job's row locked, so a copy sent again after
a lost worker stores nothing twice. Its commit schedules the run's scoring, as an upload's.
"""

from datetime import timedelta

from celery import Task
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from answers.models import EndpointDepthRun
from evaluation.services import run_from_entries
from goldenset.models import GoldenSet
from lib.background_jobs import NO_HOLDER, Holder, JobKind, job_run, job_send_on_commit, jobs_sweep
from lib.errors import ConflictError, GoldsetError, ProblemCollector
from monitoring.endpoints.services import endpoint_spec
from monitoring.models import Endpoint, NightlyRun
from monitoring.nightly.services import fetch_answers, latest_version, version_questions

DEPTH_JOBS = JobKind(
    EndpointDepthRun,
    send_again_after=timedelta(minutes=10),
    give_up_after=timedelta(hours=6),
    # Nothing is written before the run: a stuck ask starts over, as a night does.
    stuck_sent_again=True,
    stopped="",
)


def endpoint_depth_submit(
    *, golden_set: GoldenSet, endpoint: Endpoint | None, depth: int | None, user: AbstractBaseUser | None, send: Task | None
) -> EndpointDepthRun:
    """Record an ask of `endpoint` at `depth` on the latest version and send it through
    `send` once the caller's transaction commits (None: the caller runs it, as the command
    does). ConflictError while the endpoint is being asked."""
    problems = ProblemCollector()
    version = latest_version(golden_set.pk)
    if endpoint is None or endpoint.golden_set_id != golden_set.pk:
        problems.add(f"endpoint: golden set {golden_set.slug!r} has no such endpoint")
    if version is None:
        problems.add(f"version: golden set {golden_set.slug!r} has no version: publish one first")
    top = version.k_first if version is not None else None
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1 or (top is not None and depth > top):
        # Up to k_first: the sweep reads a run's recall curve that far.
        problems.add(f"depth: pages to ask for, from 1 to the version's k_first ({top}), got {depth!r}")
    problems.raise_if_any("the endpoint cannot be asked at a depth")
    with transaction.atomic():
        Endpoint.objects.select_for_update().filter(pk=endpoint.pk).first()
        night = NightlyRun.objects.filter(endpoint=endpoint, status__in=NightlyRun.ACTIVE).first()
        if night is not None:
            raise ConflictError(f"a night of {endpoint.name} (id {night.pk}) is {night.status}: ask it at a depth once the night is over")
        busy = EndpointDepthRun.objects.filter(endpoint=endpoint, status__in=EndpointDepthRun.ACTIVE).first()
        if busy is not None:
            raise ConflictError(f"{endpoint.name} is being asked at depth {busy.depth} (id {busy.pk}): one ask at a time")
        made = EndpointDepthRun.objects.create(golden_set=golden_set, endpoint=endpoint, version=version, depth=depth, created_by=user)
        if send is not None:
            job_send_on_commit(EndpointDepthRun, made.pk, send)
    return made


def endpoint_depth_run(job_id: int, *, holder: Holder = NO_HOLDER) -> EndpointDepthRun | None:
    """Claim the ask for `holder`, ask the endpoint and store its run; None when it is
    gone or claimed already."""
    job = job_run(
        DEPTH_JOBS,
        job_id,
        holder=holder,
        load=lambda pk: EndpointDepthRun.objects.select_related("golden_set", "endpoint", "version").get(pk=pk),
        work=_ask,
        refused=lambda exc: {"error": exc.message[:5000]},
        broke=lambda exc: {"error": f"the ask stopped on an internal error ({type(exc).__name__}: {exc})"[:5000]},
    )
    if job is not None:
        job.refresh_from_db()
    return job


def run_name(job: EndpointDepthRun) -> str:
    return f"{job.endpoint.name} depth {job.depth} {timezone.now():%Y-%m-%d %H:%M:%S}"


def _ask(job: EndpointDepthRun) -> None:
    endpoint = job.endpoint
    questions = version_questions(job.version)
    if not questions:
        raise GoldsetError(f"{job.version} has no query with a text to ask")
    EndpointDepthRun.objects.filter(pk=job.pk).update(queries_total=len(questions))

    def write(done: int, failed: int) -> None:
        EndpointDepthRun.objects.filter(pk=job.pk).update(queries_done=done, failed_count=failed)

    options = {"allowed_networks": settings.RETRIEVAL_ALLOWED_NETWORKS, "env_prefix": settings.RETRIEVAL_HEADER_ENV_PREFIX}
    try:
        answers, report = fetch_answers(write, endpoint_spec(endpoint), questions, job.depth, endpoint.url, options)
    except ValueError as exc:  # the spec no longer passes its checks (an environment changed)
        raise GoldsetError(f"the endpoint cannot be queried: {exc}") from exc
    failures = answers.failures
    if not answers.answered:
        example = failures[0][1] if failures else "the endpoint returned no page for any query"
        raise GoldsetError(f"no query was answered: {example}")
    with transaction.atomic():
        locked = EndpointDepthRun.objects.select_for_update().get(pk=job.pk)
        if locked.run_id is not None or locked.status != EndpointDepthRun.Status.RUNNING:
            return  # a copy beside this one stored it
        run = run_from_entries(
            golden_set=job.golden_set,
            entries=answers.builder.entries(),
            problems=answers.problems,
            source_name=endpoint.url,
            system=endpoint.system,
            stage=endpoint.stage,
            name=run_name(job),
            series=None,
            measured_at=timezone.now(),
            failures=failures,
            index_size=report.index_size,
            version_asked=job.version,
            chunking=endpoint.chunking,
        )
        EndpointDepthRun.objects.filter(pk=job.pk).update(
            status=EndpointDepthRun.Status.DONE,
            run=run,
            queries_done=answers.done,
            failed_count=len(failures),
            finished_at=timezone.now(),
        )


def endpoint_depth_runs_sweep(*, job_task: Task, now=None, sweeper: Task | None = None) -> tuple[int, int]:
    """Send again the asks whose message was lost or whose holder is gone (lib.background_jobs)."""
    return jobs_sweep(DEPTH_JOBS, job_task=job_task, now=now, sweeper=sweeper)
