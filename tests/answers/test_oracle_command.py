"""The oracle_experiment command, as checks drive it: the table, the JSON contract, faults named."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db(transaction=True)


def run_command(*args) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("oracle_experiment", *args, stdout=out, stderr=err)
    return out.getvalue()


def test_the_json_holds_each_contexts_means_over_the_queries_with_a_reference(answer_set, generator, chat_server):
    data = json.loads(run_command("answers", "--run", "bm25", "--generator", "local", "--closed-book", "--format", "json"))
    assert data["oracle"]["exact_match"] == pytest.approx(1.0) and data["oracle"]["queries"] == 4
    assert data["retrieved"]["exact_match"] == pytest.approx(1 / 3)
    # Token F1 of the retrieved answers: q1 right (1.0); q2's and q3's "I don't know" share no token (0.0).
    assert data["retrieved"]["token_f1"] == pytest.approx(1 / 3)
    assert 0 <= data["closed_book"]["exact_match"] <= 1 and data["closed_book"]["queries"] == 4
    assert data["retrieval_loss"] == pytest.approx(2 / 3) and data["generation_loss"] == pytest.approx(0.0)
    assert data["accuracy"] == "exact_match" and data["decision"]["row"] == "reranker"
    assert [row["applies"] for row in data["decision"]["rows"]] == [False, True, False]
    assert data["experiment"]["status"] == "done" and data["experiment"]["requests"] == 12
    assert [m["query_id"] for m in data["retrieval_misses"]] == ["q2", "q3"]
    assert [s["slice"] for s in data["slices"]] == ["query:lang=de", "query:lang=en"]


def test_without_closed_book_the_json_has_no_closed_book_and_a_sample_answers_its_queries(answer_set, generator, chat_server):
    data = json.loads(run_command("answers", "--run", "bm25", "--generator", "local", "--sample", "2", "--format", "json"))
    assert "closed_book" not in data
    assert data["oracle"]["queries"] == data["retrieved"]["queries"] == 2


def test_the_table_names_each_context_the_losses_and_the_row_that_applies(answer_set, generator, chat_server):
    out = run_command("answers", "--run", "bm25", "--generator", "local")
    assert "oracle" in out and "retrieved" in out
    assert "by exact_match: retrieval loss 0.667" in out
    assert "=> recall@k_first high, recall@k_final < 0.80" in out
    assert "q2: missing d2" in out


def test_a_budget_that_runs_out_says_so_and_shows_no_partial_figure(answer_set, generator, chat_server):
    data = json.loads(run_command("answers", "--run", "bm25", "--generator", "local", "--max-requests", "3", "--format", "json"))
    assert data["experiment"]["status"] == "stopped" and "budget is spent" in data["experiment"]["note"]
    assert data["oracle"]["exact_match"] is None and data["retrieved"]["exact_match"] is None
    assert data["oracle"]["progress"].endswith("of 4 answered") and not data["complete"]


def test_unknown_names_and_bad_values_are_named(answer_set, generator):
    with pytest.raises(CommandError, match="--run: golden set 'answers' has no run 'nope'"):
        run_command("answers", "--run", "nope", "--generator", "local")
    with pytest.raises(CommandError, match="no version 9"):
        run_command("answers", "--run", "bm25", "--generator", "local", "--version", "9")
    with pytest.raises(CommandError, match="--budget: 'lots' is not a number"):
        run_command("answers", "--run", "bm25", "--generator", "local", "--budget", "lots")
    with pytest.raises(CommandError, match="sample: from 1"):
        run_command("answers", "--run", "bm25", "--generator", "local", "--sample", "0")


def test_an_endpoints_latest_night_is_the_run_when_an_endpoint_is_named(answer_set, generator, chat_server):
    from django.utils import timezone

    from evaluation.models import Run
    from monitoring.models import Endpoint

    call_command(
        "endpoint_add", "answers", "--name", "prod", "--system", "prod", "--stage", "reranked", "--preset", "goldset",
        "--url", "http://127.0.0.1:9/goldset", stdout=io.StringIO(),
    )  # fmt: skip
    with pytest.raises(CommandError, match="--endpoint: endpoint 'prod' has no night yet"):
        run_command("answers", "--endpoint", "prod", "--generator", "local")
    with pytest.raises(CommandError, match="--endpoint: golden set 'answers' has no endpoint 'nope'"):
        run_command("answers", "--endpoint", "nope", "--generator", "local")
    series = Endpoint.objects.get(name="prod").series
    Run.objects.filter(name="bm25").update(series=series, measured_at=timezone.now())
    data = json.loads(run_command("answers", "--endpoint", "prod", "--generator", "local", "--format", "json"))
    assert data["retrieved"]["exact_match"] == pytest.approx(1 / 3) and data["retrieval_loss"] == pytest.approx(2 / 3)


def test_an_experiment_at_another_k_final_and_context_budget_records_them_and_bad_ones_are_named(answer_set, generator, chat_server):
    from answers.models import OracleExperiment

    data = json.loads(
        run_command("answers", "--run", "bm25", "--generator", "local", "--k-final", "2", "--context-budget", "50", "--format", "json")
    )
    experiment = OracleExperiment.objects.get(pk=data["experiment"]["id"])
    assert (experiment.k_final, experiment.context_token_budget) == (2, 50)
    assert all(len(answer.context_ids) <= 2 for answer in experiment.answers.all())
    with pytest.raises(CommandError, match=r"k_final: pages in the retrieved context, from 1 to the version's k_first \(2\), got 3"):
        run_command("answers", "--run", "bm25", "--generator", "local", "--k-final", "3")
    with pytest.raises(CommandError, match="context_token_budget: at least 1 token"):
        run_command("answers", "--run", "bm25", "--generator", "local", "--context-budget", "0")
