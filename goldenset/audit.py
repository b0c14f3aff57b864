"""The one write path of the audit trail: `audit_record`, which every service a manager's or
an admin's action goes through calls inside its own transaction (a rolled-back action leaves
no record), and `changes`, which keeps the fields an action changed.

It sits on floor 2 so that every app above (evaluation, labeling, monitoring, answers,
traffic, api) can record without importing up the floors. Secrets never reach a record:
`masked` replaces the value of any field named like a secret, token, key or password, and
header values keep only their `${VAR}` names."""

import re
from datetime import date
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import models, transaction
from django.db.models import Q, QuerySet

from goldenset.models import AuditRecord, GoldenSet, Membership, Organisation
from goldenset.selectors import user_roles
from lib.errors import GoldsetError
from lib.request_address import request_ip

MASK = "***"
SECRET_NAME = re.compile(r"secret|token|key|password|authorization|cookie", re.IGNORECASE)
ENV_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


def _masked_headers(value: Any) -> Any:
    """Headers as [[name, value], ...] or {name: value}: each value reduced to the ${VAR}
    names it holds, or MASK when it holds a literal."""

    def one(text: Any) -> str:
        names = ENV_REFERENCE.findall(str(text))
        return " ".join(names) if names else MASK

    if isinstance(value, dict):
        return {name: one(text) for name, text in value.items()}
    if isinstance(value, list | tuple):
        return [[pair[0], one(pair[1])] if isinstance(pair, list | tuple) and len(pair) == 2 else MASK for pair in value]
    return MASK


def masked(name: str, value: Any) -> Any:
    """`value` as a record may hold it under field `name`: secrets never, JSON-ready."""
    if name == "headers":
        return _masked_headers(value)
    if SECRET_NAME.search(name):
        return MASK if value not in (None, "", [], {}) else value
    if isinstance(value, models.Model):
        return str(value)
    if isinstance(value, dict):
        return {key: masked(str(key), item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [masked(name, item) for item in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def changed_fields(before: dict[str, Any], after: dict[str, Any]) -> tuple[dict, dict]:
    """The fields whose values differ, as (before, after), masked."""
    changed = [name for name in after if before.get(name) != after.get(name)]
    return ({name: masked(name, before.get(name)) for name in changed}, {name: masked(name, after[name]) for name in changed})


def audit_record(
    *,
    user: AbstractBaseUser | None,
    action: str,
    obj: models.Model | None = None,
    golden_set: GoldenSet | None = None,
    organisation: Organisation | None = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    label: str | None = None,
) -> AuditRecord:
    """Write one record of `action` (a verb name, `version.publish`) by `user` (None: the
    system, a command acting as no one) on `obj`. `before` and `after` hold the changed
    fields only and are masked here. Call it inside the action's transaction."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError(f"audit_record({action!r}) must run inside its action's transaction")
    user = user if user is not None and getattr(user, "is_authenticated", False) else None
    if golden_set is None and isinstance(obj, GoldenSet):
        golden_set = obj
    organisation_id = organisation.pk if organisation is not None else golden_set.team.organisation_id if golden_set is not None else None
    return AuditRecord.objects.create(
        user=user,
        username=user.get_username() if user is not None else "",
        action=action,
        object_type=obj._meta.model_name if obj is not None else "",
        object_id=str(obj.pk) if obj is not None else "",
        object_label=(label if label is not None else str(obj) if obj is not None else "")[:300],
        golden_set=golden_set,
        golden_set_slug=golden_set.slug if golden_set is not None else "",
        organisation_id=organisation_id,
        before={name: masked(name, value) for name, value in (before or {}).items()},
        after={name: masked(name, value) for name, value in (after or {}).items()},
        ip=request_ip.get(),
    )


def audit_member(
    *, by: AbstractBaseUser | None, action: str, member: AbstractBaseUser, golden_set: GoldenSet, role: str, membership=None
) -> AuditRecord:
    """Record a role granted (`member.grant`: the values after) or revoked (`member.revoke`:
    the values before; the membership row is gone)."""
    values = {"user": member.get_username(), "role": role}
    granted = action == "member.grant"
    return audit_record(
        user=by,
        action=action,
        obj=membership,
        golden_set=golden_set,
        before=None if granted else values,
        after=values if granted else None,
        label=f"{member.get_username()} ({role})",
    )


# --- reads: the set's page, the API and the audit_log command ---------------------------


def audit_may_read(user: AbstractBaseUser, golden_set: GoldenSet) -> bool:
    """Whether `user` may read the set's audit trail: its managers, and staff."""
    return bool(user.is_staff or Membership.Role.MANAGER in user_roles(user, golden_set))


def audit_records(
    golden_set: GoldenSet | None,
    *,
    organisation: Organisation | None = None,
    action: str = "",
    username: str = "",
    since: date | None = None,
    until: date | None = None,
) -> QuerySet[AuditRecord]:
    """The set's records (or, for no set, the organisation's: its own actions and those in
    every set of its teams), newest first; `action` matches a whole name (`token.revoke`) or
    a family (`token`), `since` and `until` are days, both included."""
    if golden_set is not None:
        records = AuditRecord.objects.filter(golden_set=golden_set)
    else:
        # Records written before organisations existed name only their set.
        in_sets = GoldenSet.objects.filter(team__organisation=organisation).values("pk")
        records = AuditRecord.objects.filter(Q(organisation=organisation) | Q(organisation=None, golden_set__in=in_sets))
    if action:
        records = records.filter(Q(action=action) | Q(action__startswith=action.rstrip(".") + "."))
    if username:
        records = records.filter(username=username)
    if since:
        records = records.filter(at__date__gte=since)
    if until:
        records = records.filter(at__date__lte=until)
    return records.order_by("-at", "-id")


def audit_filters(params) -> dict:
    """The page's and the API's filters (?action=&user=&since=&until=, days as YYYY-MM-DD),
    ready for audit_records; GoldsetError naming the parameter for a day that is none."""
    found = {"action": (params.get("action") or "").strip()[:60], "username": (params.get("user") or "").strip()[:150]}
    for name in ("since", "until"):
        raw = (params.get(name) or "").strip()
        try:
            found[name] = date.fromisoformat(raw) if raw else None
        except ValueError:
            raise GoldsetError(f"{name} must be a day as YYYY-MM-DD, got {raw[:20]!r}", field=name) from None
    return found
