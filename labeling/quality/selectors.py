"""Agreement, adjudication and annotator quality: the reads behind the quality pages (their
writes, adjudication and gold-check setup, are labeling.quality.services).

What counts as a grade here:
- Agreement is measured on human judgments only, each person's latest grade per pair (a
  person's later judgment supersedes their earlier one, as in resolution). Imported
  grades are not a person and adjudicated ones are the referee's, so neither counts.
- A pair is a disagreement when two of its people's grades differ by 2 or more, or fall on
  both sides of the set's relevance threshold, and no adjudicator has decided it yet.
- Labels resolve by the one rule of goldenset.resolution: an adjudication wins, else the
  lower median of the people's grades, else the import.

Units: agreement figures are fractions in [0, 1] (kappa and alpha may be negative), NaN
where undefined (too few pairs, or no variation); times are seconds, rates per hour.
Every read is a fixed number of queries, whatever the size of the set.
"""

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import combinations

import numpy as np
from django.contrib.auth import get_user_model

from goldenset.models import GoldenSet, Judgment, Membership, Page, Query
from goldenset.selectors import holders_of, label_of, label_resolve
from labeling.models import GoldAnswer, JudgingTask, QueueSettings
from labeling.quality import agreement
from lib.ids import natural_key

# Two judgments of one annotator further apart than this belong to two sessions: the time
# between them is a break, not judging (see AnnotatorQuality.judgments_per_hour).
SESSION_GAP_SECONDS = 30 * 60
# The adjudication list shows this many disagreements at most; the count shows them all.
DISAGREEMENT_LIST_LIMIT = 500

Pair = tuple[int, int]  # (query pk, page pk)


def _stream_people_grades(golden_set: GoldenSet, keep: set[Pair] | None = None) -> tuple[dict[Pair, dict[int, int]], int]:
    """({pair: {annotator pk: latest grade}}, number of pairs any person judged).

    Keeps the pairs two or more people judged, and those in `keep`. One ordered query,
    streamed, so single-judged pairs (most of a set) cost no memory."""
    rows = (
        Judgment.objects.filter(query__golden_set=golden_set, source=Judgment.Source.HUMAN)
        .order_by("query_id", "page_id", "annotator_id", "-id")
        .values_list("query_id", "page_id", "annotator_id", "grade")
    )
    kept: dict[Pair, dict[int, int]] = {}
    judged = 0
    last: Pair | None = None
    grades: dict[int, int] = {}
    keep = keep or set()

    def flush() -> None:
        if last is not None and (len(grades) >= 2 or last in keep):
            kept[last] = grades

    for query_pk, page_pk, annotator_pk, grade in rows.iterator(chunk_size=20_000):
        pair = (query_pk, page_pk)
        if pair != last:
            flush()
            last, grades = pair, {}
            judged += 1
        grades.setdefault(annotator_pk, grade)
    flush()
    return kept, judged


def _adjudicated_pairs(golden_set: GoldenSet) -> dict[Pair, int]:
    """{pair: grade of its latest adjudication}."""
    rows = (
        Judgment.objects.filter(query__golden_set=golden_set, source=Judgment.Source.ADJUDICATED)
        .order_by("query_id", "page_id", "-id")
        .values_list("query_id", "page_id", "grade")
    )
    decided: dict[Pair, int] = {}
    for query_pk, page_pk, grade in rows.iterator(chunk_size=20_000):
        decided.setdefault((query_pk, page_pk), grade)
    return decided


def _usernames(pks: Iterable[int]) -> dict[int, str]:
    pks = set(pks)
    if not pks:
        return {}
    return dict(get_user_model().objects.filter(pk__in=pks).values_list("pk", "username"))


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else value


# --- agreement ---------------------------------------------------------------------------


class _Confusion:
    """What the pages read of a confusion matrix: `confusion` (rows and columns in the
    order of the grades `values`)."""

    confusion: list[list[int]]
    values: list[int]

    @property
    def confusion_max(self) -> int:
        return max((max(row) for row in self.confusion), default=0)

    @property
    def confusion_rows(self) -> list[tuple[int, list[int]]]:
        """(grade, its row of the confusion matrix), in scale order."""
        return list(zip(self.values, self.confusion))


@dataclass
class PairAgreement(_Confusion):
    """Agreement of two annotators on the pairs both judged. Rows of `confusion` are
    `first`'s grades, columns `second`'s, in scale order."""

    first: str
    second: str
    units: int
    percent: float | None
    kappa: float | None
    alpha: float | None
    confusion: list[list[int]]
    values: list[int] = field(default_factory=list)


@dataclass
class AgreementReport(_Confusion):
    """A golden set's inter-annotator agreement.

    `percent`: share of all comparisons (two people, one pair) that gave the same grade.
    `kappa`: Cohen's kappa with quadratic weights, the mean of the annotator pairs' kappas
    weighted by the pairs each two shared (kappa is defined for two coders; this is Light's
    mean, weighted). `alpha`: Krippendorff's alpha, ordinal, over every person at once.
    `confusion`: the annotator pairs' confusion matrices added up (each pair's rows are the
    name first in alphabetical order), so its diagonal over its total is `percent`.
    """

    values: list[int]
    labels: list[str]
    judged_pairs: int
    units: int
    comparisons: int
    percent: float | None
    kappa: float | None
    alpha: float | None
    confusion: list[list[int]]
    pairs: list[PairAgreement] = field(default_factory=list)
    annotators: list[str] = field(default_factory=list)


def agreement_report(golden_set: GoldenSet) -> AgreementReport:
    """Agreement of the set's annotators, overall and per annotator pair (see AgreementReport).
    Pairs are listed by how many pairs they shared, most first. Two queries."""
    values = golden_set.grade_values()
    size = len(values)
    multi, judged = _stream_people_grades(golden_set)
    names = _usernames(pk for grades in multi.values() for pk in grades)
    people = sorted(names, key=lambda pk: (names[pk], pk))
    row_of = {pk: i for i, pk in enumerate(people)}

    reliability = np.full((len(people), len(multi)), np.nan)
    shared: dict[tuple[int, int], tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for unit, grades in enumerate(multi.values()):
        for pk, grade in grades.items():
            reliability[row_of[pk], unit] = grade
        for a, b in combinations(sorted(grades, key=row_of.get), 2):
            first, second = shared[(a, b)]
            first.append(grades[a])
            second.append(grades[b])

    pairs = []
    total_confusion = np.zeros((size, size), dtype=int)
    kappa_sum = kappa_weight = 0.0
    for (a, b), (first, second) in shared.items():
        confusion = agreement.confusion_matrix(first, second, values=values)
        total_confusion += confusion
        kappa = agreement.cohen_kappa_quadratic(first, second, values=values)
        if not math.isnan(kappa):
            kappa_sum += kappa * len(first)
            kappa_weight += len(first)
        pairs.append(
            PairAgreement(
                first=names[a],
                second=names[b],
                units=len(first),
                percent=_finite(agreement.percent_agreement(first, second)),
                kappa=_finite(kappa),
                alpha=_finite(agreement.krippendorff_alpha_ordinal(np.array([first, second], dtype=float), values=values)),
                confusion=confusion.tolist(),
                values=values,
            )
        )
    pairs.sort(key=lambda p: (-p.units, p.first, p.second))

    agreeing, compared = agreement.pairwise_agreement(reliability, values=values) if multi else (0, 0)
    return AgreementReport(
        values=values,
        labels=[golden_set.grade_label(v) for v in values],
        judged_pairs=judged,
        units=len(multi),
        comparisons=compared,
        percent=(agreeing / compared) if compared else None,
        kappa=(kappa_sum / kappa_weight) if kappa_weight else None,
        alpha=_finite(agreement.krippendorff_alpha_ordinal(reliability, values=values)) if multi else None,
        confusion=total_confusion.tolist(),
        pairs=pairs,
        annotators=[names[pk] for pk in people],
    )


# --- disagreements and adjudication ----------------------------------------------------


def is_disagreement(grades: Sequence[int], threshold: int) -> bool:
    """Whether people's grades of one pair need an adjudicator: two differ by 2 or more,
    or some say relevant (grade >= threshold) and some not."""
    if len(grades) < 2:
        return False
    low, high = min(grades), max(grades)
    return high - low >= 2 or (low < threshold <= high)


@dataclass
class Disagreement:
    """A pair waiting for an adjudicator: its people's latest grades, and the label it
    resolves to meanwhile (the lower median)."""

    query_pk: int
    page_pk: int
    query_id: str
    doc_id: str
    grades: list[tuple[str, int]]
    label: int
    query_text: str = ""
    page_title: str = ""

    @property
    def spread(self) -> int:
        values = [grade for _, grade in self.grades]
        return max(values) - min(values)


@dataclass
class DisagreementList:
    total: int
    items: list[Disagreement]


def disagreements(golden_set: GoldenSet, *, limit: int | None = DISAGREEMENT_LIST_LIMIT) -> DisagreementList:
    """The set's pairs to adjudicate (see is_disagreement), not yet adjudicated, on active
    queries, in natural order of query id then doc id; the first `limit` of them with the
    total count. Seven queries."""
    threshold = golden_set.relevance_threshold
    decided = _adjudicated_pairs(golden_set)
    multi, _ = _stream_people_grades(golden_set)
    pending = {pair: grades for pair, grades in multi.items() if pair not in decided and is_disagreement(list(grades.values()), threshold)}
    query_ids = dict(
        Query.objects.filter(golden_set=golden_set, retired_at__isnull=True, pk__in={q for q, _ in pending}).values_list("pk", "query_id")
    )
    pending = {pair: grades for pair, grades in pending.items() if pair[0] in query_ids}
    doc_ids = dict(Page.objects.filter(pk__in={p for _, p in pending}).values_list("pk", "doc_id"))
    order = sorted(pending, key=lambda pair: (natural_key(query_ids[pair[0]]), natural_key(doc_ids[pair[1]])))
    shown = order if limit is None else order[:limit]
    names = _usernames(pk for pair in shown for pk in pending[pair])
    # What the adjudicator reads to choose a pair: the question and the page's title.
    texts = dict(Query.objects.filter(pk__in={q for q, _ in shown}).values_list("pk", "text"))
    titles = dict(Page.objects.filter(pk__in={p for _, p in shown}).values_list("pk", "title"))
    items = [
        Disagreement(
            query_pk=q,
            page_pk=p,
            query_id=query_ids[q],
            doc_id=doc_ids[p],
            query_text=texts.get(q, ""),
            page_title=titles.get(p, ""),
            grades=sorted(((names[a], g) for a, g in pending[(q, p)].items()), key=lambda item: item[0]),
            label=label_resolve(list(pending[(q, p)].values())),
        )
        for q, p in shown
    ]
    return DisagreementList(total=len(order), items=items)


@dataclass
class PairJudgment:
    """One judgment of a pair as the adjudicator sees it. `current` is False for a
    person's earlier grade that their later one superseded (and for imports once people
    judged the pair)."""

    who: str
    source: str
    grade: int
    note: str
    seconds_spent: float | None
    created_at: datetime
    current: bool


@dataclass
class PairReview:
    query: Query
    page: Page
    judgments: list[PairJudgment]
    label: int | None
    adjudicated: bool
    disagreement: bool


def pair_review(golden_set: GoldenSet, *, query_pk: int, page_pk: int) -> PairReview | None:
    """Everything an adjudicator needs about one pair of the set: the query, the page, every
    judgment newest first, the label it resolves to now. None if the pair is not the set's
    or nobody judged it. Three queries."""
    query = Query.objects.filter(golden_set=golden_set, pk=query_pk).first()
    page = Page.objects.filter(corpus_id=golden_set.corpus_id, pk=page_pk).first()
    if query is None or page is None:
        return None
    rows = list(Judgment.objects.filter(query=query, page=page).select_related("annotator").order_by("-id"))
    if not rows:
        return None
    people = any(j.source == Judgment.Source.HUMAN for j in rows)
    seen: set[int] = set()
    judgments = []
    adjudication = None
    imported_seen = False
    for row in rows:
        if row.source == Judgment.Source.HUMAN:
            current = row.annotator_id not in seen
            seen.add(row.annotator_id)
        elif row.source == Judgment.Source.ADJUDICATED:
            current = adjudication is None
            adjudication = adjudication if adjudication is not None else row.grade
        else:
            current = not people and not imported_seen
            imported_seen = True
        who = row.annotator.get_username() if row.annotator else "import"
        judgments.append(PairJudgment(who, row.source, row.grade, row.note, row.seconds_spent, row.created_at, current))
    latest_people = [j.grade for j in judgments if j.source == Judgment.Source.HUMAN and j.current]
    return PairReview(
        query=query,
        page=page,
        judgments=judgments,
        label=label_of((row.grade, row.source, row.annotator_id) for row in rows),
        adjudicated=adjudication is not None,
        disagreement=is_disagreement(latest_people, golden_set.relevance_threshold),
    )


# --- annotator quality ------------------------------------------------------------------


@dataclass
class AnnotatorQuality:
    """One person's work on a set.

    `judgments`: human judgments recorded (every one, superseded included), `gold_answers`
    their hidden gold checks. `gold_exact` / `gold_within_one`: share of gold answers equal
    to / at most one grade from the expected grade. `active_seconds`: judging time over
    sessions: judgments and gold answers in time order, a new session after a gap of more
    than SESSION_GAP_SECONDS; a session lasts from its first submission, less the seconds
    spent on that first pair, to its last one, so the time between pairs while judging
    counts (reading, loading) and breaks do not. A session never counts less than the
    seconds spent on its pairs: submissions closer together than that were not timed as
    they happened (recorded in bulk, as the demo's are). `judgments_per_hour` = (judgments + gold
    answers) / active hours. `median_seconds`: median seconds spent per pair, over those
    with a recorded time. `adjudicated_pairs` / `adjudicated_agreement`: pairs the person
    judged that an adjudicator then decided, and the share where the person's latest grade
    is the decided one.
    """

    username: str
    judgments: int = 0
    gold_answers: int = 0
    gold_exact: float | None = None
    gold_within_one: float | None = None
    active_seconds: float = 0.0
    judgments_per_hour: float | None = None
    median_seconds: float | None = None
    adjudicated_pairs: int = 0
    adjudicated_agreement: float | None = None


def _active_seconds(events: list[tuple[datetime, float | None]]) -> float:
    """Judging time of (submitted at, seconds spent) events; see AnnotatorQuality."""
    total = 0.0
    session: list[tuple[datetime, float | None]] = []

    def close() -> float:
        if not session:
            return 0.0
        span = (session[-1][0] - session[0][0]).total_seconds() + (session[0][1] or 0.0)
        measured = sum(spent or 0.0 for _, spent in session)
        return max(span, measured)

    for event in sorted(events, key=lambda event: event[0]):
        if session and (event[0] - session[-1][0]).total_seconds() > SESSION_GAP_SECONDS:
            total += close()
            session = []
        session.append(event)
    return total + close()


def annotator_quality(golden_set: GoldenSet) -> list[AnnotatorQuality]:
    """Quality figures of every annotator of the set and everyone who judged in it, by
    username. Six queries."""
    events: dict[int, list[tuple[datetime, float | None]]] = defaultdict(list)
    judgment_counts: dict[int, int] = defaultdict(int)
    rows = Judgment.objects.filter(query__golden_set=golden_set, source=Judgment.Source.HUMAN).values_list(
        "annotator_id", "created_at", "seconds_spent"
    )
    for pk, created_at, spent in rows.iterator(chunk_size=20_000):
        events[pk].append((created_at, spent))
        judgment_counts[pk] += 1

    gold: dict[int, list[tuple[int, int]]] = defaultdict(list)
    answers = GoldAnswer.objects.filter(task__golden_set=golden_set).values_list(
        "annotator_id", "created_at", "seconds_spent", "grade", "expected_grade"
    )
    for pk, created_at, spent, grade, expected in answers.iterator(chunk_size=20_000):
        events[pk].append((created_at, spent))
        gold[pk].append((grade, expected))

    decided = _adjudicated_pairs(golden_set)
    people, _ = _stream_people_grades(golden_set, keep=set(decided))
    compared: dict[int, int] = defaultdict(int)
    agreed: dict[int, int] = defaultdict(int)
    for pair, grade in decided.items():
        for pk, own in people.get(pair, {}).items():
            compared[pk] += 1
            agreed[pk] += own == grade

    members = get_user_model().objects.filter(holders_of(golden_set, [Membership.Role.ANNOTATOR])).values_list("pk", flat=True)
    names = _usernames(set(events) | set(members))
    result = []
    for pk, username in names.items():
        person = AnnotatorQuality(username=username, judgments=judgment_counts.get(pk, 0), gold_answers=len(gold.get(pk, ())))
        if person.gold_answers:
            person.gold_exact = sum(g == e for g, e in gold[pk]) / person.gold_answers
            person.gold_within_one = sum(abs(g - e) <= 1 for g, e in gold[pk]) / person.gold_answers
        person.active_seconds = _active_seconds(events.get(pk, []))
        if person.active_seconds > 0:
            person.judgments_per_hour = (person.judgments + person.gold_answers) / (person.active_seconds / 3600)
        spent = [s for _, s in events.get(pk, []) if s is not None]
        person.median_seconds = statistics.median(spent) if spent else None
        person.adjudicated_pairs = compared.get(pk, 0)
        if person.adjudicated_pairs:
            person.adjudicated_agreement = agreed[pk] / person.adjudicated_pairs
        result.append(person)
    result.sort(key=lambda person: person.username)
    return result


# --- gold checks -------------------------------------------------------------------------


@dataclass
class GoldCheckSummary:
    tasks: int
    answers: int
    gold_share: float


def gold_check_summary(golden_set: GoldenSet) -> GoldCheckSummary:
    settings = QueueSettings.objects.filter(golden_set=golden_set).first()
    return GoldCheckSummary(
        tasks=JudgingTask.objects.filter(golden_set=golden_set, kind=JudgingTask.Kind.GOLD).count(),
        answers=GoldAnswer.objects.filter(task__golden_set=golden_set).count(),
        gold_share=settings.gold_share if settings else QueueSettings._meta.get_field("gold_share").default,
    )
