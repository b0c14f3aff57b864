"""Model labels come in from files made elsewhere, all or nothing, and stay a source of their
own: a version, its export, its scores and the set's agreement are the same with them as
without them."""

import gzip
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction

from goldenset.model_labels import model_labels_import, prompt_hash_of
from goldenset.models import GoldenSet, Judgment, ModelJudgment, ModelPrompt, Page, Query
from goldenset.selectors import resolved_labels, version_label_rows
from goldenset.services import judgment_record, version_publish
from labeling.quality.selectors import agreement_report, disagreements
from lib.errors import GoldsetError
from lib.formats import ModelLabelLine
from tests.support import factories

pytestmark = pytest.mark.django_db

PROMPT = "Grade how well the passage answers the query, 0 to 3.\n"


@pytest.fixture
def tiny():
    return factories.golden_set("tiny")


@pytest.fixture
def prompt_file(tmp_path):
    path = tmp_path / "prompt.txt"
    path.write_bytes(PROMPT.encode("utf-8"))
    return str(path)


def run_command(path, *options, slug="tiny", model="umbrela-llama3"):
    call_command("import_model_labels", str(path), "--golden-set", slug, "--model", model, *options, verbosity=0)


def stored() -> list[tuple]:
    return list(
        ModelJudgment.objects.order_by("query__query_id", "page__doc_id").values_list(
            "query__query_id", "page__doc_id", "model", "prompt_hash", "grade", "score", "raw_answer"
        )
    )


def test_it_imports_trec_qrels_with_the_prompt_stored_once_by_its_hash(tiny, tmp_path, prompt_file):
    path = tmp_path / "labels.qrels"
    path.write_text("q1 0 d1 3\nq1 0 d4 1\nq3 0 d5 0\n")
    run_command(path, "--prompt-file", prompt_file)
    digest = prompt_hash_of(PROMPT)
    assert stored() == [
        ("q1", "d1", "umbrela-llama3", digest, 3, None, ""),
        ("q1", "d4", "umbrela-llama3", digest, 1, None, ""),
        ("q3", "d5", "umbrela-llama3", digest, 0, None, ""),
    ]
    assert ModelPrompt.objects.get(prompt_hash=digest).text == PROMPT


def test_it_imports_gzipped_jsonl_with_scores_and_raw_answers(tiny, tmp_path):
    lines = [
        {"query_id": "q1", "doc_id": "d1", "grade": 2, "score": 0.83, "raw": "##final score: 2"},
        {"query_id": "q2", "doc_id": "d2", "grade": 0},
    ]
    path = tmp_path / "labels.jsonl.gz"
    path.write_bytes(gzip.compress("".join(json.dumps(line) + "\n" for line in lines).encode()))
    run_command(path, "--format", "jsonl", "--prompt-hash", "a" * 64)
    assert stored() == [
        ("q1", "d1", "umbrela-llama3", "a" * 64, 2, 0.83, "##final score: 2"),
        ("q2", "d2", "umbrela-llama3", "a" * 64, 0, None, ""),
    ]
    assert not ModelPrompt.objects.exists()  # a hash alone brings no text


def test_it_names_every_bad_line_and_writes_nothing(tiny, tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"query_id": "q1", "doc_id": "d1", "grade": 2}),
                json.dumps({"query_id": "nope", "doc_id": "d1", "grade": 2}),
                json.dumps({"query_id": "q1", "doc_id": "ghost", "grade": 2}),
                json.dumps({"query_id": "q1", "doc_id": "d2", "grade": 7}),
                json.dumps({"query_id": "q1", "doc_id": "d1", "grade": 1}),
            ]
        )
        + "\n"
    )
    with pytest.raises(CommandError) as refused:
        run_command(path, "--format", "jsonl", "--prompt-hash", "b" * 64)
    message = str(refused.value)
    assert "labels.jsonl:2: query id 'nope' is not in golden set 'tiny'" in message
    assert "labels.jsonl:3: doc id 'ghost' is not in the corpus" in message
    assert "labels.jsonl:4: grade 7 is not on the set's scale [0, 1, 2, 3]" in message
    assert "labels.jsonl:5: pair q1 d1 is given again (first on line 1)" in message
    assert not ModelJudgment.objects.exists()


def test_it_names_lines_it_cannot_read_and_writes_nothing(tiny, tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(
        '{"query_id": "q1", "doc_id": "d1", "grade": 2}\n{"query_id": "q 1", "doc_id": "d1", "grade": 2}\n'
        '{"query_id": "q1", "doc_id": "d2"}\n{"query_id": "q1", "doc_id": "d3", "grade": 1, "score": "high"}\nnot json\n'
        '{"query_id": "q9", "doc_id": "d1", "grade": 1}\n{"query_id": "q2", "doc_id": "d1", "grade": 1, "raw": "a\\u0000b"}\n'
    )
    with pytest.raises(CommandError) as refused:
        run_command(path, "--format", "jsonl", "--prompt-hash", "c" * 64)
    message = str(refused.value)
    assert "labels.jsonl:2: query_id 'q 1' contains whitespace" in message
    assert "labels.jsonl:3: field 'grade' is missing" in message
    assert "labels.jsonl:4: field 'score' 'high' is not a number" in message
    assert "labels.jsonl:5: not valid JSON" in message
    # Faults of meaning are named in the same attempt as faults of form.
    assert "labels.jsonl:6: query id 'q9' is not in golden set 'tiny'" in message
    assert "labels.jsonl:7: field 'raw' holds a NUL character" in message
    assert not ModelJudgment.objects.exists()


def test_the_command_names_an_unknown_golden_set_and_wants_the_prompt(tiny, tmp_path, prompt_file):
    path = tmp_path / "labels.qrels"
    path.write_text("q1 0 d1 3\n")
    with pytest.raises(CommandError, match="no golden set 'nope'"):
        run_command(path, "--prompt-file", prompt_file, slug="nope")
    with pytest.raises(CommandError, match="--prompt-file"):
        run_command(path)
    assert not ModelJudgment.objects.exists()


def test_a_pair_this_model_and_prompt_already_labelled_is_refused(tiny):
    records = [ModelLabelLine(1, "q1", "d1", 2)]
    model_labels_import(golden_set=tiny, model="m", prompt_text=PROMPT, records=records)
    with pytest.raises(GoldsetError) as refused:
        model_labels_import(golden_set=tiny, model="m", prompt_text=PROMPT, records=records, source_name="again")
    assert refused.value.problems == ["again:1: pair q1 d1 already has a label from m with this prompt"]
    # Another prompt is another source: its label of the same pair is welcome.
    model_labels_import(golden_set=tiny, model="m", prompt_text=PROMPT + " ", records=records)
    assert ModelJudgment.objects.count() == 2


def test_the_prompt_is_named_by_its_text_or_its_hash_exactly_once_and_the_model_by_a_printable_name(tiny):
    records = [ModelLabelLine(1, "q1", "d1", 2)]
    for prompt in ({}, {"prompt_text": PROMPT, "prompt_hash": "a" * 64}, {"prompt_hash": "not-a-hash"}):
        with pytest.raises(GoldsetError):
            model_labels_import(golden_set=tiny, model="m", records=records, **prompt)
    for model in ("", "m\x00", "x" * 201):
        with pytest.raises(GoldsetError, match="the model's name"):
            model_labels_import(golden_set=tiny, model=model, records=records, prompt_hash="a" * 64)
    assert not ModelJudgment.objects.exists()


def test_the_database_holds_one_label_per_pair_model_and_prompt_and_grades_within_the_scale(tiny):
    model_labels_import(golden_set=tiny, model="m", prompt_hash="d" * 64, records=[ModelLabelLine(1, "q1", "d1", 2)])
    first = ModelJudgment.objects.get()
    fields = {
        name: getattr(first, name) for name in ("golden_set_id", "query_id", "page_id", "model", "prompt_hash", "scale_low", "scale_high")
    }
    # PostgreSQL names the constraint; SQLite names its columns.
    unique = "model_judgment_unique_per_prompt|UNIQUE constraint failed: goldenset_modeljudgment.query_id"
    with pytest.raises(IntegrityError, match=unique), transaction.atomic():
        ModelJudgment.objects.create(**fields, grade=1)
    with pytest.raises(IntegrityError, match="model_judgment_grade_in_scale"), transaction.atomic():
        ModelJudgment.objects.create(**{**fields, "model": "other"}, grade=9)


# --- kept apart ---------------------------------------------------------------------


def _judged_set(slug: str, make_user) -> GoldenSet:
    golden_set = factories.golden_set(slug)
    query, page = Query.objects.get(golden_set=golden_set, query_id="q1"), Page.objects.get(corpus=golden_set.corpus, doc_id="d2")
    for name, grade in ((f"{slug}-ann1", 1), (f"{slug}-ann2", 3)):
        judgment_record(query=query, page=page, grade=grade, annotator=make_user(name))
    return golden_set


def test_a_version_published_with_model_labels_is_byte_identical_to_one_without(make_user, tmp_path):
    plain, modelled = _judged_set("plain", make_user), _judged_set("modelled", make_user)
    # Labels that disagree with people's on every judged pair, and fill every unjudged one.
    records = [
        ModelLabelLine(n, q, d, (3 if q == "q3" else 0))
        for n, (q, d) in enumerate(((q, d) for q in ("q1", "q2", "q3") for d in ("d1", "d2", "d3", "d4", "d5")), start=1)
    ]
    model_labels_import(golden_set=modelled, model="m", prompt_text=PROMPT, records=records)
    assert ModelJudgment.objects.filter(golden_set=modelled).count() == 15
    assert Judgment.objects.filter(query__golden_set=modelled).count() == Judgment.objects.filter(query__golden_set=plain).count()

    def pk_free(labels, golden_set):
        queries = dict(Query.objects.filter(golden_set=golden_set).values_list("id", "query_id"))
        pages = dict(Page.objects.filter(corpus=golden_set.corpus).values_list("id", "doc_id"))
        return [(queries[q], pages[p], g) for q, p, g in labels]

    assert pk_free(resolved_labels(modelled), modelled) == pk_free(resolved_labels(plain), plain)
    versions = [version_publish(golden_set=s) for s in (plain, modelled)]
    assert versions[0].content_hash == versions[1].content_hash
    assert list(version_label_rows(versions[0])) == list(version_label_rows(versions[1]))
    exports = []
    for golden_set in (plain, modelled):
        for fmt in ("trec", "json"):
            path = tmp_path / f"{golden_set.slug}.{fmt}"
            call_command("export_qrels", golden_set.slug, "--format", fmt, "--output", str(path))
            exports.append(path.read_bytes())
    assert exports[:2] == exports[2:]

    # Scores: the same run scores the same on both versions.
    ranking = {"q1": ["d5", "d2", "d1"], "q2": ["d3", "d4"], "q3": ["d5"]}
    evaluations = [factories.score(factories.run(s, "bm25", ranking), v) for s, v in zip((plain, modelled), versions)]
    scores = [sorted(e.scores.values_list("slice", "metric", "value", "queries_averaged")) for e in evaluations]
    assert scores[0] and scores[0] == scores[1]
    # Agreement and adjudication read people only.
    reports = [agreement_report(s) for s in (plain, modelled)]
    assert (reports[0].units, reports[0].kappa, reports[0].confusion) == (reports[1].units, reports[1].kappa, reports[1].confusion)
    assert reports[0].units == 1
    listed = [[(d.query_id, d.doc_id) for d in disagreements(s).items] for s in (plain, modelled)]
    assert listed[0] == listed[1] == [("q1", "d2")]
    # Nothing a person did changed, so there is nothing new to publish.
    with pytest.raises(GoldsetError, match="nothing changed"):
        version_publish(golden_set=modelled)
