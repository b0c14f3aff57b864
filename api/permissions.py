"""Who may call what. A token never grants more than its owner's roles.

- No credentials, or a bad token: 401 (authentication).
- A read token on an endpoint that writes: 403, whatever the set (it reveals nothing).
- A golden set the owner may not read, or one other than the token's: 404, exactly as for
  a slug that does not exist.
- A write by someone who may read the set but is not its manager: 403.

Reading needs the manager or adjudicator role in the set (goldenset.selectors.READ_ROLES),
writing the manager role; staff may do both. People logged in to the site (the browsable
API) act with their roles and no scope limit.
"""

from django.http import Http404, HttpRequest
from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS, BasePermission

from api.models import ApiToken
from goldenset.models import GoldenSet, Membership
from goldenset.selectors import access_golden_set, user_roles

WRITE_ROLES = (Membership.Role.MANAGER,)
# What a client sees for a golden set it may not read, exactly as for one that does not
# exist, so that a slug's existence is not revealed.
NO_SUCH_GOLDEN_SET = "no such golden set"


def request_token(request: HttpRequest) -> ApiToken | None:
    """The token the request authenticated with, or None (session or anonymous)."""
    return request.auth if isinstance(request.auth, ApiToken) else None


class HasApiAccess(BasePermission):
    """Every API endpoint: an authenticated user, and a write scope for unsafe methods."""

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False  # DRF answers 401 with the Bearer challenge
        token = request_token(request)
        if not hasattr(view, request.method.lower()):
            return True  # the view answers 405, which says more than a scope would
        if token is not None and request.method not in SAFE_METHODS and not token.allows_write():
            raise exceptions.PermissionDenied(f"API token {token.prefix}… has the read scope; this needs a write token")
        return True


def manages(request, golden_set: GoldenSet) -> bool:
    """Whether the caller holds the set's manager role (or is staff): what the pages ask
    before showing an endpoint's request or a set's settings. A read token of a manager
    counts, as the manager's own session does on the pages."""
    return request.user.is_staff or bool(user_roles(request.user, golden_set) & set(WRITE_ROLES))


def api_golden_set(request, slug: str, *, write: bool = False) -> GoldenSet:
    """The golden set `slug` if the request may read it (or, with `write`, change it).

    Raises NotFound for a set the user may not read or the token does not reach,
    PermissionDenied for a write by a reader who is not a manager.
    """
    token = request_token(request)
    try:
        golden_set = access_golden_set(request.user, slug)
    except Http404 as exc:  # the same answer for absent and forbidden
        raise exceptions.NotFound(NO_SUCH_GOLDEN_SET) from exc
    if token is not None and token.golden_set_id not in (None, golden_set.pk):
        raise exceptions.NotFound(NO_SUCH_GOLDEN_SET)
    if write and not (request.user.is_staff or user_roles(request.user, golden_set) & set(WRITE_ROLES)):
        raise exceptions.PermissionDenied(f"changing golden set {slug!r} needs its manager role")
    return golden_set
