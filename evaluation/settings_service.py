"""The one write path of a golden set's evaluation settings (pages, commands and the API).

Units, as everywhere in Goldset: metric values, the slice floor and the Judged@k floor are
fractions in [0, 1]; the drop and rerank-loss thresholds are points, hundredths of a
fraction (3.0 = 0.03); the completeness depth is a number of pages per query.
A change applies to the evaluations computed from then on; stored scores and alerts are
kept as they were computed, because each belongs to the (run, version) it was made for.
"""

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator, validate_email
from django.db import transaction
from django.utils import timezone

from evaluation.alerts.signing import webhook_secret_generate
from evaluation.metrics import MAX_K, default_metrics, parse_metrics
from evaluation.models import EvaluationSettings
from goldenset.audit import audit_record
from goldenset.models import GoldenSet
from lib import outbound
from lib.errors import GoldsetError

logger = logging.getLogger(__name__)

# Deeper than this a run of 10,000 queries would be 100M entries: more than a worker holds.
MAX_RUN_DEPTH = MAX_K
MAX_AGE_BUCKETS = 10
# Only http(s): urllib would also open file:// and ftp:// URLs, which a webhook has no use for.
_webhook_url_validator = URLValidator(schemes=["http", "https"])
Number = TypeVar("Number", int, float)


def _metrics(golden_set: GoldenSet, value: Any) -> list[str]:
    names = _string_list(value, "metrics")
    parse_metrics(names)  # GoldsetError naming every bad metric, field "metrics"
    if names:
        # The alert rules read these two; without them alerts would stop without a word.
        needed = [f"recall@{golden_set.k_first}", f"recall@{golden_set.k_final}"]
        missing = [name for name in needed if name not in names]
        if missing:
            raise GoldsetError(
                f"keep {' and '.join(missing)} in the list: alerts compare recall@k_first and recall@k_final "
                f"(k_first = {golden_set.k_first}, k_final = {golden_set.k_final} for {golden_set.slug!r})",
                field="metrics",
            )
    return list(dict.fromkeys(names))


def _run_depth_cap(golden_set: GoldenSet, value: Any) -> int:
    depth = _whole_number(value, "run_depth_cap")
    return _within(
        depth,
        golden_set.k_first,
        MAX_RUN_DEPTH,
        "run_depth_cap",
        f"the run depth cap must be from k_first ({golden_set.k_first}, or recall@{golden_set.k_first} "
        f"could not be scored) to {MAX_RUN_DEPTH} entries per query, got {depth}",
    )


def _points(field: str) -> Callable[[GoldenSet, Any], float]:
    def clean(golden_set: GoldenSet, value: Any) -> float:
        number = _number(value, field)
        return _within(number, 0, 100, field, f"{field} is in points (hundredths: 3 = 0.03) from 0 to 100, got {number:g}")

    return clean


def _fraction(field: str, example: str) -> Callable[[GoldenSet, Any], float]:
    """The cleaner of a fraction setting; `example` shows it is not a percentage ("0.9, not 90")."""

    def clean(golden_set: GoldenSet, value: Any) -> float:
        number = _number(value, field)
        return _within(number, 0, 1, field, f"{field} is a fraction from 0 to 1 ({example}), got {number:g}")

    return clean


def _open_fraction(field: str, example: str) -> Callable[[GoldenSet, Any], float]:
    """The cleaner of a probability that 0 and 1 would make meaningless (a test that never or
    always rejects, a power of nothing or certainty): strictly between them."""

    def clean(golden_set: GoldenSet, value: Any) -> float:
        number = _number(value, field)
        if not 0 < number < 1:
            raise GoldsetError(f"{field} is a fraction strictly between 0 and 1 ({example}), got {number:g}", field=field)
        return number

    return clean


def _completeness_depth(golden_set: GoldenSet, value: Any) -> int:
    depth = _whole_number(value, "completeness_depth")
    return _within(
        depth,
        1,
        MAX_RUN_DEPTH,
        "completeness_depth",
        f"the completeness depth is a pool depth from 1 to {MAX_RUN_DEPTH} pages per query, got {depth}",
    )


# More queries than any golden set holds would flag every slice for ever.
MAX_MIN_QUERIES_PER_SLICE = 1_000_000


def _min_queries_per_slice(golden_set: GoldenSet, value: Any) -> int:
    number = _whole_number(value, "min_queries_per_slice")
    return _within(
        number,
        1,
        MAX_MIN_QUERIES_PER_SLICE,
        "min_queries_per_slice",
        f"min_queries_per_slice is a number of queries from 1 to {MAX_MIN_QUERIES_PER_SLICE:,}, got {number}",
    )


def _age_buckets(golden_set: GoldenSet, value: Any) -> list[int]:
    if not isinstance(value, list | tuple):
        raise GoldsetError("age_buckets must be a list of days", field="age_buckets")
    days = [_whole_number(item, "age_buckets") for item in value]
    bad = [day for day in days if day < 1]
    if bad:
        raise GoldsetError(f"age bucket bounds are days from 1 up, got {', '.join(map(str, bad))}", field="age_buckets")
    if len(set(days)) != len(days):
        raise GoldsetError("age bucket bounds must differ from one another", field="age_buckets")
    if len(days) > MAX_AGE_BUCKETS:
        raise GoldsetError(f"at most {MAX_AGE_BUCKETS} age bucket bounds, got {len(days)}", field="age_buckets")
    return sorted(days)


def _alert_emails(golden_set: GoldenSet, value: Any) -> list[str]:
    addresses = _string_list(value, "alert_emails")
    bad = []
    for address in addresses:
        try:
            validate_email(address)
        except ValidationError:
            bad.append(address)
    if bad:
        raise GoldsetError(
            f"not an e-mail address: {', '.join(repr(a) for a in bad)}",
            problems=[f"{address!r} is not an e-mail address" for address in bad],
            field="alert_emails",
        )
    return list(dict.fromkeys(addresses))


def _webhook_url(golden_set: GoldenSet, value: Any) -> str:
    url = (value or "").strip() if isinstance(value, str | type(None)) else None
    if url is None:
        raise GoldsetError("webhook_url must be text", field="webhook_url")
    if url:
        try:
            _webhook_url_validator(url)
        except ValidationError:
            raise GoldsetError(f"{url!r} is not an http:// or https:// URL", field="webhook_url") from None
        if len(url) > EvaluationSettings._meta.get_field("webhook_url").max_length:
            raise GoldsetError("the webhook URL is too long", field="webhook_url")
        # Where it leads is checked at each send (lib.outbound), where DNS answers then.
        problem = outbound.url_problem(url)
        if problem:
            raise GoldsetError(problem, field="webhook_url")
    return url


def _whole(field: str, low: int, high: int, what: str) -> Callable[[GoldenSet, Any], int]:
    def clean(golden_set: GoldenSet, value: Any) -> int:
        number = _whole_number(value, field)
        return _within(number, low, high, field, f"{field} is {what} from {low} to {high}, got {number}")

    return clean


# field -> cleaner; the form checks each field with the same function, so the page and the
# service cannot disagree about what is valid.
_CLEANERS: dict[str, Callable[[GoldenSet, Any], Any]] = {
    "metrics": _metrics,
    "run_depth_cap": _run_depth_cap,
    "alert_drop_points": _points("alert_drop_points"),
    "alert_slice_floor": _fraction("alert_slice_floor", "0.75, not 75"),
    "alert_rerank_loss_points": _points("alert_rerank_loss_points"),
    "alert_alpha": _open_fraction("alert_alpha", "0.05, not 5"),
    "alert_power": _open_fraction("alert_power", "0.8, not 80"),
    "age_buckets": _age_buckets,
    "completeness_depth": _completeness_depth,
    "judged_floor": _fraction("judged_floor", "0.9, not 90"),
    "min_queries_per_slice": _min_queries_per_slice,
    "alert_emails": _alert_emails,
    "webhook_url": _webhook_url,
    "failing_share": _fraction("failing_share", "0.05, not 5"),
    "series_rescore_nights": _whole("series_rescore_nights", 1, 1000, "a number of nights"),
    "series_keep_days": _whole("series_keep_days", 0, 36500, "a number of days (0 keeps every night whole)"),
    "partial_share": _fraction("partial_share", "0.5, not 50"),
}
SETTINGS_FIELDS = tuple(_CLEANERS)


def settings_field_clean(*, golden_set: GoldenSet, field: str, value: Any) -> Any:
    """`value` of settings field `field` as stored, or GoldsetError (with `field` set) saying why not."""
    if field not in _CLEANERS:
        raise GoldsetError(f"unknown evaluation setting {field!r}; choose from {', '.join(SETTINGS_FIELDS)}", field=field)
    return _CLEANERS[field](golden_set, value)


def evaluation_settings_update(*, golden_set: GoldenSet, user: AbstractBaseUser | None, **fields: Any) -> EvaluationSettings:
    """Validate `fields` and save them into the set's evaluation settings, all or nothing.

    Accepts any of SETTINGS_FIELDS: metrics (ranx names; [] means the defaults at the
    version's k), run_depth_cap (entries per query kept from an upload), alert_drop_points
    and alert_rerank_loss_points (points), alert_alpha and alert_power (the drop test's
    significance and power, fractions strictly between 0 and 1), alert_slice_floor (fraction), age_buckets
    (upper bounds in days), completeness_depth (pool depth for leave-one-run-out, pages per
    query), judged_floor (fraction: Judged@k_final under it marks a run's scores
    unreliable), min_queries_per_slice (queries: a slice averaged over fewer is flagged on
    the coverage page, whose recall target is alert_slice_floor), alert_emails (addresses), webhook_url (http(s) URL or ""),
    partial_share (fraction: a run answering under it of the set's queries is marked partial
    at upload; runs already uploaded keep what their upload found).
    Raises GoldsetError listing every bad field (its `field` is the first one); nothing
    is saved then. Returns the saved settings.
    """
    cleaned, problems, first_bad = {}, [], None
    for field, value in fields.items():
        try:
            cleaned[field] = settings_field_clean(golden_set=golden_set, field=field, value=value)
        except GoldsetError as exc:
            first_bad = first_bad or field
            problems.extend(f"{field}: {problem}" for problem in (exc.problems or [exc.message]))
    if problems:
        raise GoldsetError(f"evaluation settings of {golden_set.slug!r} not saved", problems=problems, field=first_bad)

    with transaction.atomic():
        found, _ = EvaluationSettings.objects.select_for_update().get_or_create(golden_set=golden_set)
        changed = [field for field, value in cleaned.items() if getattr(found, field) != value]
        before = {field: getattr(found, field) for field in changed}
        for field in changed:
            setattr(found, field, cleaned[field])
        if found.webhook_url and not found.webhook_secret:
            # Turning the webhook on makes its signing secret; the page shows it this once.
            found.webhook_secret, found.webhook_secret_created_at = webhook_secret_generate(), timezone.now()
            changed += ["webhook_secret", "webhook_secret_created_at"]
        if changed:
            found.save(update_fields=changed)
            audit_record(
                user=user,
                action="settings.update",
                obj=found,
                golden_set=golden_set,
                before=before,
                after={field: getattr(found, field) for field in changed},
                label=f"evaluation settings of {golden_set.slug}",
            )
    if changed:
        # No history table: the log is where "who moved the floor" is answered.
        logger.info("evaluation settings of %s changed by %s: %s", golden_set.slug, user, ", ".join(changed))
    return found


def webhook_secret_rotate(*, golden_set: GoldenSet, user: AbstractBaseUser | None) -> str:
    """Replace the set's webhook signing secret with a new one and return it: the only time
    it is handed out (the caller shows it once). Signatures made with the old one no longer
    verify from the next delivery on."""
    secret = webhook_secret_generate()
    with transaction.atomic():
        found, _ = EvaluationSettings.objects.select_for_update().get_or_create(golden_set=golden_set)
        found.webhook_secret, found.webhook_secret_created_at = secret, timezone.now()
        found.save(update_fields=["webhook_secret", "webhook_secret_created_at"])
        audit_record(
            user=user,
            action="settings.webhook_secret_rotate",
            obj=found,
            golden_set=golden_set,
            after={"webhook_secret": secret},
            label=f"evaluation settings of {golden_set.slug}",
        )
    logger.info("webhook secret of %s rotated by %s", golden_set.slug, user)
    return secret


def default_metric_names(golden_set: GoldenSet) -> list[str]:
    """The metrics an empty `metrics` setting means at the set's current k_first and k_final."""
    return [metric.name for metric in default_metrics(golden_set.k_first, golden_set.k_final)]


def _string_list(value: Any, field: str) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise GoldsetError(f"{field} must be a list of strings", field=field)
    return [item.strip() for item in value if item.strip()]


def _whole_number(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise GoldsetError(f"{field} must be a whole number, got {value!r}", field=field)
    return value


def _number(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise GoldsetError(f"{field} must be a number, got {value!r}", field=field)
    return float(value)


def _within(number: Number, low: float, high: float, field: str, refusal: str) -> Number:
    """`number` when it is from `low` to `high`, else GoldsetError(`refusal`) on `field`."""
    if not low <= number <= high:
        raise GoldsetError(refusal, field=field)
    return number
