"""The index probe: ask an endpoint the same queries approximately and exactly, and report
how many of the exact nearest neighbours its approximate answers return (ANN recall@k,
SEMANTICS.md), overall and per shard where the answers name one.

Relevance recall says a night lost relevant pages; it cannot say whether the ranking or the
index lost them. An endpoint with an exact mode (an exact-kNN or brute-force request beside
its approximate one: OpenSearch's script_score beside its knn query, or a flag of the
team's own service) tells them apart: what the exact answer holds and the approximate one
does not, the index lost. A shard that was not refreshed shows as the shard whose exact
neighbours the approximate answers miss.

On its schedule (Endpoint.index_probe_schedule) each endpoint with an exact mode gets one
IndexProbe per slot (a unique constraint), which asks a fixed sample of the latest version's
queries both ways at the endpoint's depth. ANN recall (overall, or a shard's) under the
endpoint's floor opens one INDEX_RECALL alert in an "index" incident naming the shards
under the floor; a later probe back over it resolves both (evaluation.alerts.services).
"""

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluation.alerts.services import index_recall_raise, index_recall_resolve
from lib.errors import ConflictError, GoldsetError
from monitoring.endpoints.services import endpoint_spec
from monitoring.endpoints.spec import exact_spec
from monitoring.models import Endpoint, IndexProbe, NightlyRun
from monitoring.nightly.services import endpoint_depth, latest_version, version_questions

# At most this many queries a probe: an exact request scans the whole index (a brute-force
# script_score costs the engine what a thousand approximate ones do), and 200 queries put
# the standard error of ANN recall under two points for a recall near 0.75. The sample is
# the same every round (the queries whose id hashes lowest), so a change between two rounds
# is a change of the index, not of the sample.
INDEX_PROBE_MAX_QUERIES = 200
# A shard is judged on its own when the exact answers put at least this many neighbours on
# it: a shard that holds three of them would page on one miss.
MIN_SHARD_NEIGHBOURS = 20


def index_probe_sample(questions: Sequence[tuple[str, str]], limit: int = INDEX_PROBE_MAX_QUERIES) -> list[tuple[str, str]]:
    """The (query id, text) a probe asks: all of `questions` up to `limit`, else the `limit`
    whose query id has the lowest SHA-1, in the order given."""
    if len(questions) <= limit:
        return list(questions)
    chosen = set(sorted((hashlib.sha1(query_id.encode()).hexdigest(), query_id) for query_id, _ in questions)[:limit])
    kept = {query_id for _, query_id in chosen}
    return [question for question in questions if question[0] in kept]


@dataclass
class AnnRecall:
    """ANN recall@k of one probe: `ann_recall` the mean over the queries compared (None when
    none was), `per_shard` {shard: {"exact", "returned", "share"}} pooled over the queries."""

    k: int
    queries_compared: int = 0
    ann_recall: float | None = None
    per_shard: dict[str, dict] = field(default_factory=dict)

    def shards_under(self, floor: float) -> list[str]:
        """The shards with at least MIN_SHARD_NEIGHBOURS exact neighbours whose share is
        under `floor`, in natural order ("2" before "10")."""
        return sorted(
            (s for s, f in self.per_shard.items() if f["exact"] >= MIN_SHARD_NEIGHBOURS and f["share"] < floor),
            key=shard_sort_key,
        )

    def under(self, floor: float) -> bool:
        """Whether the index is under `floor`: ANN recall overall, or a shard's share. A
        shard that lost a third of its neighbours is an index fault even where the mean over
        the other shards hides it (the demo's two stale shards at k = 100: 0.95 overall)."""
        return self.ann_recall is not None and (self.ann_recall < floor or bool(self.shards_under(floor)))

    def share_of(self, shards: list[str]) -> float | None:
        """Of the exact neighbours on `shards`, the share the approximate answers returned."""
        exact = sum(self.per_shard[s]["exact"] for s in shards)
        return sum(self.per_shard[s]["returned"] for s in shards) / exact if exact else None


def shard_sort_key(text: str) -> tuple:
    """Shards in natural order, "2" before "10" (a jsonb column keeps no key order)."""
    return (0, int(text), "") if text.isdigit() else (1, 0, text)


def ann_recall_compute(answers: Sequence[tuple[Sequence[str], Sequence[str], dict[str, str] | None]], k: int) -> AnnRecall:
    """ANN recall@k from (approximate doc ids, exact doc ids, {doc id: shard} of the exact
    answer) per query, each ranking best first. A query whose exact top k is empty is not
    compared (it has no neighbour to find). Per query, recall is |approx top k ∩ exact top
    k| / |exact top k|; `ann_recall` is their mean. Per shard s, of the exact neighbours
    (pooled over the queries) that live on s, the share the approximate top k held."""
    result = AnnRecall(k=k)
    recalls = []
    exact_on: dict[str, int] = defaultdict(int)
    returned_on: dict[str, int] = defaultdict(int)
    for approximate, exact, shards in answers:
        neighbours = list(dict.fromkeys(exact[:k]))
        if not neighbours:
            continue
        found = set(approximate[:k])
        recalls.append(sum(doc_id in found for doc_id in neighbours) / len(neighbours))
        for doc_id in neighbours:
            shard = (shards or {}).get(doc_id)
            if shard is not None:
                exact_on[shard] += 1
                returned_on[shard] += doc_id in found
    result.queries_compared = len(recalls)
    result.ann_recall = sum(recalls) / len(recalls) if recalls else None
    result.per_shard = {
        shard: {"exact": exact_on[shard], "returned": returned_on[shard], "share": returned_on[shard] / exact_on[shard]}
        for shard in sorted(exact_on, key=shard_sort_key)
    }
    return result


def index_probe_request(*, endpoint: Endpoint, slot: datetime, trigger: str = NightlyRun.Trigger.SCHEDULE) -> IndexProbe | None:
    """The IndexProbe of (endpoint, slot), made now; None when that slot has one already."""
    try:
        with transaction.atomic():
            return IndexProbe.objects.create(endpoint=endpoint, slot=slot, trigger=trigger)
    except IntegrityError:
        return None


def _finish(probe_id: int, **values) -> None:
    IndexProbe.objects.filter(pk=probe_id, finished_at=None).update(finished_at=timezone.now(), **values)


def index_probe_execute(*, probe_id: int) -> IndexProbe:
    """Ask the probe's endpoint its sample both ways now, store ANN recall overall and per
    shard, and open or resolve the endpoint's index alert. A probe finished already (a
    redelivered task) is returned as it is; an endpoint without exact mode or a set without
    a version finishes the probe with the reason in `error`."""
    probe = IndexProbe.objects.select_related("endpoint").get(pk=probe_id)
    if probe.finished_at is not None:
        return probe
    endpoint = probe.endpoint
    spec = endpoint_spec(endpoint)
    exact = exact_spec(spec)
    version = latest_version(endpoint.golden_set_id)
    if exact is None or version is None:
        _finish(probe_id, error="the endpoint has no exact request" if exact is None else "the set has no published version")
        return IndexProbe.objects.get(pk=probe_id)
    k = endpoint_depth(endpoint, version)
    questions = index_probe_sample(version_questions(version))
    IndexProbe.objects.filter(pk=probe_id).update(started_at=timezone.now(), version=version, k=k, queries_asked=len(questions))
    # Here, not at the top: the client brings aiohttp, which no process needs at start.
    from monitoring.endpoints.client import fetch_rankings_sync

    options = {"allowed_networks": settings.RETRIEVAL_ALLOWED_NETWORKS, "env_prefix": settings.RETRIEVAL_HEADER_ENV_PREFIX}
    approximate = fetch_rankings_sync(spec, questions, k, **options).answers
    exact_answers = fetch_rankings_sync(exact, questions, k, **options).answers
    compared, errors = [], []
    for asked, told in zip(approximate, exact_answers, strict=True):
        if asked.error or told.error:
            errors.append(f"query {asked.query_id}: {asked.error or 'exact request: ' + told.error}")
            continue
        compared.append(([d for d, _ in asked.ranking], [d for d, _ in told.ranking], told.shards))
    return index_probe_record(probe_id=probe_id, version=version, measured=ann_recall_compute(compared, k), errors=errors)


def index_probe_record(*, probe_id: int, version, measured: AnnRecall, errors: Sequence[str] = ()) -> IndexProbe:
    """Store a probe's figures and open or resolve its endpoint's index alert, in one
    transaction; a probe finished already is returned as it is (of two copies of its task,
    the second writes nothing). `errors`: one line per query that could not be compared."""
    with transaction.atomic():
        probe = IndexProbe.objects.select_related("endpoint").get(pk=probe_id)
        # The endpoint's row, locked: two probes of one endpoint judge its alert in turn.
        Endpoint.objects.select_for_update().filter(pk=probe.endpoint_id).first()
        if IndexProbe.objects.select_for_update().get(pk=probe_id).finished_at is not None:
            return IndexProbe.objects.get(pk=probe_id)
        nothing = "" if measured.queries_compared else "no query had an exact neighbour"
        _finish(
            probe_id,
            version=version,
            k=measured.k,
            queries_compared=measured.queries_compared,
            ann_recall=measured.ann_recall,
            per_shard=measured.per_shard,
            errors=len(errors),
            error=(errors[0] if errors else nothing)[:2000],
        )
        _alert_judge(probe.endpoint, version, measured)
    return IndexProbe.objects.get(pk=probe_id)


def _alert_judge(endpoint: Endpoint, version, measured: AnnRecall) -> None:
    """Open the index alert when the index is under the endpoint's floor (AnnRecall.under),
    resolve it when it is back over; a probe that compared nothing (an outage: the night's
    failing alert tells that) judges neither way."""
    if measured.ann_recall is None:
        return
    floor = endpoint.index_recall_floor
    if not measured.under(floor):
        index_recall_resolve(golden_set_id=endpoint.golden_set_id, endpoint_name=endpoint.name)
        return
    shards = measured.shards_under(floor)
    index_recall_raise(
        version=version,
        endpoint_name=endpoint.name,
        k=measured.k,
        ann_recall=measured.ann_recall,
        floor=floor,
        shards=shards,
        shards_share=measured.share_of(shards) if shards else None,
        queries_compared=measured.queries_compared,
    )


def index_probe_now(*, endpoint: Endpoint) -> IndexProbe:
    """A manual index probe, recorded for a worker to run (the page's "probe the index now").
    GoldsetError for an endpoint without exact mode; ConflictError while one of its probes
    is unfinished, so a click twice does not scan the index twice."""
    if exact_spec(endpoint_spec(endpoint)) is None:
        raise GoldsetError(f"{endpoint.name} has no exact request to compare with; add one on its page", field="exact_body_template")
    with transaction.atomic():
        Endpoint.objects.select_for_update().filter(pk=endpoint.pk).first()
        if IndexProbe.objects.filter(endpoint=endpoint, finished_at=None).exists():
            raise ConflictError(f"an index probe of {endpoint.name} is under way; its figures appear when it is done")
        return IndexProbe.objects.create(endpoint=endpoint, slot=timezone.now(), trigger=NightlyRun.Trigger.MANUAL)
