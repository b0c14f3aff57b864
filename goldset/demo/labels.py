"""The labels of the demo's latest version, worked out from demo_generate's content without
a database: what demo_load publishes as version 3, for measuring the demo search service
(goldset.demo.search) against the same labels the loaded golden set scores runs with."""

from dataclasses import dataclass

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
    """Each pair's label by goldenset.selectors.resolved_labels' rules: the latest
    adjudication, else the lower median of each person's latest grade, else the import.
    Retired queries are left out, added ones included."""
    adjudicated: dict[tuple[str, str], int] = {}
    people: dict[tuple[str, str], dict[str, int]] = {}
    for demo_round in content.rounds:  # rounds in order, so a later grade replaces an earlier one
        for judgment in demo_round.judgments:
            pair = (judgment.query_id, judgment.doc_id)
            if judgment.source == "adjudicated":
                adjudicated[pair] = judgment.grade
            else:
                people.setdefault(pair, {})[judgment.annotator] = judgment.grade
    retired = {query_id for demo_round in content.rounds for query_id in demo_round.retire}
    texts = {record.id: record.text for record in content.queries}
    for demo_round in content.rounds:
        texts |= {record.id: record.text for record in demo_round.new_queries}
    queries = {query_id: texts[query_id] for query_id in sorted(texts) if query_id not in retired}

    labels: dict[str, dict[str, int]] = {}
    for pair in sorted(set(content.qrels) | set(people) | set(adjudicated)):
        if pair[0] not in queries:
            continue
        if pair in adjudicated:
            grade = adjudicated[pair]
        elif pair in people:
            grades = sorted(people[pair].values())
            grade = grades[(len(grades) - 1) // 2]
        else:
            grade = content.qrels[pair]
        labels.setdefault(pair[0], {})[pair[1]] = grade
    return DemoLatest(queries=queries, labels=labels)
