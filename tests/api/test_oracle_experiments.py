"""The oracle experiment through the API: a manager starts and continues one (202, a worker
runs it), readers list it, read its progress and report and page through its answers; every
permission, against a real local chat server where the job runs."""

import pytest

from answers.generation import DEFAULT_PROMPT
from answers.models import Generator, OracleExperiment
from goldenset.answers import answers_import
from goldenset.services import version_publish
from tests.api import SLUG, assert_error, client_for
from tests.support.chat_server import ChatServer


def url(suffix: str = "") -> str:
    return f"/api/v1/golden-sets/{SLUG}/oracle-experiments/{suffix}"


@pytest.fixture
def chat_server():
    with ChatServer() as server:
        yield server


@pytest.fixture
def generator(golden_set, chat_server):
    return Generator.objects.create(golden_set=golden_set, name="local", base_url=chat_server.base_url, model="tiny", prompt=DEFAULT_PROMPT)


@pytest.fixture
def answered_version(golden_set, manager, run):
    # text of d1 is what the generator reads for q1 ("question q1" shares no word: it answers "I don't know").
    answers_import(golden_set=golden_set, path_or_lines=['{"query_id": "q1", "answer": "I don\'t know"}'], user=manager)
    return version_publish(golden_set=golden_set, user=manager)


def start(client, run, **extra):
    return client.post(url(), {"run_id": run.pk, "generator": "local", **extra}, format="json")


@pytest.mark.django_db(transaction=True)
def test_a_manager_starts_one_a_worker_runs_it_and_readers_read_its_report_and_answers(answered_version, run, generator, token, golden_set):
    made = start(client_for(token("write", golden_set)), run, closed_book=True)
    assert made.status_code == 202, made.content
    body = made.json()
    assert body["version"] == answered_version.number and body["run"] == run.name and body["generator"] == "local"
    # Tasks run in process here (no broker): the job ran when the request committed.
    reader = client_for(token("read", golden_set))
    one = reader.get(url(f"{body['id']}/"))
    assert one.status_code == 200
    data = one.json()
    assert data["status"] == "done" and data["answers_total"] == data["answers_done"] == 9  # 3 queries x 3 contexts
    report = data["report"]
    assert report["oracle"]["queries"] == 3 and report["oracle"]["with_reference"] == 1
    assert report["oracle"]["exact_match"] == pytest.approx(1.0)  # q1's "I don't know" is its reference
    assert set(report) >= {"oracle", "retrieved", "closed_book", "retrieval_loss", "generation_loss", "decision", "experiment"}
    assert [row["id"] for row in reader.get(url()).json()["results"]] == [body["id"]]
    page = reader.get(url(f"{body['id']}/answers/"), {"limit": 4})
    assert page.status_code == 200 and page.json()["count"] == 9 and len(page.json()["results"]) == 4
    first = page.json()["results"][0]
    assert set(first) >= {"query_id", "context", "context_ids", "context_tokens", "text", "exact_match", "token_f1", "model_grade"}


@pytest.mark.django_db(transaction=True)
def test_a_budget_spent_stops_it_and_a_manager_continues_it(answered_version, run, generator, token, golden_set):
    writer = client_for(token("write", golden_set))
    body = start(writer, run, max_requests=2).json()
    stopped = client_for(token("read", golden_set)).get(url(f"{body['id']}/")).json()
    assert stopped["status"] == "stopped" and stopped["answers_done"] == 2
    assert stopped["report"]["oracle"]["exact_match"] is None and stopped["report"]["complete"] is False
    again = writer.post(url(f"{body['id']}/continue/"), {}, format="json")
    assert again.status_code == 202
    done = client_for(token("read", golden_set)).get(url(f"{body['id']}/")).json()
    assert done["status"] == "done" and done["answers_done"] == 6 and done["requests"] == 6


@pytest.mark.django_db
def test_bad_fields_are_named_and_nothing_is_made(run, version, generator, token, golden_set):
    writer = client_for(token("write", golden_set))
    error = assert_error(writer.post(url(), {"run_id": 999999, "generator": "nope", "sample_size": 0}, format="json"), 422)
    assert any(p.startswith("run:") for p in error["problems"]) and any(p.startswith("generator:") for p in error["problems"])
    assert any(p.startswith("sample:") for p in error["problems"])
    assert_error(writer.post(url(), {"generator": "local"}, format="json"), 400)
    assert assert_error(start(writer, run, judge="nobody"), 422)["field"] == "judge"
    assert not OracleExperiment.objects.exists()


@pytest.mark.django_db
def test_only_a_manager_starts_or_continues_one(run, version, generator, token, golden_set, adjudicator, manager):
    assert_error(start(client_for(token("read", golden_set)), run), 403)
    assert_error(start(client_for(token("write", owner=adjudicator)), run), 403)
    assert not OracleExperiment.objects.exists()
    experiment = OracleExperiment.objects.create(
        golden_set=golden_set, version=version, run=run, generator=generator, k_final=2, status="stopped", created_by=manager
    )
    assert_error(client_for(token("read", golden_set)).post(url(f"{experiment.pk}/continue/"), {}, format="json"), 403)
    assert_error(client_for(token("write", owner=adjudicator)).post(url(f"{experiment.pk}/continue/"), {}, format="json"), 403)
    # An adjudicator reads it (the API's read role).
    reader = client_for(token("read", owner=adjudicator))
    assert reader.get(url(f"{experiment.pk}/")).status_code == 200
    assert reader.get(url(f"{experiment.pk}/answers/")).status_code == 200


@pytest.mark.django_db
def test_no_one_outside_the_set_sees_its_experiments(run, version, generator, token, golden_set, other_set, annotator, make_user, manager):
    from api.services import api_token_create

    experiment = OracleExperiment.objects.create(
        golden_set=golden_set, version=version, run=run, generator=generator, k_final=2, created_by=manager
    )
    _, stranger = api_token_create(owner=make_user("stranger"), scope="read")
    _, annotators = api_token_create(owner=annotator, scope="read")
    for client in (client_for(token("read", other_set)), client_for(stranger), client_for(annotators)):
        for path in (url(), url(f"{experiment.pk}/"), url(f"{experiment.pk}/answers/")):
            assert_error(client.get(path), 404)
    # A write token of another set starts nothing here: the set is not found.
    assert_error(start(client_for(token("write", other_set)), run), 404)
    assert OracleExperiment.objects.count() == 1
    for path in (url(), url(f"{experiment.pk}/"), url(f"{experiment.pk}/answers/")):
        assert client_for().get(path).status_code == 401
    assert client_for().post(url(), {}, format="json").status_code == 401


@pytest.mark.django_db
def test_an_unknown_experiment_is_a_404(version, token, golden_set):
    reader = client_for(token("read", golden_set))
    assert_error(reader.get(url("999/")), 404)
    assert_error(reader.get(url("999/answers/")), 404)


@pytest.mark.django_db(transaction=True)
def test_a_sweep_job_started_through_the_api_reports_each_k_and_a_bad_k_is_named(answered_version, run, generator, token, golden_set):
    writer = client_for(token("write", golden_set))
    error = assert_error(start(writer, run, k_sweep=[0, 4]), 422)
    assert any(p.startswith("k_sweep: each k from 1 to the version's k_first (10), got 0") for p in error["problems"])
    assert not OracleExperiment.objects.exists()
    made = start(writer, run, k_sweep=[1, 2, 4])
    assert made.status_code == 202, made.content
    assert made.json()["k_sweep"] == [1, 4]  # k_final 2's answers are the experiment's own
    data = client_for(token("read", golden_set)).get(url(f"{made.json()['id']}/")).json()
    assert data["status"] == "done" and [row["k"] for row in data["sweep"]] == [1, 2, 4]
    assert data["answers_total"] == data["answers_done"] == 3 * 4  # oracle once, retrieved at 1, 2 and 4
    assert all(row["exact_match"] is not None and row["tokens"] > 0 for row in data["sweep"])
    answers = client_for(token("read", golden_set)).get(url(f"{made.json()['id']}/answers/"), {"limit": 20}).json()["results"]
    assert sorted({a["sweep_k"] for a in answers}) == [0, 1, 4]
