"""The site as each role reaches it: the team fixture (a set with a version, a scored run, a
pool and one member per role) and a crawl that follows every link. Shared by the link test
(test_navigation.py) and the page-by-page browser test (test_every_page_browser.py)."""

import io
import json
import time
from dataclasses import dataclass, field
from decimal import Decimal
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from answers.models import AnswerGrade, AnswerJudge, EndpointDepthRun, GeneratedAnswer, Generator, OracleExperiment
from api.services import api_token_create
from evaluation.alerts.incidents import incident_alert_add
from evaluation.models import Alert, Run, RunUploadJob
from evaluation.services import run_archive, run_import
from goldenset.chunkings import chunking_import
from goldenset.model_fill import version_model_fill_create
from goldenset.model_labels import model_labels_import, prompt_hash_of
from goldenset.models import (
    Corpus,
    GoldenSet,
    Membership,
    Organisation,
    OrganisationMembership,
    Page,
    PublishJob,
    Query,
    Team,
    VersionModelFill,
)
from goldenset.publishing import publish_job_run, version_publish_request
from goldenset.services import judgment_record, membership_grant
from goldenset.tags import tag_move
from goldenset.tasks import publish_job_task
from goldenset.teams import organisation_create, organisation_member_set, team_create, team_grant
from labeling.models import JudgeFailure, JudgeJob, JudgingTask, QueueSettings
from labeling.pools.services import pool_build
from lib.evidence_formats import ChunkLine
from lib.formats import ModelLabelLine
from monitoring.endpoints.services import endpoint_add
from monitoring.endpoints.trying import try_start
from monitoring.nightly.services import nightly_run_request
from tests.support import factories
from traffic.logs import query_log_import

PAGE_LIMIT = 400  # a runaway crawl (a link that makes new links) fails instead of running on


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def _followed(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        return False  # another site, mailto:, a fragment
    if parts.path.startswith("/admin/") and not parts.path.startswith("/admin/coverage/"):
        return False
    return not parts.path.startswith(("/static/", "/accounts/logout"))


def crawl(client, starts: list[str]) -> tuple[dict[str, int], set[str]]:
    """Every page reachable from `starts` by links: {url: status}, and the html pages seen."""
    seen: dict[str, int] = {}
    html: set[str] = set()
    queue = list(starts)
    while queue:
        url = queue.pop(0)
        if url in seen:
            continue
        assert len(seen) < PAGE_LIMIT, f"more than {PAGE_LIMIT} pages reached; last {url}"
        response = client.get(url, follow=True)  # a redirect counts by where it leads
        seen[url] = response.status_code
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        html.add(url)
        parser = _Links()
        parser.feed(response.content.decode())
        for href in parser.hrefs:
            target = urljoin(url, href).split("#")[0]
            if target and _followed(target) and target not in seen:
                queue.append(target)
    return seen, html


@pytest.fixture
def team(make_user):
    """The sliced set (v1, a scored run, slices) with a judging pool and one member per role."""
    people = {role: make_user(role) for role in ("manager", "adjudicator", "annotator")}
    people["staff"] = make_user("staff", is_staff=True, is_superuser=True)
    return team_site(people), people


def team_site(people: dict, slug: str = "navset", *, team=None):
    """The team fixture's set, made for `people` (a manager, an adjudicator and an annotator)
    in `team` (the default team when None): tests that build it once per module call this."""
    golden_set = factories.sliced_set(slug, manager=people["manager"])
    if team is not None:
        GoldenSet.objects.filter(pk=golden_set.pk).update(team=team)
        Corpus.objects.filter(pk=golden_set.corpus_id).update(team=team)
        golden_set.refresh_from_db()
    membership_grant(user=people["adjudicator"], golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    membership_grant(user=people["annotator"], golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    QueueSettings.objects.create(golden_set=golden_set)
    pool = pool_build(golden_set=golden_set, runs=list(Run.objects.filter(golden_set=golden_set)), depth=2, strategy="depth").pool
    # A model's labels, so that the model labels page is crawled with its figures: it agrees
    # on every pair but two, which its worst disagreements list (and link to).
    model_grades = {(f"q{n}", f"d{n}{side}"): grade for n in range(1, 31) for side, grade in (("a", 2), ("b", 0))}
    model_grades.update({("q1", "d1a"): 0, ("q2", "d2b"): 3})
    records = [ModelLabelLine(line, q, d, g) for line, ((q, d), g) in enumerate(model_grades.items(), start=1)]
    model_labels_import(golden_set=golden_set, model="judge-7b", prompt_text="Grade the page for the query, 0-3.", records=records)
    # A judge job that could not read one answer, so the jobs list is crawled with its counts
    # and a failure's raw answer.
    job = JudgeJob.objects.create(
        golden_set=golden_set,
        pool=pool,
        base_url="http://127.0.0.1:9/v1",
        model="judge-8b",
        prompt_hash="0" * 64,
        status="done",
        pairs_total=3,
        pairs_done=2,
        pairs_failed=1,
        requests=3,
        prompt_tokens=300,
        completion_tokens=30,
        price_in=Decimal("0.15"),
        price_out=Decimal("0.60"),
        created_by=people["manager"],
    )
    JudgeFailure.objects.create(
        job=job,
        query=golden_set.queries.get(query_id="q3"),
        page=Page.objects.get(corpus=golden_set.corpus, doc_id="d3a"),
        error="no score found in the answer",
        raw_answer="A long, hesitant answer that names no grade at all.",
    )
    # An archived run (its page, and the runs list's "show archived" view) and a published
    # job (the publish page lists it; its page shows how it ended) are pages too.
    archived = factories.sliced_run(golden_set, 30, name="old bm25", system="old-bm25")
    run_archive(run=archived, user=people["manager"])
    query = Query.objects.get(golden_set=golden_set, query_id="q1")
    judgment_record(query=query, page=Page.objects.get(corpus=golden_set.corpus, doc_id="d2a"), grade=1, annotator=people["manager"])
    publishing = version_publish_request(golden_set=golden_set, user=people["manager"], note="one more label", job_task=publish_job_task)
    if PublishJob.objects.get(pk=publishing.pk).status == PublishJob.Status.QUEUED:  # on_commit never fires inside a test transaction
        publish_job_run(publishing.pk)
    # A variant of v1 with the model's labels, so the version page is crawled with it listed.
    version_model_fill_create(
        version=golden_set.versions.get(number=1),
        model="judge-7b",
        prompt_hash=prompt_hash_of("Grade the page for the query, 0-3."),
    )
    _oracle_experiment(golden_set, people)
    return golden_set


def _oracle_experiment(golden_set, people) -> None:
    """A generator, an answer judge and a finished oracle experiment on v1's scored run, its
    answers and grades written as rows (no model asked), so that the answers pages are
    crawled with figures: retrieval loses q1 and q2, whose links lead to their drill-downs."""
    generator = Generator.objects.create(
        golden_set=golden_set, name="local-llm", base_url="http://127.0.0.1:9/v1", model="tiny", prompt="{{question}} {{context}}"
    )
    judge = AnswerJudge.objects.create(
        golden_set=golden_set, name="grader", base_url="http://127.0.0.1:9/v1", model="judge", rubric="r", rubric_hash="0" * 64
    )
    version = golden_set.versions.get(number=1)
    run = Run.objects.filter(golden_set=golden_set, archived_at=None).order_by("pk").first()
    experiment = OracleExperiment.objects.create(
        golden_set=golden_set, version=version, run=run, generator=generator, judge=judge, k_final=version.k_final, status="done"
    )
    answers = []
    for query in Query.objects.filter(golden_set=golden_set):
        for context in ("oracle", "retrieved"):
            right = context == "oracle" or query.query_id not in ("q1", "q2")
            answers.append(
                GeneratedAnswer(
                    experiment=experiment, query=query, context=context, text="an answer", exact_match=float(right), token_f1=float(right)
                )
            )
    answers = GeneratedAnswer.objects.bulk_create(answers)
    AnswerGrade.objects.bulk_create(
        AnswerGrade(
            answer=a,
            source="model",
            judge=judge,
            rubric_hash=judge.rubric_hash,
            grade="correct" if a.exact_match else "wrong",
            supported=True,
        )
        for a in answers
    )
    AnswerGrade.objects.create(answer=answers[0], source="human", user=people["adjudicator"], grade="correct", supported=True)
    OracleExperiment.objects.filter(pk=experiment.pk).update(
        queries_total=len(answers) // 2, answers_total=len(answers), answers_done=len(answers), grades_done=len(answers)
    )


# --- two teams, for the cross-team walk (tests/hardening/test_cross_team*.py) ---------------

# What only team B's pages may show: an outsider's page that holds one of them leaked it.
B_SET_NAME = "Zanzibar Beta Ledger"
B_QUERY_TEXT = "marmalade quokka orbit"
B_PAGE_TITLE = "Quillwort beta handbook"
B_RUN_NAME = "heron-7 hybrid"
B_ENDPOINT_URL = "http://127.0.0.1:9/beta-secret-search"
# One name for B's endpoint, tag and chunking: the routes call each of them `name`.
B_NAME = "bprod"


@dataclass
class CrossTeamSite:
    """Team B (organisation `acme`, team `beta`) with everything the site shows, and the
    people who must not reach it: `people` by role name, `sets` the outsiders' own sets by
    role name, `objects` B's rows the URL fillers read, `markers` B's secret-ish strings."""

    organisation: Organisation
    team: Team
    golden_set: GoldenSet
    people: dict
    sets: dict
    objects: dict
    markers: list[str] = field(default_factory=list)


def cross_team_site() -> CrossTeamSite:
    """Two organisations: `acme` holds team `beta` (B, the walked team) and team `alpha`
    (another team of the same organisation); `globex` holds team `gamma`. Their people:
    B's own manager (the sanity walk), alpha's manager, gamma's manager, globex's admin, and a
    plain member of acme with no role in any team. Alpha and gamma each have a set of their
    own whose query ids, version numbers and names differ from B's, so that B's keys under
    their slug can only be B's (the IDOR walk)."""
    user_model = get_user_model()
    # B's people by role, their usernames marked as B's (an outsider's page that names them leaked them).
    usernames = {role: f"beta_{role}" for role in ("manager", "adjudicator", "annotator")}
    usernames.update((name, name) for name in ("alpha_manager", "gamma_manager", "globex_admin", "acme_member"))
    people = {key: user_model.objects.create_user(username=name, password="pw-" + name) for key, name in usernames.items()}
    acme = organisation_create(slug="acme", name="Acme")
    globex = organisation_create(slug="globex", name="Globex")
    beta = team_create(organisation=acme, slug="beta", name="Beta")
    alpha = team_create(organisation=acme, slug="alpha", name="Alpha")
    gamma = team_create(organisation=globex, slug="gamma", name="Gamma")
    organisation_member_set(organisation=acme, user=people["acme_member"], role=OrganisationMembership.Role.MEMBER)
    organisation_member_set(organisation=acme, user=people["alpha_manager"], role=OrganisationMembership.Role.MEMBER)
    organisation_member_set(organisation=globex, user=people["gamma_manager"], role=OrganisationMembership.Role.MEMBER)
    organisation_member_set(organisation=globex, user=people["globex_admin"], role=OrganisationMembership.Role.ADMIN)
    team_grant(team=alpha, user=people["alpha_manager"], role=Membership.Role.MANAGER)
    team_grant(team=gamma, user=people["gamma_manager"], role=Membership.Role.MANAGER)
    # B's roles are the team's (the manager) and the set's (adjudicator, annotator): both kinds.
    golden_set = team_site(people, slug="beta-set", team=beta)
    team_grant(team=beta, user=people["manager"], role=Membership.Role.MANAGER)
    sets = {
        "alpha_manager": _outsiders_set("alpha-set", alpha),
        "gamma_manager": _outsiders_set("gamma-set", gamma),
        "globex_admin": _outsiders_set("globex-set", gamma),
    }
    objects = _team_b_extras(golden_set, people["manager"])
    markers = [
        B_SET_NAME,
        B_QUERY_TEXT,
        B_PAGE_TITLE,
        B_RUN_NAME,
        B_ENDPOINT_URL,
        objects["token"].prefix,
        *(people[role].username for role in ("manager", "adjudicator", "annotator")),
    ]
    return CrossTeamSite(acme, beta, golden_set, people, sets, objects, markers)


def _outsiders_set(slug: str, team) -> GoldenSet:
    """An outsider's own set, in `team`: query ids qa1..qa3, no version, no runs."""
    made = factories.golden_set(slug, queries=factories.queries("qa1", "qa2", "qa3"), qrels={("qa1", "d1"): 2})
    GoldenSet.objects.filter(pk=made.pk).update(team=team)
    Corpus.objects.filter(pk=made.corpus_id).update(team=team)
    made.refresh_from_db()
    return made


def _team_b_extras(golden_set: GoldenSet, manager) -> dict:
    """What the team fixture's set lacks of what the site shows, added to B's set, and B's
    rows by the name the walk's fillers use."""
    GoldenSet.objects.filter(pk=golden_set.pk).update(name=B_SET_NAME)
    golden_set.refresh_from_db()
    query = Query.objects.get(golden_set=golden_set, query_id="q1")
    Query.objects.filter(pk=query.pk).update(text=B_QUERY_TEXT)
    Page.objects.filter(corpus=golden_set.corpus, doc_id="d1a").update(title=B_PAGE_TITLE)
    run = Run.objects.filter(golden_set=golden_set, archived_at=None).order_by("pk").first()
    Run.objects.filter(pk=run.pk).update(name=B_RUN_NAME)
    version = golden_set.latest_version()
    endpoint = endpoint_add(
        golden_set=golden_set, name=B_NAME, system="heron", stage="first_stage", preset="goldset", url=B_ENDPOINT_URL, user=manager
    )
    run_import(
        golden_set=golden_set,
        lines=[f"q{n} Q0 d{n}a 1 1.0 heron\n" for n in range(1, 31)],
        source_name="night.run",
        system="heron",
        stage="first_stage",
        name="heron night",
        series=endpoint.series.name,
        measured_at=timezone.now(),
    )
    night = nightly_run_request(endpoint=endpoint, slot=timezone.now())
    alert = Alert.objects.create(
        golden_set=golden_set, version=version, run=run, kind=Alert.Kind.SLICE_UNDER_FLOOR,
        metric="recall@10", slice="query:lang=l1", value=0.5, reference=0.75, message="recall@10 in slice query:lang=l1 is 0.500",
    )  # fmt: skip
    incident = incident_alert_add(alert)
    token, _ = api_token_create(owner=manager, scope="write", golden_set=golden_set, name="beta ci")
    tag_move(golden_set=golden_set, name=B_NAME, version=version, user=manager, note="beta release")
    rows = [{"query": B_QUERY_TEXT, "count": 7}, {"query": "question 2", "count": 3}]
    log = query_log_import(
        golden_set=golden_set, data=io.BytesIO("".join(json.dumps(r) + "\n" for r in rows).encode()), name="beta log", source_name="b.jsonl"
    ).log
    chunking_import(corpus=golden_set.corpus, name=B_NAME, records=[ChunkLine(1, "d1a#0", "d1a", 0, 4), ChunkLine(2, "d1a#1", "d1a", 4, 7)])
    upload = RunUploadJob.objects.create(golden_set=golden_set, source_name="big.run", system="heron", stage="first_stage", size=10)
    depth = EndpointDepthRun.objects.create(golden_set=golden_set, endpoint=endpoint, version=version, depth=5)
    experiment = OracleExperiment.objects.get(golden_set=golden_set)
    try_state = try_start(endpoint=endpoint, user_id=manager.pk, query_id="probe", query="q", k=3, now=time.time())
    return {
        "run": run,
        "version": golden_set.versions.get(number=1),  # the version of the model fill
        "query": query,
        "page": Page.objects.get(corpus=golden_set.corpus, doc_id="d1a"),
        "endpoint": endpoint,
        "night": night,
        "incident": incident,
        "token": token,
        "log": log,
        "upload": upload,
        "depth": depth,
        "experiment": experiment,
        "answer": GeneratedAnswer.objects.filter(experiment=experiment).order_by("pk").first(),
        "fill": VersionModelFill.objects.filter(version__golden_set=golden_set).first(),
        "publish_job": PublishJob.objects.filter(golden_set=golden_set).order_by("pk").first(),
        "membership": Membership.objects.filter(golden_set=golden_set).order_by("pk").first(),
        "task": JudgingTask.objects.filter(pool__golden_set=golden_set).order_by("pk").first(),
        "try_token": try_state.token,
    }
