"""Duplicate groups: exact duplicates by normalised text, near duplicates by MinHash over
word shingles at the corpus's threshold, the first member in natural doc_id order standing
for its group; grouped at import and by the group_duplicates command."""

import io

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from goldenset.duplicates import corpus_duplicates_group, group_firsts, group_map, normalised, to_groups
from goldenset.models import Corpus, Page
from lib.errors import GoldsetError
from lib.formats import JsonRecord

pytestmark = pytest.mark.django_db

BASE = " ".join(f"word{n}" for n in range(200))
NEAR = BASE.replace("word100", "changed")  # 3 of 198 shingles differ: Jaccard about 0.97
OTHER = " ".join(f"other{n}" for n in range(200))


def _pages(texts: dict[str, str]) -> list[JsonRecord]:
    return [JsonRecord(line=n, id=doc_id, title="", text=text) for n, (doc_id, text) in enumerate(texts.items(), 1)]


def _pointers(corpus) -> dict[str, str | None]:
    return {
        doc_id: first
        for doc_id, first in Page.objects.filter(corpus=corpus).values_list("doc_id", "duplicate_of__doc_id").order_by("doc_id")
    }


def test_normalised_text_casefolds_and_collapses_whitespace():
    assert normalised("  The\tJet\n\nEngine  ") == "the jet engine"


def test_exact_duplicates_group_under_their_first_member_whatever_the_spacing_or_case():
    assert group_firsts(["Alpha beta", "gamma", "ALPHA   beta\n", "", None, ""], 1.0).tolist() == [0, 1, 0, 3, 4, 5]


def test_near_duplicates_group_at_the_threshold_and_not_above_their_similarity():
    assert group_firsts([BASE, OTHER, NEAR], 0.9).tolist() == [0, 1, 0]
    assert group_firsts([BASE, OTHER, NEAR], 1.0).tolist() == [0, 1, 2]


def test_a_chain_of_near_duplicates_is_one_group_led_by_its_first():
    third = NEAR.replace("word150", "altered")
    assert group_firsts([OTHER, third, BASE, NEAR], 0.9).tolist() == [0, 1, 1, 1]


@pytest.mark.golden_set(
    pages=_pages({"d10": BASE, "d2": NEAR, "d9": "Some TEXT", "d3": "some   text", "d4": OTHER, "d5": ""}),
    qrels={("q1", "d2"): 1},
)
def test_an_import_groups_its_documents_under_the_first_in_natural_doc_id_order(golden_set):
    assert _pointers(golden_set.corpus) == {"d10": "d2", "d2": None, "d3": None, "d4": None, "d5": None, "d9": "d3"}
    members, groups = group_map(golden_set.corpus_id)
    pks = dict(Page.objects.values_list("doc_id", "pk"))
    # A page key outside the corpus (negative) passes through, as a document alone does.
    assert to_groups(np.array([pks["d10"], pks["d4"], pks["d9"], -1]), members, groups).tolist() == [pks["d2"], pks["d4"], pks["d3"], -1]


@pytest.mark.golden_set(pages=_pages({"d1": BASE, "d2": NEAR, "d3": OTHER}), qrels={("q1", "d1"): 1})
def test_the_command_regroups_at_a_new_threshold_and_saves_it(golden_set):
    assert _pointers(golden_set.corpus)["d2"] == "d1"
    out = io.StringIO()
    call_command("group_duplicates", "--corpus", golden_set.corpus.slug, "--threshold", "1.0", stdout=out, verbosity=0)
    assert "0 document(s) are duplicates" in out.getvalue()
    assert _pointers(golden_set.corpus)["d2"] is None
    assert Corpus.objects.get(pk=golden_set.corpus_id).duplicate_threshold == 1.0
    assert corpus_duplicates_group(corpus=Corpus.objects.get(pk=golden_set.corpus_id), threshold=0.9) == 1
    assert _pointers(golden_set.corpus)["d2"] == "d1"


@pytest.mark.parametrize("threshold", [0, -0.5, 1.5])
def test_a_threshold_outside_0_to_1_is_refused_naming_it(golden_set, threshold):
    with pytest.raises(GoldsetError, match=f"duplicate threshold {threshold!r}"):
        corpus_duplicates_group(corpus=golden_set.corpus, threshold=threshold)
    with pytest.raises(CommandError, match="must be a number above 0"):
        call_command("group_duplicates", "--corpus", golden_set.corpus.slug, "--threshold", str(threshold), verbosity=0)


def test_the_command_names_an_unknown_corpus(db):
    with pytest.raises(CommandError, match="no corpus 'nope'"):
        call_command("group_duplicates", "--corpus", "nope", verbosity=0)


def test_the_tiny_sets_different_texts_make_no_group(golden_set):
    assert not Page.objects.filter(duplicate_of__isnull=False).exists()


def test_short_texts_group_only_when_they_are_the_same():
    """Two shingles a text make the MinHash estimate too coarse: across 100,000 pages of the
    form "text of page N" some pairs reached 0.9 (bench/recompute.py's corpus). Under
    NEAR_MIN_WORDS words, only exact duplicates group."""
    from goldenset.duplicates import NEAR_MIN_WORDS, group_firsts

    texts = [f"text of page {n}" for n in range(3000)] + ["Text  of page 7"]
    firsts = group_firsts(texts, 0.5)
    assert firsts[:3000].tolist() == list(range(3000))
    assert firsts[3000] == 7  # the same text, case and spaces aside
    assert len("text of page 1".split()) < NEAR_MIN_WORDS
