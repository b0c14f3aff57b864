"""Writes of the API app: making, revoking and stamping tokens."""

import secrets
from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from api.models import ApiToken
from goldenset.audit import audit_record
from goldenset.models import GoldenSet, Membership
from goldenset.selectors import READ_ROLES, user_roles
from lib.errors import GoldsetError

# Secrets start with this, so a token pasted into a log or a repository is recognisable
# (and secret scanners can be taught the pattern).
TOKEN_PREFIX = "gs_"
# last_used_at is written at most this often per token: an eval job's thousand requests
# a minute should not be a thousand writes.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def api_token_create(
    *,
    owner: AbstractBaseUser,
    scope: str,
    golden_set: GoldenSet | None = None,
    expires_at: datetime | None = None,
    name: str = "",
    created_by: AbstractBaseUser | None = None,
) -> tuple[ApiToken, str]:
    """Make a token for `owner` and return it with its secret, which is not stored and
    cannot be shown again.

    Refuses (GoldsetError) an unknown scope, an expiry in the past, an inactive owner, and,
    for a token restricted to `golden_set`, an owner without the role its scope needs
    there (a manager or adjudicator role to read, the manager role to write; staff may
    do both), so that nobody is handed a token that could only ever answer 404 or 403.
    """
    if scope not in ApiToken.Scope.values:
        raise GoldsetError(f"unknown scope {scope!r}; choose one of {', '.join(ApiToken.Scope.values)}", field="scope")
    if expires_at is not None and expires_at <= timezone.now():
        raise GoldsetError("the expiry must be in the future", field="expires_at")
    if not owner.is_active:
        raise GoldsetError(f"user {owner.get_username()!r} is inactive", field="owner")
    if golden_set is not None and not owner.is_staff:
        needed = (Membership.Role.MANAGER,) if scope == ApiToken.Scope.WRITE else READ_ROLES
        if not user_roles(owner, golden_set) & set(needed):
            raise GoldsetError(
                f"user {owner.get_username()!r} is not {' or '.join(needed)} of golden set {golden_set.slug!r}, "
                f"which a {scope} token for it needs",
                field="owner",
            )
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ApiToken.objects.create(
            owner=owner,
            name=name.strip()[:100],
            prefix=secret[: len(TOKEN_PREFIX) + 6],
            key_hash=ApiToken.hash_secret(secret),
            scope=scope,
            golden_set=golden_set,
            expires_at=expires_at,
            created_by=created_by,
        )
        audit_record(
            user=created_by,
            action="token.create",
            obj=token,
            golden_set=golden_set,
            after={"owner": owner.get_username(), "scope": scope, "name": token.name, "expires_at": expires_at},
            label=f"{token.prefix}… ({token.name or scope})",
        )
    return token, secret


def api_token_revoke(*, token: ApiToken, user: AbstractBaseUser | None = None) -> ApiToken:
    """Revoke `token` from now on, by `user` (None: the system); revoking a revoked token
    keeps its first revocation time and records nothing."""
    if token.revoked_at is None:
        with transaction.atomic():
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            audit_record(
                user=user,
                action="token.revoke",
                obj=token,
                golden_set=token.golden_set,
                before={"revoked_at": None},
                after={"revoked_at": token.revoked_at},
                label=f"{token.prefix}… ({token.name or token.scope})",
            )
    return token


def api_token_touch(*, token: ApiToken) -> None:
    """Record that `token` was just used (to the minute: see LAST_USED_RESOLUTION)."""
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
