"""GoldsetClient against a live server: a version's reference answers, every page, pinned
by the version's content hash as its qrels are."""

import json

import pytest

from goldenset.answers import answers_import
from goldenset.services import version_publish
from goldset_client import QrelsIntegrityError
from tests.api import SLUG


def test_a_versions_answers_come_whole_and_pinned_to_its_hash(client, golden_set, manager):
    records = [{"query_id": q, "answer": f"answer {n}", "aliases": [f"alias {n}"], "key_facts": []} for n, q in enumerate(["q3", "q1"])]
    answers_import(golden_set=golden_set, path_or_lines=[json.dumps(r) for r in records], user=manager)
    version = version_publish(golden_set=golden_set, user=manager)
    client.http.page_size = 1  # two pages: the client follows `next`
    got = client.answers(SLUG, "latest")
    assert got == [records[1], records[0]]  # natural query id order
    assert client.answers(SLUG, 2, expected_hash=version.content_hash) == got
    assert client.answers(SLUG, 1) == []
    with pytest.raises(QrelsIntegrityError, match="not the pinned"):
        client.answers(SLUG, 2, expected_hash="0" * 64)
