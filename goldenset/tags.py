"""Version tags: a manager moves a named tag (`prod`, `candidate`) to one of a set's versions,
and everything that takes a version number takes the tag, resolved to a number and hash at
the moment it is asked (never cached: a tag moves).

The name rule (TAG_RULE): a letter first, then letters, digits, `.`, `_` or `-`, at most 50
characters, and not `latest`. A letter first so that a tag can never be read as a version
number (`3` is version 3, always), and `latest` because the API already answers it with the
newest version. One write path: `tag_move` (the page, the API and `tag_version` call it), which
records every move in VersionTagMove so that a later audit trail reads moves from one place.
"""

import re
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from goldenset.audit import audit_record
from goldenset.models import GoldenSet, Membership, Version, VersionTag, VersionTagMove
from goldenset.selectors import user_roles
from lib.errors import ForbiddenError, GoldsetError

TAG_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9._-]{0,49}$")
# The same rule as a URL pattern piece (api.converters), without the anchors.
TAG_PATTERN = TAG_NAME.pattern.removeprefix("^").removesuffix("$")
TAG_RULE = "a letter first, then letters, digits, '.', '_' or '-', at most 50 characters, and not 'latest'"
RESERVED = "latest"
MOVE_ROLES = (Membership.Role.MANAGER,)


def tag_name_problem(name: object) -> str | None:
    """Why `name` cannot be a tag's name (the message names it and the rule), or None."""
    if not isinstance(name, str) or not TAG_NAME.match(name):
        return f"tag name {name!r} is not allowed: {TAG_RULE}"
    if name == RESERVED:
        return f"tag name {name!r} is reserved: the API answers it with the newest version"
    return None


def tag_may_move(user: AbstractBaseUser, golden_set: GoldenSet) -> bool:
    """Whether `user` may move the set's tags: its managers, and staff."""
    return bool(user.is_staff or user_roles(user, golden_set) & set(MOVE_ROLES))


def tag_move(*, golden_set: GoldenSet, name: str, version: Version, user: AbstractBaseUser | None, note: str = "") -> VersionTag:
    """Point tag `name` of the set at `version` (creating the tag), and record the move in
    its history, in one transaction. Moving a tag to the version it names already records
    nothing and returns it unchanged.

    GoldsetError (field "name") for a name against TAG_RULE, (field "version") for a version
    of another set; ForbiddenError when `user` is given and is not the set's manager (None is
    the system: a management command acting as no one)."""
    problem = tag_name_problem(name)
    if problem:
        raise GoldsetError(problem, field="name")
    if version.golden_set_id != golden_set.pk:
        raise GoldsetError(f"version {version.number} is not a version of golden set {golden_set.slug!r}", field="version")
    if user is not None and not tag_may_move(user, golden_set):
        raise ForbiddenError(f"moving tags of golden set {golden_set.slug!r} needs its manager role")
    now = timezone.now()
    with transaction.atomic():
        # Locked, so that two moves of one tag at once leave a history whose from/to chain.
        tag = VersionTag.objects.select_for_update().filter(golden_set=golden_set, name=name).first()
        if tag is not None and tag.version_id == version.pk:
            return tag
        from_version = tag.version if tag is not None else None
        if tag is None:
            tag = VersionTag.objects.create(golden_set=golden_set, name=name, version=version, moved_by=user, moved_at=now)
        else:
            tag.version, tag.moved_by, tag.moved_at = version, user, now
            tag.save(update_fields=["version", "moved_by", "moved_at"])
        VersionTagMove.objects.create(
            golden_set=golden_set, name=name, from_version=from_version, to_version=version, moved_by=user, moved_at=now, note=note
        )
        audit_record(
            user=user,
            action="tag.move",
            obj=tag,
            golden_set=golden_set,
            before={"version": from_version.number if from_version else None},
            after={"version": version.number, "note": note},
            label=name,
        )
    return tag


def tags_of(golden_set: GoldenSet) -> list[VersionTag]:
    """The set's tags by name, each with its version."""
    return list(golden_set.version_tags.select_related("version", "moved_by").order_by("name"))


def tag_history(golden_set: GoldenSet, name: str | None = None) -> list[VersionTagMove]:
    """Every move of the set's tags (or of tag `name`), newest first."""
    moves = VersionTagMove.objects.filter(golden_set=golden_set)
    if name is not None:
        moves = moves.filter(name=name)
    return list(moves.select_related("from_version", "to_version", "moved_by").order_by("-moved_at", "-id"))


@dataclass(frozen=True)
class ResolvedVersion:
    """What a version reference (a number, `latest` or a tag) named when it was asked:
    `tag` is the tag's name, or None for a number or `latest`."""

    version: Version
    tag: str | None


def version_resolve(golden_set: GoldenSet, reference: str | int) -> ResolvedVersion | None:
    """The version `reference` names in the set now: a number, `latest` (the newest) or a
    tag's name. None when there is no such version or tag (the caller says 404)."""
    text = str(reference)
    versions = golden_set.versions.select_related("author")
    if text.isascii() and text.isdigit():
        found = versions.filter(number=int(text)).first()
        return ResolvedVersion(found, None) if found else None
    if text == RESERVED:
        found = versions.order_by("-number").first()
        return ResolvedVersion(found, None) if found else None
    tag = VersionTag.objects.select_related("version__author").filter(golden_set=golden_set, name=text).first()
    return ResolvedVersion(tag.version, tag.name) if tag else None
