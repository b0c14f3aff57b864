"""The oracle experiment's job against a real local chat server: answers per context, scored
at write, counted, resumable, bounded by its budget, and nothing asked or scored twice."""

from decimal import Decimal

import pytest

from answers.experiments import oracle_experiment_continue, oracle_experiment_run, oracle_experiment_submit
from answers.models import GeneratedAnswer, OracleExperiment
from answers.report import experiment_report
from evaluation.models import Run
from lib.errors import GoldsetError

pytestmark = pytest.mark.django_db(transaction=True)


def submit(answer_set, generator, owner, **options) -> OracleExperiment:
    return oracle_experiment_submit(
        golden_set=answer_set,
        version=answer_set.latest_version(),
        run=Run.objects.get(golden_set=answer_set, name="bm25"),
        generator=generator,
        user=owner,
        send=None,
        **options,
    )


def answers_of(experiment) -> dict[tuple[str, str], GeneratedAnswer]:
    return {(a.query.query_id, a.context): a for a in experiment.answers.select_related("query")}


def test_each_query_is_answered_with_each_context_and_scored_at_write(answer_set, generator, owner, chat_server):
    experiment = oracle_experiment_run(submit(answer_set, generator, owner, closed_book=True).pk)
    assert experiment.status == "done"
    assert (experiment.queries_total, experiment.answers_total, experiment.answers_done, experiment.answers_failed) == (4, 12, 12, 0)
    answers = answers_of(experiment)
    # One request each; the tokens are the sums of the answers' (the server counts words).
    assert experiment.requests == 12 and len(chat_server.requests) == 12
    assert experiment.prompt_tokens == sum(a.prompt_tokens for a in answers.values()) > 0
    assert experiment.completion_tokens == sum(a.completion_tokens for a in answers.values()) > 0
    assert answers[("q1", "oracle")].context_ids == ["d1"] and answers[("q1", "oracle")].exact_match == 1.0  # an alias matches
    assert answers[("q2", "retrieved")].context_ids == ["d5"] and answers[("q2", "retrieved")].exact_match == 0.0
    assert answers[("q2", "retrieved")].text == "I don't know"  # no word of the question in d5
    assert answers[("q4", "oracle")].exact_match is None  # no reference answer
    assert answers[("q3", "closed_book")].context_ids == [] and answers[("q3", "closed_book")].text == "I don't know"
    # ceil(len("The capital of France is Paris.") / 4) = ceil(31 / 4) = 8 tokens.
    assert answers[("q1", "oracle")].context_tokens == 8
    assert len({a.prompt_hash for a in answers.values()}) == 1 and generator.prompt_hash in {a.prompt_hash for a in answers.values()}
    report = experiment_report(experiment)
    assert report.overall.contexts["oracle"].exact_match.value == pytest.approx(1.0)
    assert report.overall.contexts["retrieved"].exact_match.value == pytest.approx(1 / 3)
    assert report.loss("exact_match").retrieval.value == pytest.approx(2 / 3)
    assert report.loss("exact_match").generation.value == pytest.approx(0.0)
    assert [m.query_id for m in report.retrieval_misses] == ["q2", "q3"]
    assert [m.missing_pages for m in report.retrieval_misses] == [["d2"], ["d3"]]
    # From the run's Score rows: recall@2 = 1.0 (every relevant page in the top 2); recall@1 =
    # 2/4 (q1's d1 and q4's d4 at rank 1, q2's and q3's at rank 2).
    assert report.decision.recall_first == pytest.approx(1.0)
    assert report.decision.recall_final == pytest.approx(0.5)
    assert report.decision.row == "reranker"


def test_a_sample_is_drawn_with_its_seed_and_the_same_seed_draws_the_same_queries(answer_set, generator, owner):
    first = oracle_experiment_run(submit(answer_set, generator, owner, sample_size=2, seed=7).pk)
    second = oracle_experiment_run(submit(answer_set, generator, owner, sample_size=2, seed=7).pk)
    drawn = {a.query_id for a in first.answers.all()}
    assert len(drawn) == 2 and drawn == {a.query_id for a in second.answers.all()}
    assert first.queries_total == 2 and first.answers_total == 4


def test_a_generator_answering_500_is_recorded_and_a_continue_asks_only_what_failed(answer_set, generator, owner, chat_server):
    generator.max_in_flight = 1  # one request at a time: the first answer takes both 500s
    generator.save()
    chat_server.fail_next(2, status=500)
    experiment = oracle_experiment_run(submit(answer_set, generator, owner).pk)
    assert (experiment.status, experiment.answers_done, experiment.answers_failed) == ("done", 7, 1)
    failed = experiment.answers.exclude(error="").get()
    assert "500" in failed.error and failed.requests == 2 and failed.exact_match is None  # the first try and one retry
    report = experiment_report(experiment)
    figures = report.overall.contexts[failed.context]
    assert figures.progress == "3 of 4 answered" and figures.exact_match is None
    assert report.loss("exact_match").retrieval is None and not report.complete
    asked = len(chat_server.requests)
    experiment = oracle_experiment_run(oracle_experiment_continue(experiment=experiment, user=owner, send=None).pk)
    assert len(chat_server.requests) == asked + 1  # only the failed answer was asked again
    # 7 + 2 requests at first (the failed answer's try and retry stay counted), then 1.
    assert (experiment.status, experiment.answers_done, experiment.answers_failed, experiment.requests) == ("done", 8, 0, 10)
    assert experiment.answers.count() == 8
    assert experiment_report(experiment).overall.contexts["retrieved"].exact_match.value == pytest.approx(1 / 3)


def test_a_429_with_retry_after_is_tried_again_and_counted(answer_set, generator, owner, chat_server):
    generator.retries = 3  # more than the 429s, so that none fails for good
    generator.save()
    chat_server.fail_next(3, status=429, retry_after=0)
    experiment = oracle_experiment_run(submit(answer_set, generator, owner).pk)
    assert (experiment.answers_done, experiment.answers_failed) == (8, 0)
    assert experiment.requests == sum(a.requests for a in experiment.answers.all()) == 11


def test_garbage_from_the_generator_is_a_failed_answer_kept_with_its_raw_text(answer_set, generator, owner, chat_server):
    generator.retries = 0
    generator.save()
    chat_server.garbage_next(100)
    experiment = oracle_experiment_run(submit(answer_set, generator, owner).pk)
    assert (experiment.status, experiment.answers_done, experiment.answers_failed) == ("done", 0, 8)
    answer = experiment.answers.first()
    assert "not a chat completion" in answer.error and "upstream hiccup" in answer.raw
    report = experiment_report(experiment)
    assert report.overall.contexts["oracle"].progress == "0 of 4 answered" and not report.complete


def test_an_empty_answer_is_a_failed_one(answer_set, generator, owner, chat_server):
    chat_server.content = "   "
    experiment = oracle_experiment_run(submit(answer_set, generator, owner).pk)
    assert experiment.answers_failed == 8 and experiment.answers.first().error == "the answer is empty"


def test_a_generator_that_is_down_fails_each_answer_and_a_continue_once_it_is_up_answers_them(answer_set, generator, owner, chat_server):
    generator.retries = 0
    generator.save()
    chat_server.down()
    experiment = oracle_experiment_run(submit(answer_set, generator, owner).pk)
    assert (experiment.status, experiment.answers_done, experiment.answers_failed) == ("done", 0, 8)
    assert all(a.error for a in experiment.answers.all()) and chat_server.requests == []
    chat_server.up()
    experiment = oracle_experiment_run(oracle_experiment_continue(experiment=experiment, user=owner, send=None).pk)
    assert (experiment.answers_done, experiment.answers_failed, len(chat_server.requests)) == (8, 0, 8)


def test_a_slow_generator_times_out_and_the_answer_is_failed(answer_set, generator, owner, chat_server):
    generator.timeout_seconds, generator.retries = 0.3, 0
    generator.save()
    chat_server.slow = 2.0
    experiment = oracle_experiment_run(submit(answer_set, generator, owner, sample_size=1).pk)
    assert (experiment.answers_done, experiment.answers_failed) == (0, 2)
    assert "no answer within 0.3 s" in experiment.answers.first().error


def test_a_request_budget_stops_half_way_and_continuing_answers_the_rest_once(answer_set, generator, owner, chat_server):
    experiment = oracle_experiment_run(submit(answer_set, generator, owner, max_requests=3).pk)
    assert experiment.status == "stopped" and experiment.requests == 3 and experiment.answers.count() == 3
    assert "budget is spent (3 of 3 requests)" in experiment.progress_note
    report = experiment_report(experiment)
    assert not report.complete
    assert {c.answered for c in report.overall.contexts.values()} <= {1, 2}
    assert all(c.exact_match is None for c in report.overall.contexts.values())
    scored = {(a.query_id, a.context): (a.pk, a.exact_match) for a in experiment.answers.all()}
    experiment = oracle_experiment_run(oracle_experiment_continue(experiment=experiment, user=owner, send=None).pk)
    assert (experiment.status, experiment.requests, experiment.answers.count()) == ("done", 8, 8)
    assert len(chat_server.requests) == 8
    # What the first run scored stands as it was: the same rows.
    assert {
        k: v
        for k, v in ((a.query_id, a.context) and ((a.query_id, a.context), (a.pk, a.exact_match)) for a in experiment.answers.all())
        if k in scored
    } == scored
    assert experiment_report(experiment).complete


def test_a_dollar_budget_stops_at_it_and_a_larger_one_continues(answer_set, generator, owner, chat_server):
    generator.price_in, generator.max_in_flight = Decimal(1000), 1  # $0.001 a prompt token
    generator.save()
    experiment = oracle_experiment_run(submit(answer_set, generator, owner, budget_dollars=Decimal("0.1")).pk)
    answered = experiment.answers.count()
    assert experiment.status == "stopped" and 0 < answered < 8 and experiment.requests == answered
    # The cost is the prompt tokens' at $1,000 a million, and the block before the stop was
    # sized by the cost of a request so far: at most one request's worth past the budget.
    assert experiment.cost == Decimal(experiment.prompt_tokens) / 1000
    assert experiment.cost <= Decimal("0.1") + max(Decimal(a.prompt_tokens) / 1000 for a in experiment.answers.all())
    assert "budget is spent" in experiment.progress_note
    experiment = oracle_experiment_run(
        oracle_experiment_continue(experiment=experiment, budget_dollars=Decimal("10"), user=owner, send=None).pk
    )
    assert experiment.status == "done" and experiment.answers.count() == 8 and len(chat_server.requests) == 8


def test_a_running_experiment_is_not_continued(answer_set, generator, owner):
    experiment = submit(answer_set, generator, owner)
    with pytest.raises(GoldsetError, match="is queued"):
        oracle_experiment_continue(experiment=experiment, user=owner, send=None)


def test_every_bad_field_is_named_and_nothing_is_written(answer_set, generator, owner, make_user):
    from answers.models import Generator
    from tests.support import factories

    other = factories.golden_set("other")
    with pytest.raises(GoldsetError) as caught:
        oracle_experiment_submit(
            golden_set=answer_set,
            version=None,
            run=None,
            generator=Generator.objects.create(golden_set=other, name="theirs"),
            sample_size=0,
            seed=-1,
            budget_dollars=Decimal("-1"),
            max_requests=0,
            user=owner,
            send=None,
        )
    problems = " | ".join(caught.value.problems)
    for field in ("version:", "run:", "generator:", "sample:", "seed:", "budget:", "max_requests:"):
        assert field in problems
    with pytest.raises(GoldsetError, match="budget: the generator 'local' has no prices"):
        submit(answer_set, generator, owner, budget_dollars=Decimal("1"))
    assert OracleExperiment.objects.count() == 0
