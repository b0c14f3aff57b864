"""Version tags: a movable name (`prod`, `candidate`) for one version of a set, and the
append-only history of its moves (goldenset.tags)."""

from django.conf import settings
from django.db import models

from goldenset.models.corpora import validate_id
from goldenset.models.history import AppendOnlyModel, Version
from goldenset.models.sets import GoldenSet


class VersionTag(models.Model):
    """A movable name (`prod`, `candidate`) for one of a set's versions: the API and the client
    resolve it to a number and hash at each request. Moving it writes a VersionTagMove."""

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="version_tags")
    name = models.CharField(max_length=50, validators=[validate_id])
    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="tags")
    moved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    moved_at = models.DateTimeField()

    class Meta:
        ordering = ["golden_set", "name"]
        constraints = [models.UniqueConstraint(fields=["golden_set", "name"], name="version_tag_unique_name")]

    def __str__(self) -> str:
        return f"{self.name} -> {self.version}"


class VersionTagMove(AppendOnlyModel):
    """One move of a tag, kept for its history (append-only): from which version to which."""

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=50)
    from_version = models.ForeignKey(Version, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    to_version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="+")
    moved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    moved_at = models.DateTimeField()
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["golden_set", "name", "moved_at", "id"]
