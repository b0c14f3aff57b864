"""Organisations and teams (issue 29, item 1): a team role holds in every set of the team and
in none of another team's; an organisation's admin manages every set of its teams; the pages
and commands of organisations and teams; installations made before teams live in the default
team with nothing else changed."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

from goldenset.audit import audit_records
from goldenset.models import (
    AuditRecord,
    GoldenSet,
    Membership,
    Organisation,
    OrganisationMembership,
    Team,
    TeamMembership,
    default_team,
)
from goldenset.selectors import access_golden_set, golden_sets_for, holders_of, user_roles
from goldenset.services import membership_grant
from goldenset.teams import (
    golden_set_move,
    organisation_create,
    organisation_member_remove,
    organisation_member_set,
    team_create,
    team_get,
    team_grant,
    team_revoke,
    team_roles_sync,
)
from lib.errors import GoldsetError
from tests.support import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme(make_user):
    """Organisation acme with teams search and rag, a set in each; and a second organisation
    globex with a set of its own."""
    admin = make_user("acme-admin")
    with transaction.atomic():
        acme = organisation_create(slug="acme", name="Acme", by=admin)
        search, rag = (team_create(organisation=acme, slug=slug, name=slug.title(), by=admin) for slug in ("search", "rag"))
        globex = organisation_create(slug="globex", name="Globex")
        labs = team_create(organisation=globex, slug="labs", name="Labs")
    sets = {
        "search": factories.golden_set("search-set", team=search),
        "rag": factories.golden_set("rag-set", team=rag),
        "labs": factories.golden_set("labs-set", team=labs),
    }
    return {"org": acme, "admin": admin, "search": search, "rag": rag, "globex": globex, "labs": labs, "sets": sets}


def test_a_team_role_holds_in_every_set_of_the_team_and_in_no_other(acme, make_user):
    alice = make_user("alice")
    team_grant(team=acme["search"], user=alice, role="manager")
    second = factories.golden_set("search-two", team=acme["search"])
    assert user_roles(alice, acme["sets"]["search"]) == {"manager"}
    assert user_roles(alice, second) == {"manager"}
    assert user_roles(alice, acme["sets"]["rag"]) == set()
    assert user_roles(alice, acme["sets"]["labs"]) == set()
    assert [s.slug for s in golden_sets_for(alice)] == ["search-set", "search-two"]
    assert access_golden_set(alice, "search-two").slug == "search-two"
    with pytest.raises(Exception) as refused:
        access_golden_set(alice, "rag-set")
    assert refused.typename == "Http404"
    # She joined the organisation as a member when she got the team role.
    assert OrganisationMembership.objects.get(user=alice, organisation=acme["org"]).role == "member"


def test_team_and_set_roles_add_up_and_a_revoke_takes_only_its_own(acme, make_user):
    bob = make_user("bob")
    team_grant(team=acme["search"], user=bob, role="annotator")
    membership_grant(user=bob, golden_set=acme["sets"]["search"], role="adjudicator")
    assert user_roles(bob, acme["sets"]["search"]) == {"annotator", "adjudicator"}
    assert team_revoke(team=acme["search"], user=bob, role="annotator")
    assert user_roles(bob, acme["sets"]["search"]) == {"adjudicator"}
    assert not team_revoke(team=acme["search"], user=bob, role="annotator")


def test_an_organisation_admin_manages_every_set_of_its_teams_and_none_elsewhere(acme):
    admin = acme["admin"]
    assert user_roles(admin, acme["sets"]["search"]) == {"manager"}
    assert user_roles(admin, acme["sets"]["rag"]) == {"manager"}
    assert user_roles(admin, acme["sets"]["labs"]) == set()
    assert sorted(s.slug for s in golden_sets_for(admin)) == ["rag-set", "search-set"]
    assert not admin.is_staff and not admin.is_superuser


def test_holders_of_lists_each_person_once_whatever_grants_them(acme, make_user):
    from django.contrib.auth import get_user_model

    carol = make_user("carol")
    team_grant(team=acme["search"], user=carol, role="manager")
    membership_grant(user=carol, golden_set=acme["sets"]["search"], role="manager")
    managers = get_user_model().objects.filter(holders_of(acme["sets"]["search"], ["manager"])).order_by("username")
    assert [u.username for u in managers] == ["acme-admin", "carol"]
    annotators = get_user_model().objects.filter(holders_of(acme["sets"]["search"], ["annotator"]))
    assert list(annotators) == []


def test_sign_on_roles_follow_the_claims_and_hand_grants_stay(acme, make_user):
    dana = make_user("dana")
    team_grant(team=acme["rag"], user=dana, role="adjudicator")  # by hand
    changes = team_roles_sync(user=dana, grants=[(acme["search"], "manager"), (acme["rag"], "annotator")])
    assert sorted(changes.granted) == [("acme/rag", "annotator"), ("acme/search", "manager")]
    assert user_roles(dana, acme["sets"]["rag"]) == {"adjudicator", "annotator"}
    changes = team_roles_sync(user=dana, grants=[(acme["rag"], "annotator")])
    assert changes.revoked == [("acme/search", "manager")] and changes.granted == []
    assert user_roles(dana, acme["sets"]["search"]) == set()
    # Claims that name nothing take back only what sign-on gave.
    team_roles_sync(user=dana, grants=[])
    assert user_roles(dana, acme["sets"]["rag"]) == {"adjudicator"}
    assert TeamMembership.objects.get(user=dana).from_sso is False


def test_bad_names_and_roles_are_refused_naming_them(acme, make_user):
    with pytest.raises(GoldsetError, match="'Bad Slug'"):
        team_create(organisation=acme["org"], slug="Bad Slug", name="x")
    with pytest.raises(GoldsetError, match="already has a team 'search'"):
        team_create(organisation=acme["org"], slug="search", name="again")
    with pytest.raises(GoldsetError, match="unknown role 'owner'"):
        team_grant(team=acme["search"], user=make_user("eve"), role="owner")
    with pytest.raises(GoldsetError, match="no team 'acme/nope'"):
        team_get("acme/nope")
    with pytest.raises(GoldsetError, match="last admin"):
        organisation_member_remove(organisation=acme["org"], user=acme["admin"])


def test_leaving_an_organisation_takes_its_team_roles(acme, make_user):
    fred = make_user("fred")
    team_grant(team=acme["search"], user=fred, role="manager")
    assert organisation_member_remove(organisation=acme["org"], user=fred, by=acme["admin"])
    assert user_roles(fred, acme["sets"]["search"]) == set()
    assert not TeamMembership.objects.filter(user=fred).exists()


def test_moving_a_set_moves_its_corpus_and_the_sets_on_it(acme, make_user):
    old = factories.golden_set("legacy")
    assert old.team == default_team()
    manager = make_user("grace")
    membership_grant(user=manager, golden_set=old, role="manager")
    moved = golden_set_move(golden_set=old, team=acme["rag"], by=acme["admin"])
    assert [s.slug for s in moved] == ["legacy"]
    old.refresh_from_db()
    assert old.team == acme["rag"] and old.corpus.team == acme["rag"]
    assert user_roles(manager, old) == {"manager"}  # set roles stay
    assert OrganisationMembership.objects.filter(user=manager, organisation=acme["org"]).exists()
    record = AuditRecord.objects.get(action="golden_set.move")
    assert record.before == {"team": "Default team"} and record.after == {"team": "Rag"}


def test_every_change_is_in_the_organisations_audit_trail(acme, make_user):
    helen = make_user("helen")
    organisation_member_set(organisation=acme["org"], user=helen, role="admin", by=acme["admin"])
    team_grant(team=acme["search"], user=helen, role="annotator", by=acme["admin"])
    team_revoke(team=acme["search"], user=helen, role="annotator", by=acme["admin"])
    actions = [r.action for r in audit_records(None, organisation=acme["org"]).order_by("id")]
    assert actions == [
        "organisation.create",
        "team.create",
        "team.create",
        "organisation.member",
        "team.grant",
        "team.revoke",
    ]
    # Another organisation's trail holds none of them.
    assert [r.action for r in audit_records(None, organisation=acme["globex"])] == ["team.create", "organisation.create"]


# --- pages ---------------------------------------------------------------------------


def test_a_member_reads_the_organisation_and_an_outsider_finds_nothing(acme, make_user, client):
    ivan = make_user("ivan")
    team_grant(team=acme["search"], user=ivan, role="annotator")
    client.force_login(ivan)
    page = client.get("/orgs/acme/")
    assert page.status_code == 200 and b"Search" in page.content and b"Make the team" not in page.content
    # Another team of the same organisation is as hidden as another organisation's, and the
    # organisation's people are its admins' to read.
    assert b"Rag" not in page.content and b"acme-admin" not in page.content
    assert client.get("/orgs/acme/teams/rag/").status_code == 404
    assert client.get("/orgs/").url == "/orgs/acme/"  # one organisation: straight to it
    assert client.get("/orgs/acme/teams/search/").status_code == 200
    assert client.get("/orgs/globex/").status_code == 404
    assert client.get("/orgs/globex/teams/labs/").status_code == 404
    assert client.get("/orgs/acme/audit/").status_code == 404  # admins only
    # A member's POST changes nothing.
    client.post("/orgs/acme/", {"action": "team", "slug": "mine", "name": "Mine"})
    client.post("/orgs/acme/teams/search/", {"action": "grant", "username": "ivan", "role": "manager"})
    assert not Team.objects.filter(slug="mine").exists()
    assert user_roles(ivan, acme["sets"]["search"]) == {"annotator"}
    client.logout()
    assert client.get("/orgs/acme/").status_code == 302  # to the sign-in


def test_an_admin_makes_a_team_and_grants_a_role_on_the_pages(acme, make_user, client):
    judy = make_user("judy")
    client.force_login(acme["admin"])
    response = client.post("/orgs/acme/", {"action": "team", "slug": "ads", "name": "Ads"}, follow=True)
    assert b"Team ads made" in response.content
    ads = Team.objects.get(organisation=acme["org"], slug="ads")
    response = client.post("/orgs/acme/teams/ads/", {"action": "grant", "username": "judy", "role": "manager"}, follow=True)
    assert b"judy is now manager of every set of team ads" in response.content
    assert TeamMembership.objects.filter(user=judy, team=ads, role="manager").exists()
    response = client.post("/orgs/acme/teams/ads/", {"action": "grant", "username": "nobody", "role": "manager"}, follow=True)
    assert b"no user &#x27;nobody&#x27;" in response.content
    response = client.post("/orgs/acme/", {"action": "team", "slug": "Bad Slug"}, follow=True)
    assert b"must be lower-case letters" in response.content
    audit = client.get("/orgs/acme/audit/?action=team")
    assert audit.status_code == 200 and b"team.grant" in audit.content and b"team.create" in audit.content
    assert client.get("/orgs/acme/audit/?since=yesterday").status_code == 400


def test_the_home_page_lists_the_sets_of_the_persons_teams(acme, make_user, client):
    kim = make_user("kim")
    team_grant(team=acme["rag"], user=kim, role="manager")
    client.force_login(kim)
    home = client.get("/").content.decode()
    assert "rag-set" in home and "search-set" not in home and "labs-set" not in home


# --- commands -------------------------------------------------------------------------


def test_the_commands_make_organisations_and_teams_grant_roles_and_move_sets(make_user, capsys, tmp_path):
    lead = make_user("lead")
    call_command("create_organisation", "initech", "--name", "Initech", "--admin", "lead")
    call_command("create_team", "initech/search", "--name", "Search")
    call_command("team_role", "initech/search", "lead", "annotator")
    legacy = factories.golden_set("legacy")
    call_command("move_golden_set", "legacy", "--team", "initech/search")
    out = capsys.readouterr().out
    assert (
        "organisation initech made, admins lead" in out and "team initech/search made" in out and "moved to initech/search: legacy" in out
    )
    legacy.refresh_from_db()
    assert legacy.team.slug == "search" and legacy.team.organisation.slug == "initech"
    assert user_roles(lead, legacy) == {"manager", "annotator"}
    call_command("team_role", "initech/search", "lead", "annotator", "--revoke")
    assert user_roles(type(lead).objects.get(pk=lead.pk), legacy) == {"manager"}  # a fresh read: roles are kept per request
    with pytest.raises(CommandError, match="no team 'initech/nope'"):
        call_command("move_golden_set", "legacy", "--team", "initech/nope")
    with pytest.raises(CommandError, match="no organisation 'nope'"):
        call_command("create_team", "nope/x")
    # An import names its team.
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "title": "", "text": "a page"}) + "\n")
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "a question"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    call_command("import_beir", str(beir), "--slug", "imported", "--team", "initech/search")
    imported = GoldenSet.objects.select_related("corpus").get(slug="imported")
    assert imported.team.slug == "search" and imported.corpus.team == imported.team


# --- the migration ----------------------------------------------------------------------


@pytest.mark.whole_system
@pytest.mark.django_db(transaction=True)
def test_an_installation_made_before_teams_lands_in_the_default_team_with_nothing_else_changed():
    before = [("goldenset", "0021_audit_records")]
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(before)
        old = MigrationExecutor(connection).loader.project_state(before).apps
        User = old.get_model("auth", "User")
        with transaction.atomic():
            corpus = old.get_model("goldenset", "Corpus").objects.create(slug="old", name="Old")
            golden_set = old.get_model("goldenset", "GoldenSet").objects.create(slug="old", name="Old", corpus=corpus)
            person = User.objects.create(username="old-manager")
            old.get_model("goldenset", "Membership").objects.create(user=person, golden_set=golden_set, role="manager")
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(latest)
        migrated = GoldenSet.objects.select_related("team__organisation", "corpus__team").get(slug="old")
        assert (migrated.team.organisation.slug, migrated.team.slug) == ("default", "default")
        assert migrated.corpus.team == migrated.team
        user = Membership.objects.get(golden_set=migrated).user
        assert user_roles(user, migrated) == {"manager"}
        assert OrganisationMembership.objects.get(user=user).organisation.slug == "default"
        assert Organisation.objects.count() == 1 and Team.objects.count() == 1
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(latest)
