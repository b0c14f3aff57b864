"""The small set of the oracle experiment's tests: four questions over five pages whose
sentences answer them, a run that finds the answer of q1 only, reference answers for q1..q3
(q4 has none), and a generator behind a local OpenAI-compatible chat server.

The server (tests/support/chat_server.py) answers deterministically from the context it is
given: the context's sentence sharing the most words with the question (the demo's rule),
"I don't know" when none shares a word. So with k_final 1:
- oracle context (the relevant page): q1, q2, q3 right by exact match (3 of 3);
- retrieved context (the run's top 1): q1 right (d1), q2 and q3 wrong (d5): 1 of 3.
"""

import pytest

from answers.answer_judging import DEFAULT_RUBRIC
from answers.generation import DEFAULT_PROMPT
from answers.models import AnswerJudge, Generator
from evaluation.services import evaluation_compute
from goldenset.answers import answers_import
from goldenset.services import version_publish
from lib.formats import JsonRecord
from lib.hashing import text_hash
from tests.support import factories
from tests.support.chat_server import ChatServer

TEXTS = {
    "d1": "The capital of France is Paris.",
    "d2": "Hamlet was written by Shakespeare.",
    "d3": "The sky is blue on a clear day.",
    "d4": "A spider has eight legs.",
    "d5": "Bananas are a yellow fruit.",
}
QUESTIONS = {
    "q1": "What is the capital of France?",
    "q2": "Who wrote Hamlet?",
    "q3": "What colour is the sky on a clear day?",
    "q4": "How many legs has a spider?",
}
QRELS = {("q1", "d1"): 2, ("q2", "d2"): 3, ("q3", "d3"): 1, ("q4", "d4"): 2, ("q1", "d5"): 0}
RANKING = {"q1": ["d1", "d5"], "q2": ["d5", "d2"], "q3": ["d5", "d3"], "q4": ["d4"]}
ANSWERS = [
    '{"query_id": "q1", "answer": "Paris", "aliases": ["The capital of France is Paris."]}',
    '{"query_id": "q2", "answer": "Hamlet was written by Shakespeare."}',
    '{"query_id": "q3", "answer": "The sky is blue on a clear day."}',
]


@pytest.fixture
def chat_server():
    with ChatServer() as server:
        yield server


@pytest.fixture
def answer_set(owner):
    pages = [JsonRecord(line=n, id=d, title="", text=t, metadata={}) for n, (d, t) in enumerate(TEXTS.items(), 1)]
    queries = [
        JsonRecord(line=n, id=q, text=t, metadata={"lang": "en" if n <= 2 else "de"}) for n, (q, t) in enumerate(QUESTIONS.items(), 1)
    ]
    made = factories.golden_set(
        "answers", manager=owner, qrels=QRELS, pages=pages, queries=queries, query_slice_fields=["lang"], k_first=2, k_final=1
    )
    answers_import(golden_set=made, path_or_lines=ANSWERS, user=owner)
    version = version_publish(golden_set=made)
    run = factories.run(made, "bm25", RANKING)
    evaluation_compute(run=run, version=version)
    return made


@pytest.fixture
def generator(answer_set, chat_server, owner):
    return Generator.objects.create(
        golden_set=answer_set,
        name="local",
        base_url=chat_server.base_url,
        model="tiny",
        prompt=DEFAULT_PROMPT,
        prompt_hash=text_hash(DEFAULT_PROMPT),
        max_in_flight=2,
        timeout_seconds=5,
        retries=1,
        created_by=owner,
    )


@pytest.fixture
def judge(answer_set, chat_server):
    rubric = DEFAULT_RUBRIC
    return AnswerJudge.objects.create(
        golden_set=answer_set,
        name="grader",
        base_url=chat_server.base_url,
        model="judge",
        rubric=rubric,
        rubric_hash=text_hash(rubric),
        retries=0,
    )
