"""GoldsetClient against a live server: a version's queries, every page, with the sampling
weights the version froze (what an eval job weights its scores by)."""

from goldenset.models import VersionQuery
from goldenset.services import version_publish
from tests.api import SLUG
from tests.api.conftest import golden_set, manager, token, version  # noqa: F401 - fixtures
from tests.clients.conftest import client, make_client, waits  # noqa: F401 - fixtures
from tests.traffic.test_sampling_versions import add_log
from traffic.sampling import draw_queries


def test_a_versions_queries_come_whole_with_their_frozen_weights(client, golden_set, manager):  # noqa: F811
    add_log(golden_set)
    draw_queries(golden_set=golden_set, log_name="prod", size=4, design="pps", seed=11)
    version = version_publish(golden_set=golden_set, user=manager)
    client.http.page_size = 2  # several pages: the client follows `next`
    got = client.queries(SLUG, version.number)
    frozen = {
        vq.query.query_id: (vq.inclusion_probability, vq.stratum, vq.traffic_count)
        for vq in VersionQuery.objects.filter(version=version).select_related("query")
    }
    assert {q["query_id"]: (q["inclusion_probability"], q["stratum"], q["traffic_count"]) for q in got} == frozen
    assert sum(q["inclusion_probability"] is not None for q in got) == 4
    assert [q["query_id"] for q in client.queries(SLUG, 1)] == ["q1", "q3", "q/2:ü"]
    assert all(q["inclusion_probability"] is None for q in client.queries(SLUG, 1, slice="lang=de"))
