"""The oracle experiment's job against a real local chat server: answers per context, scored
at write, counted, resumable, bounded by its budget, and nothing asked or scored twice."""

from decimal import Decimal

import pytest

from answers.experiments import oracle_experiment_continue, oracle_experiment_run, oracle_experiment_submit
from answers.models import GeneratedAnswer, OracleExperiment
from answers.report import experiment_report
from evaluation.models import Run
from lib.errors import GoldsetError
from tests.answers.conftest import answer_of
from tests.labeling.model_labels.chat_server import Reply

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
    # One request each, 100 prompt and 10 completion tokens each (the server's usage).
    assert (experiment.requests, experiment.prompt_tokens, experiment.completion_tokens) == (12, 1200, 120)
    answers = answers_of(experiment)
    assert answers[("q1", "oracle")].context_ids == ["d1"] and answers[("q1", "oracle")].exact_match == 1.0  # an alias matches
    assert answers[("q2", "retrieved")].context_ids == ["d5"] and answers[("q2", "retrieved")].exact_match == 0.0
    assert answers[("q2", "retrieved")].text == "I do not know."  # no word of the question in d5
    assert answers[("q4", "oracle")].exact_match is None  # no reference answer
    assert answers[("q3", "closed_book")].context_ids == [] and answers[("q3", "closed_book")].text == "I do not know."
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
    # recall@2 = 1.0 (every relevant page in the top 2), recall@1 = 1/4 (q1 and q4 found, of 4 averaged... ) read from the Score rows.
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
    broken = "Who wrote Hamlet?\n---\nBananas are a yellow fruit."
    chat_server.reply = lambda seen, attempt: Reply(status=500) if seen.prompt == broken else Reply(content=answer_of(seen.prompt))
    experiment = oracle_experiment_run(submit(answer_set, generator, owner).pk)
    assert (experiment.status, experiment.answers_done, experiment.answers_failed) == ("done", 7, 1)
    failed = answers_of(experiment)[("q2", "retrieved")]
    assert "500" in failed.error and failed.requests == 2 and failed.exact_match is None  # the first try and one retry
    report = experiment_report(experiment)
    assert report.overall.contexts["retrieved"].progress == "3 of 4 answered"
    assert report.overall.contexts["retrieved"].exact_match is None and report.loss("exact_match").retrieval is None
    asked = len(chat_server.seen)
    chat_server.reply = lambda seen, attempt: Reply(content=answer_of(seen.prompt))
    experiment = oracle_experiment_run(oracle_experiment_continue(experiment=experiment, user=owner, send=None).pk)
    assert len(chat_server.seen) == asked + 1  # only the failed answer was asked again
    # 7 + 2 requests at first (the failed answer's try and retry stay counted), then 1.
    assert (experiment.status, experiment.answers_done, experiment.answers_failed, experiment.requests) == ("done", 8, 0, 10)
    assert experiment.answers.count() == 8
    assert experiment_report(experiment).overall.contexts["retrieved"].exact_match.value == pytest.approx(1 / 3)


def test_a_429_with_retry_after_is_tried_again_and_counted(answer_set, generator, owner, chat_server):
    chat_server.reply = lambda seen, attempt: (
        Reply(status=429, headers={"Retry-After": "0"}) if attempt == 1 else Reply(content=answer_of(seen.prompt))
    )
    experiment = oracle_experiment_run(submit(answer_set, generator, owner).pk)
    # Seven distinct prompts (q4's two contexts are the same page): each answered at its second try.
    assert (experiment.answers_done, experiment.answers_failed) == (8, 0)
    assert experiment.requests == sum(a.requests for a in experiment.answers.all()) and experiment.requests > 8


def test_garbage_from_the_generator_is_a_failed_answer_kept_with_its_raw_text(answer_set, generator, owner, chat_server):
    chat_server.reply = lambda seen, attempt: Reply(body="<html>not json</html>")
    experiment = oracle_experiment_run(submit(answer_set, generator, owner).pk)
    assert (experiment.status, experiment.answers_done, experiment.answers_failed) == ("done", 0, 8)
    answer = experiment.answers.first()
    assert "not a chat completion" in answer.error and "not json" in answer.raw
    report = experiment_report(experiment)
    assert report.overall.contexts["oracle"].progress == "0 of 4 answered" and not report.complete


def test_an_empty_answer_is_a_failed_one(answer_set, generator, owner, chat_server):
    chat_server.reply = lambda seen, attempt: Reply(content="   ")
    experiment = oracle_experiment_run(submit(answer_set, generator, owner).pk)
    assert experiment.answers_failed == 8 and experiment.answers.first().error == "the generator answered nothing"


def test_a_generator_that_is_down_fails_each_answer_and_sends_nothing_twice(answer_set, generator, owner, chat_server):
    chat_server.stop()
    experiment = oracle_experiment_run(submit(answer_set, generator, owner).pk)
    assert (experiment.status, experiment.answers_done, experiment.answers_failed) == ("done", 0, 8)
    assert all(a.error for a in experiment.answers.all())


def test_a_slow_generator_times_out_and_the_answer_is_failed(answer_set, generator, owner, chat_server):
    generator.timeout_seconds, generator.retries = 0.3, 0
    generator.save()
    chat_server.reply = lambda seen, attempt: Reply(content="late", delay=2.0)
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
    assert len(chat_server.seen) == 8
    # What the first run scored stands as it was: the same rows.
    assert {
        k: v
        for k, v in ((a.query_id, a.context) and ((a.query_id, a.context), (a.pk, a.exact_match)) for a in experiment.answers.all())
        if k in scored
    } == scored
    assert experiment_report(experiment).complete


def test_a_dollar_budget_stops_before_passing_it(answer_set, generator, owner, chat_server):
    generator.price_in, generator.max_in_flight = Decimal(1000), 1  # 100 prompt tokens a request: $0.10
    generator.save()
    experiment = oracle_experiment_run(submit(answer_set, generator, owner, budget_dollars=Decimal("0.25")).pk)
    assert experiment.status == "stopped" and experiment.cost == Decimal("0.2") and experiment.requests == 2
    experiment = oracle_experiment_run(
        oracle_experiment_continue(experiment=experiment, budget_dollars=Decimal("1"), user=owner, send=None).pk
    )
    assert experiment.status == "done" and experiment.cost == Decimal("0.8") and experiment.answers.count() == 8


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
