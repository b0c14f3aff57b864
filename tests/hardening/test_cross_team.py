"""Cross-team isolation (issue 29): a walk generated from the project's resolver visits every
URL pattern as people of other teams and finds nothing of team B visible or writable.

The walk's machinery comes first (shared with test_cross_team_api.py, the API's walk with
tokens): every URL pattern of the project, read from the resolver (not a hand list), its
parameters filled from team B's rows by name (a new route whose parameter has no filler
fails), and the row counts and contents of every model, to prove a refused request wrote
nothing. Team B's data is tests/goldset/site.py's cross_team_site, built once a module."""

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from hashlib import sha256
from urllib.parse import urlencode

import pytest
from django.apps import apps
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse

from goldenset.models import Corpus, GoldenSet, OrganisationMembership
from tests.goldset.site import B_NAME, CrossTeamSite, cross_team_site
from tests.support.fixtures import kept_for_the_module

# Patterns the walk leaves out, each with why. Everything else is walked, and a pattern
# whose parameter has no filler fails the walk.
SKIPPED_PREFIXES = {
    "healthz": "operations: no login, no set data (tests/goldset/test_health.py)",
    "readyz": "operations: no login, no set data (tests/goldset/test_health.py)",
    "metrics": "operations: process figures, no set data (tests/goldset/test_metrics.py)",
    "accounts/": "sign-in and one's own password: no set data (tests/hardening/test_logins.py)",
}
# The Django admin is staff-only and has its own tests (tests/test_admin.py); the set's
# coverage pages under /admin/coverage/ are the labeling app's and are walked.
SKIPPED_NAMESPACES = {"admin": "staff only, with its own tests (tests/test_admin.py)"}

_ROUTE_PARAMETER = re.compile(r"(?<!\?P)<(?:\w+:)?(\w+)>")
_REGEX_PARAMETER = re.compile(r"\(\?P<(\w+)>[^)]*\)")


@dataclass(frozen=True)
class Pattern:
    route: str  # the full route as written, converters and regex groups included
    name: str | None
    callback: Callable
    parameters: tuple[str, ...]

    def url(self, values: dict[str, str]) -> str:
        path = _ROUTE_PARAMETER.sub(lambda m: values[m.group(1)], self.route)
        path = _REGEX_PARAMETER.sub(lambda m: values[m.group(1)], path)
        return "/" + path.replace("^", "").replace("$", "")


def patterns() -> list[Pattern]:
    """Every pattern of the project's resolver, includes followed, minus the skipped ones."""
    found = []
    for route, pattern in _walk(get_resolver(), ""):
        if route.lstrip("^").startswith(tuple(SKIPPED_PREFIXES)):
            continue
        parameters = tuple(_ROUTE_PARAMETER.findall(route) + _REGEX_PARAMETER.findall(route))
        found.append(Pattern(route, pattern.name, pattern.callback, parameters))
    return found


def _walk(resolver: URLResolver, prefix: str) -> Iterator[tuple[str, URLPattern]]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            if entry.namespace in SKIPPED_NAMESPACES:
                continue
            yield from _walk(entry, prefix + str(entry.pattern))
        else:
            yield prefix + str(entry.pattern), entry


# --- fillers: a URL parameter's name -> team B's value for it --------------------------------


def _by_segment(
    choices: dict[str, Callable[[CrossTeamSite], object]], default: Callable[[CrossTeamSite], object] | None = None
) -> Callable[[CrossTeamSite, str, str], str]:
    """A parameter whose name several routes share (`job_id`, `name`): its value is chosen by
    the path segment before it (`publish/<job_id>`, `endpoints/<name>`), else `default`."""

    def fill(site: CrossTeamSite, route: str, parameter: str) -> str:
        prefix = re.sub(r"(\(\?P)?<(\w+:)?$", "", route[: route.index(f"{parameter}>")])
        before = prefix.rstrip("/").rsplit("/", 1)[-1].lstrip("^")
        if before in choices:
            return str(choices[before](site))
        if default is None:
            raise LookupError(f"no filler for {parameter!r} after {before!r} in {route}")
        return str(default(site))

    return fill


def _plain(get: Callable[[CrossTeamSite], object]) -> Callable[[CrossTeamSite, str, str], str]:
    return lambda site, route, parameter: str(get(site))


FILLERS: dict[str, Callable[[CrossTeamSite, str, str], str]] = {
    # A set's slug, unless an organisation's or a team's page calls its own `slug`.
    "slug": _by_segment({"orgs": lambda s: s.organisation.slug, "teams": lambda s: s.team.slug}, default=lambda s: s.golden_set.slug),
    # The organisation and team pages (the lead's /orgs/<org_slug>/... routes).
    "org_slug": _plain(lambda s: s.organisation.slug),
    "team_slug": _plain(lambda s: s.team.slug),
    "number": _plain(lambda s: s.objects["version"].number),
    "other": _plain(lambda s: s.objects["version"].number),
    "fmt": _plain(lambda s: "trec"),
    "query_id": _plain(lambda s: s.objects["query"].query_id),
    "query_pk": _plain(lambda s: s.objects["query"].pk),
    "page_pk": _plain(lambda s: s.objects["page"].pk),
    "run_id": _plain(lambda s: s.objects["run"].pk),
    "action": _plain(lambda s: "archive"),
    "fill_id": _plain(lambda s: s.objects["fill"].pk),
    "membership_id": _plain(lambda s: s.objects["membership"].pk),
    "token_id": _plain(lambda s: s.objects["token"].pk),
    "incident_id": _plain(lambda s: s.objects["incident"].pk),
    "task_id": _plain(lambda s: s.objects["task"].pk),
    "experiment_id": _plain(lambda s: s.objects["experiment"].pk),
    "answer_id": _plain(lambda s: s.objects["answer"].pk),
    "log_id": _plain(lambda s: s.objects["log"].pk),
    "night_id": _plain(lambda s: s.objects["night"].pk),
    "series": _plain(lambda s: s.objects["endpoint"].series.name),
    "endpoint": _plain(lambda s: s.objects["endpoint"].name),
    "token": _plain(lambda s: s.objects["try_token"]),  # an endpoint's "try it" result
    "job_id": _by_segment(
        {
            "publish": lambda s: s.objects["publish_job"].pk,
            "publish-jobs": lambda s: s.objects["publish_job"].pk,
            "uploads": lambda s: s.objects["upload"].pk,
            "run-uploads": lambda s: s.objects["upload"].pk,
            "asks": lambda s: s.objects["depth"].pk,
            "depth-asks": lambda s: s.objects["depth"].pk,
        }
    ),
    "name": _by_segment(
        {
            "endpoints": lambda s: s.objects["endpoint"].name,
            "tags": lambda s: B_NAME,
            "chunkings": lambda s: B_NAME,
        }
    ),
}


def filled(pattern: Pattern, site: CrossTeamSite, *, own: dict[str, str] | None = None) -> str:
    """The pattern's URL with team B's values, but the outsider's `own` ones where given
    ({"slug": their set's, "org_slug": their organisation's}). Raises LookupError naming a
    parameter no filler knows, and AssertionError when the URL does not resolve back to the
    pattern (a filler that made another route's URL)."""
    values = {}
    for parameter in pattern.parameters:
        if parameter not in FILLERS:
            raise LookupError(f"no filler for the parameter {parameter!r} of {pattern.route} (add one to FILLERS)")
        values[parameter] = FILLERS[parameter](site, pattern.route, parameter)
    values.update((key, value) for key, value in (own or {}).items() if key in values)
    url = pattern.url(values)
    match = resolve(url)
    assert match.func == pattern.callback and match.url_name == pattern.name, f"{url} resolves to {match.view_name}, not {pattern.route}"
    return url


def walked_urls(pattern: Pattern, site: CrossTeamSite, outsider: str) -> tuple[list[str], list[str]]:
    """(refused, readable): the pattern's URLs the outsider must be refused, and those that
    are the outsider's own and may answer, showing nothing of B.

    Refused: B's values, and B's ids under the outsider's own set or organisation (the IDOR:
    /sets/<mine>/runs/<B's run>/, /orgs/<mine>/teams/<B's team>/). Readable: a pattern with no
    parameter, one of the outsider's own set alone, and B's organisation's own pages (its
    org_slug alone) for a member of that organisation; a team's pages stay refused to
    those outside the team."""
    user = site.people[outsider]
    organisations = set(OrganisationMembership.objects.filter(user=user).values_list("organisation__slug", flat=True))
    own = {}
    if outsider in site.sets:
        own["slug"] = site.sets[outsider].slug
    if other := sorted(organisations - {site.organisation.slug}):
        own["org_slug"] = other[0]
    theirs = filled(pattern, site)
    parameters = set(pattern.parameters)
    if not parameters or (parameters == {"org_slug"} and site.organisation.slug in organisations):
        return [], [theirs]
    mine = {key: value for key, value in own.items() if key in parameters}
    if not mine:
        return [theirs], []
    url = filled(pattern, site, own=mine)
    return ([theirs], [url]) if parameters <= set(mine) else ([theirs, url], [])


# What a form might carry: enough for any view to get past its form to its writes, were
# its access check missing. Ids are team B's.
def form_body(site: CrossTeamSite, *, api: bool = False) -> dict[str, str]:
    """Fields by the names the forms and the API's bodies use, B's ids in each (an endpoint
    by pk for the pages' choice fields, by name for the API)."""
    o = site.objects
    return {
        "a": str(o["run"].pk),
        "b": str(o["run"].pk),
        "pool": str(o["task"].pool_id),
        "generator": str(o["experiment"].generator_id),
        "judge": str(o["experiment"].judge_id),
        "experiment": str(o["experiment"].pk),
        "chunking": B_NAME,
        "tag": B_NAME,
        "series": o["endpoint"].series.name,
        "model": "judge-7b",
        "sample_size": "2",
        "seed": "1",
        "name": "walked",
        "note": "walked",
        "role": "manager",
        "username": "alpha_manager",
        "user": str(site.people["alpha_manager"].pk),
        "version": str(o["version"].number),
        "run": str(o["run"].pk),
        "runs": str(o["run"].pk),
        "baseline": str(o["run"].pk),
        "depth": "2",
        "strategy": "depth",
        "grade": "2",
        "query": o["query"].query_id,
        "query_id": o["query"].query_id,
        "doc_id": "d1a",
        "endpoint": o["endpoint"].name if api else str(o["endpoint"].pk),
        "system": "walked",
        "stage": "first_stage",
        "preset": "goldset",
        "url": "http://127.0.0.1:9/walked",
        "state": "acknowledged",
        "action": "acknowledge",
        "supported": "on",
        "size": "2",
        "design": "srs",
        "log": str(o["log"].pk),
        "k": "3",
        "scope": "write",
    }


# --- what is written ---------------------------------------------------------------------


def _tables() -> list[str]:
    return sorted({m._meta.db_table for m in apps.get_models(include_auto_created=True) if m._meta.managed and not m._meta.proxy})


def row_counts() -> dict[str, int]:
    """Rows in every model's table, read in one statement (a walk takes thousands)."""
    tables = _tables()
    quote = connection.ops.quote_name
    sql = "SELECT " + ", ".join(f"(SELECT COUNT(*) FROM {quote(t)})" for t in tables)
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return dict(zip(tables, cursor.fetchone()))


def maximum_ids() -> dict[type, int]:
    """The largest id of every model with an integer key: the rows made after are above it."""
    found = {}
    for model in apps.get_models(include_auto_created=True):
        if model._meta.managed and not model._meta.proxy and model._meta.pk.get_internal_type() in ("AutoField", "BigAutoField"):
            found[model] = model._base_manager.order_by("-pk").values_list("pk", flat=True).first() or 0
    return found


def rows_of(site: CrossTeamSite) -> set[tuple[type, int]]:
    """(model, id) of every row of team B's set and corpus, for the references check."""
    rows = {(GoldenSet, site.golden_set.pk), (Corpus, site.golden_set.corpus_id)}
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if field.is_relation and field.related_model in (GoldenSet, Corpus) and model not in (GoldenSet, Corpus):
                owner = site.golden_set.pk if field.related_model is GoldenSet else site.golden_set.corpus_id
                rows |= {(model, pk) for pk in model._base_manager.filter(**{field.attname: owner}).values_list("pk", flat=True)}
    return rows


def references(since: dict[type, int], theirs: set[tuple[type, int]]) -> list[str]:
    """The rows made after `since` (maximum_ids) that point at one of `theirs`."""
    found = []
    for model, last in since.items():
        relations = [f for f in model._meta.concrete_fields if f.is_relation and f.related_model not in (GoldenSet, Corpus)]
        if not relations:
            continue
        for row in model._base_manager.filter(pk__gt=last).values("pk", *(f.attname for f in relations)):
            found += [
                f"{model.__name__} {row['pk']}.{f.name} -> {f.related_model.__name__} {row[f.attname]}"
                for f in relations
                if (f.related_model, row[f.attname]) in theirs
            ]
    return found


# Columns a refused request may still change: the session's and the token's last use.
VOLATILE = {("auth_user", "last_login"), ("api_apitoken", "last_used_at")}
SKIPPED_TABLES = {"django_session": "the test client's logins"}


def contents() -> dict[str, str]:
    """A hash of every row of every model's table: a refused request that changed a row in
    place (archived a run, acknowledged an incident, moved a tag) changes its table's hash."""
    hashes = {}
    for model in apps.get_models(include_auto_created=True):
        meta = model._meta
        if not meta.managed or meta.proxy or meta.db_table in SKIPPED_TABLES:
            continue
        columns = [f.attname for f in meta.concrete_fields if (meta.db_table, f.column) not in VOLATILE]
        digest = sha256()
        for row in model._base_manager.order_by("pk").values_list(*columns).iterator():
            digest.update(repr(row).encode())
        hashes[meta.db_table] = digest.hexdigest()
    return hashes


def changed(before: dict, after: dict) -> list[str]:
    return sorted(t for t in before if before[t] != after.get(t))


@pytest.fixture(scope="module")
def site(request, django_db_setup, django_db_blocker):
    """Team B and its outsiders, built once for the module."""
    try:
        yield from kept_for_the_module(request, django_db_blocker, cross_team_site)
    finally:
        cache.clear()  # what the pages kept of B's rows, which are gone


# --- the walk --------------------------------------------------------------------------------

pytestmark = [pytest.mark.django_db, pytest.mark.whole_system]

# Outsiders of team B, each a way of being near it: a manager of another team of B's
# organisation, an admin of another organisation (a manager of every set of its teams, so a
# manager of a team there walks no other road), and a plain member of B's organisation with
# no role in any team.
OUTSIDERS = ["alpha_manager", "globex_admin", "acme_member"]
# What a page refusing an outsider may answer (a redirect only to the sign-in page).
REFUSED = {403, 404, 405}
# The share of B's pages (those that answer a GET) B's own manager must reach, so that the
# walk is not passing because nothing answers anyone (the rest need a query parameter, a
# reference answer B's query lacks, or redirect).
REACHED_SHARE = 0.9


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _refused(response) -> bool:
    if response.status_code in REFUSED:
        return True
    return response.status_code == 302 and response["Location"].startswith(reverse("login"))


def leaked_markers(response, site) -> list[str]:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    text = body.decode(errors="replace")
    return [marker for marker in site.markers if marker in text]


def _query_string(site) -> str:
    """Team B's ids as the query parameters pages read (?run=, ?version=, ?baseline=...)."""
    return "?" + urlencode({k: v for k, v in form_body(site).items() if k not in ("name", "note", "url")})


def test_every_pattern_has_a_filler_for_each_of_its_parameters(site):
    unfilled = []
    for pattern in patterns():
        try:
            filled(pattern, site)
        except LookupError as error:
            unfilled.append(str(error))
    assert unfilled == []


def page_walk(site: CrossTeamSite, outsider: str) -> list[str]:
    """What the outsider reached of B, one line each: GET and POST every pattern's refused
    URLs (walked_urls: B's values, B's ids under the outsider's own set or organisation) must
    be refused, show no marker of B and write no row; its readable URLs (the outsider's own
    pages) may answer but show nothing of B, even with B's ids in their query string."""
    user = site.people[outsider]
    client = _client(user)
    problems = []
    counts = row_counts()
    before = contents()
    body = form_body(site)
    for pattern in patterns():
        urls, mine_only = walked_urls(pattern, site, outsider)
        for url in mine_only:
            for variant in (url, url + _query_string(site)):
                response = client.get(variant)
                if leaked := leaked_markers(response, site):
                    problems.append(f"GET {variant} answered {response.status_code} showing {leaked}")
        for url in urls:
            under_own_set = url != filled(pattern, site)
            response = client.get(url)
            if not _refused(response):
                problems.append(f"GET {url} answered {response.status_code}")
            if leaked := leaked_markers(response, site):
                problems.append(f"GET {url} answered {response.status_code} showing {leaked}")
            response = client.post(url, body)
            if under_own_set and response.status_code == 302 and site.golden_set.slug not in response["Location"]:
                # A form of the outsider's own set that names an id the set lacks comes back
                # to the outsider's page with the error ("golden set alpha-set has no incident
                # 1", tests/evaluation/alerts/test_incident_triage.py): refused, if it wrote
                # nothing (the row checks below) and shows nothing of B.
                response = client.get(response["Location"])
            elif not _refused(response) and not 400 <= response.status_code < 500:
                problems.append(f"POST {url} answered {response.status_code}")
            if leaked := leaked_markers(response, site):
                problems.append(f"POST {url} answered {response.status_code} showing {leaked}")
            now = row_counts()
            if now != counts:
                problems.append(f"POST {url} wrote rows: {changed(counts, now)}")
                counts = now
    if moved := changed(before, contents()):
        problems.append(f"a refused request changed rows in place in {moved}")
    return problems


@pytest.mark.parametrize("outsider", OUTSIDERS)
def test_an_outsider_of_team_b_sees_and_writes_nothing_of_it_on_any_page(site, outsider):
    problems = page_walk(site, outsider)
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("outsider", ["alpha_manager", "globex_admin"])
def test_an_outsider_s_own_forms_take_nothing_of_team_b_by_id(site, outsider):
    """POST every form of the outsider's own set (the patterns with no id) with B's ids in
    its fields (?run=, pool, generator, endpoint...): what it writes in the outsider's set
    points at no row of B's (a pool of B's run, an experiment with B's generator)."""
    client = _client(site.people[outsider])
    own = site.sets[outsider]
    theirs, since = rows_of(site), maximum_ids()
    body = form_body(site)
    for pattern in patterns():
        if pattern.parameters == ("slug",):
            client.post(filled(pattern, site, own={"slug": own.slug}), body)
    assert references(since, theirs) == []


def test_team_b_s_own_manager_reaches_most_of_the_walked_pages(site):
    """The same walk as B's manager: the pages answer, and the forms that only take a POST
    find their row (no 404; the judging forms as B's annotator), so the outsiders' refusals are refusals of pages and rows that
    exist, not of URLs that lead nowhere. (Its writes end with the test's savepoint.)"""
    client = _client(site.people["manager"])
    answers, seen, posts = {}, set(), []
    for pattern in patterns():
        if pattern.parameters:
            url = filled(pattern, site)
            response = client.get(url)
            answers[url] = response.status_code
            seen.update(leaked_markers(response, site))
            if response.status_code == 405:
                posts.append(url)
    readable = {url: status for url, status in answers.items() if status != 405}
    reached = [url for url, status in readable.items() if status == 200]
    others = "\n".join(f"{status} {url}" for url, status in readable.items() if status != 200)
    assert len(reached) >= REACHED_SHARE * len(readable), f"{len(reached)} of {len(readable)} answered 200; the others:\n{others}"
    # Each marker is on some page of B's, so its absence from an outsider's pages means something.
    assert seen == set(site.markers)
    # The judging screen's forms are the annotator's (a manager judges only when also one).
    annotator = _client(site.people["annotator"])
    body = form_body(site)
    missing = [url for url in posts if client.post(url, body).status_code == 404 and annotator.post(url, body).status_code == 404]
    assert missing == [], "B's own people find no row behind these forms: their filler is wrong"
