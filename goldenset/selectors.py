"""Reads of golden sets: access checks, resolved labels, version exports and diffs."""

from collections.abc import Iterable, Iterator

from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db.models import CharField, Count, Q, QuerySet, TextField, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.http import Http404

from goldenset.answers import version_answer_rows
from goldenset.models import (
    GoldenSet,
    Judgment,
    Membership,
    OrganisationMembership,
    PublishJob,
    Query,
    TeamMembership,
    Version,
    VersionDuplicate,
    VersionLabel,
    VersionPage,
    VersionQuery,
    VersionSpan,
)
from goldenset.resolution import labels_of_rows
from lib.errors import ConflictError
from lib.hashing import VersionEvidence, version_hash, weight_line_json
from lib.ids import natural_key

# Roles that may read a golden set's labels, versions and scores. Annotators judge
# blind, so they are not among them.
READ_ROLES = (Membership.Role.MANAGER, Membership.Role.ADJUDICATOR)


# Where user_roles keeps what it read on the user object: a request reads a user's roles in
# its set several times (the access check, the set menu, a page's own "may edit"), and the
# user object lives one request. membership_grant and membership_revoke forget it.
ROLES_MEMO = "_goldset_roles"


# What an organisation's admin holds in every set of its teams (goldenset.models.teams):
# user_roles, holders_of and golden_sets_for each read it from here.
ADMIN_HOLDS = Membership.Role.MANAGER


def roles_forget(user: AbstractBaseUser) -> None:
    """Drop what user_roles remembered on this user object: a grant or a revoke changed them."""
    if hasattr(user, ROLES_MEMO):
        delattr(user, ROLES_MEMO)


def user_roles(user: AbstractBaseUser, golden_set: GoldenSet) -> set[str]:
    if not user.is_authenticated:
        return set()
    memo = getattr(user, ROLES_MEMO, None)
    if memo is None:
        memo = {}
        setattr(user, ROLES_MEMO, memo)
    if golden_set.pk not in memo:
        memo[golden_set.pk] = frozenset(_held_roles(user, golden_set))
    return set(memo[golden_set.pk])


def _held_roles(user: AbstractBaseUser, golden_set: GoldenSet) -> list[str]:
    """The roles `user` holds in the set, one query: granted in the set, granted in its team,
    and manager for an admin of the team's organisation (goldenset.models.teams)."""
    in_set = Membership.objects.filter(user=user, golden_set=golden_set).values_list("role")
    in_team = TeamMembership.objects.filter(user=user, team_id=golden_set.team_id).values_list("role")
    as_admin = (
        OrganisationMembership.objects.filter(user=user, role=OrganisationMembership.Role.ADMIN, organisation__teams=golden_set.team_id)
        .annotate(manager=Value(ADMIN_HOLDS.value, output_field=CharField()))
        .values_list("manager")
    )
    return [role for (role,) in in_set.union(in_team, as_admin)]


def holders_of(golden_set: GoldenSet, roles: Iterable[str]) -> Q:
    """A filter of users on the roles they hold in the set, granted there or in its team, or
    as admins of its organisation (who are its managers): for lists of members, owners of an
    incident, the people an alert mails. Subqueries, so that a person is listed once."""
    roles = list(roles)
    held = Q(pk__in=Membership.objects.filter(golden_set=golden_set, role__in=roles).values("user_id")) | Q(
        pk__in=TeamMembership.objects.filter(team_id=golden_set.team_id, role__in=roles).values("user_id")
    )
    if ADMIN_HOLDS in roles:
        held |= Q(
            pk__in=OrganisationMembership.objects.filter(
                role=OrganisationMembership.Role.ADMIN, organisation__teams=golden_set.team_id
            ).values("user_id")
        )
    return held


def access_golden_set(user: AbstractBaseUser, slug: str, roles: tuple[str, ...] = READ_ROLES) -> GoldenSet:
    """Fetch the golden set `slug` if `user` holds one of `roles` in it (staff always do).

    Raises Http404 otherwise, so that a stranger cannot tell which slugs exist.
    """
    if not user.is_authenticated:
        raise Http404("no such golden set")
    try:
        golden_set = GoldenSet.objects.select_related("corpus", "team__organisation").get(slug=slug)
    except GoldenSet.DoesNotExist:
        raise Http404("no such golden set") from None
    if user.is_staff or user_roles(user, golden_set) & set(roles):
        return golden_set
    raise Http404("no such golden set")


def golden_sets_for(user: AbstractBaseUser, roles: tuple[str, ...] = READ_ROLES) -> QuerySet[GoldenSet]:
    """The golden sets `user` may read, with their query and version counts."""
    sets = GoldenSet.objects.select_related("corpus", "team")
    if not user.is_staff:
        reach = Q(pk__in=Membership.objects.filter(user=user, role__in=roles).values("golden_set_id")) | Q(
            team__in=TeamMembership.objects.filter(user=user, role__in=roles).values("team_id")
        )
        if ADMIN_HOLDS in roles:
            reach |= Q(
                team__organisation__in=OrganisationMembership.objects.filter(user=user, role=OrganisationMembership.Role.ADMIN).values(
                    "organisation_id"
                )
            )
        sets = sets.filter(reach)
    return sets.annotate(query_total=Count("queries", distinct=True), version_total=Count("versions", distinct=True)).order_by("slug")


def resolved_labels(golden_set: GoldenSet) -> list[tuple[int, int, int]]:
    """(query pk, page pk, grade) for every judged pair of the set, in (query pk, page pk)
    order, each pair's label by the rule of goldenset.resolution (the latest adjudication,
    else the lower median of each person's latest grade, else the latest import). One query."""
    rows = Judgment.objects.filter(query__golden_set=golden_set).values_list("query_id", "page_id", "grade", "source", "annotator_id", "id")
    query, page, label = labels_of_rows(rows.iterator(chunk_size=20_000))
    return list(zip(query.tolist(), page.tolist(), label.tolist()))


def label_resolve(grades: list[int]) -> int:
    """The label of a pair whose people's latest grades are `grades`, one grade a person:
    the lower median (goldenset.resolution). Raises ValueError for no grade."""
    if not grades:
        raise ValueError("a label needs at least one grade")
    _, _, label = labels_of_rows((0, 0, grade, Judgment.Source.HUMAN, person, person) for person, grade in enumerate(grades, 1))
    return int(label[0])


def label_of(judgments: Iterable[tuple[int, str, int | None]]) -> int | None:
    """The label of one pair from its (grade, source, annotator pk) judgments, NEWEST
    FIRST, by the rule of goldenset.resolution; None for no judgment."""
    _, _, label = labels_of_rows((0, 0, grade, source, annotator_pk, -age) for age, (grade, source, annotator_pk) in enumerate(judgments))
    return int(label[0]) if len(label) else None


def pair_label(*, query_pk: int, page_pk: int) -> int | None:
    """The resolved label of one pair (goldenset.resolution), or None if nobody judged it.
    One query."""
    return label_of(
        Judgment.objects.filter(query_id=query_pk, page_id=page_pk).order_by("-id").values_list("grade", "source", "annotator_id")
    )


def version_get(golden_set: GoldenSet, number: int | str | None) -> Version:
    """Version `number` of the set, or its latest for None or "latest"; Http404 if none."""
    versions = golden_set.versions.select_related("author")
    version = versions.order_by("-number").first() if number in (None, "latest") else versions.filter(number=number).first()
    if version is None:
        raise Http404(f"golden set {golden_set.slug!r} has no version {number or ''}".strip())
    return version


class VersionIntegrityError(ConflictError):
    """A version's stored rows no longer give its content hash: its exports are withheld."""

    code = "version_damaged"
    http_status = 409


def version_settings(source: GoldenSet | Version) -> dict:
    """The settings a version's numbers depend on, as its content hash covers them."""
    return {
        "relevance_threshold": source.relevance_threshold,
        "k_first": source.k_first,
        "k_final": source.k_final,
        "query_slice_fields": list(source.query_slice_fields),
        "page_slice_fields": list(source.page_slice_fields),
    }


class _NotInCanonicalOrder(Exception):
    pass


def _checked_order(rows: Iterable[tuple], what: str) -> Iterator[tuple]:
    """Yield rows that must come in the natural order of their first item; raise if not."""
    previous = None
    for row in rows:
        key = natural_key(row[0])
        if previous is not None and key <= previous:
            raise _NotInCanonicalOrder(what)
        previous = key
        yield row


def _label_rows(rows: QuerySet) -> Iterator[tuple[str, str, int]]:
    """(query_id, doc_id, grade) of VersionLabel `rows` in the version's canonical order, streamed."""
    return rows.order_by("position").values_list("query__query_id", "page__doc_id", "grade").iterator(chunk_size=20_000)


def version_recomputed_hash(version: Version) -> str:
    """The content hash that the version's stored rows give today, read as streams.

    Publishing writes a version's query and page snapshots in the natural order of their
    ids, so reading them by row id streams them in hash order in constant memory; rows
    found out of that order (written some other way) are read again and sorted.
    """
    try:
        return _stored_rows_hash(version, in_id_order=True)
    except _NotInCanonicalOrder:
        return _stored_rows_hash(version, in_id_order=False)


def _stored_rows_hash(version: Version, *, in_id_order: bool) -> str:
    queries = VersionQuery.objects.filter(version=version).values_list("query__query_id", "metadata")
    pages = VersionPage.objects.filter(version=version).values_list("page__doc_id", "metadata", "published_at", "content_hash")
    if in_id_order:
        queries = _checked_order(queries.order_by("id").iterator(chunk_size=20_000), "queries")
        pages = _checked_order(pages.order_by("id").iterator(chunk_size=20_000), "pages")
    else:
        queries = sorted(queries, key=lambda row: natural_key(row[0]))
        pages = sorted(pages, key=lambda row: natural_key(row[0]))
    labels = VersionLabel.objects.filter(version=version)
    return version_hash(version_settings(version), _label_rows(labels), queries, pages, version_evidence(version))


def version_evidence(version: Version) -> VersionEvidence:
    """The hops, evidence spans, duplicate groups and reference answers a version holds,
    in its canonical order (labels' position, then a span's start; duplicates by member
    doc_id; answers by query id), as its content hash covers them."""
    hops, spans, duplicates = [], [], []
    if version.hop_count:
        hops = list(
            VersionLabel.objects.filter(version=version)
            .exclude(hop="")
            .order_by("position")
            .values_list("query__query_id", "page__doc_id", "hop")
        )
    if version.span_count:
        spans = sorted(
            VersionSpan.objects.filter(version=version).values_list("query__query_id", "page__doc_id", "start", "end", "grade"),
            key=lambda row: (natural_key(row[0]), natural_key(row[1]), row[2]),
        )
    if version.duplicate_count:
        duplicates = sorted(
            VersionDuplicate.objects.filter(version=version).values_list("page__doc_id", "group_page__doc_id"),
            key=lambda row: natural_key(row[0]),
        )
    return VersionEvidence(
        hops=hops,
        spans=spans,
        span_overlap=(version.span_min_overlap_chars, version.span_min_overlap_share),
        duplicates=duplicates,
        answers=[(query_id, text.hash_json()) for query_id, text in version_answer_rows(version)],
        weights=version_weight_lines(version),
    )


def version_weight_lines(version: Version) -> list[tuple[str, str]]:
    """(query_id, weight_line_json) of the version's queries that carry a sampling weight, in
    natural query id order: none for a version of a set never drawn from a query log."""
    rows = (
        VersionQuery.objects.filter(version=version)
        .filter(Q(inclusion_probability__isnull=False) | Q(traffic_count__isnull=False) | ~Q(stratum=""))
        .values_list("query__query_id", "inclusion_probability", "stratum", "traffic_count")
    )
    return sorted(((query_id, weight_line_json(*weight)) for query_id, *weight in rows), key=lambda row: natural_key(row[0]))


def version_check_intact(version: Version) -> None:
    """Raise VersionIntegrityError unless the version's rows still give its content hash.

    The database refuses every change a version's hash depends on (migration 0005 of
    goldenset freezes the ids it reads), so this guards against what bypassed that: a
    trigger dropped, rows restored from elsewhere, a version damaged before the freeze.
    A version found intact stays so; the result is kept in Django's cache, which the web
    servers share when CACHE_URL names a Redis (else it is per process).
    """
    key = f"goldset:version-intact:{version.pk}:{version.content_hash}:{version.created_at.isoformat()}"
    if cache.get(key):
        return
    if version_recomputed_hash(version) != version.content_hash:
        raise VersionIntegrityError(
            f"version {version.number} of {version.golden_set.slug!r} no longer matches its content hash "
            f"{version.short_hash}: its stored ids or labels were changed after it was published, so its "
            f"exports are withheld; publish a new version and tell its users"
        )
    cache.set(key, True, timeout=None)


def version_label_rows(
    version: Version,
    *,
    query_slice: tuple[str, str] | None = None,
    page_slice: tuple[str, str] | None = None,
) -> Iterator[tuple[str, str, int]]:
    """(query_id, doc_id, grade) of a version in its canonical order, streamed from the database.

    Checks first that the version still matches its content hash (`version_check_intact`),
    so an export pinned by (number, hash) is exactly what was published, or refused.

    `query_slice` (FIELD, VALUE) keeps the labels of the queries whose snapshotted metadata
    (VersionQuery.metadata) has FIELD = VALUE; `page_slice` likewise keeps the labels of
    the pages whose snapshotted metadata (VersionPage.metadata) has it. Values compare as
    the JSON value's text ("de", "2024", "true").
    """
    version_check_intact(version)
    rows = VersionLabel.objects.filter(version=version)
    if query_slice is not None:
        rows = rows.filter(query_id__in=in_slice(VersionQuery.objects.filter(version=version), *query_slice).values("query_id"))
    if page_slice is not None:
        rows = rows.filter(page_id__in=in_slice(VersionPage.objects.filter(version=version), *page_slice).values("page_id"))
    return _label_rows(rows)


def in_slice(snapshots: QuerySet, field: str, value: str) -> QuerySet:
    """The rows of `snapshots` whose `metadata` has FIELD = VALUE, compared as the JSON
    value's text ("de", "2024", "true")."""
    # KeyTextTransform rather than metadata__FIELD: a field name may hold "__". The Cast
    # makes the comparison one of text on SQLite too, where Django would otherwise read
    # the value compared with as JSON (JSON_EXTRACT('de', '$'): "malformed JSON").
    return snapshots.alias(slice_value=Cast(KeyTextTransform(field, "metadata"), TextField())).filter(slice_value=value)


def query_count_active(golden_set: GoldenSet) -> int:
    return Query.objects.filter(golden_set=golden_set, retired_at__isnull=True).count()


def publish_jobs_recent(golden_set: GoldenSet, limit: int = 5) -> list[PublishJob]:
    """The set's latest publish jobs, newest first, with their version and who asked: so a
    manager who left a publish page finds the job again (one query)."""
    return list(
        PublishJob.objects.filter(golden_set=golden_set).select_related("version", "created_by").order_by("-created_at", "-pk")[:limit]
    )
