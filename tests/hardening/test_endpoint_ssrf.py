"""Finding 5 of the second hardening probe (high): an endpoint URL whose host was a
placeholder (`http://{{query_id}}:port/`) was checked with a sample value only, so a night
connected to whatever address a query id named; and aiohttp does not ask the resolver about
an IP literal, so nothing checked the address it rendered to. A judge's allowed networks
that covered link-local opened the metadata address too.

The stand-in for the metadata service and for Redis is a real server on 127.0.0.1 (the
engines server), with loopback left out of the allowed networks: it must see no request.
"""

import asyncio
from dataclasses import replace

import aiohttp
import pytest
from django.test import override_settings

from goldenset.services import version_publish
from labeling.model_labels.judges import JudgeSettings, PairText, grade_pairs_sync
from lib import outbound
from lib.errors import GoldsetError
from monitoring.endpoints.addresses import checked_socket_factory
from monitoring.endpoints.client import fetch_rankings_sync, probe_sync
from monitoring.endpoints.services import endpoint_add
from monitoring.endpoints.spec import spec_from_preset, spec_problems
from monitoring.models import Endpoint, NightlyRun
from monitoring.nightly.services import nightly_run_execute, nightly_run_now
from tests.monitoring.endpoints import engines as engine_server
from tests.support import factories

NOT_LOOPBACK = ("10.0.0.0/8",)


@pytest.fixture
def stand_in():
    """A real HTTP server on 127.0.0.1 that records every request it gets."""
    server = engine_server.start()
    try:
        yield server
    finally:
        engine_server.stop(server)


@pytest.mark.parametrize(
    "url",
    [
        "http://{{query_id}}:9200/goldset",
        "http://{{query}}/goldset",
        "http://search-{{k}}.internal/goldset",
        "http://search:{{k}}/goldset",
        "{{query_id}}://search/goldset",
    ],
)
def test_a_placeholder_in_the_scheme_host_or_port_is_refused_naming_the_field(url):
    problems = spec_problems(replace(spec_from_preset("goldset", "http://search:9200/goldset"), url=url))
    assert problems and problems[0].startswith(
        "url: placeholders may go in the path, the parameters and the body, not in the scheme, host or port"
    )


def test_placeholders_in_the_path_and_parameters_are_still_taken():
    spec = spec_from_preset("goldset", "http://search:8983/goldset/{{query_id}}", params_template="shard={{k}}")
    assert spec_problems(spec) == []


@pytest.mark.django_db
def test_an_endpoint_with_a_templated_host_is_not_saved():
    golden_set = factories.golden_set("ssrf")
    with pytest.raises(GoldsetError) as refused:
        endpoint_add(
            golden_set=golden_set,
            name="probe",
            system="prod",
            stage="first_stage",
            preset="goldset",
            url="http://{{query_id}}:8080/goldset",
        )
    assert refused.value.field == "url" and "not in the scheme, host or port" in refused.value.problems[0]
    assert not Endpoint.objects.exists()


def test_a_fetch_whose_query_ids_name_an_address_sends_nothing(stand_in):
    """The probe's case: query id 127.0.0.1, loopback outside the allowed networks."""
    spec = replace(spec_from_preset("goldset", stand_in.base + "/goldset"), url=f"http://{{{{query_id}}}}:{stand_in.server_port}/goldset")
    with pytest.raises(ValueError, match="not in the scheme, host or port"):
        fetch_rankings_sync(spec, [("127.0.0.1", "what is recall")], 5, allowed_networks=NOT_LOOPBACK)
    answer = probe_sync(spec, "127.0.0.1", "what is recall", 5, allowed_networks=NOT_LOOPBACK)
    assert answer.status is None and "not in the scheme, host or port" in answer.error
    assert stand_in.seen == []


@pytest.mark.django_db
def test_a_night_of_an_endpoint_stored_with_a_templated_host_fails_and_connects_nowhere(stand_in, django_capture_on_commit_callbacks):
    """An endpoint saved before the check (written straight to its row) is refused when its night runs."""
    golden_set = factories.golden_set("ssrf-night", queries=factories.queries("127.0.0.1", "q2"), qrels={("q2", "d1"): 1})
    version_publish(golden_set=golden_set, note="v1")
    endpoint = endpoint_add(
        golden_set=golden_set,
        name="prod",
        system="prod",
        stage="first_stage",
        preset="goldset",
        url=stand_in.base + "/goldset",
        timeout_seconds=0.5,
        retries=0,
    )
    Endpoint.objects.filter(pk=endpoint.pk).update(url=f"http://{{{{query_id}}}}:{stand_in.server_port}/goldset")
    endpoint.refresh_from_db()
    with override_settings(RETRIEVAL_ALLOWED_NETWORKS=list(NOT_LOOPBACK)), django_capture_on_commit_callbacks(execute=True):
        night = nightly_run_execute(night_id=nightly_run_now(endpoint=endpoint).pk)
    assert night.status == NightlyRun.Status.FAILED and "not in the scheme, host or port" in night.error
    assert stand_in.seen == []


def test_every_connection_checks_the_address_it_opens_ip_literals_included(stand_in):
    """aiohttp skips the resolver for an IP literal; the socket factory does not."""

    async def get() -> BaseException | None:
        connector = aiohttp.TCPConnector(socket_factory=checked_socket_factory(NOT_LOOPBACK))
        async with aiohttp.ClientSession(connector=connector) as session:
            try:
                async with session.get(stand_in.base + "/goldset"):
                    return None
            except aiohttp.ClientConnectorError as exc:
                return exc.os_error

    refused = asyncio.run(get())
    assert str(refused) == "127.0.0.1 is an internal address; allow its network in RETRIEVAL_ALLOWED_NETWORKS"
    assert stand_in.seen == []


@pytest.mark.parametrize("url", ["http://169.254.169.254/v1/chat/completions", "http://[fe80::1]/v1", "http://100.100.100.200/v1"])
def test_an_allowed_range_covering_link_local_never_opens_the_metadata_address(url):
    with pytest.raises(outbound.OutboundRefused) as refused:
        outbound.checked_address(url, ("169.254.0.0/16", "fe80::/10", "0.0.0.0/0"))
    assert "link-local/metadata address no setting allows" in refused.value.detail


def test_a_judge_allowed_every_network_still_sends_nothing_to_the_metadata_address():
    settings = JudgeSettings(base_url="http://169.254.169.254/v1", model="m", allowed_networks=("0.0.0.0/0", "169.254.0.0/16"))
    [graded] = grade_pairs_sync(settings, "grade it", [PairText(key=(1, 1), query="q", passage="x")], (0, 3))
    assert graded.error == outbound.UNREACHABLE and graded.grade is None
