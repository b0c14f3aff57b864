"""Reads of the API app: tokens, and the rows the endpoints page through."""

from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Max, Q, QuerySet

from api.models import ApiToken
from evaluation.models import Completeness, Evaluation, Score
from goldenset.models import GoldenSet, Version, VersionLabel, VersionQuery
from goldenset.selectors import golden_sets_for, in_slice
from lib.errors import GoldsetError
from lib.ids import natural_key


def api_token_by_secret(secret: str) -> ApiToken | None:
    return ApiToken.objects.select_related("owner").filter(key_hash=ApiToken.hash_secret(secret)).first()


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
            kind, rest = prefix[:-1], text[len(prefix):]
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


def version_query_rows(version: Version, pks: Sequence[int]) -> list[VersionQueryRow]:
    """The rows `pks` (from version_query_order) in that order, each with its label and
    relevant counts in `version`: two queries however many rows."""
    found = {
        vq.pk: vq for vq in VersionQuery.objects.filter(pk__in=list(pks)).select_related("query").only(
            "metadata", "query__query_id", "query__text"
        )
    }
    counts = {
        row["query_id"]: row
        for row in VersionLabel.objects.filter(version=version, query_id__in=[vq.query_id for vq in found.values()])
        .values("query_id")
        .annotate(labels=Count("pk"), relevant=Count("pk", filter=Q(grade__gte=version.relevance_threshold)))
    }
    rows = []
    for pk in pks:
        vq = found[pk]
        count = counts.get(vq.query_id, {"labels": 0, "relevant": 0})
        rows.append(VersionQueryRow(vq.query.query_id, vq.query.text, vq.metadata, count["labels"], count["relevant"]))
    return rows


# --- evaluations ----------------------------------------------------------------------

def evaluations_of(golden_set: GoldenSet) -> QuerySet[Evaluation]:
    """The set's evaluations without their large blobs, with run and version."""
    return (
        Evaluation.objects.filter(run__golden_set=golden_set)
        .select_related("run", "version")
        .defer("per_query", "recall_curve")
    )


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
