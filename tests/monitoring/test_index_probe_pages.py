"""The index probe's settings and figures where people meet them: `endpoint_add`'s options,
the add and edit forms (errors on the field at fault), the monitoring page's panel and the
endpoint's page, and "probe the index now" with its permissions.

Data through the real services (tests/monitoring/page_data.py): a published set, a tiny
search service speaking the Goldset contract (it ignores the exact flag, so its exact and
approximate answers agree), endpoints registered with `endpoint_add`.
"""

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from evaluation.models import Alert
from goldenset.models import Membership
from goldenset.services import membership_grant
from monitoring.endpoints.services import endpoint_update
from monitoring.index_probes.services import AnnRecall, index_probe_record, index_probe_request
from monitoring.models import Endpoint, IndexProbe, NightlyRun
from tests.monitoring.page_data import endpoints_add, nights_store, people, search_service, watched  # noqa: F401
from tests.support import factories

pytestmark = pytest.mark.django_db

EXACT = '{"query": {{query}}, "query_id": {{query_id}}, "k": {{k}}, "exact": true}'


@pytest.fixture
def exact_endpoints(watched, search_service):
    first, final = endpoints_add(watched, search_service)
    endpoint_update(endpoint=first, exact_body_template=EXACT, shard_path="shard")
    return first, final


def _add(slug, service, **options):
    call_command(
        "endpoint_add",
        slug,
        "--name",
        "exact-first",
        "--system",
        "vector",
        "--stage",
        "first_stage",
        "--preset",
        "goldset",
        "--url",
        f"{service.base_url}/first-stage/search",
        *[part for key, value in options.items() for part in (f"--{key}", value)],
    )


def test_endpoint_add_takes_the_exact_request_the_shard_path_the_schedule_and_the_floor(watched, search_service, capsys):
    _add(
        watched.slug,
        search_service,
        **{"exact-body": EXACT, "shard-path": "shard", "index-probe-schedule": "0 */2 * * *", "index-recall-floor": "0.9"},
    )
    endpoint = Endpoint.objects.get(name="exact-first")
    assert (endpoint.exact_body_template, endpoint.shard_path, endpoint.index_probe_schedule, endpoint.index_recall_floor) == (
        EXACT,
        "shard",
        "0 */2 * * *",
        0.9,
    )
    assert "index probes '0 */2 * * *' (ANN recall floor 0.9)" in capsys.readouterr().out


def test_an_endpoint_without_exact_options_has_no_index_probe_and_the_defaults(watched, search_service):
    _add(watched.slug, search_service)
    endpoint = Endpoint.objects.get(name="exact-first")
    assert (endpoint.exact_body_template, endpoint.index_probe_schedule, endpoint.index_recall_floor) == ("", "15 * * * *", 0.95)


@pytest.mark.parametrize(
    ("options", "field", "words"),
    [
        ({"exact-body": '{"query": {{query}}, "exact": tru'}, "exact_body_template", "not valid JSON"),
        ({"exact-body": '{"k": {{k}}, "exact": true}'}, "exact_body_template", "no {{query}} placeholder"),
        ({"exact-params": "?exact=true"}, "exact_params_template", "without a leading"),
        ({"shard-path": "_shard"}, "shard_path", "needs an exact request"),
        ({"exact-body": EXACT, "shard-path": "a..b"}, "shard_path", "dotted path"),
        ({"exact-body": EXACT, "index-recall-floor": "1.5"}, "index_recall_floor", "fraction"),
        ({"exact-body": EXACT, "index-probe-schedule": "hourly"}, "index_probe_schedule", ""),
    ],
)
def test_endpoint_add_names_the_field_of_each_bad_exact_option(watched, search_service, options, field, words):
    with pytest.raises(CommandError) as raised:
        _add(watched.slug, search_service, **options)
    assert f"{field}:" in str(raised.value) and words in str(raised.value)
    assert not Endpoint.objects.exists()


def _form(service, **changes) -> dict:
    data = {
        "name": "exact-first",
        "system": "vector",
        "stage": "first_stage",
        "preset": "goldset",
        "url": f"{service.base_url}/first-stage/search",
        "enabled": "on",
    }
    return {**data, **changes}


def test_a_manager_adds_an_exact_mode_through_the_form(client, watched, people, search_service):
    client.force_login(people["manager"])
    response = client.post(
        reverse("endpoint_add", args=[watched.slug]), _form(search_service, exact_body_template=EXACT, shard_path="shard")
    )
    assert response.status_code == 302
    endpoint = Endpoint.objects.get(name="exact-first")
    assert (endpoint.exact_body_template, endpoint.shard_path, endpoint.index_recall_floor) == (EXACT, "shard", 0.95)


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"exact_body_template": '{"query": {{query}}, '}, "exact_body_template", "not valid JSON"),
        ({"shard_path": "_shard"}, "shard_path", "needs an exact request"),
        ({"exact_body_template": EXACT, "index_recall_floor": "0"}, "index_recall_floor", "fraction"),
        ({"exact_body_template": EXACT, "index_recall_floor": "most"}, "index_recall_floor", "number"),
        ({"exact_body_template": EXACT, "index_probe_schedule": "61 * * * *"}, "index_probe_schedule", ""),
    ],
)
def test_the_add_form_shows_each_exact_mode_error_on_its_field(client, watched, people, search_service, changes, field, words):
    client.force_login(people["manager"])
    response = client.post(reverse("endpoint_add", args=[watched.slug]), _form(search_service, **changes))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert errors.get(field) and words in " ".join(errors[field]), errors
    assert not Endpoint.objects.exists()


def test_the_edit_form_changes_the_floor_and_refuses_one_over_1_on_its_field(client, exact_endpoints, watched, people):
    first, _ = exact_endpoints
    client.force_login(people["manager"])
    url = reverse("endpoint_edit", args=[watched.slug, first.name])
    data = {key: ("" if value is None else value) for key, value in client.get(url).context["form"].initial.items()}
    data.update({"enabled": "on", "index_recall_floor": "1.2"})
    response = client.post(url, data)
    assert response.status_code == 400 and response.context["form"].errors["index_recall_floor"]
    data["index_recall_floor"] = "0.9"
    assert client.post(url, data).status_code == 302
    first.refresh_from_db()
    assert first.index_recall_floor == 0.9 and first.exact_body_template == EXACT


def _stale_probe(endpoint) -> IndexProbe:
    """A probe of `endpoint` whose figures say shards 2 and 4 lost neighbours, stored as the
    probe stores them (index_probe_record: figures and the alert in one transaction)."""
    probe = index_probe_request(endpoint=endpoint, slot=timezone.now())
    measured = AnnRecall(k=5, queries_compared=12, ann_recall=0.74)
    measured.per_shard = {
        "1": {"exact": 30, "returned": 30, "share": 1.0},
        "2": {"exact": 20, "returned": 12, "share": 0.6},
        "4": {"exact": 26, "returned": 16, "share": 16 / 26},
    }
    return index_probe_record(probe_id=probe.pk, version=endpoint.golden_set.latest_version(), measured=measured)


def test_the_monitoring_page_shows_ann_recall_per_shard_beside_relevance_recall(
    client, exact_endpoints, watched, people, django_capture_on_commit_callbacks
):
    first, _ = exact_endpoints
    with django_capture_on_commit_callbacks(execute=True):
        nights_store(exact_endpoints, 2)
    _stale_probe(first)
    [alert] = Alert.objects.filter(kind=Alert.Kind.INDEX_RECALL)
    assert alert.message.startswith("shards 2 and 4 return 61% of the exact neighbours (ANN recall@5 0.74 overall)")
    client.force_login(people["adjudicator"])
    html = client.get(reverse("monitoring", args=[watched.slug])).content.decode()
    panel = html[html.index(f'id="index-{first.pk}"') :]
    assert "ANN recall@5 0.740" in panel and "under the floor" in panel
    assert "Relevance recall@5 of its latest night: 1.000 (v1)" in panel
    assert panel.count('badge bad">under the floor') == 2  # shards 2 and 4, not 1
    assert "Probe the index now" not in html  # an adjudicator reads, starts nothing


def test_the_endpoint_page_shows_its_index_probes(client, exact_endpoints, watched, people):
    first, final = exact_endpoints
    _stale_probe(first)
    client.force_login(people["manager"])
    html = client.get(reverse("endpoint_edit", args=[watched.slug, first.name])).content.decode()
    assert "ANN recall@5 0.740" in html and "Probe the index now" in html
    other = client.get(reverse("endpoint_edit", args=[watched.slug, final.name])).content.decode()
    assert "No endpoint has an exact mode" in other


def test_probe_the_index_now_runs_on_a_worker_and_not_twice(
    client, exact_endpoints, watched, people, search_service, django_capture_on_commit_callbacks
):
    first, final = exact_endpoints
    client.force_login(people["manager"])
    url = reverse("endpoint_index_probe_now", args=[watched.slug, first.name])
    with django_capture_on_commit_callbacks(execute=False) as sent:
        client.post(url)
    assert search_service.requests == [] and len(sent) == 1
    [probe] = IndexProbe.objects.all()
    assert probe.finished_at is None and probe.trigger == NightlyRun.Trigger.MANUAL
    assert "an index probe of hybrid-first is under way" in client.post(url, follow=True).content.decode()
    sent[0]()  # the worker's task
    probe.refresh_from_db()
    assert probe.ann_recall == 1.0 and probe.queries_compared == 12
    assert any(request["body"].get("exact") is True for request in search_service.requests)
    refused = client.post(reverse("endpoint_index_probe_now", args=[watched.slug, final.name]), follow=True).content.decode()
    assert "has no exact request" in refused and IndexProbe.objects.count() == 1


@pytest.mark.parametrize("who", ["anonymous", "stranger", "annotator", "adjudicator", "other_manager"])
def test_only_the_sets_managers_may_probe_the_index(client, exact_endpoints, watched, people, make_user, who):
    first, _ = exact_endpoints
    if who == "other_manager":
        user = make_user("other-manager")
        membership_grant(user=user, golden_set=factories.golden_set("other"), role=Membership.Role.MANAGER)
        client.force_login(user)
    elif who != "anonymous":
        client.force_login(people[who])
    response = client.post(reverse("endpoint_index_probe_now", args=[watched.slug, first.name]))
    assert response.status_code == (302 if who == "anonymous" else 404)
    if who == "anonymous":
        assert response.url.startswith(reverse("login"))
    assert not IndexProbe.objects.exists()
