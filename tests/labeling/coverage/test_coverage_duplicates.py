"""The coverage page says how many judgments duplicate groups saved: each label of a
group's first document stands for the group's other members."""

import pytest
from django.urls import reverse

from goldenset.services import version_publish
from labeling.coverage.duplicates import judgments_saved
from lib.formats import JsonRecord

pytestmark = pytest.mark.django_db

SAME = "a page copied into three places"
TEXTS = {"d1": SAME, "d2": "two", "d3": SAME.title(), "d4": SAME + "  ", "d5": "five"}


@pytest.mark.golden_set(
    "dupes",
    manager="owner",
    pages=[JsonRecord(line=n, id=doc_id, title="", text=text) for n, (doc_id, text) in enumerate(TEXTS.items(), 1)],
    qrels={("q1", "d1"): 2, ("q2", "d4"): 1, ("q2", "d2"): 0, ("q3", "d5"): 1},
)
def test_each_label_of_a_groups_first_saves_a_judgment_per_other_member(client, golden_set, owner):
    version = version_publish(golden_set=golden_set)
    # q1-d1 and q2-d1 (d4's judgment is the group's) stand for d3 and d4 each.
    assert judgments_saved(version) == 4
    client.force_login(owner)
    body = client.get(reverse("coverage", kwargs={"slug": "dupes"})).content.decode()
    assert "<strong>4</strong> judgments saved by duplicate groups" in body


@pytest.mark.golden_set("plain", manager="owner")
def test_a_set_without_duplicates_says_nothing_of_them(client, golden_set, owner):
    version = version_publish(golden_set=golden_set)
    assert judgments_saved(version) == 0
    client.force_login(owner)
    assert "saved by duplicate groups" not in client.get(reverse("coverage", kwargs={"slug": "plain"})).content.decode()
