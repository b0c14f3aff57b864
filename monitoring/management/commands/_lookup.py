"""What the monitoring commands share: finding a set and an endpoint by name, or a clear error."""

from django.core.management.base import CommandError

from goldenset.models import GoldenSet
from monitoring.models import Endpoint


def golden_set_named(slug: str) -> GoldenSet:
    golden_set = GoldenSet.objects.filter(slug=slug).first()
    if golden_set is None:
        raise CommandError(f"no golden set {slug!r}")
    return golden_set


def endpoint_named(golden_set: GoldenSet, name: str) -> Endpoint:
    endpoint = Endpoint.objects.filter(golden_set=golden_set, name=name).select_related("series").first()
    if endpoint is None:
        names = ", ".join(Endpoint.objects.filter(golden_set=golden_set).values_list("name", flat=True)) or "none"
        raise CommandError(f"golden set {golden_set.slug!r} has no endpoint {name!r} (it has: {names})")
    return endpoint
