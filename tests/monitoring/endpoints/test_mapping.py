"""Placeholders escaped for where they stand, and answers read into rankings."""

import json
from urllib.parse import parse_qs

import pytest

from monitoring.endpoints.mapping import PathSyntaxError, parse_path, read_ranking, render_json, render_url, vespa_user_id

NASTY = 'say "hi" \\ & = # ? %20 é\n'


def test_a_placeholder_outside_a_string_becomes_a_json_value():
    body = render_json('{"q": {{query}}, "size": {{k}}, "id": {{query_id}}}', {"query": NASTY, "k": 7, "query_id": 'q"1'})
    assert json.loads(body) == {"q": NASTY, "size": 7, "id": 'q"1'}


def test_a_placeholder_inside_a_string_is_escaped_without_its_quotes():
    body = render_json('{"yql": "select * where text contains \\"{{query}}\\"", "hits": "{{k}}"}', {"query": NASTY, "k": 5, "query_id": ""})
    assert json.loads(body) == {"yql": f'select * where text contains "{NASTY}"', "hits": "5"}


def test_a_placeholder_in_a_query_string_is_percent_encoded_whole():
    rendered = render_url("q={{query}}&rows={{k}}&fl=id,score&wt=json", {"query": NASTY, "k": 10, "query_id": ""})
    assert parse_qs(rendered, keep_blank_values=True) == {"q": [NASTY], "rows": ["10"], "fl": ["id,score"], "wt": ["json"]}


def test_a_templates_own_spaces_are_encoded_and_its_escapes_kept():
    assert render_url("yql=select * from x&q=a%20b", {}) == "yql=select%20*%20from%20x&q=a%20b"


@pytest.mark.parametrize("path", ["a..b", ".a", "a.", "fields. doc_id"])
def test_a_path_with_an_empty_part_or_a_space_is_refused(path):
    with pytest.raises(PathSyntaxError):
        parse_path(path)


def read(answer, k=10, **paths):
    return read_ranking(answer, k, **{"hits_path": "results", "doc_id_path": "doc_id", "score_path": "score", **paths})


def test_numeric_doc_ids_become_strings_and_integral_ones_lose_their_point():
    answer = {
        "results": [{"doc_id": 7, "score": 3}, {"doc_id": 8.0, "score": 2}, {"doc_id": 2.5, "score": 1}, {"doc_id": "007", "score": 0}]
    }
    assert [doc for doc, _ in read(answer).ranking] == ["7", "8", "2.5", "007"]


def test_a_doc_id_that_is_an_object_is_refused_by_hit_number():
    assert (
        read({"results": [{"doc_id": "a"}, {"doc_id": {"x": 1}}]}).error
        == "hit 2 has an object at 'doc_id', not a doc id (a string or a number)"
    )


def test_scores_out_of_order_or_missing_are_made_from_rank_with_a_note():
    shuffled = read({"results": [{"doc_id": "a", "score": 1}, {"doc_id": "b", "score": 5}]}, k=3)
    assert shuffled.ranking == [("a", 3.0), ("b", 2.0)] and "not in the answer's order" in shuffled.notes[0]
    holed = read({"results": [{"doc_id": "a", "score": 9}, {"doc_id": "b"}]}, k=3)
    assert holed.ranking == [("a", 3.0), ("b", 2.0)] and "has no number at 'score'" in holed.notes[0]


def test_tied_engine_scores_are_kept():
    assert read({"results": [{"doc_id": "a", "score": 2}, {"doc_id": "b", "score": 2}]}).ranking == [("a", 2.0), ("b", 2.0)]


def test_empty_paths_read_an_answer_that_is_a_list_of_ids():
    assert read(["x", "y", "z"], k=2, hits_path="", doc_id_path="", score_path="").ranking == [("x", 2.0), ("y", 1.0)]


def test_a_digit_segment_indexes_a_list():
    answer = {"data": [{"hits": [{"ids": ["d9"]}]}]}
    assert read(answer, hits_path="data.0.hits", doc_id_path="ids.0", score_path="").ranking == [("d9", 10.0)]


def test_an_index_size_is_read_when_its_path_holds_a_count():
    assert read({"results": [], "total": {"docs": 1234}}, index_size_path="total.docs").index_size == 1234
    assert read({"results": [], "total": "many"}, index_size_path="total").index_size is None


def test_a_vespa_document_id_is_read_as_the_id_it_was_fed_with_colons_kept():
    assert vespa_user_id("id:wiki:doc::CR93E-3103#37") == "CR93E-3103#37"
    assert vespa_user_id("id:wiki:doc:g=team-a:runbooks/kafka:rotate") == "runbooks/kafka:rotate"
    assert vespa_user_id("index:content/0/a5fc3bd2c1a0") == "index:content/0/a5fc3bd2c1a0"  # no document id: as it is
    hits = {
        "root": {
            "children": [
                {"id": "id:wiki:doc::a:1", "relevance": 2.5},
                {"id": "id:wiki:doc::b", "relevance": 1.5},
                {"id": "id:other:doc::a:1", "relevance": 1.0},  # the same id fed in another namespace: a duplicate
            ]
        }
    }
    read = read_ranking(hits, 10, hits_path="root.children", doc_id_path="id", score_path="relevance", vespa_ids=True)
    assert (read.ranking, read.duplicates) == ([("a:1", 2.5), ("b", 1.5)], 1)
    plain = read_ranking(hits, 10, hits_path="root.children", doc_id_path="id", score_path="relevance")
    assert [doc for doc, _ in plain.ranking][0] == "id:wiki:doc::a:1"  # other presets read ids as they are
