"""A sweep job: one oracle experiment that answers the retrieved context at several k
(`--k-sweep`), the oracle context once, its requests and budget counted once, resumable;
the sweep page, the command and the start form show accuracy with its interval at each k.
Against the local chat server (tests/answers/conftest.py), a real HTTP server.

On the small set (k_final 1, k_first 2) the chat server answers from the sentence sharing
the most words with the question: at k = 1 the retrieved context answers q1 only (1 of 3 by
exact match), at k = 2 it holds every relevant page (3 of 3)."""

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from answers.experiments import oracle_experiment_continue, oracle_experiment_run, oracle_experiment_submit
from answers.models import GeneratedAnswer, OracleExperiment
from evaluation.models import Run

pytestmark = pytest.mark.django_db(transaction=True)
SLUG = "answers"


def run_command(*args) -> dict:
    out = io.StringIO()
    call_command("oracle_experiment", SLUG, "--run", "bm25", "--generator", "local", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_the_command_answers_the_retrieved_context_at_each_k_and_the_oracle_once(answer_set, generator, chat_server):
    data = json.loads(run_command("--k-sweep", "1,2", "--format", "json"))
    sweep = {row["k"]: row for row in data["sweep"]}
    assert sorted(sweep) == [1, 2]
    assert sweep[1]["exact_match"]["value"] == pytest.approx(1 / 3) and sweep[2]["exact_match"]["value"] == pytest.approx(1.0)
    assert sweep[1]["exact_match"]["n"] == sweep[2]["exact_match"]["n"] == 3
    assert sweep[2]["exact_match"]["low"] < 1.0 == sweep[2]["exact_match"]["high"]  # Wilson's interval of 3 of 3
    assert (sweep[1]["recall"], sweep[2]["recall"]) == (pytest.approx(0.5), pytest.approx(1.0))
    assert sweep[2]["tokens"] == 2 * sweep[1]["tokens"] and sweep[2]["monthly_dollars"] == pytest.approx(2 * sweep[1]["monthly_dollars"])
    # The experiment's own report is still at k_final = 1.
    assert data["retrieved"]["exact_match"] == pytest.approx(1 / 3) and data["oracle"]["exact_match"] == pytest.approx(1.0)
    experiment = OracleExperiment.objects.get(pk=data["experiment"]["id"])
    assert experiment.k_sweep == [2]  # k_final's answers are the experiment's own
    # 4 queries: oracle once, retrieved at 1 and at 2; one request each, counted once.
    assert experiment.requests == 12 and experiment.answers.count() == 12
    assert experiment.answers.filter(context=GeneratedAnswer.Context.ORACLE).count() == 4
    assert all(len(a.context_ids) <= 2 for a in experiment.answers.filter(sweep_k=2))
    assert any(len(a.context_ids) == 2 for a in experiment.answers.filter(sweep_k=2))


def test_the_table_marks_the_cheapest_k_whose_accuracy_meets_the_target(answer_set, generator, chat_server):
    out = run_command("--k-sweep", "1,2")
    lines = out[out.index("the retrieved context at each k") :].splitlines()
    assert lines[3].split()[0] == "2" and "cheapest ≥ 0.80" in lines[3]
    assert "cheapest" not in lines[2]


def test_bad_depths_are_named(answer_set, generator):
    with pytest.raises(CommandError, match=r"k_sweep: each k from 1 to the version's k_first \(2\), got 3"):
        run_command("--k-sweep", "1,3")
    with pytest.raises(CommandError, match="not whole numbers separated by commas"):
        run_command("--k-sweep", "one,two")
    assert not OracleExperiment.objects.exists()


def test_a_sweep_stopped_by_its_budget_continues_and_asks_nothing_twice(answer_set, generator, chat_server, owner):
    made = oracle_experiment_submit(
        golden_set=answer_set,
        version=answer_set.latest_version(),
        run=Run.objects.get(name="bm25"),
        generator=generator,
        k_sweep=[2],
        max_requests=5,
        user=owner,
        send=None,
    )
    stopped = oracle_experiment_run(made.pk)
    assert stopped.status == "stopped" and stopped.requests <= 5 and stopped.answers_done < 12
    oracle_experiment_continue(experiment=stopped, user=owner, send=None)
    done = oracle_experiment_run(made.pk)
    assert done.status == "done" and done.answers_done == 12
    # Every answer asked once: the requests equal the answers, none written twice.
    assert done.requests == 12 and done.answers.count() == 12
    asked = {(a.query_id, a.context, a.sweep_k) for a in done.answers.all()}
    assert len(asked) == 12


def test_the_sweep_page_shows_accuracy_with_its_interval_at_each_k(client, answer_set, generator, judge, owner, chat_server):
    made = oracle_experiment_submit(
        golden_set=answer_set,
        version=answer_set.latest_version(),
        run=Run.objects.get(name="bm25"),
        generator=generator,
        judge=judge,
        k_sweep=[1, 2],
        user=owner,
        send=None,
    )
    experiment = oracle_experiment_run(made.pk)
    assert experiment.status == "done"
    client.force_login(owner)
    body = client.get(reverse("run_sweep", kwargs={"slug": SLUG, "run_id": experiment.run_id})).content.decode()
    words = text_of(body)
    assert f"Answer accuracy at k = 1 experiment {experiment.pk} : 0.333 [" in words
    assert f"Answer accuracy at k = 2 experiment {experiment.pk} : 1.000 [" in words
    assert "Cheapest k with answer accuracy ≥ 0.80 k = 2 : accuracy 1.000" in words
    row = body[body.index('<th scope="row" class="num">2') :]
    row = text_of(row[: row.index("</tr>")])
    assert "1.000 [" in row and "cheapest ≥ 0.80" in row


def test_the_start_form_takes_the_depths_and_names_a_bad_one(client, answer_set, owner, generator, chat_server):
    client.force_login(owner)
    url = reverse("oracle_experiment_start", kwargs={"slug": SLUG})
    run = Run.objects.get(name="bm25")
    response = client.post(url, {"run": run.pk, "generator": generator.pk, "k_sweep": "1, x"})
    assert response.status_code == 200 and not OracleExperiment.objects.exists()
    block = response.content.decode()
    block = block[block.index('name="k_sweep"') :]
    assert "whole numbers separated by commas" in block[: block.index("</div>")]
    response = client.post(url, {"run": run.pk, "generator": generator.pk, "k_sweep": "5"})
    block = response.content.decode()
    block = block[block.index('name="k_sweep"') :]
    assert "each k from 1 to the version&#x27;s k_first (2), got 5" in block[: block.index("</div>")]
    response = client.post(url, {"run": run.pk, "generator": generator.pk, "k_sweep": "1,2"})
    assert response.status_code == 302
    experiment = OracleExperiment.objects.get()
    experiment.refresh_from_db()
    assert experiment.k_sweep == [2] and experiment.status == "done" and experiment.answers_done == 12


def test_the_experiment_page_names_the_sweep_and_each_sweep_answers_k(client, answer_set, generator, owner, chat_server):
    made = oracle_experiment_submit(
        golden_set=answer_set,
        version=answer_set.latest_version(),
        run=Run.objects.get(name="bm25"),
        generator=generator,
        k_sweep=[2],
        user=owner,
        send=None,
    )
    experiment = oracle_experiment_run(made.pk)
    client.force_login(owner)
    words = text_of(client.get(reverse("oracle_experiment", kwargs={"slug": SLUG, "experiment_id": experiment.pk})).content.decode())
    assert "Sweep the retrieved context also at k = 2" in words and "retrieved at k = 2 (the sweep)" in words
