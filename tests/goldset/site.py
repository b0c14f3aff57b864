"""The site as each role reaches it: the team fixture (a set with a version, a scored run, a
pool and one member per role) and a crawl that follows every link. Shared by the link test
(test_navigation.py) and the page-by-page browser test (test_every_page_browser.py)."""

from decimal import Decimal
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest

from answers.models import AnswerGrade, AnswerJudge, GeneratedAnswer, Generator, OracleExperiment
from evaluation.models import Run
from evaluation.services import run_archive
from goldenset.model_fill import version_model_fill_create
from goldenset.model_labels import model_labels_import, prompt_hash_of
from goldenset.models import Membership, Page, PublishJob, Query
from goldenset.publishing import publish_job_run, version_publish_request
from goldenset.services import judgment_record, membership_grant
from goldenset.tasks import publish_job_task
from labeling.models import JudgeFailure, JudgeJob, QueueSettings
from labeling.pools.services import pool_build
from lib.formats import ModelLabelLine
from tests.support import factories

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
    golden_set = factories.sliced_set("navset", manager=people["manager"])
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
    people["staff"] = make_user("staff", is_staff=True, is_superuser=True)
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
    return golden_set, people


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
