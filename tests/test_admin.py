"""The Django admin: every model's list, its cost, what is read-only, and every action.

The data is made through the real services (a sliced set with a version, runs, scores,
alerts, canaries, a pool, a token), so each list has rows. A list that ran a query per
row would cost more at 100 rows a page than at 1: each list is loaded both ways and must
cost the same, under a fixed bound.
"""

import copy
from datetime import UTC, datetime

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.test import RequestFactory, TestCase
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from api.models import ApiToken
from api.services import api_token_create
from evaluation.alerts.rules import alerts_check
from evaluation.canaries import canary_add
from evaluation.models import Evaluation, RunUploadJob
from evaluation.services import evaluation_compute
from evaluation.settings_service import evaluation_settings_update
from goldenset.model_labels import model_labels_import
from goldenset.models import (
    GoldenSet,
    Judgment,
    ModelJudgment,
    ModelPrompt,
    Page,
    PublishJob,
    Query,
    Version,
    VersionLabel,
    VersionPage,
    VersionQuery,
)
from goldenset.services import judgment_record
from labeling.judging.services import queue_settings_of
from labeling.models import CompletenessSample, GoldAnswer, JudgeJob, JudgingTask, Pool, PoolJob
from labeling.pools.services import pool_build
from lib.formats import ModelLabelLine
from monitoring.endpoints.services import endpoint_add
from monitoring.nightly.services import nightly_run_request
from monitoring.probes.services import probe_round_request
from tests.support.factories import sliced_run as upload
from tests.support.factories import sliced_set as make_sliced_set
from tests.support.fixtures import kept_for_the_module

pytestmark = pytest.mark.django_db

LIST_QUERY_BOUND = 12
# History and computed figures: shown, never added, changed or deleted in the admin.
READ_ONLY = [Version, VersionLabel, VersionQuery, VersionPage, Judgment, Evaluation, GoldAnswer, ModelJudgment, ModelPrompt]


@pytest.fixture(scope="module")
def admin_data(request, django_db_setup, django_db_blocker):
    """Two sliced sets with two runs each, scored, with alerts, canaries, a pool, samples,
    tokens, made once for the module's tests (the slowest part of each of them)."""
    yield from kept_for_the_module(request, django_db_blocker, _build)


@pytest.fixture
def data(admin_data, db):
    return copy.deepcopy(admin_data)


@pytest.fixture
def owner(data):
    return get_user_model().objects.get(username="owner")


@pytest.fixture
def superuser(data):
    return get_user_model().objects.get(username="root")


def _build():
    users = get_user_model().objects
    owner = users.create_user(username="owner", password="pw-owner")
    users.create_user(username="root", password="pw-root", is_staff=True, is_superuser=True)
    sets = []
    for slug in ("alpha", "beta"):
        golden_set = make_sliced_set(slug, queries=12, langs=2, doc_types=2, manager=owner)
        version = golden_set.latest_version()
        later = upload(golden_set, 12, name="bm25 v2")
        for evaluation in [evaluation_compute(run=later, version=version), *Evaluation.objects.filter(version=version)]:
            alerts_check(evaluation=evaluation)
        for n in (1, 2):
            canary_add(
                golden_set=golden_set,
                query=Query.objects.get(golden_set=golden_set, query_id=f"q{n}"),
                page=Page.objects.get(corpus=golden_set.corpus, doc_id=f"d{n}a"),
            )
        evaluation_settings_update(golden_set=golden_set, user=owner, min_queries_per_slice=5)
        queue_settings_of(golden_set)
        pool = pool_build(golden_set=golden_set, runs=list(golden_set.runs.all()), depth=3, strategy="depth").pool
        tasks = list(JudgingTask.objects.filter(pool=pool)[:2])
        for task in tasks:
            GoldAnswer.objects.create(task=task, annotator=owner, grade=1, expected_grade=task.grade or 0)
        CompletenessSample.objects.create(golden_set=golden_set, pool=pool, depth_from=3, depth_to=10, population=10, size=2, seed=1)
        PoolJob.objects.create(
            golden_set=golden_set,
            kind="build",
            status="done",
            created_by=owner,
            arguments={"runs": [], "depth": 3, "strategy": "depth", "budget": None},
            lines=["a pool"],
        )
        JudgeJob.objects.create(
            golden_set=golden_set,
            pool=pool,
            base_url="http://127.0.0.1:9/v1",
            model="judge",
            prompt_hash="0" * 64,
            created_by=owner,
            status="done",
            pairs_total=2,
            pairs_done=2,
        )
        judgment_record(
            query=Query.objects.get(golden_set=golden_set, query_id="q1"),
            page=Page.objects.get(corpus=golden_set.corpus, doc_id="d1b"),
            grade=1,
            annotator=owner,
        )
        model_labels_import(
            golden_set=golden_set,
            model="judge",
            prompt_text=f"grade for {slug}",
            records=[ModelLabelLine(1, "q1", "d1a", 2), ModelLabelLine(2, "q2", "d2a", 1)],
        )
        api_token_create(owner=owner, scope="read", golden_set=golden_set, name=f"{slug} job")
        RunUploadJob.objects.create(
            golden_set=golden_set,
            source_name="big.run",
            system="bm25",
            stage="first_stage",
            size=1,
            run=later,
            created_by=owner,
            status="done",
        )
        endpoint = endpoint_add(
            golden_set=golden_set, name="prod-first", system="prod", stage="first_stage", preset="goldset", url="http://127.0.0.1:9/search"
        )
        for day in (1, 2):
            slot = datetime(2026, 11, day, 2, tzinfo=UTC)
            nightly_run_request(endpoint=endpoint, slot=slot)
            probe_round_request(endpoint=endpoint, slot=slot)
        sets.append(golden_set)
    Group.objects.create(name="annotators")
    Group.objects.create(name="managers")
    # django-axes' records of logins (its own admin lists them): two of each kind.
    for n in (1, 2):
        where = {
            "user_agent": "test",
            "ip_address": f"198.51.100.{n}",
            "username": f"guesser{n}",
            "http_accept": "*/*",
            "path_info": "/accounts/login/",
        }
        AccessAttempt.objects.create(**where, get_data="", post_data="username=x", failures_since_start=n)
        AccessLog.objects.create(**where)
        AccessFailureLog.objects.create(**where, locked_out=n == 2)
    return sets


def registered():
    return sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


def changelist(model) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def _queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured.captured_queries)


@pytest.mark.parametrize("model", [model for model, _ in registered()], ids=lambda model: model._meta.label)
def test_every_list_costs_the_same_queries_for_one_row_as_for_a_page_of_them(
    client, data, superuser, model, monkeypatch, django_assert_max_num_queries
):
    model_admin = admin.site._registry[model]
    client.force_login(superuser)
    url = changelist(model)
    if model._default_manager.count() < 2:
        pytest.skip(f"the fixture makes fewer than 2 rows of {model._meta.label}: add some to check its list's cost")
    monkeypatch.setattr(model_admin, "list_per_page", 1)
    one = _queries(client, url)
    monkeypatch.setattr(model_admin, "list_per_page", 100)
    with django_assert_max_num_queries(LIST_QUERY_BOUND):
        page = _queries(client, url)
    assert page == one


@pytest.mark.parametrize("model", [model for model, _ in registered()], ids=lambda model: model._meta.label)
def test_every_change_page_opens(client, data, superuser, model):
    client.force_login(superuser)
    obj = model._default_manager.order_by("pk").first()
    if obj is None:
        pytest.skip(f"the fixture makes no row of {model._meta.label}")
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[obj.pk])
    assert client.get(url).status_code == 200


@pytest.mark.parametrize("model", [model for model, _ in registered()], ids=lambda model: model._meta.label)
def test_every_list_is_searchable_or_filterable(model):
    model_admin = admin.site._registry[model]
    assert model_admin.search_fields or model_admin.list_filter, model._meta.label


@pytest.mark.parametrize("model", READ_ONLY, ids=lambda model: model._meta.label)
def test_history_and_computed_rows_cannot_be_added_changed_or_deleted(client, data, superuser, model):
    client.force_login(superuser)
    obj = model._default_manager.order_by("pk").first()
    info = f"admin:{model._meta.app_label}_{model._meta.model_name}"
    assert client.get(reverse(f"{info}_add")).status_code == 403
    change = reverse(f"{info}_change", args=[obj.pk])
    body = client.get(change).content.decode()
    assert 'name="_save"' not in body  # a view, not a form
    assert client.post(change, {}).status_code == 403
    assert client.post(reverse(f"{info}_delete", args=[obj.pk]), {"post": "yes"}).status_code == 403
    assert "delete_selected" not in admin.site._registry[model].get_actions(_request(superuser))
    assert model._default_manager.filter(pk=obj.pk).exists()


def test_judgments_are_append_only_in_the_admin(data, superuser):
    model_admin = admin.site._registry[Judgment]
    request = _request(superuser)
    assert not model_admin.has_change_permission(request) and not model_admin.has_delete_permission(request)


def _request(user):
    request = RequestFactory().get("/admin/")
    request.user = user
    return request


def test_the_golden_set_page_links_its_coverage_and_the_qrels_of_its_latest_version(client, data, superuser):
    client.force_login(superuser)
    golden_set = data[0]
    body = client.get(reverse("admin:goldenset_goldenset_change", args=[golden_set.pk])).content.decode()
    assert reverse("coverage", kwargs={"slug": golden_set.slug}) in body
    assert reverse("version_export", kwargs={"slug": golden_set.slug, "number": 1, "fmt": "trec"}) in body
    assert reverse("coverage", kwargs={"slug": golden_set.slug}) in client.get(changelist(GoldenSet)).content.decode()


# --- actions ---------------------------------------------------------------------------------


@pytest.fixture
def viewer(make_user):
    """Staff who may look at golden sets and tokens in the admin, not change them."""
    user = make_user("viewer", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_goldenset", "view_apitoken"]))
    return user


def _act(client, model, action: str, pks: list[int]):
    return client.post(changelist(model), {"action": action, "_selected_action": pks}, follow=True)


def test_a_superuser_publishes_versions_from_the_admin(client, data, superuser):
    client.force_login(superuser)
    # The admin capitalises messages: compare in lower case.
    with TestCase.captureOnCommitCallbacks(execute=True):  # the publish jobs, in-process here
        body = _act(client, GoldenSet, "publish_versions", [s.pk for s in data]).content.decode().lower()
    assert [s.latest_version().number for s in data] == [2, 2]  # each had a new judgment
    for golden_set in data:
        job = PublishJob.objects.get(golden_set=golden_set)
        link = reverse("publish_job", kwargs={"slug": golden_set.slug, "job_id": job.pk})
        assert f'{golden_set.slug}: publishing in the background as <a href="{link}">job {job.pk}</a>' in body
    body = _act(client, GoldenSet, "publish_versions", [data[0].pk]).content.decode().lower()
    assert "alpha: not published: nothing changed since version 2" in body


def test_staff_who_may_only_look_cannot_publish(client, data, viewer):
    client.force_login(viewer)
    assert client.get(changelist(GoldenSet)).status_code == 200
    _act(client, GoldenSet, "publish_versions", [data[0].pk])
    assert data[0].latest_version().number == 1


def test_a_superuser_pools_the_flagged_slices_from_the_admin(client, data, superuser):
    client.force_login(superuser)
    before = Pool.objects.count()
    with TestCase.captureOnCommitCallbacks(execute=True):  # the job's task, in-process here
        body = _act(client, GoldenSet, "pool_flagged_slices", [data[0].pk]).content.decode().lower()
    job = PoolJob.objects.get(kind="flagged")
    assert f"alpha: pooling the flagged slices of v1 in the background (job {job.pk})" in body
    assert Pool.objects.count() == before + 1
    pool = Pool.objects.latest("id")
    assert pool.depth == 20 and set(pool.runs.values_list("name", flat=True)) == {"bm25 v2"}
    job.refresh_from_db()
    assert job.status == "done" and "flagged slice(s)" in job.lines[0] and "queries only" in job.lines[0]
    # The job is a record in the admin, which nobody edits.
    assert client.get(changelist(PoolJob)).status_code == 200
    assert client.get(reverse("admin:labeling_pooljob_change", args=[job.pk])).status_code == 200


def test_staff_who_may_only_look_cannot_pool(client, data, viewer):
    client.force_login(viewer)
    before = Pool.objects.count()
    _act(client, GoldenSet, "pool_flagged_slices", [data[0].pk])
    assert Pool.objects.count() == before


def test_a_superuser_revokes_tokens_and_a_viewer_cannot(client, data, superuser, viewer):
    token = ApiToken.objects.order_by("pk").first()
    client.force_login(viewer)
    _act(client, ApiToken, "revoke", [token.pk])
    token.refresh_from_db()
    assert token.revoked_at is None
    client.force_login(superuser)
    _act(client, ApiToken, "revoke", [token.pk])
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_staff_without_permissions_see_no_admin_list(client, data, make_user):
    client.force_login(make_user("plain-staff", is_staff=True))
    for model, _ in registered():
        assert client.get(changelist(model)).status_code == 403, model._meta.label


def test_anonymous_visitors_are_sent_to_the_admin_login(client, data):
    response = client.get(changelist(GoldenSet))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


# --- settings through their service ------------------------------------------------------------


def _settings_form(settings, **changes) -> dict:
    data = {
        "metrics": "[]",
        "run_depth_cap": settings.run_depth_cap,
        "alert_drop_points": settings.alert_drop_points,
        "alert_slice_floor": settings.alert_slice_floor,
        "alert_rerank_loss_points": settings.alert_rerank_loss_points,
        "alert_alpha": settings.alert_alpha,
        "alert_power": settings.alert_power,
        "age_buckets": "[30, 365]",
        "completeness_depth": settings.completeness_depth,
        "judged_floor": settings.judged_floor,
        "min_queries_per_slice": settings.min_queries_per_slice,
        "alert_emails": "[]",
        "webhook_url": "",
        "failing_share": settings.failing_share,
        "series_rescore_nights": settings.series_rescore_nights,
        "series_keep_days": settings.series_keep_days,
        "partial_share": settings.partial_share,
    }
    return {**data, **changes}


def test_the_admin_saves_evaluation_settings_through_the_service_and_its_checks(client, data, superuser):
    from evaluation.models import EvaluationSettings

    settings = EvaluationSettings.objects.get(golden_set=data[0])
    change = reverse("admin:evaluation_evaluationsettings_change", args=[settings.pk])
    client.force_login(superuser)
    response = client.post(change, _settings_form(settings, min_queries_per_slice=7, age_buckets="[90, 30]"))
    assert response.status_code == 302
    settings.refresh_from_db()
    assert (settings.min_queries_per_slice, settings.age_buckets) == (7, [30, 90])  # the service sorts the bounds
    body = client.post(change, _settings_form(settings, alert_slice_floor=75)).content.decode()
    assert "alert_slice_floor is a fraction from 0 to 1 (0.75, not 75), got 75" in body
    settings.refresh_from_db()
    assert settings.alert_slice_floor == 0.75


def test_every_model_is_named_in_plain_english_in_the_admin():
    """Django adds an "s" to a model's name; that reads wrong for "query", "settings" or
    "data". Every registered model's plural is checked against English spelling rules."""
    wrong = []
    for model in admin.site._registry:
        singular, plural = str(model._meta.verbose_name), str(model._meta.verbose_name_plural)
        last = plural.split()[-1]
        if (
            plural.endswith("ss")
            and not singular.endswith("ss")
            or last.endswith("ys")
            and last[-3:-2] not in "aeiou"
            or last in ("datas", "seriess", "completenesss")
        ):
            wrong.append(f"{model._meta.label}: {plural!r}")
    assert wrong == []
