"""Version tags through the service and `tag_version`: the name rule, one move recorded per
change in an append-only history, managers only."""

import pytest
from django.core.management import CommandError, call_command

from goldenset.models import VersionTag, VersionTagMove
from goldenset.services import qrels_import, version_publish
from goldenset.tags import tag_history, tag_move, version_resolve
from lib.errors import ForbiddenError, GoldsetError
from tests.api import SLUG, make_set

pytestmark = pytest.mark.django_db


@pytest.fixture
def manager(make_user):
    return make_user("manager")


@pytest.fixture
def versions(manager):
    golden_set = make_set(SLUG, manager)
    first = version_publish(golden_set=golden_set, user=manager, note="first")
    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 2\n"], source_name="more")
    second = version_publish(golden_set=golden_set, user=manager, note="second")
    return golden_set, first, second


def test_a_move_points_the_tag_and_keeps_each_move_in_its_history(versions, manager):
    golden_set, first, second = versions
    tag_move(golden_set=golden_set, name="prod", version=first, user=manager, note="ship v1")
    tag_move(golden_set=golden_set, name="prod", version=second, user=manager, note="ship v2")
    assert VersionTag.objects.get(golden_set=golden_set, name="prod").version == second
    history = [(m.from_version and m.from_version.number, m.to_version.number, m.note) for m in tag_history(golden_set, "prod")]
    assert history == [(1, 2, "ship v2"), (None, 1, "ship v1")]


def test_moving_a_tag_where_it_is_records_nothing(versions, manager):
    golden_set, first, _ = versions
    tag_move(golden_set=golden_set, name="prod", version=first, user=manager)
    tag_move(golden_set=golden_set, name="prod", version=first, user=manager)
    assert VersionTagMove.objects.filter(golden_set=golden_set).count() == 1


@pytest.mark.parametrize("name", ["3", "1prod", "latest", "", "pr od", "x" * 51, "prod/1"])
def test_names_that_could_read_as_a_version_or_a_path_are_refused_naming_the_rule(versions, manager, name):
    golden_set, first, _ = versions
    with pytest.raises(GoldsetError) as caught:
        tag_move(golden_set=golden_set, name=name, version=first, user=manager)
    assert caught.value.field == "name" and "tag name" in caught.value.message
    assert not VersionTag.objects.exists()


def test_only_managers_move_tags(versions, make_user):
    golden_set, first, _ = versions
    with pytest.raises(ForbiddenError):
        tag_move(golden_set=golden_set, name="prod", version=first, user=make_user("stranger"))


def test_a_version_of_another_set_is_refused(versions, manager):
    golden_set, first, _ = versions
    other = make_set("other", manager)
    with pytest.raises(GoldsetError) as caught:
        tag_move(golden_set=other, name="prod", version=first, user=manager)
    assert caught.value.field == "version"


def test_a_tag_resolves_to_the_version_it_names_now(versions, manager):
    golden_set, first, second = versions
    tag_move(golden_set=golden_set, name="prod", version=first, user=manager)
    assert version_resolve(golden_set, "prod").version == first
    tag_move(golden_set=golden_set, name="prod", version=second, user=manager)
    assert version_resolve(golden_set, "prod").version == second
    assert version_resolve(golden_set, "latest").version == second and version_resolve(golden_set, "1").version == first
    assert version_resolve(golden_set, "candidate") is None


def test_the_history_cannot_be_changed(versions, manager):
    golden_set, first, _ = versions
    tag_move(golden_set=golden_set, name="prod", version=first, user=manager)
    move = VersionTagMove.objects.get()
    move.note = "rewritten"
    with pytest.raises(GoldsetError):
        move.save()
    with pytest.raises(GoldsetError):
        move.delete()


def test_the_command_moves_a_tag_as_a_manager(versions, manager, capsys):
    golden_set, _, second = versions
    call_command("tag_version", SLUG, "prod", "--version", "2", "--user", "manager", "--note", "release")
    assert second.content_hash in capsys.readouterr().out
    move = VersionTagMove.objects.get()
    assert (move.to_version, move.moved_by, move.note) == (second, manager, "release")


def test_the_command_names_what_is_wrong(versions, make_user):
    make_user("annotator")
    with pytest.raises(CommandError, match="no version 9"):
        call_command("tag_version", SLUG, "prod", "--version", "9")
    with pytest.raises(CommandError, match="tag name '7'"):
        call_command("tag_version", SLUG, "7", "--version", "1")
    with pytest.raises(CommandError, match="manager role"):
        call_command("tag_version", SLUG, "prod", "--version", "1", "--user", "annotator")
    with pytest.raises(CommandError, match="no golden set"):
        call_command("tag_version", "nope", "prod", "--version", "1")
