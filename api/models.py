"""API tokens: what an eval job sends as `Authorization: Bearer <token>`.

Only a sha256 of the secret is stored, so a leaked database does not leak working
tokens; the secret is shown once, when the token is made. A token acts for its owner
and never grants more than the owner's roles, which are checked on every request: a
manager who leaves the set takes the reach of their tokens with them.
"""

import hashlib

from django.conf import settings
from django.db import models
from django.utils import timezone

from goldenset.models import GoldenSet


class ApiToken(models.Model):
    class Scope(models.TextChoices):
        READ = "read", "read: export labels and read scores"
        WRITE = "write", "write: also upload runs, import judgments and publish versions"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, help_text="what the token is for, e.g. 'nightly eval job'")
    # The first characters of the secret ("gs_Ab12Cd"), enough to tell tokens apart in a list.
    prefix = models.CharField(max_length=12)
    # sha256 hex digest of the whole secret.
    key_hash = models.CharField(max_length=64)
    scope = models.CharField(max_length=10, choices=Scope.choices)
    # A token restricted to one set sees no other; null reaches every set the owner may read.
    golden_set = models.ForeignKey(GoldenSet, null=True, blank=True, on_delete=models.CASCADE, related_name="api_tokens")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name, verbose_name_plural = "API token", "API tokens"
        ordering = ["-created_at", "-id"]
        constraints = [
            # Authentication finds a token by the hash of the secret it was sent: one row per hash.
            models.UniqueConstraint(fields=["key_hash"], name="api_token_key_hash_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.scope}) of {self.owner}"

    @staticmethod
    def hash_secret(secret: str) -> str:
        """sha256 hex digest of a secret, as key_hash stores it."""
        return hashlib.sha256(secret.encode("utf-8")).hexdigest()

    def is_expired(self, now=None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())

    def status(self, now=None) -> str:
        """'revoked', 'expired' or 'active'."""
        if self.revoked_at is not None:
            return "revoked"
        if self.is_expired(now):
            return "expired"
        return "active"

    def allows_write(self) -> bool:
        return self.scope == self.Scope.WRITE
