"""Answer judges: answer_judge_add and its command, the strict reading of a verdict, and
grade_answers against a real local chat server standing in for a hosted LLM
(tests/support/chat_server.py: it grades by SQuAD normalisation)."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from answers.answer_judging import (
    DEFAULT_RUBRIC,
    AnswerToGrade,
    answer_judge_add,
    grade_answers,
    read_verdict,
    rubric_filled,
    rubric_read,
)
from answers.models import AnswerJudge
from lib.chat import NOT_A_COMPLETION, Waiting
from lib.errors import ConflictError, GoldsetError
from lib.hashing import text_hash
from tests.support import factories
from tests.support.chat_server import ChatServer

pytestmark = pytest.mark.django_db

CONTEXT = "[1] id: d1\nThe capital of France is Paris."


@pytest.fixture
def golden_set(owner):
    return factories.golden_set("judged-answers", manager=owner)


@pytest.fixture
def server():
    with ChatServer() as chat:
        yield chat


class NoWait(Waiting):
    def __init__(self):
        async def sleep(seconds):
            return None

        super().__init__(sleep=sleep, random=lambda: 0.0)


def judge_of(golden_set, server, **fields) -> AnswerJudge:
    return answer_judge_add(golden_set=golden_set, name=fields.pop("name", "strict"), base_url=server.base_url, model="judge-7b", **fields)


def item(key, answer, reference="Paris", aliases=(), context=CONTEXT) -> AnswerToGrade:
    return AnswerToGrade(key, "What is the capital of France?", reference, tuple(aliases), answer, context)


def test_a_judge_is_recorded_with_the_default_rubric_and_its_hash(golden_set, server, owner):
    judge = judge_of(golden_set, server, user=owner)
    assert judge.rubric == DEFAULT_RUBRIC and judge.rubric_hash == text_hash(DEFAULT_RUBRIC) and judge.created_by == owner
    assert "grade: correct|partly|wrong" in DEFAULT_RUBRIC and "supported: yes|no" in DEFAULT_RUBRIC


def test_every_bad_field_of_a_judge_is_named_and_nothing_is_recorded(golden_set):
    with pytest.raises(GoldsetError) as caught:
        answer_judge_add(golden_set=golden_set, name="j", base_url="http://", model="", rubric="Grade {{answer}}", api_key_env="SECRET_KEY")
    assert [p.split(":", 1)[0] for p in caught.value.problems] == ["base_url", "model", "api_key_env", "rubric"]
    assert "{{question}}, {{reference}}, {{context}}" in caught.value.problems[3]
    assert AnswerJudge.objects.count() == 0


def test_a_second_judge_of_the_same_name_is_a_conflict(golden_set, server):
    judge_of(golden_set, server)
    with pytest.raises(ConflictError, match="has an answer judge named 'strict' already"):
        judge_of(golden_set, server)


def test_the_rubric_is_filled_with_the_reference_its_variants_the_answer_and_the_context():
    prompt = rubric_filled(DEFAULT_RUBRIC, item(1, "It is\nParis.", aliases=["Paris, France"]))
    assert 'Reference answer: Paris\nAccepted variants: ["Paris, France"]\n' in prompt
    assert "Answer to grade: It is Paris.\n" in prompt and "Context the answer was given:\n" + CONTEXT + "\n\nGrade" in prompt
    assert rubric_read(prompt) == {
        "question": "What is the capital of France?",
        "reference": "Paris",
        "aliases": ["Paris, France"],
        "answer": "It is Paris.",
        "context": CONTEXT,
    }
    assert "(no context)" in rubric_filled(DEFAULT_RUBRIC, item(1, "Paris", context=""))


@pytest.mark.parametrize(
    "answer, verdict",
    [
        ("grade: correct\nsupported: yes", ("correct", True, None)),
        ("**Grade:** partly\n**Supported:** no", ("partly", False, None)),
        ("Reasoning first.\n## grade = wrong\nsupported: no\ngrade: wrong", ("wrong", False, None)),
        (
            "The answer looks right.",
            (
                None,
                None,
                "no “grade:” line in the answer (expected “grade: correct|partly|wrong”); no “supported:” line in the answer (expected “supported: yes|no”)",
            ),
        ),
        ("grade: correct|partly|wrong\nsupported: yes", (None, None, "grade 'correct|partly|wrong' is not one of correct|partly|wrong")),
        ("grade: correct\ngrade: wrong\nsupported: yes", (None, None, "the answer gives several grade values (correct, wrong)")),
        ("grade: correct\nsupported: maybe", (None, None, "supported 'maybe' is not one of yes|no")),
        ("grade: correct", (None, None, "no “supported:” line in the answer (expected “supported: yes|no”)")),
    ],
)
def test_a_verdict_is_read_strictly_and_garbage_is_an_error_naming_what_was_wrong(answer, verdict):
    assert read_verdict(answer) == verdict


def test_answers_are_graded_against_the_reference_and_its_variants_and_their_support_in_the_context(golden_set, server):
    items = [
        item("exact", "Paris"),
        item("variant", "the City of Light", aliases=["City of Light"]),
        item("partly", "Paris or Lyon"),
        item("wrong", "I don't know"),
        item("unsupported", "Paris", context="[1] id: d2\nBerlin is the capital of Germany."),
    ]
    results = grade_answers(judge_of(golden_set, server), items)
    assert [(r.key, r.grade, r.supported, r.error) for r in results] == [
        ("exact", "correct", True, None),
        ("variant", "correct", False, None),
        ("partly", "partly", False, None),
        ("wrong", "wrong", False, None),
        ("unsupported", "correct", False, None),
    ]
    assert all(r.requests == 1 and r.prompt_tokens > 0 and r.completion_tokens == 4 for r in results)
    assert {seen.body["temperature"] for seen in server.requests} == {0}


def test_a_judge_answering_garbage_is_an_error_with_its_raw_answer_never_a_guess(golden_set, server):
    server.content = "Looks correct to me, supported I think."
    [result] = grade_answers(judge_of(golden_set, server), [item(1, "Paris")])
    assert (result.grade, result.supported) == (None, None)
    assert result.error.startswith("no “grade:” line in the answer") and result.raw == "Looks correct to me, supported I think."
    server.content = None
    server.garbage_next(1)
    [result] = grade_answers(judge_of(golden_set, server, name="second"), [item(1, "Paris")])
    assert result.error == NOT_A_COMPLETION and result.raw == "<html>upstream hiccup</html>"


def test_a_judge_answering_429_then_500_is_retried_and_then_read(golden_set, server):
    server.fail_next(1, status=429, retry_after=3)
    server.fail_next(1, status=500)
    waiting = NoWait()
    [result] = grade_answers(judge_of(golden_set, server), [item(1, "Paris")], waiting=waiting)
    assert (result.grade, result.requests) == ("correct", 3) and waiting.delays == [3.0, 0.5]


def test_a_judge_is_asked_within_its_in_flight_bound_and_tells_progress(golden_set, server):
    server.slow = 0.05
    seen = []
    results = grade_answers(
        judge_of(golden_set, server, max_in_flight=2),
        [item(n, "Paris") for n in range(8)],
        progress=lambda done, note: seen.extend(done),
        every=0.01,
    )
    assert server.most_in_flight <= 2 and [r.grade for r in results] == ["correct"] * 8
    assert sorted(r.key for r in seen) == list(range(8))


def test_the_judges_key_goes_only_in_authorization_and_only_to_its_hosts(golden_set, server, monkeypatch):
    monkeypatch.setenv("JUDGE_ANSWERS_KEY", "sk-judge-secret")
    monkeypatch.setenv("JUDGE_ANSWERS_KEY_HOSTS", "127.0.0.1")
    judge = judge_of(golden_set, server, api_key_env="JUDGE_ANSWERS_KEY")
    grade_answers(judge, [item(1, "Paris")])
    assert server.requests[0].headers["Authorization"] == "Bearer sk-judge-secret"
    assert "sk-judge-secret" not in repr(server.requests[0].body)
    monkeypatch.setenv("JUDGE_ANSWERS_KEY_HOSTS", "api.example.org")
    with pytest.raises(GoldsetError, match="nothing was sent"):
        grade_answers(judge, [item(1, "Paris")])
    assert len(server.requests) == 1


def test_the_command_adds_a_judge_with_a_rubric_file_and_names_what_is_wrong(golden_set, server, tmp_path):
    rubric = tmp_path / "rubric.txt"
    rubric.write_text(
        "Q {{question}} R {{reference}} A {{answer}} C {{context}}\ngrade: correct|partly|wrong\nsupported: yes|no", encoding="utf-8"
    )
    out = StringIO()
    call_command(
        "answer_judge_add",
        "judged-answers",
        "--name",
        "mine",
        "--url",
        server.base_url,
        "--model",
        "j-7b",
        "--rubric-file",
        str(rubric),
        stdout=out,
    )
    judge = AnswerJudge.objects.get(name="mine")
    assert judge.rubric == rubric.read_text(encoding="utf-8")
    assert out.getvalue() == f"answer judge 'mine' of judged-answers: j-7b at {server.base_url}, rubric {judge.rubric_hash[:12]}\n"
    rubric.write_text("Grade it", encoding="utf-8")
    with pytest.raises(CommandError) as caught:
        call_command(
            "answer_judge_add", "judged-answers", "--name", "bad", "--url", server.base_url, "--model", "j", "--rubric-file", str(rubric)
        )
    assert str(caught.value).splitlines()[0] == "the answer judge cannot be added"
    assert str(caught.value).splitlines()[1].startswith("rubric: the rubric must hold {{question}}, {{reference}}, {{answer}}, {{context}}")
    assert AnswerJudge.objects.count() == 1
