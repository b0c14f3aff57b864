"""Cross-team isolation of the API (issue 29): every path and method of the OpenAPI schema
(/api/schema/, not a hand list), its parameters filled with team B's values by name
(test_cross_team.FILLERS), called with tokens of people outside team B: a write token for
all of their sets and a write token of their own set. B's objects answer 404 or 403, under
B's slug and under the caller's own slug (B's ids there are the IDOR), and a refused call
writes nothing; the list of sets lists only the caller's."""

import re

import pytest
from django.test import Client

from api.services import api_token_create
from goldenset.selectors import golden_sets_for
from tests.api import client_for
from tests.hardening.test_cross_team import (
    FILLERS,
    changed,
    contents,
    form_body,
    leaked_markers,
    maximum_ids,
    references,
    row_counts,
    rows_of,
    site,  # noqa: F401 - a fixture
)

pytestmark = [pytest.mark.django_db, pytest.mark.whole_system]

_PARAMETER = re.compile(r"\{(\w+)\}")
METHODS = ("get", "post", "put", "patch", "delete")
# The share of B's GET operations B's own token must reach, so that the walk is not passing
# because nothing answers anyone (the rest need a query parameter or a row B lacks: 35 of 37 answer).
REACHED_SHARE = 0.9


@pytest.fixture(scope="module")
def operations(site, django_db_blocker) -> list[tuple[str, str, list[str]]]:
    """(method, path template, its query parameters' names) of every operation of the
    served schema."""
    with django_db_blocker.unblock():
        response = Client().get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    paths = response.json()["paths"]
    return [
        (method, path, [p["name"] for p in item[method].get("parameters", []) if p["in"] == "query"])
        for path, item in sorted(paths.items())
        for method in METHODS
        if method in item
    ]


def _query_values(names: list[str], site, body: dict) -> dict[str, str]:
    """B's values for an operation's query parameters (?run=, ?series=, ?doc_id=...), by the
    names the bodies and the path fillers use; the others (page, limit) left out."""
    values = {name: body[name] for name in names if name in body}
    values.update((name, FILLERS[name](site, "", name)) for name in names if name in FILLERS and name not in values and name != "name")
    return values


def _filled(path: str, site, *, slug: str | None = None) -> str:
    """The path with team B's values (and `slug` for the set's); LookupError naming a
    parameter no filler knows."""
    route = _PARAMETER.sub(r"<\1>", path)  # the fillers read the segment before a parameter

    def value(match) -> str:
        parameter = match.group(1)
        if parameter == "slug" and slug is not None:
            return slug
        if parameter not in FILLERS:
            raise LookupError(f"no filler for the parameter {parameter!r} of {path} (add one to test_cross_team.FILLERS)")
        return FILLERS[parameter](site, route, parameter)

    return _PARAMETER.sub(value, path)


def _call(client, method: str, url: str, body: dict):
    if method == "get":
        return client.get(url)
    return getattr(client, method)(url, body, format="json")


# (whose token, restricted to their own set or not)
# gamma's manager's tokens reach what globex's admin's reach, less: they are not walked.
TOKENS = [("alpha_manager", False), ("alpha_manager", True), ("globex_admin", False), ("globex_admin", True)]


@pytest.mark.parametrize(("outsider", "own_set_only"), TOKENS)
def test_an_outsider_s_token_reaches_nothing_of_team_b_through_any_operation(site, operations, outsider, own_set_only):
    user = site.people[outsider]
    own = site.sets[outsider]
    _, secret = api_token_create(owner=user, scope="write", golden_set=own if own_set_only else None, name="walk")
    client = client_for(secret)
    body = form_body(site, api=True)
    problems = []
    counts, before = row_counts(), contents()
    for method, path, query in operations:
        parameters = _PARAMETER.findall(path)
        if method == "get" and parameters == ["slug"] and (values := _query_values(query, site, body)):
            # The outsider's own list or figures, asked with B's ids: nothing of B in them.
            url = _filled(path, site, slug=own.slug)
            response = client.get(url, values)
            if leaked := leaked_markers(response, site):
                problems.append(f"GET {url}?{values} answered {response.status_code} showing {leaked}")
        urls = [_filled(path, site)] if parameters else []
        if "slug" in parameters and len(parameters) > 1:
            urls.append(_filled(path, site, slug=own.slug))
        for url in urls:
            response = _call(client, method, url, body)
            refused = response.status_code in (403, 404) if method == "get" else 400 <= response.status_code < 500
            if not refused:
                problems.append(f"{method.upper()} {url} answered {response.status_code}")
            if leaked := leaked_markers(response, site):
                problems.append(f"{method.upper()} {url} answered {response.status_code} showing {leaked}")
            now = row_counts()
            if now != counts:
                problems.append(f"{method.upper()} {url} wrote rows: {changed(counts, now)}")
                counts = now
    assert problems == [], "\n".join(problems)
    assert changed(before, contents()) == [], "a refused call changed rows in place"
    listed = client.get("/api/v1/golden-sets/").json()["results"]
    may_read = {own.slug} if own_set_only else set(golden_sets_for(user).values_list("slug", flat=True))
    assert {entry["slug"] for entry in listed} == may_read and site.golden_set.slug not in may_read


@pytest.mark.parametrize("outsider", ["alpha_manager", "globex_admin"])
def test_an_outsider_s_writes_to_their_own_set_take_nothing_of_team_b_by_id(site, operations, outsider):
    """Every write of the outsider's own set that names no id in its path, sent with B's ids
    and names in its body (a run, an endpoint, a pool, a generator): what it writes points at
    no row of B's."""
    own = site.sets[outsider]
    _, secret = api_token_create(owner=site.people[outsider], scope="write", golden_set=own, name="walk")
    client = client_for(secret)
    theirs, since = rows_of(site), maximum_ids()
    body = form_body(site, api=True)
    for method, path, _ in operations:
        if method != "get" and _PARAMETER.findall(path) == ["slug"]:
            _call(client, method, _filled(path, site, slug=own.slug), body)
    assert references(since, theirs) == []


def test_team_b_s_own_token_reaches_most_of_its_operations(site, operations):
    """The same walk with a token of B's manager: B's objects answer, so the outsiders'
    404s are refusals of rows that exist."""
    _, secret = api_token_create(owner=site.people["manager"], scope="read", golden_set=site.golden_set, name="walk")
    client = client_for(secret)
    answers = {}
    for method, path, _ in operations:
        if method == "get" and _PARAMETER.search(path):
            url = _filled(path, site)
            answers[url] = client.get(url).status_code
    reached = [url for url, status in answers.items() if status == 200]
    others = "\n".join(f"{status} {url}" for url, status in answers.items() if status != 200)
    assert len(reached) >= REACHED_SHARE * len(answers), f"{len(reached)} of {len(answers)} answered 200; the others:\n{others}"
    listed = client.get("/api/v1/golden-sets/").json()["results"]
    assert [entry["slug"] for entry in listed] == [site.golden_set.slug]
