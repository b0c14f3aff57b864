"""Reads of the alert pages: a set's alerts, newest first, with how far each is from its
reference."""

from django.db.models import ExpressionWrapper, F, FloatField, Q, QuerySet

from evaluation.models import Alert, WebhookDelivery
from evaluation.selectors import run_counted
from goldenset.models import GoldenSet


def alerts_for(golden_set: GoldenSet) -> QuerySet[Alert]:
    """The set's alerts, newest first, with version and run, and `delta_points`:
    (value - reference) in points, None when there is no reference.

    Alerts of an archived run, or of a partial one not marked complete, are left out:
    hidden, not resolved, so that unarchiving the run shows them again as they were."""
    return (
        Alert.objects.filter(Q(run=None) | run_counted("run__"), golden_set=golden_set)
        .select_related("version", "run")
        .annotate(delta_points=ExpressionWrapper((F("value") - F("reference")) * 100, output_field=FloatField()))
        .order_by("-created_at", "-id")
    )


def alerts_latest(golden_set: GoldenSet, limit: int = 5) -> list[Alert]:
    """The `limit` newest alerts of the set, as `alerts_for` gives them: the context of
    templates/evaluation/_alerts_summary.html."""
    return list(alerts_for(golden_set)[:limit])


WEBHOOK_DELIVERIES_SHOWN = 50


def webhook_deliveries_latest(golden_set: GoldenSet, limit: int = WEBHOOK_DELIVERIES_SHOWN) -> list[WebhookDelivery]:
    """The set's `limit` latest webhook attempts, newest first, alerts and test events alike."""
    return list(WebhookDelivery.objects.filter(golden_set=golden_set).select_related("alert").order_by("-sent_at", "-id")[:limit])
