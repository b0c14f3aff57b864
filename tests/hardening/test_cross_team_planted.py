"""The cross-team walk is not vacuous: with holes planted in the project's routes (a run
read by its id alone, a team read without its organisation, a run archived by its id
alone), the walk of test_cross_team.py reports each of them.

This module is also the URL configuration it plants them in: the project's routes and three
more (urlpatterns below), served only while the test overrides ROOT_URLCONF."""

import pytest
from django.http import HttpResponse
from django.test import override_settings
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt

from evaluation.models import Run
from goldenset.models import GoldenSet, Team
from goldenset.selectors import access_golden_set
from goldenset.teams import access_organisation
from tests.hardening.test_cross_team import page_walk, site  # noqa: F401 - site is a fixture

pytestmark = [pytest.mark.django_db, pytest.mark.whole_system]


def _run_by_id_alone(request, slug: str, run_id: int) -> HttpResponse:
    access_golden_set(request.user, slug)  # the set is checked, but the run is not read through it
    return HttpResponse(Run.objects.get(pk=run_id).name)


@csrf_exempt
def _archive_by_id_alone(request, slug: str, run_id: int) -> HttpResponse:
    access_golden_set(request.user, slug)
    if request.method == "POST":
        Run.objects.filter(pk=run_id).update(name="archived by an outsider")
    return HttpResponse(status=204)


def _team_without_its_organisation(request, org_slug: str, team_slug: str) -> HttpResponse:
    access_organisation(request.user, org_slug)  # the caller's organisation, but any team of that slug
    team = Team.objects.get(slug=team_slug)
    return HttpResponse(", ".join(GoldenSet.objects.filter(team=team).values_list("name", flat=True)))


urlpatterns = [
    path("sets/<slug:slug>/planted/runs/<int:run_id>/", _run_by_id_alone),
    path("sets/<slug:slug>/planted/runs/<int:run_id>/archive/", _archive_by_id_alone),
    path("orgs/<slug:org_slug>/planted-teams/<slug:team_slug>/", _team_without_its_organisation),
    path("", include("goldset.urls")),
]


# One walker is enough to show the walk finds a hole: B's organisation's other team, the
# nearest outsider (the planted team page is reached under their common organisation).
@pytest.mark.parametrize("outsider", ["alpha_manager"])
def test_the_walk_reports_each_planted_hole(site, outsider):
    with override_settings(ROOT_URLCONF=__name__):
        problems = page_walk(site, outsider)
    own = site.sets[outsider].slug
    run = site.objects["run"].pk
    assert f"GET /sets/{own}/planted/runs/{run}/ answered 200" in problems
    assert any(p.startswith(f"GET /sets/{own}/planted/runs/{run}/ answered 200 showing") for p in problems)
    assert f"POST /sets/{own}/planted/runs/{run}/archive/ answered 204" in problems
    assert any(p.startswith("a refused request changed rows in place in ['evaluation_run'") for p in problems)
    if outsider == "globex_admin":  # another organisation: B's team under its own organisation
        assert "GET /orgs/globex/planted-teams/beta/ answered 200" in problems
    else:  # another team of B's organisation: B's team under their common organisation
        assert "GET /orgs/acme/planted-teams/beta/ answered 200" in problems
    # Nothing else: the project's own routes have no hole.
    assert all("/planted/" in p or "/planted-teams/" in p or p.startswith("a refused request changed") for p in problems), problems
