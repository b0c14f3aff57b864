"""The golden set's data: corpora and pages, golden sets and queries, judgments, versions,
model labels; one module a family (corpora, sets, history, model_grades), every model and
constant importable from here as before.

Raw judgments are append-only and versions are immutable; both rules are enforced
below the app (database triggers, see migration 0002) as well as in it (querysets
that refuse bulk changes), because a number people act on must not drift.
"""

from goldenset.models.audit import AuditRecord
from goldenset.models.corpora import (
    DEFAULT_DUPLICATE_THRESHOLD,
    DEFAULT_GRADE_SCALE,
    DEFAULT_SPAN_MIN_OVERLAP_CHARS,
    DEFAULT_SPAN_MIN_OVERLAP_SHARE,
    Chunk,
    Chunking,
    Corpus,
    Page,
    PageChange,
    default_grade_scale,
    validate_id,
)
from goldenset.models.history import (
    AppendOnlyModel,
    AppendOnlyQuerySet,
    EvidenceSpan,
    Judgment,
    PublishJob,
    Version,
    VersionAnswer,
    VersionDuplicate,
    VersionLabel,
    VersionPage,
    VersionQuery,
    VersionSpan,
)
from goldenset.models.model_grades import (
    ModelJudgment,
    ModelPrompt,
    VersionModelFill,
    VersionModelLabel,
)
from goldenset.models.sets import (
    GoldenSet,
    Membership,
    Query,
    ReferenceAnswer,
)
from goldenset.models.tags import VersionTag, VersionTagMove
from goldenset.models.teams import (
    DEFAULT_ORGANISATION_SLUG,
    DEFAULT_TEAM_SLUG,
    Organisation,
    OrganisationMembership,
    Team,
    TeamMembership,
    default_team,
)

__all__ = [
    "AuditRecord",
    "DEFAULT_GRADE_SCALE",
    "DEFAULT_SPAN_MIN_OVERLAP_CHARS",
    "DEFAULT_SPAN_MIN_OVERLAP_SHARE",
    "DEFAULT_DUPLICATE_THRESHOLD",
    "default_grade_scale",
    "validate_id",
    "Corpus",
    "Page",
    "PageChange",
    "Chunking",
    "Chunk",
    "GoldenSet",
    "Membership",
    "Query",
    "ReferenceAnswer",
    "VersionTag",
    "VersionTagMove",
    "AppendOnlyQuerySet",
    "AppendOnlyModel",
    "Judgment",
    "EvidenceSpan",
    "Version",
    "VersionQuery",
    "VersionPage",
    "VersionLabel",
    "VersionSpan",
    "VersionDuplicate",
    "VersionAnswer",
    "PublishJob",
    "ModelPrompt",
    "ModelJudgment",
    "VersionModelFill",
    "VersionModelLabel",
    "DEFAULT_ORGANISATION_SLUG",
    "DEFAULT_TEAM_SLUG",
    "Organisation",
    "OrganisationMembership",
    "Team",
    "TeamMembership",
    "default_team",
]
