"""Canary probes: ask a first-stage endpoint each canary's query, note where its page came back.

The seed's freshness probe: every 5 minutes (the endpoint's probe schedule), each canary of
the set whose query is in the latest version is looked for in the endpoint's top k_first.
A miss opens one PROBE_MISSED alert per (canary, endpoint), which stays open, however many
probes miss after it, until a probe finds the page again and resolves it. A query two
canaries share is asked once. A ProbeRound is made once per (endpoint, slot) and its probes
are written in one transaction with the alerts, so a redelivered task writes nothing twice.
"""

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluation.alerts.services import probe_miss_raise, probe_miss_resolve
from evaluation.canaries import canaries_in_version
from evaluation.models import Canary
from lib.errors import ConflictError
from monitoring.endpoints.services import endpoint_spec
from monitoring.models import Endpoint, NightlyRun, Probe, ProbeRound
from monitoring.nightly.services import latest_version


def probe_round_request(*, endpoint: Endpoint, slot: datetime, trigger: str = NightlyRun.Trigger.SCHEDULE) -> ProbeRound | None:
    """The ProbeRound of (endpoint, slot), made now; None when that slot has one already."""
    try:
        with transaction.atomic():
            return ProbeRound.objects.create(endpoint=endpoint, slot=slot, trigger=trigger)
    except IntegrityError:
        return None


@dataclass(frozen=True)
class ProbeOutcome:
    """One canary on one endpoint in one round, as `canary_probe` prints it."""

    canary: Canary
    rank: int | None
    k: int
    latency_ms: float | None
    error: str

    @property
    def found(self) -> bool:
        return self.rank is not None and self.rank <= self.k


def probe_round_execute(*, round_id: int) -> list[ProbeOutcome]:
    """Probe every canary of the round's endpoint now and store the results, opening and
    resolving alerts; [] for a round already finished (a redelivered task) or a set with
    no canary in its latest version."""
    probe_round = ProbeRound.objects.select_related("endpoint").get(pk=round_id)
    if probe_round.finished_at is not None:
        return []
    endpoint = probe_round.endpoint
    version = latest_version(endpoint.golden_set_id)
    canaries = canaries_in_version(version) if version is not None else []
    if not canaries:
        ProbeRound.objects.filter(pk=round_id, finished_at=None).update(finished_at=timezone.now())
        return []
    k = version.k_first
    questions = list({c.query.query_id: (c.query.query_id, c.query.text) for c in canaries}.values())
    # Here, not at the top: the client brings aiohttp, which no process needs at start.
    from monitoring.endpoints.client import fetch_rankings_sync

    report = fetch_rankings_sync(
        endpoint_spec(endpoint),
        questions,
        k,
        allowed_networks=settings.RETRIEVAL_ALLOWED_NETWORKS,
        env_prefix=settings.RETRIEVAL_HEADER_ENV_PREFIX,
    )
    answers = {answer.query_id: answer for answer in report.answers}
    outcomes = []
    for canary in canaries:
        answer = answers[canary.query.query_id]
        rank = None
        if answer.error is None:
            rank = next((i for i, (doc_id, _) in enumerate(answer.ranking, start=1) if doc_id == canary.page.doc_id), None)
        outcomes.append(ProbeOutcome(canary, rank, k, answer.latency_ms, answer.error or ""))
    with transaction.atomic():
        # The round's row, locked: of two copies of its task, the second finds it finished.
        locked = ProbeRound.objects.select_for_update().get(pk=round_id)
        if locked.finished_at is not None:
            return []
        Probe.objects.bulk_create(
            Probe(round=locked, canary=o.canary, rank=o.rank, k=k, latency_ms=o.latency_ms, error=o.error[:2000]) for o in outcomes
        )
        for outcome in outcomes:
            if outcome.found:
                probe_miss_resolve(canary=outcome.canary, endpoint_name=endpoint.name)
            else:
                probe_miss_raise(
                    version=version,
                    canary=outcome.canary,
                    endpoint_name=endpoint.name,
                    rank=outcome.rank,
                    k=k,
                    error=outcome.error,
                    rank_history=canary_rank_history(canary=outcome.canary, endpoint=endpoint, before=locked.slot),
                    series_name=endpoint.series.name,
                )
        ProbeRound.objects.filter(pk=round_id).update(
            finished_at=timezone.now(),
            canaries=len(outcomes),
            missed=sum(not o.found for o in outcomes),
        )
    return outcomes


# Probes a canary alert shows the ranks of, besides the one that missed.
RANK_HISTORY_PROBES = 7


def canary_rank_history(*, canary: Canary, endpoint: Endpoint, before) -> list[int | None]:
    """The canary's rank on the endpoint's last RANK_HISTORY_PROBES probes before `before`,
    oldest first (None: not returned)."""
    ranks = (
        Probe.objects.filter(canary=canary, round__endpoint=endpoint, round__slot__lt=before)
        .order_by("-round__slot")
        .values_list("rank", flat=True)[:RANK_HISTORY_PROBES]
    )
    return list(reversed(ranks))


def probe_round_now(*, endpoint: Endpoint) -> ProbeRound:
    """A manual probe round, recorded for a worker to run (the page's "probe now": the
    endpoint is asked off the web request). Refused (ConflictError) while a round of the
    endpoint is unfinished, so a click twice does not ask a slow endpoint twice."""
    with transaction.atomic():
        Endpoint.objects.select_for_update().filter(pk=endpoint.pk).first()
        if ProbeRound.objects.filter(endpoint=endpoint, finished_at=None).exists():
            raise ConflictError(f"a probe round of {endpoint.name} is under way; its results appear when it is done")
        return ProbeRound.objects.create(endpoint=endpoint, slot=timezone.now(), trigger=NightlyRun.Trigger.MANUAL)


def probe_now(*, endpoint: Endpoint) -> tuple[ProbeRound, list[ProbeOutcome]]:
    """A manual probe round at this moment (`canary_probe`, the page's "probe now")."""
    slot = timezone.now()
    probe_round = probe_round_request(endpoint=endpoint, slot=slot, trigger=NightlyRun.Trigger.MANUAL)
    if probe_round is None:  # the same microsecond twice: the round is made already
        probe_round = ProbeRound.objects.get(endpoint=endpoint, slot=slot)
    return probe_round, probe_round_execute(round_id=probe_round.pk)
