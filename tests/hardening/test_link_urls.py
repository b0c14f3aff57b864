"""Finding 13, second half: the adjudication page rendered a page's URL as a raw href, and
`javascript:` ran in the app's origin once `target` was removed. Every page link goes
through lib.sanitize.link_url: http(s) only, as a browser would read the scheme."""

import pytest
from django.test import Client
from django.urls import reverse

from goldenset.models import Membership, Page, Query
from goldenset.services import judgment_record, membership_grant
from lib.formats import JsonRecord
from lib.sanitize import link_url
from tests.support import factories

HOSTILE = [
    "javascript:alert(document.domain)",
    "JaVaScRiPt:alert(1)",
    "java\tscript:alert(1)",
    " javascript:alert(1)",
    "\x01javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "https:evil",
]


@pytest.mark.parametrize("url", HOSTILE)
def test_a_url_that_is_not_http_is_no_link(url):
    assert link_url(url) == ""


@pytest.mark.parametrize("url", ["https://wiki.example/page?id=1#top", "http://intranet/doc", "HTTPS://Example.com/x"])
def test_an_http_url_stays_as_it_is(url):
    assert link_url(url) == url


@pytest.mark.django_db
@pytest.mark.parametrize("url", HOSTILE[:3])
def test_the_adjudication_and_drill_down_pages_link_no_hostile_url(make_user, url):
    boss, ann, bob = make_user("boss"), make_user("ann"), make_user("bob")
    pages = [JsonRecord(line=1, id="d1", title="Runbook", text="t", url=url), *factories.pages("d2", "d3")]
    golden_set = factories.golden_set("links", manager=boss, pages=pages, qrels={("q1", "d2"): 1})
    for person in (ann, bob):
        membership_grant(user=person, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    query, page = Query.objects.get(query_id="q1"), Page.objects.get(doc_id="d1")
    judgment_record(query=query, page=page, grade=0, annotator=ann)
    judgment_record(query=query, page=page, grade=3, annotator=bob)  # a disagreement to adjudicate

    client = Client()
    client.force_login(boss)
    adjudication = client.get(reverse("adjudicate_pair", args=["links", query.pk, page.pk])).content.decode()
    from goldenset.services import version_publish

    version_publish(golden_set=golden_set)
    run = factories.run(golden_set, "bm25", {"q1": ["d1", "d2"]})
    drill_down = client.get(reverse("run_query", kwargs={"slug": "links", "run_id": run.pk, "query_id": "q1"})).content.decode()
    for html in (adjudication, drill_down):
        assert "Runbook" in html
        assert 'href="javascript' not in html.lower() and 'href="java' not in html.lower()
