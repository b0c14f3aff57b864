"""The query page's reference answer and its edit, the version page's answers and their
download: who may see and who may edit."""

import json

import pytest
from django.urls import reverse

from goldenset.answers import answers_import, query_reference_answer
from goldenset.models import Membership, Query
from goldenset.services import membership_grant, version_publish

pytestmark = [pytest.mark.django_db, pytest.mark.golden_set("tiny", manager="owner")]

QUERY_URL = ("query", {"slug": "tiny", "query_id": "q1"})


@pytest.fixture
def golden_set(golden_set, owner):
    answers_import(golden_set=golden_set, path_or_lines=[json.dumps({"query_id": "q1", "answer": "Paris <b>x</b>"})], user=owner)
    version_publish(golden_set=golden_set)
    return golden_set


def _url(name="query", **kwargs) -> str:
    return reverse(name, kwargs=kwargs or QUERY_URL[1])


def _q1(golden_set) -> Query:
    return Query.objects.get(golden_set=golden_set, query_id="q1")


def test_anonymous_visitors_are_sent_to_log_in(client, golden_set):
    for url in (_url(), _url("version_answers_export", slug="tiny", number=1)):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert client.post(_url(), {"answer": "x"}).status_code == 302
    assert query_reference_answer(_q1(golden_set)).answer == "Paris <b>x</b>"


def test_strangers_and_annotators_get_not_found(client, golden_set, stranger, teammate):
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    for user in (stranger, teammate):
        client.force_login(user)
        assert client.get(_url()).status_code == 404
        assert client.get(_url("version_answers_export", slug="tiny", number=1)).status_code == 404
        assert client.post(_url(), {"answer": "changed"}).status_code == 404
    assert query_reference_answer(_q1(golden_set)).answer == "Paris <b>x</b>"


def test_an_adjudicator_reads_the_answer_but_may_not_edit_it(client, golden_set, teammate):
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    client.force_login(teammate)
    page = client.get(_url())
    assert page.status_code == 200
    html = page.content.decode()
    assert "Paris &lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html  # escaped, never markup
    assert "Version 1 holds this answer." in html and "Save the answer" not in html
    assert client.post(_url(), {"answer": "changed"}).status_code == 404
    assert client.post(_url(), {"action": "clear"}).status_code == 404
    assert query_reference_answer(_q1(golden_set)).answer == "Paris <b>x</b>"


def test_a_manager_edits_the_answer_with_aliases_and_key_facts_a_line_each(client, golden_set, owner):
    client.force_login(owner)
    assert "Save the answer" in client.get(_url()).content.decode()
    response = client.post(_url(), {"answer": " Lyon ", "aliases": "lyon\n\n  Lugdunum \n", "key_facts": "on the Rhone"})
    assert response.status_code == 302
    answer = query_reference_answer(_q1(golden_set))
    assert (answer.answer, answer.aliases, answer.key_facts) == ("Lyon", ("lyon", "Lugdunum"), ("on the Rhone",))
    html = client.get(_url()).content.decode()
    assert "Version 1 holds another answer" in html and "Lugdunum" in html


def test_an_empty_answer_is_refused_by_name_and_nothing_changes(client, golden_set, owner):
    client.force_login(owner)
    response = client.post(_url(), {"answer": "   ", "aliases": "x"})
    assert response.status_code == 400 and "This field is required" in response.content.decode()
    assert query_reference_answer(_q1(golden_set)).answer == "Paris <b>x</b>"


def test_a_manager_clears_the_answer_and_the_version_keeps_its_own(client, golden_set, owner):
    client.force_login(owner)
    assert client.post(_url(), {"action": "clear"}).status_code == 302
    assert query_reference_answer(_q1(golden_set)) is None
    exported = b"".join(client.get(_url("version_answers_export", slug="tiny", number=1)).streaming_content).decode()
    assert json.loads(exported) == {"query_id": "q1", "answer": "Paris <b>x</b>", "aliases": [], "key_facts": []}


def test_the_version_page_counts_the_answers_and_shows_their_changes(client, golden_set, owner):
    client.force_login(owner)
    client.post(_url(), {"answer": "Lyon"})
    version_publish(golden_set=golden_set)
    html = client.get(reverse("version", kwargs={"slug": "tiny", "number": 2})).content.decode()
    assert "1 of 3 queries" in html and "answer changed" in html
    assert "<s>Paris &lt;b&gt;x&lt;/b&gt;</s> → Lyon" in html
    assert reverse("query", kwargs={"slug": "tiny", "query_id": "q1"}) in html
