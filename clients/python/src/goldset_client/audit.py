"""The client's read of a set's audit trail (issue 29): who did what, when, with the values
before and after (secrets never). GoldsetClient takes it in as a base class."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from goldset_client.api_types import AuditRecord, OrganisationAuditRecord
from goldset_client.paths import set_path

if TYPE_CHECKING:
    from goldset_client.http import Transport


class AuditCalls:
    http: Transport

    def audit_records(
        self,
        slug: str,
        *,
        action: str | None = None,
        user: str | None = None,
        since: date | None = None,
        until: date | None = None,
    ) -> list[AuditRecord]:
        """The set's audit records, newest first, every page (a manager's token); `action` is
        an action (`token.revoke`) or its family (`token`), `since` and `until` days included."""
        return self.http.paged(set_path(slug) + "audit/", _params(action, user, since, until))

    def organisation_audit_records(
        self,
        organisation: str,
        *,
        action: str | None = None,
        user: str | None = None,
        since: date | None = None,
        until: date | None = None,
    ) -> list[OrganisationAuditRecord]:
        """The organisation's audit records (its teams, its people, and every action in the sets
        of its teams), newest first, every page: an admin's token not restricted to one set."""
        return self.http.paged(f"/api/v1/organisations/{quote(organisation, safe='')}/audit/", _params(action, user, since, until))


def _params(action: str | None, user: str | None, since: date | None, until: date | None) -> dict[str, Any]:
    params: dict[str, Any] = {"action": action, "user": user}
    params |= {"since": since.isoformat() if since else None, "until": until.isoformat() if until else None}
    return {k: v for k, v in params.items() if v}
