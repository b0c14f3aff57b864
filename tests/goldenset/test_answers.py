"""Reference answers: the import (its faults, all or nothing, upsert), setting and clearing
one, and the reads the oracle experiment takes them through."""

import gzip
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from goldenset.answers import (
    ReferenceText,
    answers_import,
    live_reference_answers,
    query_reference_answer,
    reference_answer_clear,
    reference_answer_set,
    version_reference_answers,
)
from goldenset.models import Query, ReferenceAnswer
from goldenset.services import query_retire, version_publish
from lib.errors import GoldsetError

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("tiny")]


def line(**record) -> str:
    return json.dumps(record) + "\n"


def stored(golden_set) -> dict[str, tuple]:
    return {
        row.query.query_id: (row.answer, row.aliases, row.key_facts)
        for row in ReferenceAnswer.objects.filter(query__golden_set=golden_set).select_related("query")
    }


def test_it_imports_answers_with_aliases_and_key_facts(golden_set, owner):
    summary = answers_import(
        golden_set=golden_set,
        path_or_lines=[
            line(query_id="q1", answer="Paris", aliases=["paris, France"], key_facts=["capital of France"]),
            "\n",
            line(query_id="q2", answer="42"),
        ],
        user=owner,
    )
    assert (summary.added, summary.replaced, summary.unchanged) == (2, 0, 0)
    assert stored(golden_set) == {"q1": ("Paris", ["paris, France"], ["capital of France"]), "q2": ("42", [], [])}
    assert ReferenceAnswer.objects.get(query__query_id="q1").updated_by == owner


def test_it_replaces_a_querys_answer_and_counts_the_unchanged(golden_set, owner):
    answers_import(golden_set=golden_set, path_or_lines=[line(query_id="q1", answer="Paris"), line(query_id="q2", answer="42")], user=owner)
    summary = answers_import(
        golden_set=golden_set,
        path_or_lines=[line(query_id="q1", answer="Lyon"), line(query_id="q2", answer="42"), line(query_id="q3", answer="x")],
        user=owner,
    )
    assert (summary.added, summary.replaced, summary.unchanged) == (1, 1, 1)
    assert stored(golden_set)["q1"] == ("Lyon", [], [])


def test_it_names_every_fault_by_line_and_field_and_stores_nothing(golden_set, owner):
    lines = [
        line(query_id="q1", answer="ok"),
        "{not json\n",
        "[1, 2]\n",
        line(query_id="nope", answer="x"),
        line(query_id="q2"),
        line(query_id="q3", answer="   "),
        line(query_id="q1", answer="again"),
        line(answer="no id"),
        line(query_id="q2", answer="x", aliases="not a list", anwser="typo"),
        line(query_id=7, answer="x", key_facts=["fine", ""]),
    ]
    with pytest.raises(GoldsetError) as caught:
        answers_import(golden_set=golden_set, path_or_lines=lines, user=owner)
    problems = caught.value.problems
    expected = [
        "answers:2: not JSON",
        "answers:3: a line must be a JSON object, not a list",
        "answers:5: answer is missing",
        "answers:6: answer is empty",
        "answers:7: query_id 'q1' is in the file twice (first on line 1)",
        "answers:8: query_id is missing",
        "answers:9: unknown field 'anwser'",
        "answers:9: aliases must be a list of strings, not a string",
        "answers:9: query_id 'q2' is in the file twice (first on line 5)",
        "answers:10: query_id must be a string, not a number",
        "answers:10: key_facts item 2 is empty",
        "answers:4: query_id 'nope' is not a query of golden set 'tiny'",
    ]
    for text in expected:
        assert any(problem.startswith(text) for problem in problems), (text, problems)
    assert len(problems) == len(expected)
    assert not ReferenceAnswer.objects.exists()


def test_it_refuses_a_retired_query_and_an_empty_file(golden_set, owner):
    query_retire(query=Query.objects.get(golden_set=golden_set, query_id="q3"))
    with pytest.raises(GoldsetError) as caught:
        answers_import(golden_set=golden_set, path_or_lines=[line(query_id="q3", answer="x")], user=owner)
    assert caught.value.problems == ["answers:1: query 'q3' is retired; it takes no answer"]
    with pytest.raises(GoldsetError, match="holds no answer"):
        answers_import(golden_set=golden_set, path_or_lines=["\n"], user=owner)


def test_it_reads_a_gzipped_file_by_its_path(golden_set, owner, tmp_path):
    path = tmp_path / "answers.jsonl.gz"
    path.write_bytes(gzip.compress(line(query_id="q2", answer="Kyoto").encode()))
    assert answers_import(golden_set=golden_set, path_or_lines=path, user=owner).added == 1
    assert stored(golden_set) == {"q2": ("Kyoto", [], [])}


def test_a_manager_sets_and_clears_one_answer(golden_set, owner):
    query = Query.objects.get(golden_set=golden_set, query_id="q1")
    reference_answer_set(query=query, answer="Paris", aliases=["City of Light"], key_facts=[], user=owner)
    assert query_reference_answer(query) == ReferenceText("Paris", ("City of Light",), ())
    reference_answer_set(query=query, answer="Lyon", aliases=[], key_facts=["on the Rhone"], user=owner)
    assert query_reference_answer(query) == ReferenceText("Lyon", (), ("on the Rhone",))
    assert reference_answer_clear(query=query) is True
    assert query_reference_answer(query) is None and reference_answer_clear(query=query) is False


def test_setting_one_answer_names_the_field_at_fault(golden_set, owner):
    query = Query.objects.get(golden_set=golden_set, query_id="q1")
    with pytest.raises(GoldsetError) as caught:
        reference_answer_set(query=query, answer=" ", aliases=[], key_facts=[], user=owner)
    assert caught.value.field == "answer"
    with pytest.raises(GoldsetError) as caught:
        reference_answer_set(query=query, answer="ok", aliases=["fine", ""], key_facts=[], user=owner)
    assert caught.value.field == "aliases" and caught.value.problems == ["aliases item 2 is empty"]
    assert not ReferenceAnswer.objects.exists()


def test_the_oracle_reads_a_versions_answers_frozen_and_the_live_ones(golden_set, owner):
    answers_import(golden_set=golden_set, path_or_lines=[line(query_id="q1", answer="Paris", aliases=["paris"])], user=owner)
    version = version_publish(golden_set=golden_set)
    q1 = Query.objects.get(golden_set=golden_set, query_id="q1")
    reference_answer_set(query=q1, answer="Lyon", aliases=[], key_facts=[], user=owner)
    assert version_reference_answers(version) == {q1.pk: ReferenceText("Paris", ("paris",), ())}
    assert live_reference_answers(golden_set) == {q1.pk: ReferenceText("Lyon", (), ())}


def test_the_command_imports_and_exits_non_zero_on_bad_input(golden_set, tmp_path, capsys):
    good = tmp_path / "answers.jsonl"
    good.write_text(line(query_id="q1", answer="Paris", aliases=["paris"]))
    call_command("import_answers", str(good), "--golden-set", "tiny")
    assert "answers added: 1, replaced: 0, unchanged: 0" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line(query_id="q9", answer="x") + line(query_id="q2"))
    with pytest.raises(CommandError) as caught:
        call_command("import_answers", str(bad), "--golden-set", "tiny")
    assert "bad.jsonl:1: query_id 'q9' is not a query" in str(caught.value)
    assert "bad.jsonl:2: answer is missing" in str(caught.value)
    with pytest.raises(CommandError, match="no golden set 'nope'"):
        call_command("import_answers", str(good), "--golden-set", "nope")
    assert stored(golden_set) == {"q1": ("Paris", ["paris"], [])}
