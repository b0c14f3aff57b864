"""A draw's weights frozen at publish: on the version's rows, in its content hash only when
some query has one (so every version of a set never drawn hashes and exports as before),
and out through export_queries, the API and the client.

The API tests' set ("tiny": q1, q3 in en, q/2:ü in de) with a log whose queries include the
text of q1, so a draw marks q1 and adds others."""

import csv
import io
import json

import pytest
from django.core.management import call_command

from goldenset.evidence_export import version_export_chunks
from goldenset.models import Query, VersionQuery
from goldenset.publishing import publish_unchanged
from goldenset.selectors import version_recomputed_hash, version_settings
from goldenset.services import version_publish
from lib.hashing import version_hash
from lib.ids import natural_key
from tests.api import SLUG, client_for
from tests.api.conftest import golden_set, manager, token, version  # noqa: F401 - fixtures
from traffic.models import LoggedQuery, QueryLog
from traffic.normalizing import query_merge_key
from traffic.sampling import draw_queries

pytestmark = pytest.mark.django_db

TEXTS = ["question q1", "weather berlin", "cheap flights", "opening hours", "train tickets", "pizza near me"]


def add_log(golden_set):
    log = QueryLog.objects.create(golden_set=golden_set, name="prod", fields=["lang"], query_count=len(TEXTS))
    LoggedQuery.objects.bulk_create(
        LoggedQuery(log=log, normalized=query_merge_key(text), text=text, count=100 - 10 * n, fields={"lang": "en" if n % 2 else "de"})
        for n, text in enumerate(TEXTS)
    )
    return log


def plain_hash(version) -> str:
    """The hash as publishing made it before weights existed: settings, labels, queries, pages."""
    labels = [(vl.query.query_id, vl.page.doc_id, vl.grade) for vl in version.labels.order_by("position").select_related("query", "page")]
    queries = sorted((vq.query.query_id, vq.metadata) for vq in VersionQuery.objects.filter(version=version).select_related("query"))
    pages = [(vp.page.doc_id, vp.metadata, vp.published_at, vp.content_hash) for vp in version.version_pages.select_related("page")]
    return version_hash(
        version_settings(version),
        labels,
        sorted(queries, key=lambda row: natural_key(row[0])),
        sorted(pages, key=lambda row: natural_key(row[0])),
    )


@pytest.fixture
def drawn_version(golden_set, version, manager):
    add_log(golden_set)
    draw_queries(golden_set=golden_set, log_name="prod", size=4, design="pps", seed=11)
    return version_publish(golden_set=golden_set, user=manager, note="drawn from prod")


def test_a_version_of_a_set_never_drawn_hashes_and_exports_as_before(version):
    assert not VersionQuery.objects.filter(version=version, inclusion_probability__isnull=False).exists()
    assert version.content_hash == plain_hash(version) == version_recomputed_hash(version)
    lines = [json.loads(line) for line in "".join(version_export_chunks(version, "jsonl")).splitlines()]
    assert set(lines[0]) == {"query_id", "doc_id", "grade"}


def test_weights_set_alone_still_publish_and_the_version_freezes_them(golden_set, version, manager):
    add_log(golden_set)
    assert publish_unchanged(golden_set) == version
    exported = "".join(version_export_chunks(version, "jsonl"))
    draw_queries(golden_set=golden_set, log_name="prod", size=4, design="pps", seed=11)
    assert publish_unchanged(golden_set) is None
    # The version published before the draw is untouched by it: same hash, same export.
    assert version_recomputed_hash(version) == version.content_hash
    assert "".join(version_export_chunks(version, "jsonl")) == exported
    second = version_publish(golden_set=golden_set, user=manager)
    frozen = {
        vq.query.query_id: (vq.inclusion_probability, vq.stratum, vq.traffic_count)
        for vq in VersionQuery.objects.filter(version=second).select_related("query")
    }
    live = {q.query_id: (q.inclusion_probability, q.stratum, q.traffic_count) for q in Query.objects.filter(golden_set=golden_set)}
    assert frozen == live and sum(weight[0] is not None for weight in frozen.values()) == 4
    # The hash covers the weights, and the stored rows give it back.
    assert second.content_hash != plain_hash(second)
    assert version_recomputed_hash(second) == second.content_hash
    # Weights changed later leave the version as it was.
    Query.objects.filter(golden_set=golden_set).update(inclusion_probability=None)
    assert VersionQuery.objects.filter(version=second, inclusion_probability__isnull=False).count() == 4
    assert publish_unchanged(golden_set) is None


def test_export_queries_carries_the_frozen_weights_in_every_format(drawn_version, capsys):
    call_command("export_queries", SLUG, "--format", "jsonl")
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    by_id = {record["query_id"]: record for record in records}
    assert set(records[0]) == {"query_id", "text", "metadata", "inclusion_probability", "stratum", "traffic_count"}
    assert by_id["q3"]["inclusion_probability"] is None and by_id["q3"]["traffic_count"] is None
    frozen = VersionQuery.objects.filter(version=drawn_version, inclusion_probability__isnull=False).select_related("query")
    for vq in frozen:
        assert by_id[vq.query.query_id]["inclusion_probability"] == vq.inclusion_probability
        assert by_id[vq.query.query_id]["traffic_count"] == vq.traffic_count
    call_command("export_queries", SLUG, "--format", "json")
    assert json.loads(capsys.readouterr().out) == records
    call_command("export_queries", SLUG, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [row["query_id"] for row in rows] == [record["query_id"] for record in records]
    assert {row["query_id"]: row["inclusion_probability"] for row in rows}["q3"] == ""
    for vq in frozen:
        row = next(row for row in rows if row["query_id"] == vq.query.query_id)
        assert float(row["inclusion_probability"]) == vq.inclusion_probability


def test_the_api_gives_each_query_its_frozen_weight(token, golden_set, drawn_version):
    reader = client_for(token("read", golden_set))
    body = reader.get(f"/api/v1/golden-sets/{SLUG}/versions/{drawn_version.number}/queries", {"limit": 100}).json()
    by_id = {row["query_id"]: row for row in body["results"]}
    assert by_id["q3"]["inclusion_probability"] is None and by_id["q3"]["stratum"] == "" and by_id["q3"]["traffic_count"] is None
    frozen = VersionQuery.objects.filter(version=drawn_version, inclusion_probability__isnull=False).select_related("query")
    assert frozen.count() == 4
    for vq in frozen:
        assert by_id[vq.query.query_id]["inclusion_probability"] == vq.inclusion_probability
        assert by_id[vq.query.query_id]["traffic_count"] == vq.traffic_count
