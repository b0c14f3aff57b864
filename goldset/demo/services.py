"""The demo's write path: `demo_load` puts wiki-demo into every app (the golden set with
its users and versions, runs scored against every version, a judging pool), the
`load_demo` command being a shell over it."""

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import check_password
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from evaluation.models import Run
from evaluation.selectors import run_ranked
from evaluation.services import evaluation_compute, run_import
from goldenset.models import Chunk, Chunking, GoldenSet, Membership, Page, Query, Version, VersionLabel, VersionQuery
from goldenset.services import (
    GoldenSetSource,
    golden_set_create,
    judgment_record,
    membership_grant,
    queries_add,
    query_retire,
    version_publish,
)
from goldset.demo.generate import DEFAULT_SEED, REFERENCE_DATE, demo_generate, pages_dates_move
from goldset.demo.monitoring import DemoMonitoringResult, demo_monitoring_load, demo_search_url
from goldset.demo.oracle import DemoOracleResult, demo_oracle_load
from goldset.demo.passages import CHUNKING_DESCRIPTION, CHUNKING_NAME, PASSAGE_SYSTEM, passage_id, passage_run_rankings, passages
from goldset.demo.reference_answers import demo_answers_set
from goldset.demo.runs import DEMO_SYSTEMS, demo_run_lines
from goldset.demo.vocabulary import GUIDELINES
from labeling.models import Pool
from labeling.pools.services import PoolBuildResult, pool_build
from lib.progress import Progress, no_progress

DEMO_SLUG = "wiki-demo"
DEMO_NAME = "Internal wiki (demo)"
# Shallow, so the demo's annotators find a few hundred pairs to judge at /label/, not thousands.
DEMO_POOL_DEPTH = 3

# --- people who log in to the demo ----------------------------------------------------


@dataclass(frozen=True)
class DemoUser:
    username: str
    password: str
    role: str  # a Membership role, or "" for the superuser
    description: str


DEMO_USERS = [
    DemoUser("admin", "goldset-demo-admin", "", "superuser: Django admin (/admin/), every golden set"),
    DemoUser("manager", "goldset-demo-manager", Membership.Role.MANAGER, f"manager of {DEMO_SLUG}: imports, publishes, reads results"),
    DemoUser("annotator", "goldset-demo-annotator", Membership.Role.ANNOTATOR, f"annotator of {DEMO_SLUG}"),
    DemoUser("annotator2", "goldset-demo-annotator2", Membership.Role.ANNOTATOR, f"annotator of {DEMO_SLUG}"),
    DemoUser("adjudicator", "goldset-demo-adjudicator", Membership.Role.ADJUDICATOR, f"adjudicator of {DEMO_SLUG}"),
]


@dataclass(frozen=True)
class DemoLogin:
    """A login to print: the demo password, or None when the user's password is not it."""

    username: str
    password: str | None
    description: str
    note: str = ""


@dataclass
class DemoSetResult:
    """What `demo_golden_set_load` found or made. `created` is False when the demo set was
    already there and nothing was written."""

    created: bool
    golden_set: GoldenSet
    versions: list[Version]
    logins: list[DemoLogin]
    pages: int = 0
    queries: int = 0
    human_judgments: int = 0


@dataclass
class DemoLoadResult(DemoSetResult):
    """What `demo_load` found or made: the golden set's part, and the runs and the pool."""

    # Every run of the set, in upload order, and those this load uploaded.
    runs: list[Run] = field(default_factory=list)
    new_runs: list[Run] = field(default_factory=list)
    # The pool this load built; None when the set had one already or has no first-stage run.
    pool: PoolBuildResult | None = None
    # The second chunking (passages-400) and its reranked run, when this load made them.
    chunking: Chunking | None = None
    passage_run: Run | None = None
    # The live search service's endpoints, canaries and nightly history (goldset.demo.monitoring).
    monitoring: DemoMonitoringResult | None = None
    # The demo generator and its oracle experiments (goldset.demo.oracle).
    oracle: DemoOracleResult | None = None


def demo_load(
    *,
    seed: int = DEFAULT_SEED,
    reference_date: datetime | None = None,
    progress: Progress = no_progress,
    monitoring: bool = True,
    search_url: str | None = None,
) -> DemoLoadResult:
    """Load the demo, each part once: the golden set with its users and versions
    (demo_golden_set_load), the demo systems' runs scored against every version
    (demo_runs_load), a second chunking of the wiki with a reranked run of passages
    (demo_passages_load), a judging pool of the first-stage runs and the passage run
    (demo_pool_build) and, with
    `monitoring`, the demo search service's endpoints at `search_url` (default
    goldset.demo.monitoring.demo_search_url()), canaries and two weeks of nightly history,
    and then the demo generator at the same service with its two oracle experiments (run
    when the service is up, else how to run them is said: goldset.demo.oracle).

    Each part is all or nothing and commits on its own. Safe to call again: a part that
    is there already is left as it is, whatever seed made it, so a second call writes
    nothing.
    """
    demo_set = demo_golden_set_load(seed=seed, reference_date=reference_date, progress=progress)
    golden_set = demo_set.golden_set
    new_runs = demo_runs_load(golden_set=golden_set, seed=seed, progress=progress)
    chunking, passage_run = demo_passages_load(golden_set=golden_set, seed=seed, progress=progress)
    if passage_run is not None:
        new_runs.append(passage_run)
    runs = list(Run.objects.filter(golden_set=golden_set, series=None).order_by("id"))
    pool = demo_pool_build(golden_set=golden_set, progress=progress)
    watched = demo_monitoring_load(golden_set=golden_set, base_url=search_url, progress=progress) if monitoring else None
    oracle = demo_oracle_load(golden_set=golden_set, base_url=search_url or demo_search_url(), progress=progress) if monitoring else None
    return DemoLoadResult(
        **{one.name: getattr(demo_set, one.name) for one in fields(DemoSetResult)},
        runs=runs,
        new_runs=new_runs,
        pool=pool,
        chunking=chunking,
        passage_run=passage_run,
        monitoring=watched,
        oracle=oracle,
    )


# --- the golden set, its users and versions -------------------------------------------


def demo_logins() -> list[DemoLogin]:
    """The demo logins as they stand: a password is shown only while it still is the demo's.

    Reads only: the hasher's own check never re-saves a hash, unlike User.check_password.
    """
    users = {user.username: user for user in get_user_model().objects.filter(username__in=[u.username for u in DEMO_USERS])}
    logins = []
    for demo_user in DEMO_USERS:
        user = users.get(demo_user.username)
        if user is None:
            logins.append(DemoLogin(demo_user.username, None, demo_user.description, "user no longer exists"))
        elif check_password(demo_user.password, user.password):
            logins.append(DemoLogin(demo_user.username, demo_user.password, demo_user.description))
        else:
            logins.append(
                DemoLogin(demo_user.username, None, demo_user.description, "password is not the demo's: existed before or changed since")
            )
    return logins


def _demo_users() -> tuple[dict[str, AbstractBaseUser], list[DemoLogin]]:
    """The demo's users by username, and their logins.

    Missing users are created with their demo passwords; a user of the same name that
    already exists is used as it is, its password untouched and not shown.
    """
    model = get_user_model()
    users, logins = {}, []
    for demo_user in DEMO_USERS:
        user = model.objects.filter(username=demo_user.username).first()
        if user is not None:
            logins.append(DemoLogin(demo_user.username, None, demo_user.description, "existed before the demo: password untouched"))
        else:
            if demo_user.role:
                user = model.objects.create_user(username=demo_user.username, password=demo_user.password)
            else:
                user = model.objects.create_superuser(username=demo_user.username, password=demo_user.password, email="")
            logins.append(DemoLogin(demo_user.username, demo_user.password, demo_user.description))
        users[demo_user.username] = user
    return users, logins


def demo_golden_set_load(
    *,
    seed: int = DEFAULT_SEED,
    reference_date: datetime | None = None,
    progress: Progress = no_progress,
) -> DemoSetResult:
    """Create the demo golden set `wiki-demo`, its users and versions, all or nothing.

    Page dates are generated relative to REFERENCE_DATE, then moved so that REFERENCE_DATE
    falls on `reference_date` (default: today, midnight UTC). Age slices are measured from
    each version's publish time, so without the move the "new runbooks" would age out of
    the last-30-days slice a month after REFERENCE_DATE. The same seed and reference date
    give the same version hashes on every machine.

    Returns what was created; when `wiki-demo` already exists, writes nothing and returns
    it with `created` False (the seed is then ignored).
    """
    existing = GoldenSet.objects.filter(slug=DEMO_SLUG).first()
    if existing is not None:
        return DemoSetResult(created=False, golden_set=existing, versions=list(existing.versions.order_by("number")), logins=demo_logins())

    content = demo_generate(seed=seed)
    if reference_date is None:
        reference_date = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    pages_dates_move(content.pages, reference_date - REFERENCE_DATE)
    versions: list[Version] = []
    human_judgments = 0
    with transaction.atomic():
        users, logins = _demo_users()
        manager = users["manager"]
        source = GoldenSetSource(
            pages=content.pages,
            queries=content.queries,
            qrels=content.qrels,
            source_name="support team's spreadsheet",
            guidelines=GUIDELINES,
            query_slice_fields=["lang", "intent"],
            page_slice_fields=["lang", "doc_type"],
            k_first=100,
            k_final=8,
        )
        golden_set_create(slug=DEMO_SLUG, name=DEMO_NAME, source=source, user=manager, progress=progress)
        golden_set = GoldenSet.objects.get(slug=DEMO_SLUG)
        for demo_user in DEMO_USERS:
            if demo_user.role:
                membership_grant(user=users[demo_user.username], golden_set=golden_set, role=demo_user.role)
        demo_answers_set(golden_set, manager)  # every version of the demo holds reference answers
        versions.append(version_publish(golden_set=golden_set, user=manager, note=content.v1_note))

        for number, demo_round in enumerate(content.rounds, start=1):
            if demo_round.new_queries:
                queries_add(golden_set=golden_set, records=demo_round.new_queries)
            queries = {q.query_id: q for q in Query.objects.filter(golden_set=golden_set).select_related("golden_set")}
            doc_ids = sorted({j.doc_id for j in demo_round.judgments})
            pages = {p.doc_id: p for p in Page.objects.filter(corpus=golden_set.corpus, doc_id__in=doc_ids)}
            for judgment in progress(demo_round.judgments, f"recording round {number} judgments"):
                judgment_record(
                    query=queries[judgment.query_id],
                    page=pages[judgment.doc_id],
                    grade=judgment.grade,
                    annotator=users[judgment.annotator],
                    note=judgment.note,
                    seconds_spent=judgment.seconds_spent,
                    source=judgment.source,
                )
            human_judgments += len(demo_round.judgments)
            for query_id in demo_round.retire:
                query_retire(query=queries[query_id])
            demo_answers_set(golden_set, manager)
            versions.append(version_publish(golden_set=golden_set, user=manager, note=demo_round.note))

    return DemoSetResult(
        created=True,
        golden_set=golden_set,
        versions=versions,
        logins=logins,
        pages=len(content.pages),
        queries=len(content.queries) + sum(len(r.new_queries) for r in content.rounds),
        human_judgments=human_judgments,
    )


# --- the runs -------------------------------------------------------------------------


def demo_runs_load(*, golden_set: GoldenSet, seed: int, progress: Progress = no_progress) -> list[Run]:
    """Upload the demo systems' runs (unless the set has runs already) and score each
    against every version. Returns the runs created."""
    if Run.objects.filter(golden_set=golden_set, series=None).exists():
        return []
    latest = golden_set.latest_version()
    labels: dict[str, dict[str, int]] = {}
    for query_id, doc_id, grade in VersionLabel.objects.filter(version=latest).values_list("query__query_id", "page__doc_id", "grade"):
        labels.setdefault(query_id, {})[doc_id] = grade
    newest = (
        Page.objects.filter(corpus=golden_set.corpus, published_at__isnull=False)
        .order_by("-published_at")
        .values_list("published_at", flat=True)
        .first()
    )
    new_pages = (
        set(Page.objects.filter(corpus=golden_set.corpus, published_at__gt=newest - timedelta(days=30)).values_list("doc_id", flat=True))
        if newest
        else set()
    )
    all_doc_ids = sorted(Page.objects.filter(corpus=golden_set.corpus).values_list("doc_id", flat=True))
    query_ids = sorted(VersionQuery.objects.filter(version=latest).values_list("query__query_id", flat=True))

    runs = []
    versions = list(Version.objects.filter(golden_set=golden_set).order_by("number"))
    # One transaction: the uploads' on-commit evaluations (and their alerts) run after
    # every older version is scored, so "dropped against the previous version" can be seen.
    with transaction.atomic():
        runs = _load(golden_set, versions, labels, new_pages, all_doc_ids, query_ids, seed, progress)
    return runs


def _load(golden_set, versions, labels, new_pages, all_doc_ids, query_ids, seed, progress) -> list[Run]:
    runs = []
    for system in progress(DEMO_SYSTEMS, "demo runs"):
        lines = demo_run_lines(system, labels=labels, new_pages=new_pages, all_doc_ids=all_doc_ids, query_ids=query_ids, seed=seed)
        run = run_import(
            golden_set=golden_set, lines=lines, source_name=f"{system.name}.run", system=system.system, stage=system.stage, name=system.name
        )
        ranked = run_ranked(run)
        for version in versions:
            evaluation_compute(run=run, version=version, ranked=ranked)
        runs.append(run)
    return runs


# --- the judging pool -----------------------------------------------------------------


def demo_pool_build(*, golden_set: GoldenSet, progress: Progress = no_progress) -> PoolBuildResult | None:
    """A pool of the first-stage runs at DEMO_POOL_DEPTH, once, so that the demo annotators
    have pairs to judge, with the runs of a chunking (the passage run): their pages come
    with the passages that brought them in highlighted. None when the set has a pool
    already or no first-stage run."""
    if Pool.objects.filter(golden_set=golden_set).exists():
        return None
    runs = list(Run.objects.filter(golden_set=golden_set, stage=Run.Stage.FIRST_STAGE).order_by("id"))
    if not runs:
        return None
    runs += list(Run.objects.filter(golden_set=golden_set, series=None, chunking__isnull=False).order_by("id"))
    return pool_build(golden_set=golden_set, runs=runs, depth=DEMO_POOL_DEPTH, strategy="depth", progress=progress)


# --- the second chunking ----------------------------------------------------------------


def demo_passages_load(*, golden_set: GoldenSet, seed: int, progress: Progress = no_progress) -> tuple[Chunking | None, Run | None]:
    """The demo's second chunking of its wiki (goldset.demo.passages: passages-400) and a
    reranked run of passages over it, scored against every version; once: (None, None)
    when the corpus has the chunking already or the set has no version.

    The chunks are written here as Chunk rows and the run stored with Run.chunking set, its
    entries Chunk primary keys; it is scored at document level (each page at its best
    passage, labeling.pools.chunk_runs.documents_of). All or nothing.
    """
    corpus = golden_set.corpus
    latest = golden_set.latest_version()
    if latest is None or Chunking.objects.filter(corpus=corpus, name=CHUNKING_NAME).exists():
        return None, None
    with transaction.atomic():
        chunking = Chunking.objects.create(corpus=corpus, name=CHUNKING_NAME, description=CHUNKING_DESCRIPTION)
        rows, passages_of = [], {}
        pages = Page.objects.filter(corpus=corpus).order_by("doc_id").values_list("pk", "doc_id", "text")
        for page_pk, doc_id, text in progress(list(pages), "cutting passages"):
            for number, (start, end) in enumerate(passages(text or ""), start=1):
                chunk_id = passage_id(doc_id, number)
                passages_of.setdefault(doc_id, []).append(chunk_id)
                rows.append(Chunk(chunking=chunking, chunk_id=chunk_id, page_id=page_pk, start=start, end=end))
        Chunk.objects.bulk_create(rows, batch_size=5000)
        chunking.chunk_count, chunking.document_count = len(rows), len(passages_of)
        chunking.save(update_fields=["chunk_count", "document_count"])

        labels: dict[str, dict[str, int]] = {}
        for query_id, doc_id, grade in VersionLabel.objects.filter(version=latest).values_list("query__query_id", "page__doc_id", "grade"):
            labels.setdefault(query_id, {})[doc_id] = grade
        all_doc_ids = sorted(passages_of)
        newest = (
            Page.objects.filter(corpus=corpus, published_at__isnull=False)
            .order_by("-published_at")
            .values_list("published_at", flat=True)
            .first()
        )
        new_pages = (
            set(Page.objects.filter(corpus=corpus, published_at__gt=newest - timedelta(days=30)).values_list("doc_id", flat=True))
            if newest
            else set()
        )
        query_ids = sorted(VersionQuery.objects.filter(version=latest).values_list("query__query_id", flat=True))
        rankings = passage_run_rankings(
            passages_of=passages_of, labels=labels, new_pages=new_pages, all_doc_ids=all_doc_ids, query_ids=query_ids, seed=seed
        )
        # A TREC run of chunk ids, as a team's retriever over the passages would send it.
        lines = [
            f"{query_id} Q0 {chunk_id} {rank} {score!r} {PASSAGE_SYSTEM.system}\n"
            for query_id, ranking in rankings
            for rank, (chunk_id, score) in enumerate(ranking, start=1)
        ]
        run = run_import(
            golden_set=golden_set,
            lines=lines,
            source_name=f"{PASSAGE_SYSTEM.name}.run",
            system=PASSAGE_SYSTEM.system,
            stage=PASSAGE_SYSTEM.stage,
            name=PASSAGE_SYSTEM.name,
            chunking=chunking.name,
        )
        # At both levels, as every run of a chunking (evaluation.services.evaluation_compute);
        # and the runs of documents again, now that the corpus has a chunking: they gain
        # the evidence recall and prompt tokens the comparison of chunkings reads.
        documents_runs = list(Run.objects.filter(golden_set=golden_set, series=None, chunking=None).order_by("pk"))
        for version in Version.objects.filter(golden_set=golden_set).order_by("number"):
            for scored in [*documents_runs, run]:
                evaluation_compute(run=scored, version=version)
    return chunking, run
