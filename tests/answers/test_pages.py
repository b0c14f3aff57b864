"""The answers pages: who may open each (anonymous, annotator, adjudicator, manager, a
stranger; another set's objects are 404), what they show, and what their forms write.
Experiments run in-process against the local chat server (tests/answers/conftest.py), a
real HTTP server, through the same runner the worker uses."""

import re

import pytest
from django.urls import reverse

from answers.experiments import oracle_experiment_run, oracle_experiment_submit
from answers.models import AnswerGrade, AnswerJudge, GeneratedAnswer, Generator, OracleExperiment
from evaluation.models import Run
from goldenset.models import Membership
from goldenset.services import membership_grant
from tests.support import factories

pytestmark = pytest.mark.django_db(transaction=True)
SLUG = "answers"


@pytest.fixture
def people(answer_set, make_user):
    adjudicator, annotator = make_user("adjudicator"), make_user("annotator")
    membership_grant(user=adjudicator, golden_set=answer_set, role=Membership.Role.ADJUDICATOR)
    membership_grant(user=annotator, golden_set=answer_set, role=Membership.Role.ANNOTATOR)
    return {"adjudicator": adjudicator, "annotator": annotator}


def bm25(answer_set) -> Run:
    return Run.objects.get(golden_set=answer_set, name="bm25")


@pytest.fixture
def experiment(answer_set, generator, judge, owner) -> OracleExperiment:
    """The small set's experiment, answered and graded to the end (k_final 1: oracle 3 of 3
    right by exact match, retrieved 1 of 3; q2 and q3 lost by retrieval)."""
    made = oracle_experiment_submit(
        golden_set=answer_set,
        version=answer_set.latest_version(),
        run=bm25(answer_set),
        generator=generator,
        judge=judge,
        user=owner,
        send=None,
    )
    return oracle_experiment_run(made.pk)


def read_urls(experiment) -> list[str]:
    kwargs = {"slug": SLUG}
    return [
        reverse("generators", kwargs=kwargs),
        reverse("oracle_experiments", kwargs=kwargs),
        reverse("oracle_experiment", kwargs={**kwargs, "experiment_id": experiment.pk}),
        reverse("oracle_experiment_status", kwargs={**kwargs, "experiment_id": experiment.pk}),
        reverse("run_sweep", kwargs={**kwargs, "run_id": experiment.run_id}),
    ]


def manager_urls() -> list[str]:
    names = ("generator_add", "generator_endpoint_add", "answer_judge_add", "oracle_experiment_start")
    return [reverse(name, kwargs={"slug": SLUG}) for name in names]


def text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


# --- permissions ---------------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_log_in_from_every_page(client, experiment):
    for url in read_urls(experiment) + manager_urls():
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url


def test_strangers_and_annotators_get_not_found_everywhere(client, experiment, stranger, people):
    for user in (stranger, people["annotator"]):
        client.force_login(user)
        for url in read_urls(experiment) + manager_urls():
            assert client.get(url).status_code == 404, (user.username, url)


def test_an_adjudicator_reads_and_grades_but_adds_and_starts_nothing(client, experiment, people):
    client.force_login(people["adjudicator"])
    for url in read_urls(experiment):
        assert client.get(url).status_code == 200, url
    for url in manager_urls():
        assert client.get(url).status_code == 404, url
    body = client.get(reverse("generators", kwargs={"slug": SLUG})).content.decode()
    assert "Add a generator" not in body and "Add an answer judge" not in body
    assert "Start an experiment" not in client.get(reverse("oracle_experiments", kwargs={"slug": SLUG})).content.decode()
    before = Generator.objects.count()
    client.post(reverse("generator_add", kwargs={"slug": SLUG}), {"name": "sneaky", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    assert Generator.objects.count() == before


def test_managers_and_staff_open_every_page(client, experiment, owner, make_user):
    for user in (owner, make_user("staff", is_staff=True)):
        client.force_login(user)
        for url in read_urls(experiment) + manager_urls():
            assert client.get(url).status_code == 200, (user.username, url)


def test_another_sets_experiments_runs_and_answers_are_not_found(client, experiment, make_user):
    other_manager = make_user("other")
    factories.golden_set("other", manager=other_manager)
    client.force_login(other_manager)
    answer = experiment.answers.first()
    for url in [
        reverse("oracle_experiment", kwargs={"slug": "other", "experiment_id": experiment.pk}),
        reverse("oracle_experiment_status", kwargs={"slug": "other", "experiment_id": experiment.pk}),
        reverse("run_sweep", kwargs={"slug": "other", "run_id": experiment.run_id}),
    ]:
        assert client.get(url).status_code == 404, url
    grade = reverse("answer_grade", kwargs={"slug": "other", "experiment_id": experiment.pk, "answer_id": answer.pk})
    assert client.post(grade, {"grade": "correct", "supported": "yes"}).status_code == 404
    continued = reverse("oracle_experiment_continue", kwargs={"slug": "other", "experiment_id": experiment.pk})
    assert client.post(continued).status_code == 404
    assert not AnswerGrade.objects.filter(source=AnswerGrade.Source.HUMAN).exists()


def test_the_posts_refuse_get_and_anonymous_visitors(client, experiment):
    answer = experiment.answers.first()
    grade = reverse("answer_grade", kwargs={"slug": SLUG, "experiment_id": experiment.pk, "answer_id": answer.pk})
    continued = reverse("oracle_experiment_continue", kwargs={"slug": SLUG, "experiment_id": experiment.pk})
    for url in (grade, continued):
        response = client.post(url, {"grade": "correct", "supported": "yes"})
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert not AnswerGrade.objects.filter(source=AnswerGrade.Source.HUMAN).exists()


# --- generators and judges -----------------------------------------------------------------


def test_a_manager_adds_a_generator_and_its_key_is_never_shown(client, answer_set, owner, chat_server, monkeypatch):
    monkeypatch.setenv("JUDGE_TEAM_KEY", "sk-very-secret-value")
    client.force_login(owner)
    url = reverse("generator_add", kwargs={"slug": SLUG})
    assert "{{question}}" in client.get(url).content.decode()  # the default prompt is offered
    fields = {
        "name": "hosted",
        "base_url": chat_server.base_url,
        "model": "tiny",
        "prompt": "Q: {{question}}\nC: {{context}}",
        "temperature": "0",
        "api_key_env": "JUDGE_TEAM_KEY",
        "max_in_flight": "2",
        "price_in": "0.5",
        "price_out": "1.5",
    }
    response = client.post(url, fields)
    assert response.status_code == 302 and response["Location"] == reverse("generators", kwargs={"slug": SLUG})
    generator = Generator.objects.get(golden_set=answer_set, name="hosted")
    assert generator.api_key_env == "JUDGE_TEAM_KEY" and generator.prompt_hash
    body = client.get(reverse("generators", kwargs={"slug": SLUG})).content.decode()
    assert "<code>hosted</code>" in body and "JUDGE_TEAM_KEY" in body and "sk-very-secret-value" not in body


def test_a_bad_generator_is_refused_beside_its_fields_and_nothing_is_written(client, answer_set, owner):
    client.force_login(owner)
    fields = {
        "name": "bad",
        "base_url": "ftp://example.com/v1",
        "model": "m",
        "prompt": "no slots",
        "temperature": "0",
        "max_in_flight": "2",
    }
    response = client.post(reverse("generator_add", kwargs={"slug": SLUG}), {**fields, "api_key_env": "DATABASE_URL"})
    assert response.status_code == 200
    body = response.content.decode()
    for field in ("base_url", "prompt", "api_key_env"):
        block = body[body.index(f'name="{field}"') :]
        assert 'class="errorlist' in block[: block.index("</div>")], field
    assert not Generator.objects.filter(name="bad").exists()


def test_a_manager_adds_the_teams_own_answer_endpoint_and_it_answers_through_it(client, answer_set, owner, chat_server):
    from answers.generation import AnswerRequest, ContextPassage, generate_answers

    client.force_login(owner)
    url = reverse("generator_endpoint_add", kwargs={"slug": SLUG})
    assert "{{context}}" in client.get(url).content.decode()  # the body template is offered
    fields = {
        "name": "own-rag",
        "url": chat_server.answer_url,
        "body_template": '{"question": {{query}}, "passages": {{context}}}',
        "answer_path": "data.answer",
        "headers": "X-Team: search\n",
        "max_in_flight": "2",
    }
    response = client.post(url, fields)
    assert response.status_code == 302, response.content.decode()[:2000]
    generator = Generator.objects.get(golden_set=answer_set, name="own-rag")
    assert generator.kind == Generator.Kind.ENDPOINT and generator.answer_path == "data.answer"
    assert generator.request["headers"] == [["X-Team", "search"]]
    passage = ContextPassage("d1", "Our VPN password is reset in the portal. Nothing else here.")
    [answer] = generate_answers(generator, [AnswerRequest("k", "How is the VPN password reset?", (passage,))])
    assert answer.error is None and answer.text == "Our VPN password is reset in the portal."


def test_a_bad_answer_endpoint_is_refused_beside_its_fields_and_nothing_is_written(client, answer_set, owner):
    client.force_login(owner)
    fields = {"name": "bad", "url": "ftp://example.com/answer", "body_template": "{}", "answer_path": "data.answer", "headers": "no colon"}
    response = client.post(reverse("generator_endpoint_add", kwargs={"slug": SLUG}), {**fields, "max_in_flight": "2"})
    assert response.status_code == 200
    body = response.content.decode()
    block = body[body.index('name="headers"') :]
    assert "line 1: &#x27;no colon&#x27; is not &#x27;Name: value&#x27;" in block[: block.index("</div>")]
    assert not Generator.objects.filter(name="bad").exists()
    response = client.post(reverse("generator_endpoint_add", kwargs={"slug": SLUG}), {**fields, "headers": "", "max_in_flight": "2"})
    assert response.status_code == 200 and 'class="errorlist' in response.content.decode()
    assert not Generator.objects.filter(name="bad").exists()


def test_a_manager_adds_an_answer_judge_and_a_taken_name_is_refused(client, answer_set, owner, chat_server, judge):
    client.force_login(owner)
    url = reverse("answer_judge_add", kwargs={"slug": SLUG})
    body = client.get(url).content.decode()
    assert "{{reference}}" in body
    rubric = "Question {{question}} reference {{reference}} answer {{answer}} context {{context}}: grade: and supported: lines."
    fields = {"name": "second", "base_url": chat_server.base_url, "model": "judge", "rubric": rubric, "max_in_flight": "1"}
    assert client.post(url, fields).status_code == 302
    assert AnswerJudge.objects.filter(golden_set=answer_set, name="second").exists()
    response = client.post(url, {**fields, "name": "grader"})
    assert response.status_code == 200 and "already" in response.content.decode()
    assert AnswerJudge.objects.filter(golden_set=answer_set).count() == 2


# --- experiments ---------------------------------------------------------------------------


def test_the_start_form_shows_the_interval_a_sample_buys_and_starts_the_job(client, answer_set, owner, generator, chat_server):
    client.force_login(owner)
    url = reverse("oracle_experiment_start", kwargs={"slug": SLUG})
    body = client.get(url).content.decode()
    # 4 queries: the widest 95% Wilson interval at 2 of 4 is 0.150 to 0.850.
    assert "What a sample buys" in text_of(body) and "± 35.0 points" in body
    response = client.post(url, {"run": bm25(answer_set).pk, "generator": generator.pk, "sample_size": "", "budget_dollars": ""})
    experiment = OracleExperiment.objects.get(golden_set=answer_set)
    assert response.status_code == 302
    assert response["Location"] == reverse("oracle_experiment", kwargs={"slug": SLUG, "experiment_id": experiment.pk})
    # The task was sent on commit and ran inline (no broker in tests) against the chat server.
    experiment.refresh_from_db()
    assert experiment.status == "done" and experiment.answers_done == 8


def test_a_bad_start_names_its_field_and_records_nothing(client, answer_set, owner, generator):
    client.force_login(owner)
    url = reverse("oracle_experiment_start", kwargs={"slug": SLUG})
    response = client.post(url, {"run": bm25(answer_set).pk, "generator": generator.pk, "budget_dollars": "2"})
    assert response.status_code == 200
    body = response.content.decode()
    block = body[body.index('name="budget_dollars"') :]
    assert "has no prices" in block[: block.index("</div>")]
    other = factories.golden_set("elsewhere", manager=owner)
    foreign = factories.run(other, "foreign", {"q1": ["d1"]})
    response = client.post(url, {"run": foreign.pk, "generator": generator.pk})
    assert "Select a valid choice" in response.content.decode()
    assert not OracleExperiment.objects.exists()


def test_the_experiment_page_fills_the_seeds_table_and_highlights_the_row_that_applies(client, experiment, owner):
    client.force_login(owner)
    body = client.get(reverse("oracle_experiment", kwargs={"slug": SLUG, "experiment_id": experiment.pk})).content.decode()
    table = body[body.index('class="grid decision"') :]
    table = table[: table.index("</table>")]
    applies = re.findall(r'<tr class="applies">(.*?)</tr>', table, re.S)
    assert len(applies) == 1 and "Better reranker or larger k_final" in applies[0]
    assert "recall@1 = 0.500" in text_of(table) and "recall@2 = 1.000" in text_of(table)
    words = text_of(body)
    # Oracle 3 of 3 exact, retrieved 1 of 3; retrieval loss 2/3, generation loss 0.
    assert "retrieval loss 0.667" in words and "generation loss 0.000" in words
    assert "4 of 4 answered" in words


def test_the_queries_retrieval_lost_link_to_their_drill_down(client, experiment, owner):
    client.force_login(owner)
    body = client.get(reverse("oracle_experiment", kwargs={"slug": SLUG, "experiment_id": experiment.pk})).content.decode()
    misses = body[body.index('id="misses"') : body.index('id="agreement"')]
    for query_id, page in (("q2", "d2"), ("q3", "d3")):
        link = reverse("run_query", kwargs={"slug": SLUG, "run_id": experiment.run_id, "query_id": query_id}) + "?version=1"
        assert f'href="{link}"' in misses and f"<code>{page}</code>" in misses
        assert client.get(link).status_code == 200
    assert "q1" not in text_of(misses)


def test_a_running_experiment_polls_and_shows_no_partial_figure_as_whole(client, answer_set, generator, owner):
    experiment = oracle_experiment_submit(
        golden_set=answer_set,
        version=answer_set.latest_version(),
        run=bm25(answer_set),
        generator=generator,
        user=owner,
        send=None,
        max_requests=3,
    )
    status = reverse("oracle_experiment_status", kwargs={"slug": SLUG, "experiment_id": experiment.pk})
    client.force_login(owner)
    assert 'hx-trigger="every 2s"' in client.get(status).content.decode()
    stopped = oracle_experiment_run(experiment.pk)
    assert stopped.status == "stopped"
    body = client.get(reverse("oracle_experiment", kwargs={"slug": SLUG, "experiment_id": experiment.pk})).content.decode()
    words = text_of(body)
    assert "hx-trigger" not in body and "Requests 3 of at most 3" in words
    assert "Not every answer is in" in words and "of 4 answered" in words and "retrieval loss –" in words
    # A manager continues it: queued again, then (inline) answered to the end.
    response = client.post(reverse("oracle_experiment_continue", kwargs={"slug": SLUG, "experiment_id": experiment.pk}), {})
    assert response.status_code == 302
    experiment.refresh_from_db()
    assert experiment.status == "done" and experiment.answers_done == 8


def test_the_status_fragment_reloads_the_page_when_the_job_has_ended(client, experiment, owner):
    client.force_login(owner)
    status = reverse("oracle_experiment_status", kwargs={"slug": SLUG, "experiment_id": experiment.pk})
    response = client.get(status, headers={"HX-Request": "true"})
    assert response["HX-Refresh"] == "true"
    assert "HX-Refresh" not in client.get(status)


def test_an_adjudicator_cannot_continue_an_experiment(client, answer_set, generator, owner, people):
    experiment = oracle_experiment_submit(
        golden_set=answer_set,
        version=answer_set.latest_version(),
        run=bm25(answer_set),
        generator=generator,
        user=owner,
        send=None,
        max_requests=1,
    )
    oracle_experiment_run(experiment.pk)
    client.force_login(people["adjudicator"])
    assert client.post(reverse("oracle_experiment_continue", kwargs={"slug": SLUG, "experiment_id": experiment.pk})).status_code == 404
    experiment.refresh_from_db()
    assert experiment.status == "stopped"


# --- people's grades -----------------------------------------------------------------------


def grade_url(experiment, answer) -> str:
    return reverse("answer_grade", kwargs={"slug": SLUG, "experiment_id": experiment.pk, "answer_id": answer.pk})


def test_an_adjudicator_grades_an_answer_and_changes_the_grade_without_touching_the_judges(client, experiment, people):
    client.force_login(people["adjudicator"])
    answer = experiment.answers.get(query__query_id="q2", context=GeneratedAnswer.Context.RETRIEVED)
    model_grades = list(AnswerGrade.objects.filter(source=AnswerGrade.Source.MODEL).values_list("pk", "grade", "supported"))
    response = client.post(grade_url(experiment, answer), {"grade": "wrong", "supported": "no", "page": "1"})
    assert response.status_code == 302 and response["Location"].endswith(f"?page=1#answer-{answer.pk}")
    client.post(grade_url(experiment, answer), {"grade": "partly", "supported": "yes"})
    mine = AnswerGrade.objects.get(source=AnswerGrade.Source.HUMAN)
    assert (mine.answer_id, mine.user_id, mine.grade, mine.supported) == (answer.pk, people["adjudicator"].pk, "partly", True)
    assert list(AnswerGrade.objects.filter(source=AnswerGrade.Source.MODEL).values_list("pk", "grade", "supported")) == model_grades
    body = client.get(
        reverse("oracle_experiment", kwargs={"slug": SLUG, "experiment_id": experiment.pk}) + "?context=retrieved"
    ).content.decode()
    assert "Change my grade" in body


def test_a_bad_grade_is_refused_with_its_field_named_and_nothing_is_written(client, experiment, owner):
    client.force_login(owner)
    answer = experiment.answers.first()
    response = client.post(grade_url(experiment, answer), {"grade": "brilliant", "supported": "yes"}, follow=True)
    assert "not graded: grade:" in response.content.decode()
    response = client.post(grade_url(experiment, answer), {"grade": "correct"}, follow=True)
    assert "not graded: supported:" in response.content.decode()
    assert not AnswerGrade.objects.filter(source=AnswerGrade.Source.HUMAN).exists()


def test_an_annotator_cannot_grade(client, experiment, people):
    client.force_login(people["annotator"])
    assert client.post(grade_url(experiment, experiment.answers.first()), {"grade": "correct", "supported": "yes"}).status_code == 404
    assert not AnswerGrade.objects.filter(source=AnswerGrade.Source.HUMAN).exists()


def test_agreement_with_the_judge_is_cohens_kappa_overall_and_per_slice(client, experiment, owner):
    """The chat server judges by SQuAD normalisation; a person who agrees with it on every
    answer but one (q4's oracle answer, which has no reference) gets kappa from the counts."""
    from sklearn.metrics import cohen_kappa_score

    client.force_login(owner)
    model = {g.answer_id: g for g in AnswerGrade.objects.filter(source=AnswerGrade.Source.MODEL).select_related("answer__query")}
    people, judged = [], []
    for _answer_id, grade in sorted(model.items()):
        mine = grade.grade
        if grade.answer.query.query_id == "q1" and grade.answer.context == "retrieved":
            mine = "wrong" if grade.grade != "wrong" else "correct"
        client.post(grade_url(experiment, grade.answer), {"grade": mine, "supported": "yes" if grade.supported else "no"})
        people.append(mine)
        judged.append(grade.grade)
    body = client.get(reverse("oracle_experiment", kwargs={"slug": SLUG, "experiment_id": experiment.pk})).content.decode()
    table = body[body.index('id="agreement"') :]
    table = text_of(table[: table.index("</table>")])
    expected = cohen_kappa_score(people, judged, labels=["wrong", "partly", "correct"])
    assert f"all {len(people)} {len(people) - 1} {expected:.2f} 1.00" in table
    assert "queries lang = en" in table and "queries lang = de" in table


# --- the sweep -----------------------------------------------------------------------------


def test_the_sweep_page_lays_the_finished_experiments_accuracy_over_the_recall_curve(client, experiment, owner):
    client.force_login(owner)
    body = client.get(reverse("run_sweep", kwargs={"slug": SLUG, "run_id": experiment.run_id})).content.decode()
    words = text_of(body)
    # bm25 returns 2 pages for three queries and 1 for q4: depth 2 = k_first; recall@1 0.5, recall@2 1.0.
    assert "Cheapest k with recall ≥ 0.80 k = 2" in words and "$2,400 a month" in words
    assert (
        f"Answer accuracy at k = 1 experiment {experiment.pk} : 0.333 [0.061, 0.792] with the retrieved context, "
        "1.000 with the oracle context at k_final = 1 (the judge's share correct, 3 answers)"
    ) in words
    assert "answer accuracy, retrieved context" in body and "<svg" in body
    assert re.findall(r'<script[^>]*\ssrc="([^"]+)"', body) and "<script>" not in body


def test_the_experiment_page_and_lists_read_in_a_bounded_number_of_queries(client, experiment, owner, django_assert_max_num_queries):
    """The lists read their rows in one query; the experiment page reads a page of answers with
    their grades and references in a fixed number of queries, whatever the page holds."""
    client.force_login(owner)
    for name in ("oracle_experiments", "generators"):
        with django_assert_max_num_queries(12):
            assert client.get(reverse(name, kwargs={"slug": SLUG})).status_code == 200
    page = reverse("oracle_experiment", kwargs={"slug": SLUG, "experiment_id": experiment.pk})
    counts = []
    for context in ("oracle", ""):  # 4 answers, then 8
        with django_assert_max_num_queries(40) as captured:
            assert client.get(page, {"context": context}).status_code == 200
        counts.append(len(captured))
    assert counts[0] == counts[1]
