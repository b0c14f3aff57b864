"""export_beir: a version as a BEIR folder that BEIR's own GenericDataLoader reads as it is,
and that import_beir takes back to the same labels (issue 30 item 15)."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from goldenset.models import GoldenSet, Page
from goldenset.selectors import version_label_rows
from goldenset.services import version_publish
from tests.support import factories

pytestmark = pytest.mark.django_db

QRELS = {("q#1", "CR93E-3103#37"): 2, ("q#1", "d2"): 0, ("q/2:ü", "doc/3:ü"): 1, ("q10", "d2"): 3}


@pytest.fixture
def published():
    pages = factories.pages("CR93E-3103#37", "d2", "doc/3:ü", "d10", kind="doc")
    queries = factories.queries("q#1", "q/2:ü", "q10", "q2", lang="de")
    golden_set = factories.golden_set("beir-out", qrels=QRELS, pages=pages, queries=queries, query_slice_fields=["lang"])
    return version_publish(golden_set=golden_set, note="v1")


def test_beirs_own_loader_reads_the_export_as_it_is(published, tmp_path, capsys):
    from beir.datasets.data_loader import GenericDataLoader

    call_command("export_beir", "beir-out", str(tmp_path / "out"), "--version", "1")
    assert "wrote beir-out v1" in capsys.readouterr().out
    corpus, queries, qrels = GenericDataLoader(data_folder=str(tmp_path / "out")).load(split="test")
    assert set(corpus) == {"CR93E-3103#37", "d2", "doc/3:ü", "d10"}  # every page of the corpus
    assert corpus["doc/3:ü"]["title"] == "title doc/3:ü" and corpus["doc/3:ü"]["text"].startswith("text of doc/3:ü")
    assert queries == {"q#1": "question q#1", "q/2:ü": "question q/2:ü", "q10": "question q10"}  # those with labels
    assert qrels == {"q#1": {"CR93E-3103#37": 2, "d2": 0}, "q/2:ü": {"doc/3:ü": 1}, "q10": {"d2": 3}}
    lines = (tmp_path / "out" / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["_id"] for line in lines] == ["q2", "q10", "q#1", "q/2:ü"]  # natural order (lib.ids), all four
    assert json.loads(lines[0])["metadata"] == {"lang": "de"}


def test_the_export_imports_back_to_the_same_labels(published, tmp_path):
    call_command("export_beir", "beir-out", str(tmp_path / "out"))
    call_command("import_beir", str(tmp_path / "out"), "--slug", "beir-back", "--name", "back")
    back = version_publish(golden_set=GoldenSet.objects.get(slug="beir-back"), note="v1")
    assert sorted(version_label_rows(back)) == sorted(version_label_rows(published))


def test_a_labelled_page_changed_since_the_version_is_counted(published, tmp_path, capsys):
    Page.objects.filter(doc_id="d2").update(text="new text", content_hash="0" * 64)
    call_command("export_beir", "beir-out", str(tmp_path / "out"))
    assert "1 labelled page(s) changed since v1 was published" in capsys.readouterr().err


def test_a_set_without_a_version_is_refused(tmp_path):
    factories.golden_set("nothing-yet")
    with pytest.raises(CommandError, match="publish one with publish_version"):
        call_command("export_beir", "nothing-yet", str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
