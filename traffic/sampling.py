"""Draw a golden set's queries from one of its query logs, with known weights.

`draw_queries` samples a log's distinct queries (LoggedQuery) by a design of traffic.designs
(srs, stratified by a slice field or by head/torso/tail of traffic, pps by count) with a
seed, and makes the drawn queries the set's weighted sample, in one transaction:

- a drawn query whose text the set already holds (same merge key, traffic.normalizing) is
  marked drawn: its inclusion_probability, stratum and traffic_count are set;
- any other joins the set as a new query (goldenset.services.queries_add) whose id is
  `log-` and the first 16 hex digits of the sha256 of its merge key (the same text gets the
  same id from any log, any draw), with the log's slice fields as its metadata;
- queries holding a weight from an earlier draw that this one did not pick lose it (the
  set's weighted sample is one draw and its top-ups: mixing two draws' pi would be wrong),
  and count as added by hand from then on.

`draw_top_up` draws more queries of one stratum of the set's latest draw from that log, by
simple random sampling among the stratum's queries not drawn yet, up to a number of queries
or to the number a target minimum detectable drop needs (evaluation.alerts.noise), and sets
pi = n_h_total / N_h on every drawn query of the stratum (SEMANTICS.md).

Every draw is a QueryDraw (design, strata field, size, seed, per-stratum summary
{"population", "drawn", "events"}) with a DrawnQuery per query: the same arguments on the same
log draw the same queries.
"""

import hashlib
from dataclasses import dataclass

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from evaluation.alerts import noise
from evaluation.alerts.slice_power import slice_power
from evaluation.models import Evaluation
from evaluation.selectors import PerQuery, evaluation_settings
from goldenset.models import GoldenSet, Query
from goldenset.services import queries_add
from lib.errors import GoldsetError
from lib.formats import JsonRecord
from traffic import designs
from traffic.models import DrawnQuery, LoggedQuery, QueryDraw, QueryLog
from traffic.normalizing import query_merge_key

TRAFFIC = "traffic"  # the strata field of head, torso and tail
MISSING = "(none)"  # the stratum of queries without a value of the strata field
BLOCK = 2_000  # pks per IN list: under SQLite's bound on a statement's variables


@dataclass(frozen=True)
class Population:
    """A log's distinct queries in canonical order (count descending, then merge key)."""

    pks: np.ndarray
    counts: np.ndarray
    strata: list[str]  # each query's stratum ("" when the draw has no strata)


def stratum_label(value: str | None) -> str:
    """A slice value's text (as the database gives a JSON value's text, as slices compare
    them) as a stratum's name; a missing or empty value MISSING."""
    return MISSING if value is None or value == "" else str(value)[:200]


def log_of(golden_set: GoldenSet, name: str) -> QueryLog:
    log = QueryLog.objects.filter(golden_set=golden_set, name=name).first()
    if log is None:
        known = ", ".join(QueryLog.objects.filter(golden_set=golden_set).values_list("name", flat=True)) or "none"
        raise GoldsetError(f"golden set {golden_set.slug!r} has no query log {name!r} (its logs: {known})", field="log")
    return log


def population_read(log: QueryLog, strata_field: str) -> Population:
    rows = LoggedQuery.objects.filter(log=log).order_by("-count", "normalized")
    if strata_field and strata_field != TRAFFIC:
        # The field's value as text, cut out by the database: a log of a million queries
        # then sends a short string a query, not its whole fields object to decode.
        value = Cast(KeyTextTransform(strata_field, "fields"), TextField())
        triples = list(rows.annotate(value=value).values_list("pk", "count", "value").iterator(chunk_size=20_000))
        pks = np.array([row[0] for row in triples], dtype=np.int64)
        counts = np.array([row[1] for row in triples], dtype=np.float64)
        return Population(pks, counts, [stratum_label(row[2]) for row in triples])
    pairs = np.array(list(rows.values_list("pk", "count").iterator(chunk_size=20_000)), dtype=np.int64).reshape(-1, 2)
    counts = pairs[:, 1].astype(np.float64)
    strata = designs.traffic_strata(counts) if strata_field == TRAFFIC else [""] * len(pairs)
    return Population(pairs[:, 0], counts, strata)


def _check_draw(log: QueryLog, *, size: int, design: str, strata_field: str, allocation: str, seed: int) -> None:
    if design not in QueryDraw.Design.values:
        raise GoldsetError(f"design: {design!r} is not one of {', '.join(QueryDraw.Design.values)}", field="design")
    if design == QueryDraw.Design.STRATIFIED:
        if not strata_field:
            raise GoldsetError(f"strata: a stratified draw needs a strata field ({TRAFFIC!r} or one of the log's fields)", field="strata")
        if strata_field != TRAFFIC and strata_field not in (log.fields or []):
            fields = ", ".join([TRAFFIC, *(log.fields or [])])
            raise GoldsetError(f"strata: log {log.name!r} has no field {strata_field!r} (it has: {fields})", field="strata")
    elif strata_field:
        raise GoldsetError(f"strata: only a stratified draw has strata, not a {design!r} one", field="strata")
    if allocation not in designs.ALLOCATIONS:
        raise GoldsetError(f"allocation: {allocation!r} is not one of {', '.join(designs.ALLOCATIONS)}", field="allocation")
    if not isinstance(size, int) or size < 1:
        raise GoldsetError(f"size: {size!r} is not a positive number of queries", field="size")
    if not isinstance(seed, int) or seed < 0:
        raise GoldsetError(f"seed: {seed!r} is not a non-negative integer", field="seed")
    population = LoggedQuery.objects.filter(log=log).count()
    if size > population:
        raise GoldsetError(f"size: {size} is more than the {population} distinct queries of log {log.name!r}", field="size")


def strata_summary(population: Population, drawn: dict[str, int]) -> dict[str, dict[str, int]]:
    """{stratum: {"population": N_h, "drawn": n_h, "events": E_h}}, "" the one stratum of an unstratified draw."""
    summary: dict[str, dict[str, int]] = {}
    for label, count in zip(population.strata, population.counts.tolist()):
        row = summary.setdefault(label, {"population": 0, "drawn": drawn.get(label, 0), "events": 0})
        row["population"] += 1
        row["events"] += int(count)
    return dict(sorted(summary.items()))


def draw_queries(
    *,
    golden_set: GoldenSet,
    log_name: str,
    size: int,
    design: str,
    seed: int,
    strata_field: str = "",
    allocation: str = designs.BY_QUERIES,
    user: AbstractBaseUser | None = None,
) -> QueryDraw:
    """Draw `size` of the log's distinct queries into the set (see the module's docstring);
    returns the recorded draw. GoldsetError, naming the field, on an unknown log, design,
    strata field or allocation, a size over the log's distinct queries or a bad seed:
    nothing written then."""
    log = log_of(golden_set, log_name)
    _check_draw(log, size=size, design=design, strata_field=strata_field, allocation=allocation, seed=seed)
    population = population_read(log, strata_field)
    rng = np.random.default_rng(seed)
    if design == QueryDraw.Design.SRS:
        drawn = designs.srs_draw(len(population.pks), size, rng)
        sizes = {"": size}
    elif design == QueryDraw.Design.PPS:
        drawn = designs.pps_draw(population.counts, size, rng)
        sizes = {"": size}
    else:
        drawn, sizes = designs.stratified_draw(population.strata, size, rng, counts=population.counts, allocation=allocation)
    target = {"allocation": allocation} if design == QueryDraw.Design.STRATIFIED else {}
    with transaction.atomic():
        draw = QueryDraw.objects.create(
            golden_set=golden_set,
            log=log,
            design=design,
            strata_field=strata_field,
            size=size,
            seed=seed,
            target=target,
            strata=strata_summary(population, sizes),
            created_by=user,
        )
        chosen = drawn.chosen.tolist()
        picked = _join_set(
            draw,
            [int(population.pks[i]) for i in chosen],
            {int(population.pks[i]): (float(drawn.pi[i]), population.strata[i]) for i in chosen},
        )
        # The set's weighted sample is this draw now: earlier weights not re-drawn are cleared.
        Query.objects.filter(golden_set=golden_set, inclusion_probability__isnull=False).exclude(pk__in=picked).update(
            inclusion_probability=None, stratum="", traffic_count=None
        )
    return draw


def _join_set(draw: QueryDraw, logged_pks: list[int], weights: dict[int, tuple[float, str]]) -> list[int]:
    """Add or mark the drawn LoggedQuery rows `logged_pks` as the set's queries with their
    (pi, stratum) `weights`, record a DrawnQuery each and the draw's counts; returns the
    Query pks."""
    golden_set = draw.golden_set
    logged = {}
    for start in range(0, len(logged_pks), BLOCK):
        for row in LoggedQuery.objects.filter(pk__in=logged_pks[start : start + BLOCK]).only("normalized", "text", "count", "fields"):
            logged[row.pk] = row
    held = {}
    for query in Query.objects.filter(golden_set=golden_set, retired_at__isnull=True).only("pk", "text", "query_id"):
        held.setdefault(query_merge_key(query.text), query)
    taken = set(Query.objects.filter(golden_set=golden_set).values_list("query_id", flat=True))
    records, marked, query_of = [], [], {}
    for pk in logged_pks:
        row = logged[pk]
        query = held.get(row.normalized) or held.get(query_merge_key(row.text))
        if query is not None:
            marked.append(query)
            query_of[pk] = query
            continue
        query_id = _new_query_id(row.normalized, taken)
        taken.add(query_id)
        records.append(JsonRecord(line=len(records) + 1, id=query_id, text=row.text, metadata=dict(row.fields or {})))
        query_of[pk] = query_id
    created = {query.query_id: query for query in queries_add(golden_set=golden_set, records=records)} if records else {}
    queries = []
    for pk in logged_pks:
        query = query_of[pk] if isinstance(query_of[pk], Query) else created[query_of[pk]]
        query_of[pk] = query
        pi, stratum = weights[pk]
        query.inclusion_probability, query.stratum, query.traffic_count = pi, stratum, logged[pk].count
        queries.append(query)
    Query.objects.bulk_update(queries, ["inclusion_probability", "stratum", "traffic_count"], batch_size=BLOCK)
    DrawnQuery.objects.bulk_create(
        [
            DrawnQuery(draw=draw, logged_query_id=pk, query=query_of[pk], inclusion_probability=weights[pk][0], stratum=weights[pk][1])
            for pk in logged_pks
        ],
        batch_size=BLOCK,
    )
    draw.added_count, draw.marked_count = len(records), len(marked)
    draw.save(update_fields=["added_count", "marked_count"])
    return [query.pk for query in queries]


def _new_query_id(merge_key: str, taken: set[str]) -> str:
    """`log-` and 16 hex digits of the merge key's sha256; `-2`, `-3`... after it in the
    rare case the set holds that id already (a retired query keeps its id forever)."""
    base = "log-" + hashlib.sha256(merge_key.encode("utf-8")).hexdigest()[:16]
    query_id, n = base, 1
    while query_id in taken:
        n += 1
        query_id = f"{base}-{n}"
    return query_id


# --- top-ups --------------------------------------------------------------------------


def latest_base_draw(golden_set: GoldenSet, log: QueryLog) -> QueryDraw | None:
    """The set's latest draw from `log` that is not a top-up: the one a top-up extends."""
    return (
        QueryDraw.objects.filter(golden_set=golden_set, log=log).exclude(target__has_key="stratum").order_by("-created_at", "-pk").first()
    )


def queries_to_detect(golden_set: GoldenSet, stratum: str, points: float) -> int:
    """The queries a stratum needs for a one-sided paired test to detect a drop of `points`
    (hundredths) of the recall its slices are judged by, with the spread of that recall over
    the stratum's queries in the set's latest finished evaluation (taken as two independent
    runs', sqrt(2) * sd, as slice_power does without a previous night), at the alpha and
    power slice_power states for all queries. GoldsetError when there is no evaluation yet
    or the stratum's queries there have no spread."""
    evaluation = (
        Evaluation.objects.filter(version__golden_set=golden_set, status=Evaluation.Status.DONE)
        .exclude(per_query=None)
        .select_related("run", "version")
        .order_by("-version__number", "-pk")
        .first()
    )
    if evaluation is None:
        raise GoldsetError("to-detect: the set has no finished evaluation to measure the spread of its queries on", field="to_detect")
    power = slice_power(evaluation).get("")
    per_query = PerQuery.from_bytes(bytes(evaluation.per_query))
    found = per_query.slice_values("", power.metric) if power else None
    if power is None or found is None:
        raise GoldsetError("to-detect: the latest evaluation kept no per-query values", field="to_detect")
    members = set(Query.objects.filter(golden_set=golden_set, stratum=stratum).values_list("query_id", flat=True))
    values = np.array([value for query_id, value in zip(found[0], found[1].tolist()) if query_id in members])
    sd = float(np.std(values, ddof=1)) * np.sqrt(2) if len(values) > 1 else 0.0
    settings = evaluation_settings(golden_set)
    needed = noise.queries_needed(sd, points / 100, alpha=power.alpha, power=settings.alert_power)
    if needed is None:
        raise GoldsetError(
            f"to-detect: stratum {stratum!r} has {len(values)} scored queries with no spread in evaluation {evaluation.pk}: "
            "nothing to size it by; top it up --to a number of queries",
            field="to_detect",
        )
    return needed


def draw_top_up(
    *,
    golden_set: GoldenSet,
    log_name: str,
    stratum: str,
    seed: int,
    to: int | None = None,
    to_detect: float | None = None,
    user: AbstractBaseUser | None = None,
) -> QueryDraw:
    """Draw more queries of `stratum` of the set's latest draw from the log, by SRS among its
    queries not drawn yet, until it holds `to` drawn queries (or as many as a drop of
    `to_detect` points needs, queries_to_detect); every drawn query of the stratum then has
    pi = n_h / N_h. Returns the top-up's QueryDraw (size: the queries it added; target:
    {"stratum", "queries", "detectable_points"?}). GoldsetError, naming the field, when the
    log has no draw to top up, the draw is PPS (its pi are not n_h / N_h), the stratum is not
    one of the draw's, the target is missing or not above what the stratum holds, or beyond
    its population."""
    log = log_of(golden_set, log_name)
    base = latest_base_draw(golden_set, log)
    if base is None:
        raise GoldsetError(f"top-up: golden set {golden_set.slug!r} has no draw from log {log.name!r} to top up", field="top_up")
    if base.design == QueryDraw.Design.PPS:
        raise GoldsetError("top-up: a PPS draw has no strata to top up; draw again with a larger size", field="top_up")
    if stratum not in base.strata:
        known = ", ".join(repr(name) for name in base.strata)
        raise GoldsetError(f"top-up: {stratum!r} is not a stratum of the latest draw (its strata: {known})", field="top_up")
    if not isinstance(seed, int) or seed < 0:
        raise GoldsetError(f"seed: {seed!r} is not a non-negative integer", field="seed")
    if (to is None) == (to_detect is None):
        raise GoldsetError("to: give a number of queries (--to) or a detectable drop in points (--to-detect), one of them", field="to")
    if to_detect is not None and not to_detect > 0:
        raise GoldsetError(f"to-detect: {to_detect!r} is not a positive number of points", field="to_detect")
    target = to if to is not None else queries_to_detect(golden_set, stratum, to_detect)
    population = population_read(log, base.strata_field)
    members = np.flatnonzero(np.asarray(population.strata, dtype=object) == stratum)
    extension = QueryDraw.objects.filter(golden_set=golden_set, log=log, pk__gte=base.pk)
    already = set(DrawnQuery.objects.filter(draw__in=extension, stratum=stratum).values_list("logged_query_id", flat=True))
    if target > len(members):
        raise GoldsetError(f"to: {target} is more than the {len(members)} queries of stratum {stratum!r}", field="to")
    if target <= len(already):
        raise GoldsetError(f"to: stratum {stratum!r} holds {len(already)} drawn queries already, not fewer than {target}", field="to")
    free = np.array([i for i in members.tolist() if int(population.pks[i]) not in already], dtype=np.int64)
    extra = designs.srs_draw(len(free), target - len(already), np.random.default_rng(seed))
    pi = target / len(members)
    new_pks = [int(population.pks[i]) for i in free[extra.chosen].tolist()]
    summary = strata_summary(population, {stratum: target})
    with transaction.atomic():
        draw = QueryDraw.objects.create(
            golden_set=golden_set,
            log=log,
            design=base.design,
            strata_field=base.strata_field,
            size=len(new_pks),
            seed=seed,
            target={"stratum": stratum, "queries": target, **({"detectable_points": to_detect} if to_detect is not None else {})},
            strata={stratum: summary[stratum]},
            created_by=user,
        )
        _join_set(draw, new_pks, {pk: (pi, stratum) for pk in new_pks})
        # The stratum's earlier queries: one SRS of n_h_total of N_h now.
        earlier = DrawnQuery.objects.filter(draw__in=extension, stratum=stratum).exclude(draw=draw).values("query_id")
        Query.objects.filter(pk__in=earlier, golden_set=golden_set).update(inclusion_probability=pi)
    return draw
