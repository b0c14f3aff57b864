"""From a query to the bytes sent, and from the JSON answer back to a ranking: pure functions.

Templates hold three placeholders, `{{query}}`, `{{query_id}}` and `{{k}}`. A value is
escaped for where it lands, so no query text can change the shape of the request:

- in a JSON body, inside a string literal (`"q": "{{query}}"`) the value is JSON-escaped
  without its quotes; outside one (`"q": {{query}}`, `"size": {{k}}`) it is written as a
  JSON value (a string with its quotes, `k` as a number);
- in a URL or a GET query string the value is percent-encoded whole (`&`, `=`, `#`
  included), and characters of the template itself that may not stand in a URL (spaces,
  non-ASCII) are percent-encoded too, while what is already encoded is left alone.

Paths into the answer are dotted (`hits.hits`, `fields.doc_id`); a segment made of
digits indexes a list (`root.children.0`). An empty path is the value itself: an empty
`hits_path` reads an answer that is the list of hits, an empty `doc_id_path` a hit that
is the doc id.

Vespa names each hit by its document id, `id:<namespace>:<document type>:<key/value
pairs>:<user-specified id>` (`id:wiki:doc::CR93E-3103#37`); read with `vespa_ids`, an id
of that form is the user-specified part (`CR93E-3103#37`, colons in it kept), the doc id
the corpus was fed with, and any other value is read as it is.
"""

import functools
import json
import math
import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

PLACEHOLDER = re.compile(r"\{\{\s*([^{}\s]*)\s*\}\}")
PLACEHOLDERS = ("query", "query_id", "k")
# Values substituted to check a template at save time: quotes, a backslash and non-ASCII,
# the characters that break a body escaped the naive way.
SAMPLE_VALUES = {"query": 'a "quoted" \\ query é', "query_id": "q-1", "k": 10}
# Characters a template's own text may keep in a URL: the reserved ones (so `&`, `=`, `,`
# and `:` keep their meaning) and `%` (so what the manager encoded stays encoded).
_URL_TEXT_SAFE = "!#$%&'()*+,/:;=?@[]~-._"
_SEGMENT = re.compile(r"^[^\s.]+$")
# Vespa's document id: the user-specified id follows the fourth colon and may hold colons.
_VESPA_ID = re.compile(r"^id:[^:]*:[^:]*:[^:]*:(.+)$", re.DOTALL)


class PathSyntaxError(ValueError):
    pass


def _lucene(text: str) -> str:
    """`text` as literal words of Lucene's query syntax (Solr's q, OpenSearch's and
    Elasticsearch's query_string): each special character behind a backslash, the
    operator words written so they are words, and < and >, which query_string cannot escape
    (its documentation says to remove them), left out."""
    text = text.replace("<", " ").replace(">", " ")
    text = _LUCENE_SPECIALS.sub(r"\\\g<0>", text)
    return _LUCENE_OPERATORS.sub(lambda match: "\\" + match.group(0), text)


def _groonga(text: str) -> str:
    """`text` as literal words of Groonga's query syntax (select's --query, query()): each
    special character behind a backslash, and the operator word OR written as a word."""
    text = _GROONGA_SPECIALS.sub(r"\\\g<0>", text)
    return _GROONGA_OPERATORS.sub(lambda match: "\\" + match.group(0), text)


# Escapes a placeholder may name after a bar, `{{query|lucene}}`, for a template that puts
# the value inside an engine's own query syntax; JSON and URL escaping follow as always.
QUERY_SYNTAX_ESCAPES = {"lucene": _lucene, "groonga": _groonga}
_LUCENE_SPECIALS = re.compile(r'[+\-=&|!(){}\[\]^"~*?:\\/]')
_LUCENE_OPERATORS = re.compile(r"\b(?:AND|OR|NOT)\b")
_GROONGA_SPECIALS = re.compile(r'[\\"' "'" r"()+\-*<>=@~^:$!]")
_GROONGA_OPERATORS = re.compile(r"\bOR\b")


def placeholders_in(template: str) -> list[str]:
    """The placeholder names `template` uses, in order (unknown names included), with any
    escape they name (`query|lucene`)."""
    return [match.group(1) for match in PLACEHOLDER.finditer(template)]


def placeholder_base(name: str) -> str:
    """The value a placeholder names, without its escape: `query` of `query|lucene`."""
    return name.split("|", 1)[0]


def unknown_placeholders(template: str, known: Sequence[str] = PLACEHOLDERS) -> list[str]:
    """The placeholders of `template` that name an unknown value or escape (`known`: the
    values there are, a retrieval endpoint's by default)."""
    unknown = []
    for name in placeholders_in(template):
        base, _, escape = name.partition("|")
        if base not in known or (escape and escape not in QUERY_SYNTAX_ESCAPES):
            unknown.append(name)
    return unknown


def _value(name: str, values: Mapping[str, Any]) -> Any:
    """The value of placeholder `name`, with the query-syntax escape it names applied."""
    base, _, escape = name.partition("|")
    value = values[base]
    return QUERY_SYNTAX_ESCAPES[escape](str(value)) if escape else value


@functools.lru_cache(maxsize=64)
def _json_template_parts(template: str) -> tuple[tuple[str, str | None, bool], ...]:
    """`template` cut once into (literal text, placeholder name or None, inside a string?)
    parts: a nightly run renders the same body ten thousand times."""
    parts: list[tuple[str, str | None, bool]] = []
    literal: list[str] = []
    in_string = False
    i = 0
    while i < len(template):
        match = PLACEHOLDER.match(template, i) if template.startswith("{{", i) else None
        if match:
            parts.append(("".join(literal), match.group(1), in_string))
            literal = []
            i = match.end()
            continue
        char = template[i]
        if in_string and char == "\\":  # an escape of the template's own: keep both characters
            literal.append(template[i : i + 2])
            i += 2
            continue
        if char == '"':
            in_string = not in_string
        literal.append(char)
        i += 1
    parts.append(("".join(literal), None, in_string))
    return tuple(parts)


def render_json(template: str, values: Mapping[str, Any]) -> str:
    """`template` with each placeholder replaced by its value, escaped as JSON for where it
    stands (see the module's docstring). Unknown names raise KeyError; whether the result
    is valid JSON is the template's business (spec_problems checks it with SAMPLE_VALUES)."""
    out: list[str] = []
    for literal, name, in_string in _json_template_parts(template):
        out.append(literal)
        if name is not None:
            value = _value(name, values)
            text = json.dumps(value if not in_string else str(value), ensure_ascii=False)
            out.append(text[1:-1] if in_string else text)
    return "".join(out)


def render_url(template: str, values: Mapping[str, Any]) -> str:
    """`template` (a URL or a query string) with placeholders replaced by their values
    percent-encoded whole, and the template's own unsafe characters percent-encoded."""
    out: list[str] = []
    last = 0
    for match in PLACEHOLDER.finditer(template):
        out.append(quote(template[last : match.start()], safe=_URL_TEXT_SAFE))
        out.append(quote(str(_value(match.group(1), values)), safe=""))
        last = match.end()
    out.append(quote(template[last:], safe=_URL_TEXT_SAFE))
    return "".join(out)


def parse_path(path: str) -> tuple[str, ...]:
    """The segments of a dotted path; PathSyntaxError for an empty segment or whitespace."""
    if path == "":
        return ()
    segments = tuple(path.split("."))
    for segment in segments:
        if not _SEGMENT.match(segment):
            raise PathSyntaxError(f"{path!r} is not a dotted path like 'hits.hits' (empty part or a space in it)")
    return segments


MISSING = object()  # read_path's answer for a path that leads nowhere


def read_path(value: Any, segments: tuple[str, ...]) -> Any:
    """The value at `segments` inside `value`, or MISSING when any step is absent."""
    for segment in segments:
        if isinstance(value, dict):
            value = value.get(segment, MISSING)
        elif isinstance(value, list) and segment.isdigit():
            index = int(segment)
            value = value[index] if index < len(value) else MISSING
        else:
            return MISSING
        if value is MISSING:
            return MISSING
    return value


def kind_of(value: Any) -> str:
    """A JSON value's kind as a person reads it: "an object", "a list", "a string"..."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return "a number"


def top_level(answer: Any) -> str:
    """What an answer holds at its top, for an error message that helps fix a path."""
    if isinstance(answer, dict):
        keys = ", ".join(list(answer)[:12]) or "none"
        return f"top-level keys: {keys}" + (", ..." if len(answer) > 12 else "")
    return f"the answer is {kind_of(answer)}"


def doc_id_text(value: Any) -> str | None:
    """A doc id as Goldset stores it: a string exactly as sent, an integral number as
    str(int) (so 7 and 7.0 are both "7"), another number as str(); None for anything else
    (an empty string, a boolean, null, an object or a list)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        return value or None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return str(int(value)) if value.is_integer() else str(value)
    return None


def vespa_user_id(doc_id: str) -> str:
    """The user-specified part of a Vespa document id (`id:ns:type::X` -> `X`); any other
    text as it is (a schema's own id field, or a hit id of the `index:` form)."""
    match = _VESPA_ID.match(doc_id)
    return match.group(1) if match else doc_id


def score_value(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    score = float(value)
    return score if math.isfinite(score) else None


@dataclass
class RankingRead:
    """What one answer says: at most k (doc id, score) in the engine's order, or `error`
    (with an empty ranking) when the answer cannot be read as a ranking.

    `duplicates` counts hits dropped because their doc id came earlier in the answer;
    `notes` says what was done that a person checking the endpoint should know (scores
    made from rank order, say). `index_size` is read from index_size_path, when given.
    """

    ranking: list[tuple[str, float]] = field(default_factory=list)
    error: str | None = None
    duplicates: int = 0
    notes: list[str] = field(default_factory=list)
    index_size: int | None = None
    # The ranking as (doc ids, scores) lists, when it was read whole (every score a finite
    # float): what a nightly run stores, without unzipping the ranking again.
    columns: tuple[list[str], list[float]] | None = None
    # {doc id: the shard its hit names at shard_path}, for the ranking's hits that name one;
    # None when no shard_path was given.
    shards: dict[str, str] | None = None


def _shards_read(hits: list, read: RankingRead, id_segments: tuple[str, ...], shard_path: str, vespa_ids: bool) -> None:
    """Fill `read.shards` from the hits (read_ranking's ranking already read): the first hit
    of each doc id in the ranking names its shard; a hit with no usable value names none."""
    wanted = {doc_id for doc_id, _ in read.ranking}
    segments = parse_path(shard_path)
    shards: dict[str, str] = {}
    for hit in hits:
        if len(shards) == len(wanted):
            break
        doc_id = doc_id_text(read_path(hit, id_segments))
        if doc_id is not None and vespa_ids:
            doc_id = vespa_user_id(doc_id)
        if doc_id in wanted and doc_id not in shards:
            shard = doc_id_text(read_path(hit, segments))
            if shard is not None:
                shards[doc_id] = shard
    read.shards = shards


def _plain_ranking(hits: list, id_key: str, score_key: str, vespa_ids: bool = False) -> tuple[list[str], list[float]] | None:
    """The ranking of the answers nearly every engine gives (objects with a string id and a
    float score at the top, distinct ids, scores in order) in a few whole-list passes, or
    None for anything else, which read_ranking's loop then reads hit by hit with its notes
    and errors. The same result as that loop, for the answers it takes."""
    try:
        ids = list(map(operator.itemgetter(id_key), hits))
        scores = list(map(operator.itemgetter(score_key), hits))
    except (KeyError, TypeError, IndexError):
        return None
    if set(map(type, ids)) - {str}:
        return None
    if vespa_ids:
        ids = list(map(vespa_user_id, ids))
    if "" in ids or len(set(ids)) != len(ids):
        return None
    if set(map(type, scores)) - {float} or not all(map(math.isfinite, scores)):
        return None
    if scores != sorted(scores, reverse=True):
        return None
    return ids, scores


def read_ranking(
    answer: Any,
    k: int,
    *,
    hits_path: str,
    doc_id_path: str,
    score_path: str = "",
    index_size_path: str = "",
    vespa_ids: bool = False,
    shard_path: str = "",
) -> RankingRead:
    """Read `answer` (parsed JSON) into a ranking of at most `k` distinct doc ids.

    Scores: the engine's own when score_path is given and every hit kept has a finite
    number there in non-increasing order; otherwise k, k-1, ... by rank for the whole
    answer (with a note), because a mix of engine scores and made-up ones, or scores out
    of the answer's order, would let a scorer that sorts by score reorder the ranking.
    `vespa_ids`: doc ids that are Vespa document ids are read as their user-specified
    part (see the module's docstring). With `shard_path`, `shards` says which shard each
    hit of the ranking names. Paths are assumed valid (spec_problems checked them).
    """
    read = _ranking_read(answer, k, hits_path, doc_id_path, score_path, index_size_path, vespa_ids)
    if shard_path and read.error is None:
        _shards_read(read_path(answer, parse_path(hits_path)), read, parse_path(doc_id_path), shard_path, vespa_ids)
    return read


def _ranking_read(
    answer: Any, k: int, hits_path: str, doc_id_path: str, score_path: str, index_size_path: str, vespa_ids: bool
) -> RankingRead:
    read = RankingRead()
    if index_size_path:
        size = read_path(answer, parse_path(index_size_path))
        if isinstance(size, int | float) and not isinstance(size, bool) and math.isfinite(size) and size >= 0 and float(size).is_integer():
            read.index_size = int(size)
    hits = read_path(answer, parse_path(hits_path))
    if hits is MISSING:
        read.error = f"hits_path {hits_path!r} not found in the answer ({top_level(answer)})"
        return read
    if not isinstance(hits, list):
        where = f"hits_path {hits_path!r}" if hits_path else "the answer (hits_path is empty)"
        read.error = f"{where} holds {kind_of(hits)}, not a list of hits"
        return read
    id_segments, score_segments = parse_path(doc_id_path), parse_path(score_path)
    # Most engines put both at the top of a hit ("_id", "_score"): read those with one
    # dict lookup each, as a nightly run reads a million hits.
    id_key = id_segments[0] if len(id_segments) == 1 else None
    score_key = score_segments[0] if len(score_segments) == 1 and score_path else None
    if id_key is not None and score_key is not None:
        columns = _plain_ranking(hits[:k], id_key, score_key, vespa_ids)
        if columns is not None:
            read.ranking, read.columns = list(zip(*columns)), columns
            return read
    seen: set[str] = set()
    kept: list[tuple[str, float | None]] = []
    isfinite = math.isfinite
    for number, hit in enumerate(hits, start=1):
        if len(kept) == k:
            break
        plain = type(hit) is dict
        raw = hit.get(id_key, MISSING) if plain and id_key is not None else read_path(hit, id_segments)
        doc_id = raw if type(raw) is str and raw else (None if raw is MISSING else doc_id_text(raw))
        if vespa_ids and doc_id is not None:
            doc_id = vespa_user_id(doc_id)
        if doc_id is None:
            if raw is MISSING or raw is None or raw == "":
                read.error = f"hit {number} has no doc id at {doc_id_path!r}"
            else:
                read.error = f"hit {number} has {kind_of(raw)} at {doc_id_path!r}, not a doc id (a string or a number)"
            return read
        if doc_id in seen:
            read.duplicates += 1
            continue
        seen.add(doc_id)
        if score_key is not None and plain:
            value = hit.get(score_key)
            score = value if type(value) is float and isfinite(value) else score_value(value)
        else:
            score = score_value(read_path(hit, score_segments)) if score_path else None
        kept.append((doc_id, score))
    if read.duplicates:
        read.notes.append(f"{read.duplicates} duplicate doc id(s) dropped, the first of each kept")
    scores = [score for _, score in kept]
    usable = bool(score_path) and all(score is not None for score in scores)
    if usable and any(later > earlier for earlier, later in zip(scores, scores[1:], strict=False)):
        read.notes.append(f"scores at {score_path!r} are not in the answer's order: scores made from rank order")
        usable = False
    elif score_path and not usable:
        read.notes.append(f"a hit has no number at {score_path!r}: scores made from rank order")
    read.ranking = [(doc_id, score if usable else float(k - rank)) for rank, (doc_id, score) in enumerate(kept)]
    return read
