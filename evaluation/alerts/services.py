"""Alerts raised from outside an evaluation: by monitoring, about a live endpoint.

The evaluation rules (evaluation.alerts.rules) judge scores; these judge the endpoint
itself: a night whose requests failed (ENDPOINT_FAILING, instead of any recall alert) and a
canary page a probe did not find (PROBE_MISSED, one open alert per canary and endpoint,
resolved when a later probe finds it), and an index whose approximate answers lost the exact
neighbours (INDEX_RECALL, one open alert per endpoint, in an "index" incident, both resolved
when a later index probe finds ANN recall back over the floor). Each new alert joins its
endpoint's incident (evaluation.alerts.incidents) and sends alert_raised, so the incident's
message is e-mailed
and posted to the webhook like every other (evaluation.receivers).
"""

from collections.abc import Sequence

from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluation.alerts.incidents import incident_alert_add, incident_resolve
from evaluation.models import Alert, Canary, Incident, Run
from evaluation.signals import alert_raised
from goldenset.models import Version


def endpoint_failing_raise(
    *,
    version: Version,
    endpoint_name: str,
    run: Run | None,
    failed: int,
    asked: int,
    example: str,
    series_name: str = "",
) -> Alert:
    """Record that `endpoint_name` failed `failed` of `asked` queries in one night (its run,
    or None when no query was answered and no run was stored). `value` is the share of
    queries answered, `reference` 1.0. `series_name`, the series of the endpoint's nights,
    puts the alert in the same incident as their recall alerts."""
    share = failed / asked if asked else 1.0
    message = (
        f"endpoint {endpoint_name} failed {failed} of {asked} queries ({share:.0%})"
        + (f' in run "{run.name}"' if run else "; no run was stored")
        + f"; recall alerts are held back for it. First error: {example}"
    )
    with transaction.atomic():
        alert = Alert.objects.create(
            golden_set_id=version.golden_set_id,
            version=version,
            run=run,
            subject=endpoint_name,
            kind=Alert.Kind.ENDPOINT_FAILING,
            metric="failed_share",
            value=1.0 - share,
            reference=1.0,
            message=message,
        )
        _incident_join(alert, series_name)
        alert_raised.send(sender=Alert, alert_id=alert.id)
    return alert


def probe_miss_raise(
    *,
    version: Version,
    canary: Canary,
    endpoint_name: str,
    rank: int | None,
    k: int,
    error: str,
    rank_history: Sequence[int | None] = (),
    series_name: str = "",
) -> Alert | None:
    """Open the PROBE_MISSED alert of (canary, endpoint), or None when one is open already:
    a canary missed probe after probe is one alert until it is found again. `rank_history`
    is the canary's rank on the endpoint's previous probes, oldest first (None: not
    returned), which the message shows so that a reader sees when it went. `series_name`, the
    series of the endpoint's nights, puts the alert in the same incident as their alerts."""
    where = f"at rank {rank}" if rank is not None else ("not returned" if not error else f"no answer ({error})")
    message = (
        f'canary probe on endpoint {endpoint_name}: page {canary.page.doc_id} for query {canary.query.query_id} "{canary.query.text}" '
        f"was {where}, outside the top {k}"
    )
    if rank_history:
        ranks = ", ".join("-" if r is None else str(r) for r in [*rank_history, rank])
        message += f"; its rank on the last {len(rank_history) + 1} probes, oldest first: {ranks}"
    try:
        with transaction.atomic():
            alert = Alert.objects.create(
                golden_set_id=canary.golden_set_id,
                version=version,
                canary=canary,
                subject=endpoint_name,
                kind=Alert.Kind.PROBE_MISSED,
                metric=f"recall@{k}",
                value=0.0,
                reference=1.0,
                message=message,
            )
            _incident_join(alert, series_name)
            alert_raised.send(sender=Alert, alert_id=alert.id)
    except IntegrityError:
        return None  # alert_one_open_probe_miss: it is open already
    return alert


def _incident_join(alert: Alert, series_name: str) -> None:
    """An endpoint's failures and probes belong with its nights: one incident per endpoint."""
    if series_name:
        incident_alert_add(alert, kind=Incident.Kind.NIGHT, subject=series_name)
    else:
        incident_alert_add(alert)


def probe_miss_resolve(*, canary: Canary, endpoint_name: str) -> int:
    """Mark the open PROBE_MISSED alert of (canary, endpoint) resolved; returns how many were."""
    return Alert.objects.filter(
        kind=Alert.Kind.PROBE_MISSED,
        canary=canary,
        subject=endpoint_name,
        resolved_at=None,
    ).update(resolved_at=timezone.now())


def _shard_names(shards: list[str]) -> str:
    """'shard 2', 'shards 2 and 4', 'shards 1, 2 and 4': as a person reads them."""
    if len(shards) == 1:
        return f"shard {shards[0]}"
    return "shards " + ", ".join(shards[:-1]) + f" and {shards[-1]}"


def index_recall_message(*, endpoint_name: str, k: int, ann_recall: float, shards: list[str], shards_share: float | None) -> str:
    """What an index alert says: the shards whose exact neighbours the approximate answers
    lost first (`shards_share`: the share of their exact neighbours returned, a fraction),
    then ANN recall@k overall."""
    overall = f"ANN recall@{k} {ann_recall:.2f} overall"
    if shards and shards_share is not None:
        return f"{_shard_names(shards)} return {shards_share:.0%} of the exact neighbours ({overall}) on endpoint {endpoint_name}"
    return f"the approximate answers of endpoint {endpoint_name} return {ann_recall:.0%} of the exact neighbours ({overall})"


def index_recall_raise(
    *,
    version: Version,
    endpoint_name: str,
    k: int,
    ann_recall: float,
    floor: float,
    shards: list[str],
    shards_share: float | None,
    queries_compared: int,
) -> Alert | None:
    """Open the INDEX_RECALL alert of the endpoint in its "index" incident (subject: the
    endpoint's name), or None when one is open already: an index that stays behind, probe
    after probe, is one alert until a probe finds it back over the floor. `shards` are the
    shards under the floor, named in the message; `value` is the figure under the floor that
    the message leads with (the named shards' pooled share, else ANN recall@k overall, which
    the message gives too), `reference` the endpoint's floor (fractions). The caller serialises the endpoint's probes (it holds
    the endpoint's row), so two probes do not both open one."""
    open_already = Alert.objects.filter(
        golden_set_id=version.golden_set_id, kind=Alert.Kind.INDEX_RECALL, subject=endpoint_name, resolved_at=None
    )
    if open_already.exists():
        return None
    message = index_recall_message(endpoint_name=endpoint_name, k=k, ann_recall=ann_recall, shards=shards, shards_share=shards_share)
    with transaction.atomic():
        alert = Alert.objects.create(
            golden_set_id=version.golden_set_id,
            version=version,
            subject=endpoint_name,
            kind=Alert.Kind.INDEX_RECALL,
            metric=f"ann_recall@{k}",
            value=shards_share if shards and shards_share is not None else ann_recall,
            reference=floor,
            queries_compared=queries_compared,
            message=message + f"; the floor is {floor:.2f}",
        )
        incident_alert_add(alert)
        alert_raised.send(sender=Alert, alert_id=alert.id)
    return alert


def index_recall_resolve(*, golden_set_id: int, endpoint_name: str) -> int:
    """Resolve the open INDEX_RECALL alert of the endpoint and its incident (by Goldset: the
    index probe passed again); returns how many alerts were resolved."""
    with transaction.atomic():
        alerts = Alert.objects.filter(golden_set_id=golden_set_id, kind=Alert.Kind.INDEX_RECALL, subject=endpoint_name, resolved_at=None)
        incident_ids = set(alerts.exclude(incident=None).values_list("incident_id", flat=True))
        resolved = alerts.update(resolved_at=timezone.now())
        for incident in Incident.objects.filter(pk__in=incident_ids).exclude(state=Incident.State.RESOLVED):
            incident_resolve(incident=incident, user=None)
    return resolved
