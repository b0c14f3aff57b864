"""How many judgments duplicate groups saved, for the coverage page."""

from django.db.models import Count

from goldenset.models import Version, VersionDuplicate, VersionLabel


def judgments_saved(version: Version) -> int:
    """The pairs of `version` nobody had to judge because a duplicate group is judged once:
    for each label on a group's first member, the group's other members (each would have
    been a pair of its own). Two queries, over the version's groups only (few)."""
    members: dict[int, int] = dict(
        VersionDuplicate.objects.filter(version=version).values("group_page_id").annotate(n=Count("id")).values_list("group_page_id", "n")
    )
    if not members:
        return 0
    labels = (
        VersionLabel.objects.filter(version=version, page_id__in=list(members))
        .values("page_id")
        .annotate(n=Count("id"))
        .values_list("page_id", "n")
    )
    return sum(count * members[page] for page, count in labels)
