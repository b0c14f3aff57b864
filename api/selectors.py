"""Reads of the API app: tokens, and the rows the endpoints page through (versions, scores,
series, live endpoints and their nights and probes)."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Max, Q, QuerySet
from django.http import Http404

from api.models import ApiToken
from evaluation.models import Completeness, Evaluation, Score, Series
from goldenset.answers import version_reference_answers
from goldenset.models import GoldenSet, Version, VersionLabel, VersionQuery
from goldenset.selectors import golden_sets_for, in_slice
from lib.errors import GoldsetError
from lib.ids import natural_key
from monitoring.models import Endpoint, NightlyRun, Probe, ProbeRound
from monitoring.nightly.selectors import latest_nights
from monitoring.schedules import next_probe_at, next_run_at


def api_token_by_secret(secret: str) -> ApiToken | None:
    try:
        return ApiToken.objects.select_related("owner").get(key_hash=ApiToken.hash_secret(secret))
    except ApiToken.DoesNotExist:
        return None


def tokens_of_golden_set(golden_set: GoldenSet) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(golden_set=golden_set).select_related("owner", "created_by")


def api_golden_sets(user: AbstractBaseUser, token: ApiToken | None) -> QuerySet[GoldenSet]:
    """The golden sets `user` may read, narrowed to the token's set if it has one, with
    their active query count and latest version number."""
    sets = golden_sets_for(user)
    if token is not None and token.golden_set_id is not None:
        sets = sets.filter(pk=token.golden_set_id)
    return sets.annotate(
        active_queries=Count("queries", filter=Q(queries__retired_at__isnull=True), distinct=True),
        latest_version_number=Max("versions__number"),
    )


# --- slices ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SliceFilter:
    """A slice named as scores name them, "query:FIELD=VALUE" or "page:FIELD=VALUE"."""

    kind: str  # "query" or "page"
    field: str
    value: str

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.field}={self.value}"


def slice_parse(text: str, version: Version) -> SliceFilter:
    """The slice `text` names in `version`: "FIELD=VALUE", or with its kind in front
    ("query:lang=de", "page:doc_type=faq"), as Score.slice names it.

    A bare FIELD is looked up among the version's query slice fields, then its page slice
    fields. Raises GoldsetError (field "slice") for a malformed text, an unknown field, or
    a bare field that is both a query and a page slice field.
    """
    kind, rest = "", text
    for prefix in ("query:", "page:"):
        if text.startswith(prefix):
            kind, rest = prefix[:-1], text[len(prefix) :]
    field, equals, value = rest.partition("=")
    if not equals or not field:
        raise GoldsetError(f"slice {text!r} is not of the form FIELD=VALUE (e.g. lang=de)", field="slice")
    query_fields, page_fields = list(version.query_slice_fields), list(version.page_slice_fields)
    known = ", ".join([f"query:{f}" for f in query_fields] + [f"page:{f}" for f in page_fields]) or "none"
    if not kind:
        if field in query_fields and field in page_fields:
            raise GoldsetError(
                f"{field!r} is both a query and a page slice field of version {version.number}; "
                f"write query:{field}=... or page:{field}=...",
                field="slice",
            )
        kind = "query" if field in query_fields else "page" if field in page_fields else ""
    if not kind or field not in (query_fields if kind == "query" else page_fields):
        raise GoldsetError(f"{field!r} is not a slice field of version {version.number} (slice fields: {known})", field="slice")
    return SliceFilter(kind=kind, field=field, value=value)


# --- a version's queries --------------------------------------------------------------


def version_query_order(version: Version, query_slice: tuple[str, str] | None = None) -> list[int]:
    """Primary keys of the version's VersionQuery rows in natural query id order, only
    those of `query_slice` (FIELD, VALUE) when given; two small columns a query, so a page
    of them can be taken from the whole list without loading its rows."""
    rows = VersionQuery.objects.filter(version=version)
    if query_slice is not None:
        rows = in_slice(rows, *query_slice)
    pairs = list(rows.values_list("pk", "query__query_id"))
    pairs.sort(key=lambda pair: natural_key(pair[1]))
    return [pk for pk, _ in pairs]


@dataclass(frozen=True)
class VersionQueryRow:
    query_id: str
    text: str
    metadata: dict
    label_count: int
    relevant_count: int
    reference_answer: dict | None = None  # as the version froze it: answer, aliases, key_facts
    # The sampling weight as the version froze it (traffic.sampling); None, "", None when not drawn.
    inclusion_probability: float | None = None
    stratum: str = ""
    traffic_count: int | None = None


def version_query_rows(version: Version, pks: Sequence[int]) -> list[VersionQueryRow]:
    """The rows `pks` (from version_query_order) in that order, each with its label and
    relevant counts and its reference answer in `version`: three queries however many rows
    (two when the version holds no answer)."""
    found = {
        vq.pk: vq
        for vq in VersionQuery.objects.filter(pk__in=list(pks))
        .select_related("query")
        .only("metadata", "inclusion_probability", "stratum", "traffic_count", "query__query_id", "query__text")
    }
    counts = {
        row["query_id"]: row
        for row in VersionLabel.objects.filter(version=version, query_id__in=[vq.query_id for vq in found.values()])
        .values("query_id")
        .annotate(labels=Count("pk"), relevant=Count("pk", filter=Q(grade__gte=version.relevance_threshold)))
    }
    answers = version_reference_answers(version, [vq.query_id for vq in found.values()])
    rows = []
    for pk in pks:
        vq = found[pk]
        count = counts.get(vq.query_id, {"labels": 0, "relevant": 0})
        answer = answers.get(vq.query_id)
        rows.append(
            VersionQueryRow(
                vq.query.query_id,
                vq.query.text,
                vq.metadata,
                count["labels"],
                count["relevant"],
                answer.to_dict() if answer else None,
                vq.inclusion_probability,
                vq.stratum,
                vq.traffic_count,
            )
        )
    return rows


# --- evaluations ----------------------------------------------------------------------


def evaluations_of(golden_set: GoldenSet) -> QuerySet[Evaluation]:
    """The set's evaluations without their large blobs, with run and version."""
    return Evaluation.objects.filter(run__golden_set=golden_set).select_related("run", "version").defer("per_query", "recall_curve")


@dataclass
class EvaluationFigures:
    """An evaluation with its scores and completeness rows. Scores are fractions in [0, 1]."""

    evaluation: Evaluation
    scores: list[Score]
    completeness: list[Completeness]


def evaluation_figures(evaluations: Sequence[Evaluation]) -> list[EvaluationFigures]:
    """The scores and completeness rows of `evaluations`: two queries however many."""
    ids = [e.pk for e in evaluations]
    scores: dict[int, list[Score]] = {pk: [] for pk in ids}
    for score in Score.objects.filter(evaluation_id__in=ids).order_by("evaluation_id", "slice", "id"):
        scores[score.evaluation_id].append(score)
    completeness: dict[int, list[Completeness]] = {pk: [] for pk in ids}
    for row in Completeness.objects.filter(evaluation_id__in=ids).order_by("evaluation_id", "slice"):
        completeness[row.evaluation_id].append(row)
    return [EvaluationFigures(e, scores[e.pk], completeness[e.pk]) for e in evaluations]


# --- monitoring -----------------------------------------------------------------------


def series_of(golden_set: GoldenSet) -> QuerySet[Series]:
    """The set's series by name, each with its endpoint (or none) and its run count."""
    return (
        Series.objects.filter(golden_set=golden_set)
        .select_related("golden_set", "endpoint")
        .annotate(run_count=Count("runs"))
        .order_by("name", "id")
    )


def series_get(golden_set: GoldenSet, name: str) -> Series:
    """The set's series named `name` (exactly), or Http404."""
    series = Series.objects.filter(golden_set=golden_set, name=name).select_related("golden_set").first()
    if series is None:
        raise Http404(f"golden set {golden_set.slug!r} has no series {name!r}")
    return series


def endpoint_get(golden_set: GoldenSet, name: str) -> Endpoint:
    """The set's endpoint named `name`, with its series, or Http404."""
    endpoint = Endpoint.objects.filter(golden_set=golden_set, name=name).select_related("series").first()
    if endpoint is None:
        raise Http404(f"golden set {golden_set.slug!r} has no endpoint {name!r}")
    return endpoint


def endpoints_with_nights(endpoints: Sequence[Endpoint], *, now: datetime) -> list[Endpoint]:
    """`endpoints`, each given `last_night` (its latest night done or failed), `running`
    (a night pending or running), `next_run_at` and `next_probe_at`, as
    EndpointOutputSerializer reads them: one query however many endpoints."""
    endpoints = list(endpoints)
    latest = latest_nights(endpoint.pk for endpoint in endpoints)
    for endpoint in endpoints:
        nights = latest[endpoint.pk]
        endpoint.last_night, endpoint.running = nights.last, nights.running
        for night in (nights.last, nights.running):
            if night is not None:
                night.endpoint = endpoint
        endpoint.next_run_at, endpoint.next_probe_at = next_run_at(endpoint, now), next_probe_at(endpoint, now)
    return endpoints


def endpoint_night_get(endpoint: Endpoint, night_id: int) -> NightlyRun:
    """Night `night_id` of `endpoint`, or Http404 (a night of another endpoint is as absent as none)."""
    night = NightlyRun.objects.filter(endpoint=endpoint, pk=night_id).select_related("version").first()
    if night is None:
        raise Http404(f"endpoint {endpoint.name!r} has no night {night_id}")
    night.endpoint = endpoint
    return night


def probe_history(endpoint: Endpoint, *, limit: int) -> list[ProbeRound]:
    """The endpoint's last `limit` probe rounds, newest first, each with `probe_list` (its
    probes with canary, query and page, in canary order): two queries."""
    rounds = list(ProbeRound.objects.filter(endpoint=endpoint).order_by("-slot", "-id")[:limit])
    probes: dict[int, list[Probe]] = {probe_round.pk: [] for probe_round in rounds}
    rows = Probe.objects.filter(round_id__in=list(probes)).select_related("canary__query", "canary__page").order_by("canary_id")
    for probe in rows:
        probes[probe.round_id].append(probe)
    for probe_round in rounds:
        probe_round.probe_list = probes[probe_round.pk]
    return rounds
