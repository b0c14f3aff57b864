"""A set of 300 queries (odd ones English, even ones German, a query slice), qN's one
relevant page dN, published as v1, with a good first-stage run scored on it; and helpers to
upload more runs and score them as the worker would (evaluation_compute, then the alert
rules), all through the real services."""

import pytest

from evaluation.alerts.rules import alerts_check
from evaluation.models import Run
from evaluation.services import evaluation_compute, run_import
from goldenset.models import Membership
from goldenset.services import membership_grant, version_publish
from lib.formats import JsonRecord
from tests.support import factories

SLUG = "lifecycle"
QUERIES = [f"q{n}" for n in range(1, 301)]
ENGLISH = QUERIES[0::2]
GERMAN = QUERIES[1::2]


def run_lines(query_ids, *, missed=()) -> list[str]:
    """qN's relevant page dN at rank 1 among unjudged x pages, or only x pages for `missed`."""
    lines = []
    for query_id in query_ids:
        docs = ["x1", "x2", "x3"] if query_id in missed else [f"d{query_id[1:]}", "x1", "x2"]
        lines += [f"{query_id} Q0 {doc} {rank} {10 - rank} t\n" for rank, doc in enumerate(docs, 1)]
    return lines


def upload(golden_set, name: str, query_ids=QUERIES, *, missed=(), system: str | None = None, user=None) -> Run:
    return run_import(
        golden_set=golden_set,
        lines=run_lines(query_ids, missed=set(missed)),
        source_name=f"{name}.run",
        system=system or name,
        stage="first_stage",
        name=name,
        user=user,
    )


def score(run: Run) -> None:
    """What evaluation_task does after an upload: score on every version, check the alerts."""
    for version in run.golden_set.versions.all():
        alerts_check(evaluation=evaluation_compute(run=run, version=version))


# The lifecycle set: 300 queries, odd ones English and even ones German, qN's one relevant
# page dN, and three unjudged pages x1-x3. Every module here puts it in its pytestmark; the
# shared golden_set fixture (tests/support/fixtures.py) makes it and the one below adds to it.
LIFECYCLE_SET = pytest.mark.golden_set(
    SLUG,
    manager="owner",
    queries=[
        JsonRecord(line=n, id=query_id, text=f"question {query_id}", metadata={"lang": "en" if n % 2 else "de"})
        for n, query_id in enumerate(QUERIES, 1)
    ],
    pages=factories.pages(*(f"d{n}" for n in range(1, 301)), "x1", "x2", "x3"),
    qrels={(query_id, f"d{n}"): 2 for n, query_id in enumerate(QUERIES, 1)},
    k_first=3,
    k_final=1,
    query_slice_fields=["lang"],
    page_slice_fields=[],
)


@pytest.fixture
def golden_set(golden_set):
    """The lifecycle set, published as v1, with a bm25 run scored on it."""
    version_publish(golden_set=golden_set, note="first labels")
    score(upload(golden_set, "bm25"))
    return golden_set


@pytest.fixture
def adjudicator(make_user, golden_set):
    user = make_user("adjudicator")
    membership_grant(user=user, golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    return user


@pytest.fixture
def annotator(make_user, golden_set):
    user = make_user("annotator")
    membership_grant(user=user, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    return user


@pytest.fixture
def token(owner):
    """token(scope, owner=the set's manager) -> an API token's secret."""
    from api.services import api_token_create

    def make(scope: str, owner_=None) -> str:
        return api_token_create(owner=owner_ or owner, scope=scope, golden_set=None, expires_at=None)[1]

    return make
