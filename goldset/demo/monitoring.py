"""The demo's monitoring: its live search service registered as two endpoints, canaries on
the new runbooks, and two weeks of nightly history that replays the seed's incident.

`demo_monitoring_load` registers the first stage and the reranked stage of the demo search
service (goldset.demo.search, served by `serve_demo_search`) as endpoints of wiki-demo, with
the seed's schedules (nightly runs, canary probes every 5 minutes), marks canaries on new
runbooks that sit on the shards that go stale, and writes NIGHTS nights of history: each
night the same search code the service runs answers every query of the latest version (in
this process: the history must not wait on HTTP), stored as a run of the endpoint's series
measured at 02:00 that night, scored and checked for alerts as a nightly run is. Over the
last `stale_nights` nights two of the six shards were not refreshed: new-page recall@100
falls to about 0.45 while old pages stay near 0.93, the 3-point drop and the age-slice
alert are raised, and the probes of the last hour miss the canaries.

The first-stage endpoint has an exact mode (the service's `"exact": true`, every shard
searched as if refreshed) and names each hit's shard, so its index probes of the last
INDEX_PROBE_HISTORY, made in this process as the canary probes are, name the two stale
shards in an "index" incident ("shards 2 and 4 return 89% of the exact neighbours"), which
the next index probe after `POST /admin/shards {"stale": 0}` resolves. The reranked endpoint
has none: it reorders what the first stage found, so its index is the first stage's, and a
second probe would report the same shards twice.
"""

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
from django.db import transaction
from django.utils import timezone

from evaluation.alerts.services import probe_miss_raise
from evaluation.canaries import canary_add
from evaluation.models import Alert, Canary, Run
from evaluation.services import run_from_rankings
from goldenset.models import GoldenSet, Page, Query, VersionLabel
from goldset.demo.search import DemoSearch, shard_of
from lib.progress import Progress, no_progress
from monitoring.endpoints.services import endpoint_add
from monitoring.index_probes.services import ann_recall_compute, index_probe_record, index_probe_sample
from monitoring.models import Endpoint, IndexProbe, NightlyRun, Probe, ProbeRound
from monitoring.nightly.services import endpoint_depth, run_name, version_questions
from monitoring.probes.services import canary_rank_history

NIGHTS = 14
STALE_NIGHTS = 3
STALE_SHARDS = 2
PROBE_HISTORY = timedelta(hours=1)  # probe rounds written before now, every 5 minutes
INDEX_PROBE_HISTORY = 3  # index probes written before now, hourly
# The demo service's exact mode: the approximate request with the flag that makes it search
# every shard as if refreshed (goldset.demo.search_server); its hits name their shard.
EXACT_BODY_TEMPLATE = '{"query": {{query}}, "query_id": {{query_id}}, "k": {{k}}, "exact": true}'
DEMO_SEARCH_PORT = 8765
CANARY_COUNT = 3
SYSTEM = "wiki-search"


@dataclass(frozen=True)
class DemoEndpoint:
    name: str
    stage: str
    path: str
    exact: bool = False  # registered with the exact mode and shard path


DEMO_ENDPOINTS = [
    DemoEndpoint("wiki-search-first", Endpoint.Stage.FIRST_STAGE, "/first-stage/search", exact=True),
    DemoEndpoint("wiki-search-reranked", Endpoint.Stage.RERANKED, "/reranked/search"),
]


@dataclass
class DemoMonitoringResult:
    created: bool
    endpoints: list[Endpoint] = field(default_factory=list)
    canaries: list[Canary] = field(default_factory=list)
    nights: int = 0
    alerts: int = 0


def demo_search_url(port: int = DEMO_SEARCH_PORT) -> str:
    return f"http://127.0.0.1:{port}"


def demo_monitoring_load(
    *,
    golden_set: GoldenSet,
    search: DemoSearch | None = None,
    base_url: str | None = None,
    nights: int = NIGHTS,
    stale_nights: int = STALE_NIGHTS,
    progress: Progress = no_progress,
) -> DemoMonitoringResult:
    """Register the demo endpoints and canaries and write the nights (see the module
    docstring); writes nothing when the set has endpoints already."""
    if Endpoint.objects.filter(golden_set=golden_set).exists():
        return DemoMonitoringResult(created=False, endpoints=list(Endpoint.objects.filter(golden_set=golden_set)))
    search = search or DemoSearch()
    base_url = base_url or demo_search_url()
    version = golden_set.latest_version()
    endpoints = [
        endpoint_add(
            golden_set=golden_set,
            name=one.name,
            system=SYSTEM,
            stage=one.stage,
            preset=Endpoint.Preset.GOLDSET,
            url=base_url + one.path,
            count_url=base_url + "/count",
            count_path="count",
            index_size_path="index_size",
            max_in_flight=8,
            max_per_second=200,
            exact_body_template=EXACT_BODY_TEMPLATE if one.exact else "",
            shard_path="shard" if one.exact else "",
        )
        for one in DEMO_ENDPOINTS
    ]
    canaries = _canaries(golden_set, version, search)
    questions = version_questions(version)
    today = timezone.now().replace(hour=2, minute=0, second=0, microsecond=0)
    if today > timezone.now():
        today -= timedelta(days=1)
    alerts_before = Alert.objects.filter(golden_set=golden_set).count()
    stale_from = nights - stale_nights
    for night_number in progress(range(nights), "demo nights"):
        search.set_stale(STALE_SHARDS if night_number >= stale_from else 0)
        slot = today - timedelta(days=nights - 1 - night_number)
        # Each night's run is scored and checked for alerts as any new run is, by the task
        # its upload sends on commit (in this process on the embedded default, by the
        # workers otherwise; the night rules look both ways, so their order is free).
        for endpoint in endpoints:
            _night(endpoint, version, questions, search, slot)
    search.set_stale(STALE_SHARDS if stale_nights else 0)
    _probe_history(endpoints[0], canaries, version, search)
    _index_probe_history(endpoints[0], version, questions, search)
    alerts = Alert.objects.filter(golden_set=golden_set).count() - alerts_before
    return DemoMonitoringResult(created=True, endpoints=endpoints, canaries=canaries, nights=nights, alerts=alerts)


def _canaries(golden_set: GoldenSet, version, search: DemoSearch) -> list[Canary]:
    """Canaries on the newest relevant pages that live on the shards that go stale and that
    the fresh first stage finds: what the seed's freshness probe would have watched."""
    search.set_stale(STALE_SHARDS)
    stale = set(search.stale_shard_numbers)
    search.set_stale(0)
    pages = {p.doc_id: p for p in Page.objects.filter(corpus=golden_set.corpus, doc_id__in=search.new_doc_ids)}
    labels = (
        VersionLabel.objects.filter(version=version, page__doc_id__in=pages, grade__gte=version.relevance_threshold)
        .values_list("query__query_id", "page__doc_id")
        .order_by("-page__published_at", "query__query_id")
    )
    queries = {q.query_id: q for q in Query.objects.filter(golden_set=golden_set)}
    chosen: list[Canary] = []
    used_pages: set[str] = set()
    for query_id, doc_id in labels:
        if len(chosen) >= CANARY_COUNT or doc_id in used_pages:
            continue
        page = pages[doc_id]
        if shard_of(page.metadata.get("service") or page.metadata.get("team", "")) not in stale:
            continue
        hits = [hit.doc_id for hit in search.search(queries[query_id].text, k=version.k_first)]
        if doc_id not in hits:
            continue
        chosen.append(
            canary_add(
                golden_set=golden_set,
                query=queries[query_id],
                page=page,
                note=f"new runbook, published {page.published_at:%Y-%m-%d}: the freshness probe's canary",
            )
        )
        used_pages.add(doc_id)
    return chosen


def _night(endpoint: Endpoint, version, questions, search: DemoSearch, slot: datetime) -> Run:
    k = endpoint_depth(endpoint, version)
    latencies, rankings = [], []
    started = time.perf_counter()
    for query_id, text in questions:
        began = time.perf_counter()
        hits = search.search(text, k=k, stage=endpoint.stage)
        latencies.append((time.perf_counter() - began) * 1000)
        rankings.append((query_id, [(hit.doc_id, hit.score) for hit in hits]))
    seconds = time.perf_counter() - started
    answered = [(query_id, ranking) for query_id, ranking in rankings if ranking]
    with transaction.atomic():
        night = NightlyRun.objects.create(
            endpoint=endpoint,
            slot=slot,
            status=NightlyRun.Status.RUNNING,
            version=version,
            started_at=slot,
            queries_total=len(questions),
        )
        run = run_from_rankings(
            golden_set=endpoint.golden_set,
            rankings=answered,
            source_name=endpoint.url,
            system=endpoint.system,
            stage=endpoint.stage,
            name=run_name(endpoint, night),
            series=endpoint.series,
            measured_at=slot,
            index_size=search.index_size,
        )
        NightlyRun.objects.filter(pk=night.pk).update(
            status=NightlyRun.Status.DONE,
            run=run,
            queries_done=len(questions),
            finished_at=slot + timedelta(seconds=seconds),
            seconds=seconds,
            latency_p50_ms=float(np.percentile(latencies, 50)),
            latency_p95_ms=float(np.percentile(latencies, 95)),
        )
    return run


def _probe_history(endpoint: Endpoint, canaries: list[Canary], version, search: DemoSearch) -> None:
    """The probe rounds of the last PROBE_HISTORY, every 5 minutes, as the live probe makes
    them; the shards are stale all that time when the last nights were."""
    now = timezone.now().replace(second=0, microsecond=0)
    now -= timedelta(minutes=now.minute % 5)
    k = version.k_first
    for step in range(int(PROBE_HISTORY / timedelta(minutes=5)), 0, -1):
        slot = now - timedelta(minutes=5 * step)
        with transaction.atomic():
            probe_round = ProbeRound.objects.create(endpoint=endpoint, slot=slot, finished_at=slot)
            missed = 0
            for canary in canaries:
                began = time.perf_counter()
                hits = [hit.doc_id for hit in search.search(canary.query.text, k=k)]
                latency = (time.perf_counter() - began) * 1000
                rank = hits.index(canary.page.doc_id) + 1 if canary.page.doc_id in hits else None
                Probe.objects.create(round=probe_round, canary=canary, rank=rank, k=k, latency_ms=latency)
                if rank is None:
                    missed += 1
                    probe_miss_raise(
                        version=version,
                        canary=canary,
                        endpoint_name=endpoint.name,
                        rank=None,
                        k=k,
                        error="",
                        rank_history=canary_rank_history(canary=canary, endpoint=endpoint, before=slot),
                        series_name=endpoint.series.name,
                    )
            ProbeRound.objects.filter(pk=probe_round.pk).update(canaries=len(canaries), missed=missed)


def _index_probe_history(endpoint: Endpoint, version, questions, search: DemoSearch) -> None:
    """The index probes of the last INDEX_PROBE_HISTORY hours, as the live probe makes them
    (the same sample, ANN recall and alert rule), the search asked in this process."""
    now = timezone.now().replace(minute=15, second=0, microsecond=0)
    if now > timezone.now():
        now -= timedelta(hours=1)
    k = endpoint_depth(endpoint, version)
    sample = index_probe_sample(questions)
    answers = []
    for _query_id, text in sample:
        exact = search.search(text, k=k, exact=True)
        approximate = [hit.doc_id for hit in search.search(text, k=k)]
        answers.append((approximate, [hit.doc_id for hit in exact], {hit.doc_id: str(hit.shard) for hit in exact}))
    measured = ann_recall_compute(answers, k)  # the shards' state is the same all that time
    for step in range(INDEX_PROBE_HISTORY - 1, -1, -1):
        slot = now - timedelta(hours=step)
        probe = IndexProbe.objects.create(endpoint=endpoint, slot=slot, version=version, k=k, started_at=slot, queries_asked=len(sample))
        index_probe_record(probe_id=probe.pk, version=version, measured=measured)
