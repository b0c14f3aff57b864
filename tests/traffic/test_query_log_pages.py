"""The query log pages: the set's logs and one log (head queries, fields' traffic shares),
and the manager's upload, which calls the same service as import_query_log. Read as runs
are (managers, adjudicators, staff); a 404 to annotators, strangers and other sets' managers."""

import gzip
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from goldenset.models import Membership
from goldenset.services import membership_grant
from tests.support import factories
from traffic.logs import query_log_import
from traffic.models import LoggedQuery, QueryLog
from traffic.selectors import query_log_field_shares

pytestmark = pytest.mark.django_db

LOG = b"".join(
    [b'{"query": "Wing flutter", "count": 6, "lang": "en"}\n', b'{"query": "wing  flutter?", "count": 2, "lang": "fr"}\n']
    + [b'{"query": "aile <b>vol</b>", "lang": "fr"}\n', b'{"query": "heat", "count": 1}\n']
)


@pytest.fixture
def people(make_user):
    return {role: make_user(role) for role in ("manager", "adjudicator", "annotator", "other_manager")}


@pytest.fixture
def logged_set(people):
    golden_set = factories.golden_set("traffic", manager=people["manager"])
    membership_grant(user=people["adjudicator"], golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    membership_grant(user=people["annotator"], golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    factories.golden_set("elsewhere", manager=people["other_manager"])
    log = query_log_import(golden_set=golden_set, data=io.BytesIO(LOG), name="nov", source_name="nov.jsonl", user=people["manager"]).log
    return golden_set, log


def test_the_list_shows_each_log_with_its_counts(client, people, logged_set):
    golden_set, log = logged_set
    client.force_login(people["adjudicator"])
    html = client.get(reverse("query_logs", args=[golden_set.slug])).content.decode()
    assert reverse("query_log", args=[golden_set.slug, log.pk]) in html
    assert "<td>lang</td>" in html and "by manager" in html
    assert ">Query logs</a>" in html  # in the set's menu
    assert "Upload a query log" not in html  # adjudicators read, managers upload


def test_a_log_shows_its_head_queries_and_traffic_shares_escaped(client, people, logged_set):
    golden_set, log = logged_set
    client.force_login(people["manager"])
    html = client.get(reverse("query_log", args=[golden_set.slug, log.pk])).content.decode()
    assert '<td>Wing flutter</td><td class="num">8</td><td>en</td>' in html
    assert "aile &lt;b&gt;vol&lt;/b&gt;" in html and "<b>vol</b>" not in html
    # lang: en 8 of 10 events, fr 1, none 1.
    assert '<td>en</td><td class="num">1</td><td class="num">8</td><td class="num">80.0%</td>' in html
    assert '<span class="muted">no value</span></td><td class="num">1</td><td class="num">1</td><td class="num">10.0%</td>' in html


def test_a_manager_uploads_a_gzipped_csv_log(client, people, logged_set):
    golden_set, _ = logged_set
    client.force_login(people["manager"])
    upload = SimpleUploadedFile("dec.log", gzip.compress(b"query,count,area\nslab heat,3,heat\n"))
    response = client.post(reverse("query_logs", args=[golden_set.slug]), {"file": upload, "name": "dec", "format": "auto"})
    log = QueryLog.objects.get(golden_set=golden_set, name="dec")
    assert response.status_code == 302 and response["Location"] == reverse("query_log", args=[golden_set.slug, log.pk])
    assert (log.event_count, log.fields, log.imported_by) == (3, ["area"], people["manager"])


def test_a_bad_upload_names_its_lines_and_stores_nothing(client, people, logged_set):
    golden_set, _ = logged_set
    client.force_login(people["manager"])
    upload = SimpleUploadedFile("bad.jsonl", b'{"query": "ok"}\n{"query": "x", "count": -2}\n')
    response = client.post(reverse("query_logs", args=[golden_set.slug]), {"file": upload, "name": "bad", "format": "auto"})
    assert response.status_code == 400
    assert "bad.jsonl:2: field &#x27;count&#x27; must be a positive integer, found -2" in response.content.decode()
    assert not QueryLog.objects.filter(name="bad").exists()


def test_a_name_taken_is_refused_on_the_name_field(client, people, logged_set):
    golden_set, _ = logged_set
    client.force_login(people["manager"])
    upload = SimpleUploadedFile("again.jsonl", b'{"query": "ok"}\n')
    response = client.post(reverse("query_logs", args=[golden_set.slug]), {"file": upload, "name": "nov", "format": "auto"})
    assert response.status_code == 409
    assert response.context["form"].errors["name"] == [
        f"golden set {golden_set.slug} has a query log named 'nov' already: choose another name, or replace it"
    ]
    assert LoggedQuery.objects.filter(log__name="nov").count() == 3


@pytest.mark.parametrize("role", ["annotator", "other_manager"])
def test_annotators_and_other_sets_managers_get_404_everywhere(client, people, logged_set, role):
    golden_set, log = logged_set
    client.force_login(people[role])
    assert client.get(reverse("query_logs", args=[golden_set.slug])).status_code == 404
    assert client.get(reverse("query_log", args=[golden_set.slug, log.pk])).status_code == 404
    upload = SimpleUploadedFile("x.jsonl", b'{"query": "x"}\n')
    assert client.post(reverse("query_logs", args=[golden_set.slug]), {"file": upload, "name": "x"}).status_code == 404
    assert not QueryLog.objects.filter(name="x").exists()


def test_adjudicators_cannot_upload(client, people, logged_set):
    golden_set, _ = logged_set
    client.force_login(people["adjudicator"])
    upload = SimpleUploadedFile("x.jsonl", b'{"query": "x"}\n')
    assert client.post(reverse("query_logs", args=[golden_set.slug]), {"file": upload, "name": "x"}).status_code == 404


def test_anonymous_visitors_are_sent_to_log_in(client, logged_set):
    golden_set, log = logged_set
    for url in (reverse("query_logs", args=[golden_set.slug]), reverse("query_log", args=[golden_set.slug, log.pk])):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_another_sets_log_is_a_404(client, people, logged_set):
    _, log = logged_set
    client.force_login(people["other_manager"])
    assert client.get(reverse("query_log", args=["elsewhere", log.pk])).status_code == 404


def test_the_log_page_costs_a_fixed_number_of_queries(client, people, logged_set, django_assert_max_num_queries):
    golden_set, log = logged_set
    client.force_login(people["manager"])
    with django_assert_max_num_queries(12):
        assert client.get(reverse("query_log", args=[golden_set.slug, log.pk])).status_code == 200


def test_an_upload_past_the_text_limit_is_refused_413_pointing_to_the_command(client, people, logged_set, settings):
    golden_set, _ = logged_set
    settings.QUERY_LOG_UPLOAD_MB = 1
    client.force_login(people["manager"])
    # Small once gzipped, past 1 MB once read.
    upload = SimpleUploadedFile("big.jsonl.gz", gzip.compress(b'{"query": "the same query again"}\n' * 40_000))
    response = client.post(reverse("query_logs", args=[golden_set.slug]), {"file": upload, "name": "big", "format": "auto"})
    assert response.status_code == 413
    assert "more than 1 MB of text (the limit, QUERY_LOG_UPLOAD_MB); import it with manage.py import_query_log" in response.content.decode()
    assert not QueryLog.objects.filter(name="big").exists()


def test_the_list_costs_a_fixed_number_of_queries(client, people, logged_set, django_assert_max_num_queries):
    golden_set, _ = logged_set
    for n in range(3):
        query_log_import(
            golden_set=golden_set, data=io.BytesIO(b'{"query": "a"}\n'), name=f"more{n}", source_name="a.jsonl", user=people["manager"]
        )
    client.force_login(people["manager"])
    with django_assert_max_num_queries(10):
        assert client.get(reverse("query_logs", args=[golden_set.slug])).status_code == 200


def test_a_fields_values_past_twenty_are_summed_as_other_values():
    golden_set = factories.golden_set("many")
    data = b"".join(b'{"query": "q%d", "count": %d, "area": "a%02d"}\n' % (n, 30 - n, n) for n in range(25))
    log = query_log_import(golden_set=golden_set, data=io.BytesIO(data), name="l", source_name="l.jsonl").log
    (area,) = query_log_field_shares(log)
    assert [share.value for share in area.values] == [f"a{n:02d}" for n in range(20)]
    assert (area.other.value, area.other.queries, area.other.events) == ("5 other values", 5, 10 + 9 + 8 + 7 + 6)
    assert area.values[0].percent == f"{30 / log.event_count * 100:.1f}%"
