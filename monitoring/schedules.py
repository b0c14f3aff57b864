"""What the schedules ask for now: the slot each endpoint's cron lines fall due at.

Each tick (Celery beat every MONITORING_TICK_SECONDS, or the web process's own thread on
the embedded default) makes the NightlyRun and ProbeRound of every endpoint's latest slot
that has none, and the IndexProbe of every endpoint with an exact mode. A slot before the
endpoint was registered is not made (registering at noon does not run last night's
schedule), and only the latest slot is: a scheduler that was down for three nights catches
up with one run, the one that measures now.
"""

from datetime import datetime

from lib.cron import cron_parse
from monitoring.endpoints.services import endpoint_spec
from monitoring.index_probes.services import index_probe_request
from monitoring.models import Endpoint, IndexProbe, NightlyRun, ProbeRound
from monitoring.nightly.services import nightly_run_request
from monitoring.probes.services import probe_round_request


def _slot(line: str, now: datetime, since: datetime) -> datetime | None:
    slot = cron_parse(line).previous_fire(now)
    return slot if slot is not None and slot >= since else None


def schedules_due(*, now: datetime) -> tuple[list[NightlyRun], list[ProbeRound]]:
    """The nights and probe rounds made now, for the caller to start."""
    nights, rounds = [], []
    for endpoint in Endpoint.objects.filter(enabled=True).order_by("id"):
        slot = _slot(endpoint.run_schedule, now, endpoint.created_at)
        if slot is not None:
            made = nightly_run_request(endpoint=endpoint, slot=slot)
            if made is not None:
                nights.append(made)
        if endpoint.stage == Endpoint.Stage.FIRST_STAGE:
            slot = _slot(endpoint.probe_schedule, now, endpoint.created_at)
            if slot is not None:
                made = probe_round_request(endpoint=endpoint, slot=slot)
                if made is not None:
                    rounds.append(made)
    return nights, rounds


def _exact_mode(endpoint: Endpoint) -> bool:
    return endpoint_spec(endpoint).has_exact_mode


def index_probes_due(*, now: datetime) -> list[IndexProbe]:
    """The index probes made now (endpoints with an exact mode), for the caller to start."""
    made = []
    for endpoint in Endpoint.objects.filter(enabled=True).order_by("id"):
        if not _exact_mode(endpoint):
            continue
        slot = _slot(endpoint.index_probe_schedule, now, endpoint.created_at)
        if slot is not None:
            probe = index_probe_request(endpoint=endpoint, slot=slot)
            if probe is not None:
                made.append(probe)
    return made


def next_index_probe_at(endpoint: Endpoint, now: datetime) -> datetime | None:
    if not endpoint.enabled or not _exact_mode(endpoint):
        return None
    return cron_parse(endpoint.index_probe_schedule).next_fire(now)


def next_run_at(endpoint: Endpoint, now: datetime) -> datetime | None:
    return cron_parse(endpoint.run_schedule).next_fire(now) if endpoint.enabled else None


def next_probe_at(endpoint: Endpoint, now: datetime) -> datetime | None:
    if not endpoint.enabled or endpoint.stage != Endpoint.Stage.FIRST_STAGE:
        return None
    return cron_parse(endpoint.probe_schedule).next_fire(now)
