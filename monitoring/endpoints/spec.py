"""What Goldset needs to query one stage of a search system over HTTP, and its checks.

An `EndpointSpec` is plain data (the integrator's model turns a row into one), so the
client and its tests need no database. It is used as it is: the presets only fill a
form's first values (`preset_defaults`, `spec_from_preset`), and what the manager then
saves is exactly what is sent.

No secret is stored with a spec: a header that carries one names an environment variable
(`Authorization: Bearer ${SEARCH_TOKEN}`), read from the worker's environment when the
request is sent and never shown resolved. Only variables whose names start with
`env_prefix` (`SEARCH_` unless the caller says otherwise) may be named, so a manager
cannot have the worker send its `DJANGO_SECRET_KEY` or `DATABASE_URL` to a server of
theirs.
"""

import ipaddress
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from lib import outbound

from . import mapping

PRESETS = ("goldset", "opensearch", "elasticsearch", "solr", "vespa", "generic")
METHODS = ("GET", "POST")
ENV_PREFIX = "SEARCH_"
ENV_REFERENCE = re.compile(r"\$\{([^}]*)\}")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
SECRET_HEADERS = {"authorization", "proxy-authorization", "cookie"}
SECRET_WORDS = ("token", "key", "secret", "password", "auth")
# What may stand beside the ${VAR} references in a secret header's value: the scheme
# word ("Bearer", "Basic", "ApiKey") and separators. Digits or long words are refused
# because a pasted secret has them.
_SECRET_SURROUNDINGS = re.compile(r"^[\s:=;,]*(?:[A-Za-z][A-Za-z_-]{0,31}[\s:=;,]+)?$")

# The engines' documented request and answer shapes. Count paths go with the count URL
# that suggested_count_url derives from the search URL.
_SEARCH_BODY_DSL = '{"size": {{k}}, "_source": false, "query": {"multi_match": {"query": {{query}}}}}'
_PRESET_FIELDS = {
    # Goldset's own contract: POST {"query", "query_id", "k"} answered by
    # {"results": [{"doc_id", "score"}], "index_size": n}, index_size optional.
    "goldset": {
        "method": "POST",
        "body_template": '{"query": {{query}}, "query_id": {{query_id}}, "k": {{k}}}',
        "params_template": "",
        "hits_path": "results",
        "doc_id_path": "doc_id",
        "score_path": "score",
        "index_size_path": "index_size",
        "count_path": "",
    },
    # POST /<index>/_search with the query DSL; multi_match with no fields searches the
    # index's default fields (index.query.default_field). Answer: hits.hits[]._id/_score.
    # _source is off: Goldset reads ids and scores only, and the documents would only
    # make every answer heavier. GET /<index>/_count answers {"count": n}.
    "opensearch": {
        "method": "POST",
        "body_template": _SEARCH_BODY_DSL,
        "params_template": "",
        "hits_path": "hits.hits",
        "doc_id_path": "_id",
        "score_path": "_score",
        "index_size_path": "",
        "count_path": "count",
    },
    "elasticsearch": {
        "method": "POST",
        "body_template": _SEARCH_BODY_DSL,
        "params_template": "",
        "hits_path": "hits.hits",
        "doc_id_path": "_id",
        "score_path": "_score",
        "index_size_path": "",
        "count_path": "count",
    },
    # GET /solr/<collection>/select; edismax because it reads text as people type it
    # (a stray ':' or '"' in a query is not a syntax error). Answer: response.docs[] with
    # the fields of fl. response.numFound of q=*:* (the count URL) is the index size.
    "solr": {
        "method": "GET",
        "body_template": "",
        "params_template": "q={{query}}&defType=edismax&rows={{k}}&fl=id,score&wt=json",
        "hits_path": "response.docs",
        "doc_id_path": "id",
        "score_path": "score",
        "index_size_path": "",
        "count_path": "response.numFound",
    },
    # POST /search/ with YQL; userQuery() reads the "query" parameter. Answer:
    # root.children[] with "id", "relevance" and the document's "fields". A hit's "id" is
    # its document id, "id:<namespace>:<type>:<key/values>:<id>", read as the <id> part
    # (mapping.vespa_user_id: the id the corpus was fed with); a schema that keeps the doc
    # id in a field of its own is read with fields.<field>. root.fields.totalCount of a
    # query matching everything (the count URL) is the index size.
    "vespa": {
        "method": "POST",
        "body_template": '{"yql": "select * from sources * where userQuery()", "query": {{query}}, "hits": {{k}}}',
        "params_template": "",
        "hits_path": "root.children",
        "doc_id_path": "id",
        "score_path": "relevance",
        "index_size_path": "",
        "count_path": "root.fields.totalCount",
    },
    # Anything else: the manager writes the request and the paths.
    "generic": {
        "method": "POST",
        "body_template": '{"query": {{query}}, "k": {{k}}}',
        "params_template": "",
        "hits_path": "",
        "doc_id_path": "",
        "score_path": "",
        "index_size_path": "",
        "count_path": "",
    },
}


@dataclass(frozen=True)
class EndpointSpec:
    """One stage's HTTP endpoint. Limits: `timeout_seconds` per attempt, in seconds;
    `retries` extra attempts after the first (on connect errors, timeouts, 5xx and 429);
    `max_in_flight` requests open at once; `max_per_second` request starts per second
    across the whole fetch (retries included). Paths and templates: see mapping.py."""

    preset: str
    url: str
    method: str = "POST"
    body_template: str = ""
    params_template: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    hits_path: str = ""
    doc_id_path: str = ""
    score_path: str = ""
    index_size_path: str = ""
    count_url: str = ""
    count_path: str = ""
    timeout_seconds: float = 10.0
    retries: int = 2
    max_in_flight: int = 8
    max_per_second: float = 20.0
    # Exact mode (see exact_spec): the request for the exact nearest neighbours, and where a
    # hit names its shard.
    exact_body_template: str = ""
    exact_params_template: str = ""
    shard_path: str = ""

    @property
    def has_exact_mode(self) -> bool:
        return bool(self.exact_body_template.strip() or self.exact_params_template.strip())


def exact_spec(spec: EndpointSpec) -> EndpointSpec | None:
    """The spec that asks `spec`'s engine exactly (an exact-kNN or brute-force request): its
    exact body and parameters in place of the approximate ones, an empty one of the two
    taking the approximate one's (a service whose exact mode is a flag in the parameters
    keeps its body). None when the spec has no exact mode."""
    if not spec.has_exact_mode:
        return None
    return replace(
        spec,
        body_template=spec.exact_body_template or spec.body_template,
        params_template=spec.exact_params_template or spec.params_template,
        exact_body_template="",
        exact_params_template="",
    )


def preset_defaults(preset: str) -> dict[str, str]:
    """The first values of a form for `preset`: method, body_template, params_template,
    hits_path, doc_id_path, score_path, index_size_path and count_path. KeyError for a
    preset not in PRESETS."""
    return dict(_PRESET_FIELDS[preset])


def suggested_count_url(preset: str, url: str) -> str:
    """A count URL for an engine's search URL ("" when the engine has none Goldset
    knows): /<index>/_count beside /<index>/_search, a match-everything select with no
    rows for Solr, a match-everything query with no hits for Vespa."""
    parts = urlsplit(url)
    path = parts.path
    if preset in ("opensearch", "elasticsearch") and path.rstrip("/").endswith("/_search"):
        path = path.rstrip("/")[: -len("_search")] + "_count"
        return urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    if preset == "solr" and path.rstrip("/").endswith("/select"):
        return urlunsplit((parts.scheme, parts.netloc, path, "q=*:*&rows=0&wt=json", ""))
    if preset == "vespa":
        query = "yql=select%20*%20from%20sources%20*%20where%20true&hits=0"
        return urlunsplit((parts.scheme, parts.netloc, path or "/search/", query, ""))
    return ""


def spec_from_preset(preset: str, url: str, **overrides) -> EndpointSpec:
    """A spec for `url` with `preset`'s defaults, its suggested count URL, and
    `overrides` (any EndpointSpec field) on top."""
    fields = {**preset_defaults(preset), "count_url": suggested_count_url(preset, url)}
    if not fields["count_url"]:
        fields["count_path"] = ""
    return replace(EndpointSpec(preset=preset, url=url), **{**fields, **overrides})


def headers_shown(spec: EndpointSpec) -> list[tuple[str, str]]:
    """The headers as the manager typed them, `${VAR}` references unresolved: what a page
    or a log may show."""
    return [(name, value) for name, value in spec.headers]


class MissingVariable(LookupError):
    """A header names an environment variable the worker does not have (or may not read)."""


def resolve_headers(
    spec: EndpointSpec,
    *,
    env_prefix: str = ENV_PREFIX,
    environ=None,
    secrets: dict[str, str] | None = None,
) -> dict[str, str]:
    """The headers to send, each `${VAR}` replaced by the variable's value from `environ`
    (os.environ by default) at the time of the call; the values used are added to `secrets`
    ({VAR: value}) for scrubbing what comes back. MissingVariable, naming the variable and
    the header, when one is not set, not under `env_prefix`, or not allowed to the URL's host
    (`VAR_HOSTS`, lib.outbound.secret_host_problem)."""
    environ = os.environ if environ is None else environ
    host = urlsplit(spec.url).hostname or ""
    resolved = {}
    for name, value in spec.headers:

        def substitute(match: re.Match, header: str = name) -> str:
            variable = match.group(1)
            if not variable.startswith(env_prefix):
                raise MissingVariable(f"header {header!r} names ${{{variable}}}, but only variables starting with {env_prefix} may be read")
            if variable not in environ:
                raise MissingVariable(f"header {header!r} names ${{{variable}}}, which is not set in the worker's environment")
            problem = outbound.secret_host_problem(variable, host, environ)
            if problem:
                raise MissingVariable(f"header {header!r}: {problem}; nothing was sent")
            if secrets is not None:
                secrets[variable] = environ[variable]
            return environ[variable]

        resolved[name] = ENV_REFERENCE.sub(substitute, value)
    return resolved


def _is_secret_header(name: str) -> bool:
    lowered = name.lower()
    return lowered in SECRET_HEADERS or any(word in lowered for word in SECRET_WORDS)


def _header_problems(headers: tuple[tuple[str, str], ...], env_prefix: str) -> list[str]:
    problems = []
    for name, value in headers:
        if not HEADER_NAME.match(name or ""):
            problems.append(f"headers: {name!r} is not a header name (letters, digits and - only)")
            continue
        if "\r" in value or "\n" in value:
            problems.append(f"headers: the value of {name} holds a line break")
            continue
        if value.count("${") != len(ENV_REFERENCE.findall(value)):
            problems.append(f"headers: the value of {name} opens a ${{ without closing it")
            continue
        variables = ENV_REFERENCE.findall(value)
        for variable in variables:
            if not ENV_NAME.match(variable):
                problems.append(f"headers: {name} names ${{{variable}}}, not an environment variable name (letters, digits, _)")
            elif not variable.startswith(env_prefix):
                problems.append(
                    f"headers: {name} names ${{{variable}}}; only variables starting with {env_prefix} may be sent (say ${{{env_prefix}TOKEN}})"
                )
        literal = ENV_REFERENCE.sub(" ", value)
        if _is_secret_header(name) and (not variables or not _SECRET_SURROUNDINGS.match(literal)):
            example = "Bearer ${SEARCH_TOKEN}" if name.lower() == "authorization" else "${" + env_prefix + "API_KEY}"
            problems.append(
                f"headers: {name} looks like it carries a secret, and no secret is stored in the database: "
                f"write a reference to an environment variable of the worker instead, like {name}: {example}"
            )
    return problems


def _template_problems(spec: EndpointSpec, samples: Mapping[str, Any]) -> list[str]:
    problems = []
    known = ", ".join(f"{{{{{name}}}}}" for name in samples)
    for field_name in ("url", "params_template", "body_template"):
        template = getattr(spec, field_name)
        for name in mapping.unknown_placeholders(template, tuple(samples)):
            problems.append(
                f"{field_name}: unknown placeholder {{{{{name}}}}} (the known ones are {known}, "
                f"and a query-syntax escape after a bar: {{{{query|lucene}}}}, {{{{query|groonga}}}})"
            )
        if template.count("{{") != len(mapping.placeholders_in(template)):
            problems.append(f"{field_name}: a '{{{{' that is not a placeholder like {{{{query}}}}")
    if problems:
        return problems
    used = {
        mapping.placeholder_base(name)
        for f in ("url", "params_template", "body_template")
        for name in mapping.placeholders_in(getattr(spec, f))
    }
    if "query" not in used:
        problems.append(
            "body_template: no {{query}} placeholder in the URL, the parameters or the body, so every query would get the same answer"
        )
    if spec.method == "POST" and not spec.body_template.strip():
        problems.append('body_template: a POST needs a JSON body template, like {"query": {{query}}, "k": {{k}}}')
    if spec.method == "GET" and spec.body_template.strip():
        problems.append("body_template: a GET sends no body; put the query in params_template, like q={{query}}&rows={{k}}")
    if spec.body_template.strip():
        try:
            json.loads(mapping.render_json(spec.body_template, samples))
        except json.JSONDecodeError as exc:
            problems.append(
                f"body_template: not valid JSON once a sample query is put in: {exc.msg} at line {exc.lineno} column {exc.colno}"
            )
    if spec.params_template.startswith(("?", "&")):
        problems.append("params_template: write the parameters without a leading ? or &, like q={{query}}&rows={{k}}")
    return problems


def _origin(url: str) -> str:
    """The scheme, host and port of `url` as typed (everything before its path, query or
    fragment), placeholders left in."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    return scheme + separator + re.split(r"[/?#]", rest, maxsplit=1)[0]


def _url_problems(field_name: str, url: str, samples: Mapping[str, Any] = mapping.SAMPLE_VALUES) -> list[str]:
    # A placeholder in the host would send each query where its own id or text names (the
    # sample value checked here says nothing of the address a real query id gives), so
    # placeholders belong in the path, the query string and the body, never in the origin.
    if "{{" in _origin(url):
        return [
            f"{field_name}: placeholders may go in the path, the parameters and the body, not in the scheme, "
            f"host or port ({_origin(url)!r}); name the host itself"
        ]
    problem = outbound.url_problem(mapping.render_url(url, samples), what="an endpoint URL")
    if problem:
        return [f"{field_name}: {problem}"]
    host = urlsplit(url).hostname.rstrip(".").lower()
    if host in outbound.METADATA_HOSTS:
        return [f"{field_name}: {host} is a cloud metadata service, which Goldset never queries"]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return []  # a name: checked when it is resolved, at send time
    if outbound.address_kind(address) == "metadata":
        return [f"{field_name}: {address} is a link-local/metadata address, which Goldset never queries"]
    return []


# The ceiling of the rate a manager may set: a bound still, and high enough for a local
# or dedicated evaluation replica to be queried at the speed it answers.
MAX_PER_SECOND = 10_000


def _limit_problems(spec: EndpointSpec) -> list[str]:
    problems = []

    def number(value) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool)

    if not number(spec.timeout_seconds) or not 0.1 <= spec.timeout_seconds <= 120:
        problems.append("timeout_seconds: must be from 0.1 to 120 seconds")
    if not isinstance(spec.retries, int) or isinstance(spec.retries, bool) or not 0 <= spec.retries <= 5:
        problems.append("retries: must be a whole number from 0 to 5")
    if not isinstance(spec.max_in_flight, int) or isinstance(spec.max_in_flight, bool) or not 1 <= spec.max_in_flight <= 64:
        problems.append("max_in_flight: must be a whole number from 1 to 64")
    if not number(spec.max_per_second) or not 0 < spec.max_per_second <= MAX_PER_SECOND:
        problems.append(f"max_per_second: must be more than 0 and at most {MAX_PER_SECOND:,}")
    return problems


def spec_problems(spec: EndpointSpec, *, env_prefix: str = ENV_PREFIX, samples: Mapping[str, Any] | None = None) -> list[str]:
    """Every problem of `spec`, each starting with the field at fault ("url: ...");
    empty when the spec can be saved. Looks up no host: addresses are checked when a
    request is sent, since a name may resolve elsewhere by then. `samples` names the
    placeholders the templates may use, each with the value they are checked with: a
    retrieval endpoint's (mapping.SAMPLE_VALUES) by default, an answer endpoint's
    (answers.generation) holds {{context}} instead of {{k}}."""
    samples = mapping.SAMPLE_VALUES if samples is None else samples
    problems = []
    if spec.preset not in PRESETS:
        problems.append(f"preset: {spec.preset!r} is not one of {', '.join(PRESETS)}")
    if spec.method not in METHODS:
        problems.append(f"method: {spec.method!r} is not GET or POST")
    problems += _url_problems("url", spec.url, samples)
    problems += _template_problems(spec, samples)
    exact = exact_spec(spec)
    if exact is not None:
        # The exact request is checked as the approximate one is, its faults named by the
        # exact field the manager typed (a body it borrows was checked above already).
        renamed = {"body_template": "exact_body_template", "params_template": "exact_params_template"}
        for problem in _template_problems(exact, samples):
            name, colon, text = problem.partition(":")
            if colon and name in renamed and getattr(spec, renamed[name]):
                problems.append(f"{renamed[name]}:{text}")
    for field_name in ("hits_path", "doc_id_path", "score_path", "index_size_path", "count_path", "shard_path"):
        try:
            mapping.parse_path(getattr(spec, field_name))
        except mapping.PathSyntaxError as exc:
            problems.append(f"{field_name}: {exc}")
    if spec.count_url:
        problems += _url_problems("count_url", spec.count_url)
        if mapping.placeholders_in(spec.count_url):
            problems.append("count_url: the count URL is one request for the whole index, it takes no placeholders")
        if not spec.count_path:
            problems.append("count_path: say where the count URL's answer holds the number of documents (OpenSearch: count)")
    elif spec.count_path:
        problems.append("count_url: count_path is set but there is no count URL to read it from")
    problems += _header_problems(spec.headers, env_prefix)
    problems += _limit_problems(spec)
    return problems
