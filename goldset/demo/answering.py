"""The demo's one answering rule, shared by its reference answers and its generator: the
answer to a question from a text is the text's sentence that shares the most words with the
question (goldset.demo.search.tokens: lowercase, stopwords dropped, HTML tags dropped), the
first such sentence on a tie, and none when no sentence shares a word.

So a generator handed the page a reference answer was cut from says it word for word (exact
match), one handed other pages says something else (retrieval loss), and one handed a
context cut too short loses the sentence (generation loss): the oracle table of the demo has
figures to read without a model.
"""

import re

from goldset.demo.search import tokens

# A sentence ends at . ! ? or a line break; HTML block tags count as line breaks.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+|<(?:/p|br\s*/?|/li|/h[1-6])>", re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")


def sentences(text: str) -> list[str]:
    """The sentences of `text`, tags dropped and blanks collapsed, empty ones left out."""
    found = []
    for part in _SENTENCE_END.split(text):
        sentence = " ".join(_TAG.sub(" ", part).split())
        if sentence:
            found.append(sentence)
    return found


def best_sentence(question: str, text: str) -> str | None:
    """The sentence of `text` sharing the most distinct words with `question`, or None."""
    wanted = set(tokens(question))
    best, best_shared = None, 0
    for sentence in sentences(text):
        shared = len(wanted & set(tokens(sentence)))
        if shared > best_shared:
            best, best_shared = sentence, shared
    return best


def prompt_answer(prompt: str) -> str:
    """The demo generator's answer to a prompt laid out as a generator's DEFAULT_PROMPT
    (answers.generation.prompt_read): the best sentence of its passages for its question,
    or "I don't know" when none shares a word with it, or the prompt is of another layout."""
    # Imported here: the demo's data generator calls best_sentence with no Django set up,
    # and answers.generation reads the settings and models.
    from answers.generation import I_DONT_KNOW, prompt_read

    read = prompt_read(prompt)
    if read is None:
        return I_DONT_KNOW
    question, passages = read
    # A line break between passages, so that no sentence runs from one into the next.
    return best_sentence(question, "\n".join(passages)) or I_DONT_KNOW
