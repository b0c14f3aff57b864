"""The labels of the demo's latest version, worked out from demo_generate's content without
a database: what demo_load publishes as version 3, for measuring the demo search service
(goldset.demo.search) against the same labels the loaded golden set scores runs with."""

from dataclasses import dataclass

from goldenset.resolution import labels_of_rows
from goldset.demo.generate import DemoContent


@dataclass(frozen=True)
class DemoLatest:
    # The latest version's active queries, {query_id: text}, in id order.
    queries: dict[str, str]
    # {query_id: {doc_id: grade}} for every judged pair of those queries.
    labels: dict[str, dict[str, int]]

    def relevant(self, query_id: str, threshold: int = 1) -> list[str]:
        """The doc ids graded `threshold` or more for the query, in doc id order."""
        return sorted(doc_id for doc_id, grade in self.labels.get(query_id, {}).items() if grade >= threshold)


def demo_latest_labels(content: DemoContent) -> DemoLatest:
    """Each pair's label by the rule of goldenset.resolution, the one a publish applies: the
    imports first, then every round's judgments in order, each later than the one before.
    Retired queries are left out, added ones included."""
    retired = {query_id for demo_round in content.rounds for query_id in demo_round.retire}
    texts = {record.id: record.text for record in content.queries}
    for demo_round in content.rounds:
        texts |= {record.id: record.text for record in demo_round.new_queries}
    queries = {query_id: texts[query_id] for query_id in sorted(texts) if query_id not in retired}

    # The rule reads integers: each id and annotator is numbered as it is first seen.
    numbers: dict[str, int] = {}

    def number(name: str) -> int:
        return numbers.setdefault(name, len(numbers) + 1)

    rows = [(number(query_id), number(doc_id), grade, "imported", None) for (query_id, doc_id), grade in content.qrels.items()]
    rows += [
        (number(judgment.query_id), number(judgment.doc_id), judgment.grade, judgment.source, number(judgment.annotator))
        for demo_round in content.rounds
        for judgment in demo_round.judgments
    ]
    query, page, grade = labels_of_rows((*row, ident) for ident, row in enumerate(rows, 1))
    names = {value: name for name, value in numbers.items()}
    labels: dict[str, dict[str, int]] = {}
    for query_id, doc_id, label in sorted(zip(map(names.get, query.tolist()), map(names.get, page.tolist()), grade.tolist())):
        if query_id in queries:
            labels.setdefault(query_id, {})[doc_id] = label
    return DemoLatest(queries=queries, labels=labels)
