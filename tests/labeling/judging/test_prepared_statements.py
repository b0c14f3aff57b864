"""The judging screen's statements are prepared on PostgreSQL (lib/prepared.py): after a
few judgments PostgreSQL holds their plans on the connection, and nothing else the app
runs is bound differently."""

import re

import pytest
from django.db import connection
from django.db.backends.postgresql.base import Cursor as DjangoClientCursor
from django.urls import reverse

from goldenset.models import Judgment
from lib.prepared import prepared_statements
from tests.labeling.judging.judging_data import annotator_of, pooled_set

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's; SQLite runs the views as before"),
]


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def _judge_in_a_loop(client, golden_set, times: int) -> int:
    """Next pair, then a grade, `times` times, as an annotator's screen does; the judgments made."""
    made = 0
    for _ in range(times):
        page = client.get(reverse("judging_next", args=[golden_set.slug]), HTTP_HX_REQUEST="true")
        assert page.status_code == 200
        task_id = re.search(r'data-task-id="(\d+)"', page.content.decode())
        if not task_id:
            break
        answer = client.post(reverse("judging_judge", args=[golden_set.slug, int(task_id.group(1))]), {"grade": "1"}, HTTP_HX_REQUEST="true")
        assert answer.status_code == 200
        made += 1
    return made


@pytest.fixture
def judging(client, make_user):
    pool = pooled_set(queries=4, depth=4)
    client.force_login(annotator_of(pool.golden_set, make_user, "ann"))
    return client, pool.golden_set


def test_the_judging_cycle_runs_on_plans_postgresql_prepared_once(judging):
    client, golden_set = judging
    assert _judge_in_a_loop(client, golden_set, 8) == 8
    assert Judgment.objects.filter(query__golden_set=golden_set).count() == 8
    prepared = _prepared()
    # The hand-out and the judgment's insert are among them, as $n-bound statements.
    assert any("labeling_judgingtask" in statement and "$1" in statement for statement in prepared)
    assert any(statement.startswith('INSERT INTO "goldenset_judgment"') for statement in prepared)


def test_outside_the_judging_views_cursors_bind_on_the_client_again(judging):
    client, golden_set = judging
    _judge_in_a_loop(client, golden_set, 2)
    assert connection.connection.cursor_factory is DjangoClientCursor
    before = len(_prepared())
    for _ in range(8):  # past psycopg's threshold, yet never prepared: bound on the client
        list(Judgment.objects.filter(query__golden_set=golden_set).values_list("id", flat=True))
    assert len(_prepared()) == before


def test_the_setting_turns_preparing_off(judging, settings):
    settings.DATABASE_PREPARED_STATEMENTS = False
    client, golden_set = judging
    before = set(_prepared())  # what earlier tests prepared on this connection stays
    assert _judge_in_a_loop(client, golden_set, 8) == 8
    assert set(_prepared()) == before


def test_a_failing_statement_within_leaves_the_connection_binding_on_the_client():
    with pytest.raises(ZeroDivisionError):
        with prepared_statements():
            assert connection.connection.cursor_factory is not DjangoClientCursor
            raise ZeroDivisionError
    assert connection.connection.cursor_factory is DjangoClientCursor


def test_while_queries_are_logged_the_log_shows_every_statements_text(judging):
    from django.test.utils import CaptureQueriesContext

    client, golden_set = judging
    with CaptureQueriesContext(connection) as captured:
        assert _judge_in_a_loop(client, golden_set, 8) == 8
    assert all(query["sql"] for query in captured.captured_queries)
    assert connection.connection.prepare_threshold == 5  # given back
