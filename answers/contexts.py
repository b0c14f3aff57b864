"""The contexts of the oracle experiment, for a block of queries at a time (so a worker's
memory follows the block, not the experiment's size):

- oracle: the version's relevant pages of the query (grade >= version.relevance_threshold),
  best grade first, ties by doc id ascending, cut to k_final and to the token budget;
- retrieved: the run's top k_final in rank order (lib.runs.RankedRun keeps trec_eval's
  order: score descending, then doc id descending), cut by the same budget; a run of a
  chunking gives its chunks' texts (the characters [start, end) of their documents);
- closed book: none.

Tokens are counted by one rule everywhere (SEMANTICS.md, "Answers"): a passage of n
characters takes ceil(n / 4) tokens, the estimate prompt tokens@k uses. A passage is the
page's title and text on two lines (a chunk: its characters only). Passages are added in
order while they fit; the first that does not is cut to the characters the budget has
left (4 a token) and nothing follows it, so a short budget shows as a shorter context, not
an empty one. A doc id outside the corpus has no text: it keeps its place and id, empty.
The generator lays the passages out in its prompt (answers.generation.context_text); the
tokens counted here are the passages' own, the figure the set's budget bounds.
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from answers.generation import ContextPassage
from goldenset.models import Chunk, Page, Query, Version, VersionLabel
from lib.runs import RankedRun

CHARS_PER_TOKEN = 4
# Rows asked for in one IN list: under SQLite's bound of variables in a statement.
BLOCK = 2_000


def text_tokens(text: str) -> int:
    """Tokens of `text` by the house's rule: ceil(characters / 4)."""
    return -(-len(text) // CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Context:
    """What the generator is given: its passages in order (ids: doc ids, or chunk ids for a
    run of a chunking) and their tokens (the sum of the passages', the house's rule)."""

    passages: tuple[ContextPassage, ...]
    tokens: int

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(passage.id for passage in self.passages)


CLOSED_BOOK = Context((), 0)


def assemble(passages: Sequence[tuple[str, str]], *, k_final: int, budget: int | None) -> Context:
    """The context of `passages` ((id, text), in order): the first k_final, while they fit
    in `budget` tokens (None: no bound); the first that does not fit is cut to what is left."""
    kept, tokens = [], 0
    for passage_id, text in passages[:k_final]:
        need = text_tokens(text)
        if budget is not None and tokens + need > budget:
            left = budget - tokens
            if left > 0:
                kept.append(ContextPassage(passage_id, text[: left * CHARS_PER_TOKEN]))
                tokens += text_tokens(kept[-1].text)
            break
        kept.append(ContextPassage(passage_id, text))
        tokens += need
    return Context(tuple(kept), tokens)


def _blocks(values: Sequence) -> Iterable[Sequence]:
    for start in range(0, len(values), BLOCK):
        yield values[start : start + BLOCK]


def page_texts(page_pks: Iterable[int]) -> dict[int, tuple[str, str]]:
    """{page pk: (doc id, passage)}: the title and the text on two lines (either alone when
    the other is empty), read in blocks."""
    found = {}
    for block in _blocks(sorted(set(page_pks))):
        for pk, doc_id, title, text in Page.objects.filter(pk__in=block).values_list("pk", "doc_id", "title", "text"):
            found[pk] = (doc_id, "\n".join(part for part in (title, text) if part))
    return found


def oracle_contexts(version: Version, query_pks: Sequence[int], *, k_final: int, budget: int | None) -> dict[int, Context]:
    """{query pk: its oracle context} for `query_pks` (a query with no relevant page gets an
    empty context). Two reads a block: the labels, then the texts of the pages kept."""
    relevant: dict[int, list[tuple[int, str, int]]] = defaultdict(list)
    for block in _blocks(list(query_pks)):
        rows = VersionLabel.objects.filter(version=version, query_id__in=block, grade__gte=version.relevance_threshold).values_list(
            "query_id", "grade", "page__doc_id", "page_id"
        )
        for query_pk, grade, doc_id, page_pk in rows:
            relevant[query_pk].append((-grade, doc_id, page_pk))
    chosen = {q: [page_pk for _, _, page_pk in sorted(rows)[:k_final]] for q, rows in relevant.items()}
    texts = page_texts(pk for pks in chosen.values() for pk in pks)
    return {q: assemble([texts[pk] for pk in chosen.get(q, [])], k_final=k_final, budget=budget) for q in query_pks}


def query_ids_of(query_pks: Sequence[int]) -> dict[int, str]:
    found = {}
    for block in _blocks(list(query_pks)):
        found.update(Query.objects.filter(pk__in=block).values_list("pk", "query_id"))
    return found


def retrieved_contexts(
    ranked: RankedRun, query_pks: Sequence[int], *, chunked: bool, k_final: int, budget: int | None
) -> dict[int, Context]:
    """{query pk: its retrieved context}: the run's top k_final of each query in rank order
    (a query the run does not answer gets an empty context). `chunked`: the run's doc keys
    are chunks of a chunking (Run.chunking), whose texts are their documents' characters."""
    query_ids = query_ids_of(query_pks)
    tops = {}
    for q in query_pks:
        rows = ranked.rows(query_ids.get(q, ""))
        tops[q] = ranked.doc_keys[rows][:k_final].tolist()
    keys = {key for top in tops.values() for key in top if key > 0}
    texts = _chunk_texts(keys) if chunked else page_texts(keys)
    contexts = {}
    for q, top in tops.items():
        passages = [texts.get(key, ("", "")) if key > 0 else (ranked.external_doc_ids[-key - 1], "") for key in top]
        contexts[q] = assemble(passages, k_final=k_final, budget=budget)
    return contexts


def _chunk_texts(chunk_pks: Iterable[int]) -> dict[int, tuple[str, str]]:
    spans = {}
    for block in _blocks(sorted(set(chunk_pks))):
        spans.update(
            (pk, (chunk_id, page_pk, start, end))
            for pk, chunk_id, page_pk, start, end in Chunk.objects.filter(pk__in=block).values_list(
                "pk", "chunk_id", "page_id", "start", "end"
            )
        )
    documents = {}
    for block in _blocks(sorted({page_pk for _, page_pk, _, _ in spans.values()})):
        documents.update(Page.objects.filter(pk__in=block).values_list("pk", "text"))
    return {pk: (chunk_id, documents.get(page_pk, "")[start:end]) for pk, (chunk_id, page_pk, start, end) in spans.items()}
