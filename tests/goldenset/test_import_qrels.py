import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from goldenset.models import GoldenSet, Judgment, Page, Query
from goldenset.services import qrels_import, version_publish
from lib.errors import GoldsetError
from tests.support import factories

pytestmark = pytest.mark.django_db


def lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def test_it_refuses_unknown_ids_and_lists_them_all_with_their_lines():
    factories.golden_set("tiny")
    before = Judgment.objects.count()
    with pytest.raises(GoldsetError) as caught:
        qrels_import(golden_set_slug="tiny", lines=lines("q1 0 d1 1\nq9 0 d1 1\nq1 0 dx 0\nq8 0 dy 2\n"), source_name="new.qrels")
    assert "2 query id(s) and 2 doc id(s) are not in golden set 'tiny'" in caught.value.message
    assert caught.value.problems == [
        "new.qrels:2: query id 'q9' is not in the golden set",
        "new.qrels:4: query id 'q8' is not in the golden set",
        "new.qrels:3: doc id 'dx' is not in the corpus",
        "new.qrels:4: doc id 'dy' is not in the corpus",
    ]
    assert Judgment.objects.count() == before


def test_create_missing_makes_id_only_pages_and_queries_flagged_without_text():
    factories.golden_set("tiny")
    summary = qrels_import(golden_set_slug="tiny", lines=lines("q9 0 dx 3\n"), source_name="f", create_missing=True)
    assert (summary.pages_created, summary.queries_created, summary.judgments_created) == (1, 1, 1)
    assert Page.objects.get(doc_id="dx").has_text is False
    assert Query.objects.get(query_id="q9").has_text is False


def test_create_missing_creates_the_golden_set_with_the_files_grade_scale():
    summary = qrels_import(golden_set_slug="fresh", lines=lines("1 0 a -1\n1 0 b 4\n"), source_name="f", create_missing=True)
    assert summary.golden_set_created
    assert GoldenSet.objects.get(slug="fresh").grade_values() == [-1, 4]


def test_grades_outside_the_scale_are_kept_and_reported():
    factories.golden_set("tiny")
    summary = qrels_import(golden_set_slug="tiny", lines=lines("q1 0 d4 7\n"), source_name="f")
    assert "grades outside the set's scale kept as they are: 7" in summary.notes
    assert Judgment.objects.filter(page__doc_id="d4").get().grade == 7


def test_a_later_import_supersedes_but_keeps_the_earlier_judgment():
    golden_set = factories.golden_set("tiny")
    qrels_import(golden_set_slug="tiny", lines=lines("q1 0 d1 0\n"), source_name="f")
    assert Judgment.objects.filter(query__query_id="q1", page__doc_id="d1").count() == 2
    version = version_publish(golden_set=golden_set)
    assert version.labels.get(query__query_id="q1", page__doc_id="d1").grade == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q1 0 d1 1\nq1 0 d2\n", "f:2: expected 4 columns"),
        ("q1 0 d1 1\nq1 0 d2 x\n", "f:2: grade 'x' is not an integer"),
        ("q1 0 d1 1\nq1 0 d1 2\n", "f:2: pair ('q1', 'd1') has grade 2, but line 1 gave it grade 1"),
    ],
)
def test_a_malformed_line_fails_the_whole_import_and_leaves_the_database_as_it_was(text, message):
    factories.golden_set("tiny")
    before = list(Judgment.objects.values_list("id", flat=True))
    with pytest.raises(GoldsetError) as caught:
        qrels_import(golden_set_slug="tiny", lines=lines(text), source_name="f", create_missing=True)
    assert caught.value.problems[0].startswith(message)
    assert list(Judgment.objects.values_list("id", flat=True)) == before


def test_identical_duplicate_lines_are_counted_not_doubled():
    factories.golden_set("tiny")
    summary = qrels_import(golden_set_slug="tiny", lines=lines("q1 0 d5 1\nq1 0 d5 1\n"), source_name="f")
    assert summary.duplicate_lines == 1 and summary.judgments_created == 1


def test_the_command_needs_the_set_unless_asked_to_create_it(tmp_path):
    path = tmp_path / "x.qrels"
    path.write_text("1 0 a 1\n")
    with pytest.raises(CommandError, match="no golden set 'nope'"):
        call_command("import_qrels", str(path), "--golden-set", "nope", verbosity=0)
    call_command("import_qrels", str(path), "--golden-set", "nope", "--create-missing", verbosity=0)
    assert GoldenSet.objects.filter(slug="nope").exists()


@pytest.mark.shared_data
@pytest.mark.django_db(transaction=True)  # publish_version waits for its job, sent on commit
@pytest.mark.parametrize("name", ["qrels.test", "qrels.test.with-comments"])
def test_trec_eval_qrels_round_trip_through_create_missing(shared_data, tmp_path, name):
    path = shared_data / "trec_eval_test" / name
    call_command("import_qrels", str(path), "--golden-set", "trec", "--create-missing", verbosity=0)
    call_command("publish_version", "trec", verbosity=0)
    out = tmp_path / "out.qrels"
    call_command("export_qrels", "trec", "--output", str(out))
    source = [line.split() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
    exported = [line.split() for line in out.read_text().splitlines()]
    assert sorted(exported) == sorted(source)
    if name == "qrels.test":
        assert len(exported) == 3681
        assert {row[3] for row in exported} == {"0", "1"}
    else:
        assert ["301", "0", "CR#93E-1860", "0"] in exported


@pytest.mark.shared_data
def test_graded_qrels_keep_minus_one_and_grades_beyond_the_default_scale(shared_data):
    path = shared_data / "trec_eval_test" / "qrels.rel_level"
    with path.open() as handle:
        summary = qrels_import(golden_set_slug="graded", lines=handle, source_name=path.name, create_missing=True)
    assert set(summary.grades) == {-1, 0, 1, 2, 3, 4} and sum(summary.grades.values()) == 3681
    assert GoldenSet.objects.get(slug="graded").grade_values() == [-1, 0, 1, 2, 3, 4]


@pytest.mark.shared_data
def test_judgment_group_qrels_with_conflicting_grades_are_refused(shared_data):
    # qrels.123 holds several judgment groups' grades for one pair (trec_eval's qrels_jg):
    # one grade per pair is a rule of plain qrels, so the file is refused, naming the lines.
    path = shared_data / "trec_eval_test" / "qrels.123"
    with path.open() as handle, pytest.raises(GoldsetError) as caught:
        qrels_import(golden_set_slug="graded", lines=handle, source_name=path.name, create_missing=True)
    assert "but line" in caught.value.problems[0]
    assert not GoldenSet.objects.filter(slug="graded").exists()
