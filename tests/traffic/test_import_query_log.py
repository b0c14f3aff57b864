"""import_query_log and traffic.logs.query_log_import: a log generated from the Cranfield
collection's 225 queries with a Zipf-like frequency (a public collection's queries; the
frequencies are made up, said so) reads the same through every form, gzipped or not; bad
lines are named with their line and field; nothing is half written."""

import csv
import gzip
import io
import json
import random
from collections import Counter

import pytest
from django.core.management import CommandError, call_command

from lib.errors import ConflictError, GoldsetError
from tests.support import factories
from traffic.logs import query_log_import
from traffic.models import LoggedQuery, QueryDraw, QueryLog
from traffic.normalizing import query_merge_key as query_key

pytestmark = pytest.mark.django_db

LANGS = ["en", "fr", "de"]


def cranfield_events(shared_data, events: int = 3000, seed: int = 28) -> list[dict]:
    """One dict an event: a Cranfield query drawn with weight 1/rank^1.1, typed as people
    do (capitals, doubled spaces, a question mark), with a language and a time."""
    with open(shared_data / "cranfield" / "queries.jsonl", encoding="utf-8") as handle:
        texts = [json.loads(line)["text"].rstrip(" .") for line in handle]
    rng = random.Random(seed)
    weights = [1 / rank**1.1 for rank in range(1, len(texts) + 1)]
    drawn = rng.choices(range(len(texts)), weights=weights, k=events)
    lines = []
    for n, at in enumerate(drawn):
        text = texts[at]
        typed = rng.choice([text, text.capitalize(), text.replace(" ", "  ", 1), text + " ?", f" {text.upper()}"])
        lang = LANGS[at % 3] if rng.random() < 0.9 else LANGS[(at + 1) % 3]
        lines.append({"query": typed, "lang": lang, "ts": f"2026-11-{1 + n % 28:02d}T{n % 24:02d}:00:00Z"})
    return lines


def counted(events: list[dict]) -> list[dict]:
    """The same events as one line per (query form, lang) with a count, times kept out."""
    counts = Counter((e["query"], e["lang"]) for e in events)
    return [{"query": q, "count": c, "lang": lang} for (q, lang), c in counts.items()]


def as_jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


def as_delimited(rows: list[dict], delimiter: str) -> bytes:
    out = io.StringIO()
    columns = list(rows[0])
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([row[c] for c in columns])
    return out.getvalue().encode()


def stored(log: QueryLog) -> dict:
    return {q.normalized: (q.text, q.count, q.fields) for q in LoggedQuery.objects.filter(log=log)}


def test_query_key_folds_case_unicode_whitespace_and_end_punctuation_only():
    assert query_key("  How do I  reset\tmy password? ") == "how do i reset my password"
    assert query_key("Ｆｕｌｌ　ｗｉｄｔｈ") == "full width"
    assert query_key("STRASSE") == query_key("straße")
    assert query_key("c++") == "c++"
    assert query_key("node.js") != query_key("nodejs")
    assert query_key("?!") == ""


def test_a_cranfield_log_reads_the_same_through_every_form_and_gzip(shared_data, tmp_path):
    golden_set = factories.golden_set("logs")
    events = cranfield_events(shared_data)
    forms = {
        "events.jsonl": as_jsonl(events),
        "counted.jsonl": as_jsonl(counted(events)),
        "counted.csv": as_delimited(counted(events), ","),
        "counted.tsv": as_delimited(counted(events), "\t"),
        "events.csv": as_delimited(events, ","),
    }
    forms.update({f"{name}.gz": gzip.compress(data) for name, data in list(forms.items())})
    forms["gzip-without-suffix.log"] = gzip.compress(forms["counted.tsv"])
    results = {}
    for name, data in forms.items():
        path = tmp_path / name
        path.write_bytes(data)
        call_command("import_query_log", str(path), "--golden-set", "logs", "--name", name, verbosity=0)
        results[name] = stored(QueryLog.objects.get(golden_set=golden_set, name=name))

    reference = results["events.jsonl"]
    assert all(result == reference for result in results.values())
    log = QueryLog.objects.get(golden_set=golden_set, name="events.jsonl")
    assert (log.lines_read, log.event_count, log.fields) == (3000, 3000, ["lang"])
    assert log.query_count == len({query_key(e["query"]) for e in events}) < 225
    head = max(reference.values(), key=lambda row: row[1])
    # The most frequent query of a Zipf log is Cranfield's first; its language the one most of its events carry.
    assert head[1] > 300 and head[2] == {"lang": "en"}
    assert (log.first_seen.day, log.last_seen.day) == (1, 28)
    assert QueryLog.objects.get(golden_set=golden_set, name="counted.csv").first_seen is None


def test_the_most_frequent_form_is_the_text_kept():
    golden_set = factories.golden_set("forms")
    rows = [{"query": "Wing Flutter", "count": 2}, {"query": "wing  flutter?", "count": 5}, {"query": "WING FLUTTER"}]
    summary = query_log_import(golden_set=golden_set, data=io.BytesIO(as_jsonl(rows)), name="l", source_name="l.jsonl")
    assert stored(summary.log) == {"wing flutter": ("wing  flutter?", 8, {})}


def test_every_bad_line_is_named_with_its_field_and_nothing_is_written():
    golden_set = factories.golden_set("bad")
    data = b"\n".join(
        [
            b'{"query": "fine", "count": 3}',
            b"not json",
            b'{"count": 2}',
            b'{"query": "x", "count": 0}',
            b'{"query": "x", "count": "2"}',
            b'{"query": "x", "ts": "yesterday"}',
            b'{"query": "x", "lang": ["en"]}',
            b'["query"]',
            b'{"query": "   ?  "}',
        ]
    )
    with pytest.raises(GoldsetError) as caught:
        query_log_import(golden_set=golden_set, data=io.BytesIO(data), name="l", source_name="bad.jsonl")
    assert caught.value.problems == [
        "bad.jsonl:2: not valid JSON (Expecting value at column 1)",
        "bad.jsonl:3: field 'query' is missing",
        "bad.jsonl:4: field 'count' must be a positive integer, found 0",
        "bad.jsonl:5: field 'count' must be a positive integer, found '2'",
        "bad.jsonl:6: field 'ts' is not an ISO 8601 time or epoch seconds: 'yesterday'",
        "bad.jsonl:7: slice field 'lang' must be a string, number or true/false",
        "bad.jsonl:8: expected a JSON object, found list",
        "bad.jsonl:9: field 'query' is empty once normalised",
    ]
    assert not QueryLog.objects.exists() and not LoggedQuery.objects.exists()


def test_csv_lines_with_the_wrong_column_count_or_count_are_named(tmp_path):
    factories.golden_set("badcsv")
    path = tmp_path / "log.csv.gz"
    path.write_bytes(gzip.compress(b"query,count,lang\nwing,2,en\nflutter,1\nslab,-1,en\nheat,2,en,extra\n"))
    with pytest.raises(CommandError) as caught:
        call_command("import_query_log", str(path), "--golden-set", "badcsv", "--name", "l", verbosity=0)
    message = str(caught.value)
    assert "log.csv.gz:3: 2 columns where the header has 3" in message
    assert "log.csv.gz:4: column 'count' must be a positive integer, found '-1'" in message
    assert "log.csv.gz:5: 4 columns where the header has 3" in message
    assert not QueryLog.objects.exists()


def test_a_header_without_a_query_column_is_refused():
    golden_set = factories.golden_set("noquery")
    with pytest.raises(GoldsetError, match="bad lines") as caught:
        query_log_import(golden_set=golden_set, data=io.BytesIO(b"q\tcount\nwing\t2\n"), name="l", source_name="l.tsv")
    assert caught.value.problems == ["l.tsv:1: the header has no 'query' column (it has 'q', 'count')"]


def test_a_broken_gzip_stream_is_refused_naming_the_file():
    golden_set = factories.golden_set("broken")
    data = gzip.compress(as_jsonl([{"query": f"q{n}"} for n in range(2000)]))[:-40]
    with pytest.raises(GoldsetError, match="cannot import query log broken.jsonl.gz"):
        query_log_import(golden_set=golden_set, data=io.BytesIO(data), name="l", source_name="broken.jsonl.gz")
    assert not QueryLog.objects.exists()


def test_format_forces_the_form():
    golden_set = factories.golden_set("forced")
    # One column, no delimiter: read as CSV by default; forced TSV reads the same.
    summary = query_log_import(golden_set=golden_set, data=io.BytesIO(b"query\nwing, flutter\n"), name="l", source_name="l", fmt="tsv")
    assert stored(summary.log) == {"wing, flutter": ("wing, flutter", 1, {})}


def test_a_name_taken_is_refused_unless_replaced():
    golden_set = factories.golden_set("names")
    query_log_import(golden_set=golden_set, data=io.BytesIO(b'{"query": "a"}\n'), name="nov", source_name="a.jsonl")
    with pytest.raises(ConflictError, match="has a query log named 'nov' already"):
        query_log_import(golden_set=golden_set, data=io.BytesIO(b'{"query": "b"}\n'), name="nov", source_name="b.jsonl")
    summary = query_log_import(golden_set=golden_set, data=io.BytesIO(b'{"query": "b"}\n'), name="nov", source_name="b.jsonl", replace=True)
    assert list(LoggedQuery.objects.values_list("normalized", flat=True)) == ["b"]
    assert QueryLog.objects.get().pk == summary.log.pk


def test_the_command_names_an_unknown_set(tmp_path):
    path = tmp_path / "l.jsonl"
    path.write_bytes(b'{"query": "a"}\n')
    with pytest.raises(CommandError, match="no golden set 'nope'"):
        call_command("import_query_log", str(path), "--golden-set", "nope", "--name", "l", verbosity=0)


def test_a_byte_order_mark_and_crlf_lines_are_read_as_jsonl():
    golden_set = factories.golden_set("bom")
    data = b'\xef\xbb\xbf{"query": "wing", "count": 2}\r\n{"query": "Wing"}\r\n'
    summary = query_log_import(golden_set=golden_set, data=io.BytesIO(data), name="l", source_name="l.jsonl")
    assert stored(summary.log) == {"wing": ("wing", 3, {})}


def test_a_count_past_a_trillion_is_refused_before_it_could_overflow():
    golden_set = factories.golden_set("huge")
    with pytest.raises(GoldsetError) as caught:
        query_log_import(
            golden_set=golden_set, data=io.BytesIO(b'{"query": "a", "count": 99999999999999999999}\n'), name="l", source_name="l.jsonl"
        )
    assert caught.value.problems == ["l.jsonl:1: field 'count' must be a positive integer, found 99999999999999999999"]


def test_tsv_keeps_quotes_as_typed_and_csv_reads_them_as_quoting():
    golden_set = factories.golden_set("quotes")
    tsv = query_log_import(golden_set=golden_set, data=io.BytesIO(b'query\tcount\n"wing flutter" nasa\t2\n'), name="t", source_name="l.tsv")
    csv_log = query_log_import(golden_set=golden_set, data=io.BytesIO(b'query,count\n"wing, flutter",2\n'), name="c", source_name="l.csv")
    # The text keeps its quotes; the key drops the one at its start, as punctuation at either end is.
    assert stored(tsv.log) == {'wing flutter" nasa': ('"wing flutter" nasa', 2, {})}
    assert stored(csv_log.log) == {"wing, flutter": ("wing, flutter", 2, {})}


def test_a_log_queries_were_drawn_from_cannot_be_replaced():
    golden_set = factories.golden_set("drawn")
    log = query_log_import(golden_set=golden_set, data=io.BytesIO(b'{"query": "a"}\n'), name="nov", source_name="a.jsonl").log
    QueryDraw.objects.create(golden_set=golden_set, log=log, design="srs", size=1, seed=1)
    with pytest.raises(ConflictError, match="queries of the set were drawn from it"):
        query_log_import(golden_set=golden_set, data=io.BytesIO(b'{"query": "b"}\n'), name="nov", source_name="b.jsonl", replace=True)
    assert list(LoggedQuery.objects.values_list("normalized", flat=True)) == ["a"]


def test_standard_input_is_read_for_a_dash(monkeypatch, capsys):
    factories.golden_set("stdin")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(gzip.compress(b'{"query": "a", "count": 4}\n')))))
    call_command("import_query_log", "-", "--golden-set", "stdin", "--name", "piped", verbosity=0)
    assert "query log 'piped' of stdin: 1 lines, 4 events, 1 distinct queries" in capsys.readouterr().out
