"""The audit trail: one record per manager's or admin's action (publish, settings, endpoints,
tokens, members, archive, incident states, tag moves, deletions), written by
goldenset.audit.audit_record and never changed afterwards (AppendOnlyModel here, database
triggers in migration 0021)."""

from django.conf import settings
from django.db import models

from goldenset.models.history import AppendOnlyModel
from goldenset.models.sets import GoldenSet
from goldenset.models.teams import Organisation


class AuditRecord(AppendOnlyModel):
    """Who did what to which object, when, with the changed fields' values before and after.

    The user and the set are referenced without a database constraint and with their names
    copied: a record outlives the account or the set it names (deleting a set is itself an
    action to record), and a cascade or SET NULL would be an UPDATE the triggers refuse."""

    at = models.DateTimeField(auto_now_add=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    # Copied: the record still says who after the account is renamed or gone; "" is the system.
    username = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=60, help_text="a short verb name: version.publish, token.revoke, ...")
    object_type = models.CharField(max_length=60, blank=True)
    object_id = models.CharField(max_length=60, blank=True)
    object_label = models.CharField(max_length=300, blank=True)
    # Null for actions outside any set (staff's user administration).
    golden_set = models.ForeignKey(GoldenSet, null=True, blank=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    golden_set_slug = models.CharField(max_length=100, blank=True)
    # The organisation the action happened in: the set's, or the organisation's own actions
    # (teams made, members granted). Null in records written before organisations existed,
    # which the organisation's page finds through their set.
    organisation = models.ForeignKey(
        Organisation, null=True, blank=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    # The changed fields only, secrets masked (goldenset.audit.masked).
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            # The set's page and API list its newest records first, filtered by action.
            models.Index(fields=["golden_set", "-at", "-id"], name="audit_set_newest"),
            models.Index(fields=["organisation", "-at", "-id"], name="audit_organisation_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.username or 'system'} {self.action} {self.object_label}"

    def to_dict(self) -> dict:
        return {
            "id": self.pk,
            "at": self.at.isoformat(),
            "user": self.username or None,
            "action": self.action,
            "object": {"type": self.object_type, "id": self.object_id, "label": self.object_label},
            "golden_set": self.golden_set_slug or None,
            "before": self.before,
            "after": self.after,
            "ip": self.ip,
        }
