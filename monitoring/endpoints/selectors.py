"""Reads of the endpoint pages: a set's endpoints, one by name, and which doc ids of an
answer the corpus knows (the "try it" page marks a wrong doc id path that way)."""

from django.http import Http404

from goldenset.models import GoldenSet, Page
from monitoring.models import Endpoint, NightlyRun


def endpoints_of(golden_set: GoldenSet) -> list[Endpoint]:
    """The set's endpoints by system, stage and name, with their series (one query)."""
    return list(Endpoint.objects.filter(golden_set=golden_set).select_related("series"))


def endpoint_get(golden_set: GoldenSet, name: str) -> Endpoint:
    """The set's endpoint `name`; Http404 when it has none of that name."""
    endpoint = Endpoint.objects.filter(golden_set=golden_set, name=name).select_related("series", "golden_set").first()
    if endpoint is None:
        raise Http404("no such endpoint")
    return endpoint


def doc_ids_known(golden_set: GoldenSet, doc_ids: list[str]) -> set[str]:
    """Those of `doc_ids` that are pages of the set's corpus."""
    if not doc_ids:
        return set()
    return set(Page.objects.filter(corpus_id=golden_set.corpus_id, doc_id__in=doc_ids).values_list("doc_id", flat=True))


def nights_in_progress(golden_set: GoldenSet, endpoint: Endpoint | None = None) -> list[NightlyRun]:
    """The set's nights (or `endpoint`'s) that are pending or running, oldest first."""
    nights = NightlyRun.objects.filter(
        endpoint__golden_set=golden_set,
        status__in=NightlyRun.ACTIVE,
    ).select_related("endpoint")
    if endpoint is not None:
        nights = nights.filter(endpoint=endpoint)
    return list(nights.order_by("slot"))
