"""A golden set with a published version and a scored run, people in each role, and
tokens of every kind, all made through the real services."""

from datetime import timedelta

import pytest
from django.utils import timezone

from api.models import ApiToken
from api.services import api_token_create, api_token_revoke
from evaluation.services import evaluation_compute, run_import
from goldenset.models import Membership
from goldenset.services import membership_grant, version_publish
from tests.api import RUN, SLUG, make_set


@pytest.fixture
def manager(make_user):
    return make_user("manager")


@pytest.fixture
def golden_set(manager):
    return make_set(SLUG, manager)


@pytest.fixture
def version(golden_set, manager):
    return version_publish(golden_set=golden_set, user=manager, note="first labels")


@pytest.fixture
def uploaded_run(golden_set, version, manager):
    """A run of the set, not yet scored (tasks on commit do not run inside a test's transaction)."""
    return run_import(
        golden_set=golden_set,
        lines=RUN.splitlines(keepends=True),
        source_name="run.txt",
        system="bm25",
        stage="first_stage",
        user=manager,
    )


@pytest.fixture
def run(uploaded_run, version):
    """The run, scored against the version."""
    evaluation_compute(run=uploaded_run, version=version)
    return uploaded_run


@pytest.fixture
def other_set(manager):
    """A second set the same manager runs: a token for it must not reach the first."""
    return make_set("other", manager)


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
def token(manager):
    """token(scope, golden_set=None, owner=manager, expires_in=None) -> the secret."""

    def make(scope: str, golden_set=None, owner=None, expires_in: timedelta | None = None) -> str:
        expires_at = timezone.now() + expires_in if expires_in else None
        _, secret = api_token_create(owner=owner or manager, scope=scope, golden_set=golden_set, expires_at=expires_at)
        return secret

    return make


@pytest.fixture
def expired_token(manager, golden_set) -> str:
    made, secret = api_token_create(owner=manager, scope="write", golden_set=golden_set)
    ApiToken.objects.filter(pk=made.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    return secret


@pytest.fixture
def revoked_token(manager, golden_set) -> str:
    made, secret = api_token_create(owner=manager, scope="write", golden_set=golden_set)
    api_token_revoke(token=made)
    return secret
