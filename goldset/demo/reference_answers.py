"""The demo's reference answers: each active query with a relevant page is answered by the
demo's one answering rule (goldset.demo.answering.best_sentence) from its best relevant
page, the highest grade first, then the natural order of doc ids (Goldset's order of ids,
lib.ids), read as the oracle context's passage (answers.contexts.page_texts: the title and
the text). So the demo generator, handed that page, says the reference word for word."""

import json

from answers.contexts import page_texts
from goldenset.answers import answers_import
from goldenset.models import GoldenSet, Page, Query
from goldenset.version_rows import resolved_label_columns
from goldset.demo.answering import best_sentence
from lib.ids import natural_key


def demo_answer_lines(golden_set: GoldenSet) -> list[str]:
    """The JSON lines (import_answers's form) of the answers the set's labels give now: one
    per active query whose best relevant page shares a word with it."""
    queries = dict(Query.objects.filter(golden_set=golden_set, retired_at__isnull=True).values_list("pk", "text"))
    relevant: dict[int, list[tuple[int, int]]] = {}
    # The labels as a publish now freezes them: a duplicate's judgment counts for its group's first page.
    query_column, page_column, grade_column = resolved_label_columns(golden_set.pk)
    for query_pk, page_pk, grade in zip(query_column.tolist(), page_column.tolist(), grade_column.tolist()):
        if query_pk in queries and grade >= golden_set.relevance_threshold:
            relevant.setdefault(query_pk, []).append((grade, page_pk))
    doc_ids = dict(Page.objects.filter(pk__in={page for pairs in relevant.values() for _, page in pairs}).values_list("pk", "doc_id"))
    best = {query_pk: min(pairs, key=lambda pair: (-pair[0], natural_key(doc_ids[pair[1]])))[1] for query_pk, pairs in relevant.items()}
    # The page as the oracle context hands it to the generator (its title and text), so the
    # sentence the generator picks from it alone is the reference, title lines included.
    texts = {pk: passage for pk, (_, passage) in page_texts(best.values()).items()}
    query_ids = dict(Query.objects.filter(pk__in=list(best)).values_list("pk", "query_id"))
    lines = []
    for query_pk, page_pk in sorted(best.items(), key=lambda item: natural_key(query_ids[item[0]])):
        answer = best_sentence(queries[query_pk], texts[page_pk])
        if answer is not None:
            lines.append(json.dumps({"query_id": query_ids[query_pk], "answer": answer}, ensure_ascii=False))
    return lines


def demo_answers_set(golden_set: GoldenSet, user) -> None:
    """Set the answers of demo_answer_lines (a query's answer follows its labels: a round
    that changes its best page changes its answer), before a version is published."""
    lines = demo_answer_lines(golden_set)
    if lines:
        answers_import(golden_set=golden_set, path_or_lines=lines, user=user)
