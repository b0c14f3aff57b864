"""Writes of endpoints: register one (page, `endpoint_add`, API) and change it.

Validation comes first and names the field (an unreadable template, a header that holds a
literal secret, a cron line with six fields), and nothing is written unless all of it
passes. A new endpoint gets its series (`<name> nightly` unless another is named), which
its nightly runs join.
"""

import re
from dataclasses import fields
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from evaluation.services import series_for
from goldenset.audit import audit_record, changed_fields
from goldenset.models import Chunking, GoldenSet
from lib.cron import CronError, cron_parse
from lib.errors import ConflictError, GoldsetError
from monitoring.endpoints.spec import EndpointSpec, preset_defaults, spec_problems, suggested_count_url
from monitoring.models import (
    DEFAULT_INDEX_PROBE_SCHEDULE,
    DEFAULT_INDEX_RECALL_FLOOR,
    DEFAULT_PROBE_SCHEDULE,
    DEFAULT_RUN_SCHEDULE,
    Endpoint,
    NightlyRun,
)

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# Names the endpoint pages' URLs take for themselves (/endpoints/add/).
RESERVED_NAMES = frozenset({"add"})
# The fields of an Endpoint that describe the request and its reading (EndpointSpec's).
SPEC_FIELDS = tuple(f.name for f in fields(EndpointSpec))
# What else a manager may change after registering it.
SETTING_FIELDS = ("system", "run_schedule", "probe_schedule", "index_probe_schedule", "index_recall_floor", "enabled", "chunking")
# A nightly run asks every query of the version (ten thousand requests, minutes of a
# worker): more often than this it would be load on the endpoint, not monitoring.
MIN_RUN_INTERVAL = timedelta(hours=1)


def endpoint_spec(endpoint: Endpoint) -> EndpointSpec:
    """The endpoint's request and reading as the client takes them."""
    values = {name: getattr(endpoint, name) for name in SPEC_FIELDS if name != "headers"}
    return EndpointSpec(**values, headers=tuple((str(n), str(v)) for n, v in endpoint.headers))


def _headers(value) -> list[list[str]]:
    """[[name, value], ...] from pairs, a dict, or "Name: value" lines (the form's text)."""
    if isinstance(value, dict):
        return [[str(n), str(v)] for n, v in value.items()]
    if isinstance(value, str):
        pairs = []
        for number, line in enumerate(value.splitlines(), start=1):
            if not line.strip():
                continue
            name, colon, text = line.partition(":")
            if not colon or not name.strip():
                raise GoldsetError(f"headers line {number}: write a header as 'Name: value', not {line!r}", field="headers")
            pairs.append([name.strip(), text.strip()])
        return pairs
    return [[str(n), str(v)] for n, v in (value or [])]


def _check(values: dict) -> None:
    """GoldsetError listing every problem of the spec and schedules, each naming its field."""
    problems = []
    spec_values = {name: values[name] for name in SPEC_FIELDS if name in values}
    spec_values["headers"] = tuple((n, v) for n, v in values.get("headers", []))
    try:
        spec = EndpointSpec(**spec_values)
    except (TypeError, ValueError) as exc:
        raise GoldsetError(f"the endpoint cannot be read: {exc}") from None
    problems += spec_problems(spec, env_prefix=settings.RETRIEVAL_HEADER_ENV_PREFIX)
    floor = values.get("index_recall_floor", DEFAULT_INDEX_RECALL_FLOOR)
    if isinstance(floor, bool) or not isinstance(floor, int | float) or not 0 < floor <= 1:
        problems.append(f"index_recall_floor: must be a fraction over 0 and at most 1 (say 0.95), not {floor!r}")
    if spec.shard_path and not spec.has_exact_mode:
        problems.append(
            "shard_path: shards are read by the index probe, which needs an exact request (exact_body_template or exact_params_template)"
        )
    for field in ("run_schedule", "probe_schedule", "index_probe_schedule"):
        try:
            cron = cron_parse(values[field])
        except CronError as exc:
            problems.append(f"{field}: {exc}")
            continue
        gap = cron.shortest_gap(datetime(2026, 1, 1, tzinfo=UTC)) if field == "run_schedule" else None
        if gap is not None and gap < MIN_RUN_INTERVAL:
            problems.append(
                f"run_schedule: {cron.line!r} runs every {int(gap.total_seconds() // 60)} minute(s); a nightly run asks every "
                f"query of the version, so it may run at most once an hour (say '0 2 * * *')"
            )
    if problems:
        first_field = problems[0].split(":", 1)[0].strip()
        raise GoldsetError(
            f"the endpoint was not saved: {len(problems)} problem(s)",
            problems=problems,
            field=first_field if first_field in values else None,
        )


def endpoint_add(
    *,
    golden_set: GoldenSet,
    name: str,
    system: str,
    stage: str,
    preset: str,
    url: str,
    series: str = "",
    user: AbstractBaseUser | None = None,
    **options,
) -> Endpoint:
    """Register an endpoint of `golden_set`; unset request options take the preset's
    defaults (monitoring.endpoints.spec.preset_defaults). GoldsetError naming the field for
    anything that cannot work, ConflictError for a name or series taken."""
    name = (name or "").strip()
    if not NAME.match(name):
        raise GoldsetError(
            f"endpoint name {name!r}: use 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit",
            field="name",
        )
    if name in RESERVED_NAMES:
        raise GoldsetError(f"endpoint name {name!r} is taken by the pages themselves; choose another", field="name")
    system = (system or "").strip()
    if not system:
        raise GoldsetError("an endpoint needs the name of its system", field="system")
    if stage not in Endpoint.Stage.values:
        raise GoldsetError(f"unknown stage {stage!r}; choose one of {', '.join(Endpoint.Stage.values)}", field="stage")
    if preset not in Endpoint.Preset.values:
        raise GoldsetError(f"unknown preset {preset!r}; choose one of {', '.join(Endpoint.Preset.values)}", field="preset")
    unknown = sorted(set(options) - set(SPEC_FIELDS) - set(SETTING_FIELDS))
    if unknown:
        raise GoldsetError(f"unknown endpoint option(s): {', '.join(unknown)}")
    values = {**preset_defaults(preset), "preset": preset, "url": (url or "").strip()}
    given = {key: value for key, value in options.items() if value is not None and value != ""}
    values.update(given)
    # Defaults that follow from what was given: a GET sends no body whatever the preset's
    # method is; the count URL is derived from the search URL where the engine has one
    # (an OpenSearch index's _count, a Solr core's select with no rows), and without one
    # there is nothing to read a count from.
    if values.get("method") == "GET" and "body_template" not in given:
        values["body_template"] = ""
    if "count_url" not in given:
        values["count_url"] = suggested_count_url(preset, values["url"])
        if not values["count_url"] and "count_path" not in given:
            values["count_path"] = ""
    values["headers"] = _headers(values.get("headers", []))
    values["chunking"] = _chunking(golden_set, values.get("chunking"))
    values.setdefault("run_schedule", DEFAULT_RUN_SCHEDULE)
    values.setdefault("probe_schedule", DEFAULT_PROBE_SCHEDULE)
    values.setdefault("index_probe_schedule", DEFAULT_INDEX_PROBE_SCHEDULE)
    _check(values)
    if Endpoint.objects.filter(golden_set=golden_set, name=name).exists():
        raise ConflictError(f"golden set {golden_set.slug!r} already has an endpoint named {name!r}", field="name")
    series_name = (series or "").strip() or f"{name} nightly"
    try:
        with transaction.atomic():
            in_series = series_for(golden_set=golden_set, name=series_name)
            if Endpoint.objects.filter(series=in_series).exists():
                raise ConflictError(f"series {series_name!r} is fed by another endpoint already", field="series")
            model_fields = {f.name for f in Endpoint._meta.get_fields()}
            stored = {key: value for key, value in values.items() if key in model_fields}
            endpoint = Endpoint.objects.create(
                golden_set=golden_set, name=name, system=system, stage=stage, series=in_series, created_by=user, **stored
            )
            audit_record(
                user=user,
                action="endpoint.add",
                obj=endpoint,
                golden_set=golden_set,
                after={"name": name, "system": system, "stage": stage, "series": series_name, **stored},
                label=name,
            )
            return endpoint
    except IntegrityError:
        raise ConflictError(f"golden set {golden_set.slug!r} already has an endpoint named {name!r}", field="name") from None


def endpoint_update(*, endpoint: Endpoint, user: AbstractBaseUser | None = None, **changes) -> Endpoint:
    """Change an endpoint's request, reading, limits or schedules; the same checks as endpoint_add.

    Its name, stage and series stay: they are what its history is named by.
    """
    unknown = sorted(set(changes) - set(SPEC_FIELDS) - set(SETTING_FIELDS))
    if unknown:
        raise GoldsetError(f"these cannot be changed on an endpoint: {', '.join(unknown)}")
    values = {name: getattr(endpoint, name) for name in (*SPEC_FIELDS, *SETTING_FIELDS)}
    values.update(changes)
    values["headers"] = _headers(values["headers"])
    values["chunking"] = _chunking(endpoint.golden_set, values["chunking"])
    if "system" in changes and not (changes["system"] or "").strip():
        raise GoldsetError("an endpoint needs the name of its system", field="system")
    _check(values)
    before = {key: getattr(endpoint, key) for key in values}
    for key, value in values.items():
        setattr(endpoint, key, value.strip() if key == "system" else value)
    changed_before, changed_after = changed_fields(before, {key: getattr(endpoint, key) for key in values})
    with transaction.atomic():
        endpoint.save()
        audit_record(
            user=user,
            action="endpoint.update",
            obj=endpoint,
            golden_set=endpoint.golden_set,
            before=changed_before,
            after=changed_after,
            label=endpoint.name,
        )
    return endpoint


def _chunking(golden_set: GoldenSet, chunking) -> Chunking | None:
    """The endpoint's chunking: a Chunking of the set's corpus, or one named so (""/None and
    "documents": the implicit chunking of whole documents). GoldsetError naming it otherwise."""
    if isinstance(chunking, Chunking):
        chunking = chunking.name if chunking.corpus_id == golden_set.corpus_id else f"{chunking.name} (of another corpus)"
    name = (chunking or "").strip()
    if not name or name == Chunking.DOCUMENTS:
        return None
    found = Chunking.objects.filter(corpus_id=golden_set.corpus_id, name=name).first()
    if found is None:
        known = ", ".join(Chunking.objects.filter(corpus_id=golden_set.corpus_id).values_list("name", flat=True)) or "none but documents"
        raise GoldsetError(f"the corpus of {golden_set.slug!r} has no chunking {name!r} (it has: {known})", field="chunking")
    return found


def endpoint_delete(*, endpoint: Endpoint, user: AbstractBaseUser | None = None) -> str:
    """Delete an endpoint with its nights' and probes' records; the runs its nights stored
    stay in their series, scored as before. Refused (ConflictError) while one of its nights
    is pending or running: its worker would write to an endpoint that is gone. Returns
    what was deleted, in words."""
    with transaction.atomic():
        locked = Endpoint.objects.select_for_update().get(pk=endpoint.pk)
        if locked.nightly_runs.filter(status__in=NightlyRun.ACTIVE).exists():
            raise ConflictError(f"a night of endpoint {locked.name!r} is under way; delete it once that night is done")
        nights, series = locked.nightly_runs.count(), locked.series.name
        audit_record(
            user=user, action="endpoint.delete", obj=locked, golden_set=locked.golden_set, before={"name": locked.name}, label=locked.name
        )
        locked.delete()
    return f"Endpoint {endpoint.name} deleted with the records of its {nights} night(s); their runs stay in the series “{series}”."
