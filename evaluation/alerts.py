"""Alerts: the rules checked after every evaluation, their delivery, and the reads the pages need.

The rules follow the seed's "Operating it" list, with thresholds from the golden set's
EvaluationSettings (points are hundredths of a fraction: 3.0 points = 0.03):

- DROP_VS_VERSION: recall@k_first or recall@k_final of a run on version N is more than
  `alert_drop_points` below the same run's figure on version N-1. Different versions hold
  different labels, so the message says so: such a drop may be the labels, not the system.
- DROP_VS_RUN: the same, against the system's previous run of the same stage (the one
  uploaded just before it) on the same version.
- SLICE_UNDER_FLOOR: a slice's recall is under `alert_slice_floor`. The recall is the one
  that stage is judged by: recall@k_final for `reranked` runs (what the prompt sees),
  recall@k_first for `first_stage` and `other` runs (what a later stage can work with, the
  seed's recall@100). Slices averaged over no query have no figure and are skipped.
- RERANK_LOSS: recall@k_first of a system's first-stage run minus recall@k_final of its
  reranked run, on one version, is over `alert_rerank_loss_points`. The alert belongs to the
  reranked run. A reranked run is paired with the first-stage run of its system uploaded
  most recently before it (or, if none was, the earliest one after it).
- CANARY_MISSED: a canary page of the set (evaluation.canaries) is not in the run's top
  k_first for its query (the ranks the evaluation stored; a canary added since is looked
  up in the run's entries). One alert per (run, version), whatever the number of canaries
  missed (its message names them); `value` is the share of the version's canaries found,
  `reference` 1.0, `metric` recall@k_first.

k_first and k_final are the version's. Every rule compares two finished evaluations, and it
is checked from whichever of the two finishes last, so the order in which a publish's
fan-out completes changes nothing. A threshold is crossed only when strictly exceeded:
a drop of exactly 3.0 points, or a slice at exactly 0.75, raises nothing.

Delivery: a new alert enqueues alert_deliver_task on commit. It e-mails the settings'
addresses and the set's managers, and POSTs the alert as JSON to the webhook when one is
set; what failed for a reason that may pass is retried with backoff, up to 5 times. What
was delivered is recorded on the alert and never sent again; a worker that dies between
sending and recording may send once more, so the webhook payload carries the alert's id.
"""

import json
import logging
import smtplib
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.client import HTTPException

from celery import shared_task
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import ExpressionWrapper, F, FloatField, Q, QuerySet
from django.urls import reverse
from django.utils import timezone

from evaluation.canaries import evaluation_canary_results
from evaluation.models import Alert, Evaluation, EvaluationSettings, Run, Score
from evaluation.selectors import evaluation_settings
from goldenset.models import GoldenSet, Membership, Version

logger = logging.getLogger(__name__)

# Float noise: 0.8 - 0.7 is 0.10000000000000009, which must not count as over 10 points.
EPSILON = 1e-9

WEBHOOK_TIMEOUT_SECONDS = 10
DELIVERY_MAX_RETRIES = 5
# Answers worth trying again: the receiver is down, overloaded or asks us to slow down.
# Any other 3xx or 4xx means the URL or the receiver is wrong, and retrying cannot help.
_TRANSIENT_STATUSES = {408, 425, 429}


def _points(fraction: float) -> float:
    return fraction * 100


@dataclass(frozen=True)
class _Crossing:
    """A figure over a threshold, before it is stored as an Alert."""

    run: Run
    version: Version
    kind: str
    metric: str
    slice: str
    value: float
    reference: float | None
    message: str


def _who(run: Run) -> str:
    """How a message names a run: "bm25 first_stage", plus its name when that says more."""
    label = f"{run.system} {run.stage}"
    return label if run.name == label else f'{label} (run "{run.name}")'


def _done(**filters) -> Evaluation | None:
    return (
        Evaluation.objects.select_related("run", "version__golden_set")
        .filter(status=Evaluation.Status.DONE, **filters)
        .first()
    )


def _overall(evaluation: Evaluation, metric: str) -> float | None:
    """The all-queries figure of `metric` in `evaluation`, None when it was not scored."""
    return Score.objects.filter(evaluation=evaluation, slice="", metric=metric).values_list("value", flat=True).first()


def _recall_names(version: Version) -> list[str]:
    return list(dict.fromkeys([f"recall@{version.k_first}", f"recall@{version.k_final}"]))


# --- the rules -------------------------------------------------------------------------


def _drops(subject: Evaluation, reference: Evaluation, kind: str, threshold_points: float) -> list[_Crossing]:
    """recall@k_first and recall@k_final of `subject` more than the threshold below `reference`."""
    found = []
    for metric in _recall_names(subject.version):
        value, before = _overall(subject, metric), _overall(reference, metric)
        if value is None or before is None or before - value <= threshold_points / 100 + EPSILON:
            continue
        drop = _points(before - value)
        head = f"{metric} of {_who(subject.run)} on {subject.version} dropped {drop:.1f} points"
        if kind == Alert.Kind.DROP_VS_VERSION:
            message = (
                f"{head} against v{reference.version.number} ({before:.3f} → {value:.3f}); "
                f"the labels changed between versions"
            )
        else:
            message = f'{head} against the previous run "{reference.run.name}" ({before:.3f} → {value:.3f})'
        found.append(_Crossing(subject.run, subject.version, kind, metric, "", value, before, message))
    return found


def _drops_vs_version(evaluation: Evaluation, settings: EvaluationSettings) -> list[_Crossing]:
    run, version = evaluation.run, evaluation.version
    found = []
    previous = _done(run=run, version__golden_set_id=version.golden_set_id, version__number=version.number - 1)
    if previous is not None:
        found += _drops(evaluation, previous, Alert.Kind.DROP_VS_VERSION, settings.alert_drop_points)
    following = _done(run=run, version__golden_set_id=version.golden_set_id, version__number=version.number + 1)
    if following is not None:
        found += _drops(following, evaluation, Alert.Kind.DROP_VS_VERSION, settings.alert_drop_points)
    return found


def _drops_vs_run(evaluation: Evaluation, settings: EvaluationSettings) -> list[_Crossing]:
    run, version = evaluation.run, evaluation.version
    siblings = Run.objects.filter(golden_set_id=run.golden_set_id, system=run.system, stage=run.stage).exclude(pk=run.pk)
    # Upload order, ties (same microsecond) broken by id, so "previous" is always one run.
    earlier = Q(created_at__lt=run.created_at) | Q(created_at=run.created_at, id__lt=run.id)
    found = []
    previous_run = siblings.filter(earlier).order_by("-created_at", "-id").first()
    previous = previous_run and _done(run=previous_run, version=version)
    if previous is not None:
        found += _drops(evaluation, previous, Alert.Kind.DROP_VS_RUN, settings.alert_drop_points)
    next_run = siblings.exclude(earlier).order_by("created_at", "id").first()
    following = next_run and _done(run=next_run, version=version)
    if following is not None:
        found += _drops(following, evaluation, Alert.Kind.DROP_VS_RUN, settings.alert_drop_points)
    return found


def slice_metric(run: Run, version: Version) -> str:
    """The recall a run's slices are held to the floor by (see the module docstring)."""
    k = version.k_final if run.stage == Run.Stage.RERANKED else version.k_first
    return f"recall@{k}"


def _slices_under_floor(evaluation: Evaluation, settings: EvaluationSettings) -> list[_Crossing]:
    run, version = evaluation.run, evaluation.version
    metric = slice_metric(run, version)
    floor = settings.alert_slice_floor
    rows = (
        Score.objects.filter(evaluation=evaluation, metric=metric, queries_averaged__gt=0, value__lt=floor - EPSILON)
        .exclude(slice="")
        .order_by("slice")
        .values_list("slice", "value", "queries_averaged")
    )
    return [
        _Crossing(
            run, version, Alert.Kind.SLICE_UNDER_FLOOR, metric, slice_name, value, floor,
            f"{metric} of {_who(run)} on {version} is {value:.3f} in slice {slice_name} "
            f"({queries} {'query' if queries == 1 else 'queries'}), under the floor of {floor:.3f}",
        )
        for slice_name, value, queries in rows
    ]


def _first_stage_partner(reranked: Run, first_stages: list[Run]) -> Run | None:
    """The first-stage run `reranked` reranks: the latest uploaded before it, else the earliest after."""
    key = (reranked.created_at, reranked.id)
    before = [run for run in first_stages if (run.created_at, run.id) < key]
    if before:
        return max(before, key=lambda run: (run.created_at, run.id))
    return min(first_stages, key=lambda run: (run.created_at, run.id), default=None)


def _rerank_loss(reranked: Evaluation, first: Evaluation, threshold_points: float) -> list[_Crossing]:
    version = reranked.version
    first_metric, final_metric = f"recall@{version.k_first}", f"recall@{version.k_final}"
    recall_first, recall_final = _overall(first, first_metric), _overall(reranked, final_metric)
    if recall_first is None or recall_final is None or recall_first - recall_final <= threshold_points / 100 + EPSILON:
        return []
    loss = _points(recall_first - recall_final)
    message = (
        f"rerank loss of {reranked.run.system} on {version} is {loss:.1f} points (over {threshold_points:g}): "
        f'{first_metric} of first_stage run "{first.run.name}" is {recall_first:.3f}, '
        f'{final_metric} of reranked run "{reranked.run.name}" is {recall_final:.3f}'
    )
    return [_Crossing(reranked.run, version, Alert.Kind.RERANK_LOSS, final_metric, "", recall_final, recall_first, message)]


def _rerank_losses(evaluation: Evaluation, settings: EvaluationSettings) -> list[_Crossing]:
    run, version = evaluation.run, evaluation.version
    if run.stage not in (Run.Stage.RERANKED, Run.Stage.FIRST_STAGE):
        return []
    system_runs = Run.objects.filter(golden_set_id=run.golden_set_id, system=run.system)
    first_stages = list(system_runs.filter(stage=Run.Stage.FIRST_STAGE))
    threshold = settings.alert_rerank_loss_points
    if run.stage == Run.Stage.RERANKED:
        partner = _first_stage_partner(run, first_stages)
        first = partner and _done(run=partner, version=version)
        return _rerank_loss(evaluation, first, threshold) if first is not None else []
    found = []
    for reranked_run in system_runs.filter(stage=Run.Stage.RERANKED).order_by("created_at", "id"):
        if _first_stage_partner(reranked_run, first_stages) == run:
            reranked = _done(run=reranked_run, version=version)
            if reranked is not None:
                found += _rerank_loss(reranked, evaluation, threshold)
    return found


def _canaries_missed(evaluation: Evaluation, settings: EvaluationSettings) -> list[_Crossing]:
    run, version = evaluation.run, evaluation.version
    results = evaluation_canary_results(evaluation)
    if not results:
        return []
    missed = [result for result in results if not result.found]
    if not missed:
        return []
    metric = f"recall@{version.k_first}"
    shown = "; ".join(
        f"page {r.canary.page.doc_id} for query {r.canary.query.query_id} "
        + (f"at rank {r.rank}" if r.rank is not None else "not ranked")
        for r in missed[:10]
    )
    more = f" and {len(missed) - 10} more" if len(missed) > 10 else ""
    message = (
        f"{_who(run)} on {version} missed {len(missed)} of {len(results)} canary "
        f"{'page' if len(results) == 1 else 'pages'} in its top {version.k_first}: {shown}{more}"
    )
    value = (len(results) - len(missed)) / len(results)
    return [_Crossing(run, version, Alert.Kind.CANARY_MISSED, metric, "", value, 1.0, message)]


def alerts_check(*, evaluation: Evaluation) -> list[Alert]:
    """Store an alert for every threshold `evaluation` crosses, alone or beside its partners.

    Returns the alerts this call created, and enqueues the delivery of each once the
    transaction commits. Idempotent: a crossing already stored (the same run, version,
    kind, metric and slice) is neither stored nor delivered again, so a redelivered task
    returns []. An evaluation that is not done raises nothing.
    """
    evaluation = Evaluation.objects.select_related("run", "version__golden_set").get(pk=evaluation.pk)
    if evaluation.status != Evaluation.Status.DONE:
        return []
    settings = evaluation_settings(evaluation.version.golden_set)
    crossings = [
        *_drops_vs_version(evaluation, settings),
        *_drops_vs_run(evaluation, settings),
        *_slices_under_floor(evaluation, settings),
        *_rerank_losses(evaluation, settings),
        *_canaries_missed(evaluation, settings),
    ]
    created = []
    with transaction.atomic():
        for crossing in crossings:
            alert, is_new = Alert.objects.get_or_create(
                run=crossing.run, version=crossing.version, kind=crossing.kind, metric=crossing.metric, slice=crossing.slice,
                defaults={
                    "golden_set_id": crossing.version.golden_set_id, "value": crossing.value,
                    "reference": crossing.reference, "message": crossing.message,
                },
            )
            if is_new:
                created.append(alert)
                alert_deliver_task.delay_on_commit(alert.id)
    return created


# --- delivery ----------------------------------------------------------------------------


def alert_recipients(golden_set: GoldenSet, settings: EvaluationSettings) -> list[str]:
    """The settings' addresses, then the set's active managers who have one; each once."""
    managers = (
        get_user_model().objects.filter(
            memberships__golden_set=golden_set, memberships__role=Membership.Role.MANAGER, is_active=True
        )
        .exclude(email="")
        .order_by("email")
        .values_list("email", flat=True)
    )
    recipients: dict[str, str] = {}
    for address in [*settings.alert_emails, *managers]:
        recipients.setdefault(address.lower(), address)
    return list(recipients.values())


def alert_payload(alert: Alert) -> dict:
    """The alert as the webhook receives it. `value` and `reference` are fractions; `id` lets a
    receiver drop a repeat (a delivery cut off after the POST but before it was recorded)."""
    return {
        "id": alert.id,
        "kind": alert.kind,
        "metric": alert.metric,
        "slice": alert.slice,
        "value": alert.value,
        "reference": alert.reference,
        "message": alert.message,
        "golden_set": alert.golden_set.slug,
        "version": {"number": alert.version.number, "content_hash": alert.version.content_hash},
        "run": {"name": alert.run.name, "system": alert.run.system, "stage": alert.run.stage},
        "created_at": alert.created_at.isoformat(),
    }


def alert_email_send(*, alert: Alert, settings: EvaluationSettings) -> bool:
    """E-mail the alert (Django's mail settings) unless it was already; record `emailed_at`.

    Returns True when the alert has been e-mailed (now or before), False when nobody is
    there to receive it. SMTP errors propagate, for the task to retry.
    """
    if alert.emailed_at is not None:
        return True
    recipients = alert_recipients(alert.golden_set, settings)
    if not recipients:
        return False
    version, run = alert.version, alert.run
    subject = f"[Goldset] {alert.golden_set.slug} v{version.number}, run {run.name}: {alert.get_kind_display()}"
    subject = " ".join(subject.split())  # a line break in a run name would make send_mail refuse the header
    lines = [
        alert.message,
        "",
        f"Golden set: {alert.golden_set.name} ({alert.golden_set.slug})",
        f"Version:    v{version.number} ({version.content_hash})",
        f"Run:        {run.name} (system {run.system}, stage {run.stage})",
        f"Metric:     {alert.metric}{' in slice ' + alert.slice if alert.slice else ''}",
        f"Value:      {alert.value:.3f}" + (f" (compared with {alert.reference:.3f})" if alert.reference is not None else ""),
        "",
        f"Every alert of the set: {reverse('alerts', kwargs={'slug': alert.golden_set.slug})}",
    ]
    send_mail(subject, "\n".join(lines), None, recipients)
    alert.emailed_at = timezone.now()
    alert.save(update_fields=["emailed_at"])
    return True


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """urllib would follow a 301/302 by turning the POST into a GET without the body and
    report success; a webhook that moved must be answered with an error instead."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class WebhookOutcome:
    DELIVERED = "delivered"  # now or before
    RETRY = "retry"  # a failure that may pass: network error, timeout, 5xx, 408, 425, 429
    REFUSED = "refused"  # any other 3xx or 4xx: the URL or the receiver is wrong, retrying cannot help


def alert_webhook_post(*, alert: Alert, url: str) -> str:
    """POST the alert as JSON to `url` unless it was delivered already, and record the attempt
    (webhook_attempts, webhook_error, webhook_delivered_at). Returns a WebhookOutcome."""
    if alert.webhook_delivered_at is not None:
        return WebhookOutcome.DELIVERED
    body = json.dumps(alert_payload(alert)).encode()
    alert.webhook_attempts += 1
    outcome = WebhookOutcome.REFUSED
    try:
        # Checked again here because the admin's URLField also takes ftp://, which urllib would open.
        if not url.lower().startswith(("http://", "https://")):
            raise ValueError(f"{url!r} is not an http:// or https:// URL")
        request = urllib.request.Request(
            url, data=body, method="POST",
            headers={"Content-Type": "application/json", "User-Agent": "Goldset-alerts", "X-Goldset-Alert-Id": str(alert.id)},
        )
        # The opener honours the proxy variables of the environment, like any HTTP client there.
        opener = urllib.request.build_opener(_NoRedirects)
        with opener.open(request, timeout=WEBHOOK_TIMEOUT_SECONDS) as response:
            response.read(1024)
        alert.webhook_delivered_at = timezone.now()
        alert.webhook_error = ""
        outcome = WebhookOutcome.DELIVERED
    except urllib.error.HTTPError as exc:
        # Only the status goes into the record: the body of an arbitrary URL is not ours to show.
        alert.webhook_error = f"HTTP {exc.code} {exc.reason}"
        if exc.code >= 500 or exc.code in _TRANSIENT_STATUSES:
            outcome = WebhookOutcome.RETRY
    except (urllib.error.URLError, HTTPException, OSError) as exc:  # refused, DNS, TLS, timeout
        alert.webhook_error = str(getattr(exc, "reason", None) or exc) or type(exc).__name__
        outcome = WebhookOutcome.RETRY
    except ValueError as exc:
        alert.webhook_error = str(exc)
    alert.save(update_fields=["webhook_attempts", "webhook_delivered_at", "webhook_error"])
    return outcome


def delivery_backoff_seconds(retries: int) -> int:
    """Seconds before retry number `retries` + 1: 1, 2, 4, 8 then 16 minutes."""
    return 60 * 2**retries


@shared_task(bind=True, acks_late=True, max_retries=DELIVERY_MAX_RETRIES)
def alert_deliver_task(self, alert_id: int) -> str:
    """E-mail the alert and POST it to the set's webhook, retrying what failed with backoff.

    Idempotent: what was delivered (emailed_at, webhook_delivered_at) is not sent again.
    """
    alert = Alert.objects.select_related("golden_set", "version", "run").filter(pk=alert_id).first()
    if alert is None:
        return "gone"
    settings = evaluation_settings(alert.golden_set)
    failed, refused = [], ""
    try:
        alert_email_send(alert=alert, settings=settings)
    except (smtplib.SMTPException, OSError) as exc:
        logger.warning("alert %s: e-mail failed: %s", alert_id, exc)
        failed.append("e-mail")
    if settings.webhook_url:
        outcome = alert_webhook_post(alert=alert, url=settings.webhook_url)
        if outcome == WebhookOutcome.RETRY:
            logger.warning("alert %s: webhook attempt %d failed: %s", alert_id, alert.webhook_attempts, alert.webhook_error)
            failed.append("webhook")
        elif outcome == WebhookOutcome.REFUSED:
            logger.error("alert %s: webhook refused, not retried: %s", alert_id, alert.webhook_error)
            refused = f"; webhook refused: {alert.webhook_error}"
    if not failed:
        return "delivered" + refused
    if self.request.retries >= self.max_retries:
        logger.error("alert %s: gave up on %s after %d retries", alert_id, " and ".join(failed), self.request.retries)
        return f"gave up: {', '.join(failed)}"
    countdown = delivery_backoff_seconds(self.request.retries)
    if self.request.is_eager:
        # In-process (the embedded default, and tests) nothing could run a retry later, and a
        # raised Retry would propagate into the request that published. Returned, Celery's
        # apply() runs the retry at once instead.
        return self.retry(countdown=countdown, throw=False)
    raise self.retry(countdown=countdown)


# --- reads for the pages ------------------------------------------------------------------


def alerts_for(golden_set: GoldenSet) -> QuerySet[Alert]:
    """The set's alerts, newest first, with version and run, and `delta_points`:
    (value - reference) in points, None when there is no reference."""
    return (
        Alert.objects.filter(golden_set=golden_set)
        .select_related("version", "run")
        .annotate(delta_points=ExpressionWrapper((F("value") - F("reference")) * 100, output_field=FloatField()))
        .order_by("-created_at", "-id")
    )


def alerts_latest(golden_set: GoldenSet, limit: int = 5) -> list[Alert]:
    """The `limit` newest alerts of the set, as `alerts_for` gives them: the context of
    templates/evaluation/_alerts_summary.html."""
    return list(alerts_for(golden_set)[:limit])
