"""The client's read of a set's audit trail (issue 29): who did what, when, with the values
before and after (secrets never). GoldsetClient takes it in as a base class."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any

from goldset_client.api_types import AuditRecord
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
        params: dict[str, Any] = {"action": action, "user": user}
        params |= {"since": since.isoformat() if since else None, "until": until.isoformat() if until else None}
        return self.http.paged(set_path(slug) + "audit/", {k: v for k, v in params.items() if v})
