"""Issue 27's acceptance simulation, on real data: nights of a Cranfield run with random
per-query noise and no real change send (almost) no drop alert, a real 5-point drop on a
slice of 150 queries is sent on its first night, and the detectable drop the pages show for
each slice is what an independent power calculation (statsmodels) gives.

The set is ../shared/data/cranfield as BEIR (225 queries, 1,400 abstracts, the original
qrels), its queries cut into three slices by a `part` field (150, 55 and 20 queries). Each
night is a real TREC run (stevinjs' standard BM25, 50 pages a query) perturbed the same way
every night: each page is missed with probability 1/10 (an approximate index's misses) and
each score jittered (reordering the top k_final). Nights are uploaded as series runs
(`import_run --series --measured-at`'s service), so they are scored by evaluation_compute
and checked by alerts_check on commit, the path nights Goldset fetched itself take.
"""

import json
import math
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.db.models import Q
from statsmodels.stats.power import TTestPower

from evaluation.alerts.slice_power import slice_power
from evaluation.models import Alert, Evaluation
from evaluation.selectors import evaluation_settings
from evaluation.services import run_import
from goldenset.models import GoldenSet
from goldenset.services import golden_set_import_beir, version_publish

pytestmark = [pytest.mark.shared_data, pytest.mark.django_db, pytest.mark.whole_system]

NIGHTS = 60
SERIES = "bm25 nightly"
DROPS = [Alert.Kind.DROP_VS_PREVIOUS_NIGHT, Alert.Kind.DROP_VS_MEDIAN]
MISS = 1 / 10
SLICES = {"a": 150, "b": 55, "c": 20}


@pytest.fixture
def cranfield(shared_data, tmp_path):
    """The Cranfield set with its queries in three slices, published; (set, version, base
    run {query: [(doc, score)]}, labels {query: {doc: grade}}, part of each query)."""
    source = shared_data / "cranfield"
    folder = tmp_path / "cranfield"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").symlink_to(source / "corpus.jsonl")
    (folder / "qrels" / "test.tsv").symlink_to(source / "qrels" / "test.tsv")
    queries = [json.loads(line) for line in (source / "queries.jsonl").open(encoding="utf-8")]
    parts = {}
    cuts = np.cumsum(list(SLICES.values()))
    for i, record in enumerate(queries):
        parts[record["_id"]] = list(SLICES)[int(np.searchsorted(cuts, i, side="right"))]
        record["metadata"] = {"part": parts[record["_id"]]}
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries), encoding="utf-8")
    golden_set_import_beir(directory=folder, slug="cranfield")
    golden_set = GoldenSet.objects.get(slug="cranfield")
    version = version_publish(golden_set=golden_set, note="Cranfield")
    assert version.query_slice_fields == ["part"]

    base = defaultdict(list)
    for line in (source / "runs" / "stevinjs_standard_bm25.run").open(encoding="utf-8"):
        query_id, _, doc_id, _, score, _ = line.split()
        base[query_id].append((doc_id, float(score)))
    labels = defaultdict(dict)
    for line in list((source / "qrels" / "test.tsv").open(encoding="utf-8"))[1:]:
        query_id, doc_id, grade = line.split("\t")
        labels[query_id][doc_id] = int(grade)
    return golden_set, version, base, labels, parts


def night_lines(base, rng, *, lose: set[str] = frozenset(), labels=None, lose_share: float = 0.0) -> list[str]:
    """One night: each page missed with probability MISS, scores jittered; for queries in
    `lose`, each relevant page is missed with `lose_share` more (the real drop)."""
    lines = []
    for query_id, entries in base.items():
        kept = []
        for doc_id, score in entries:
            extra = lose_share if query_id in lose and labels[query_id].get(doc_id, 0) >= 1 else 0.0
            if rng.random() < MISS + extra:
                continue
            kept.append((doc_id, score + rng.normal(0, 0.5)))
        kept.sort(key=lambda pair: -pair[1])
        lines += [f"{query_id} Q0 {doc_id} {rank} {score:.4f} sim\n" for rank, (doc_id, score) in enumerate(kept, 1)]
    return lines


def upload_night(golden_set, number: int, lines: list[str], capture):
    measured_at = datetime(2026, 9, 1, 2, tzinfo=UTC) + timedelta(days=number)
    with capture(execute=True):
        run = run_import(
            golden_set=golden_set,
            lines=lines,
            source_name=f"night{number}.run",
            system="bm25",
            stage="first_stage",
            name=f"night {number}",
            series=SERIES,
            measured_at=measured_at,
        )
    return run


def recall_per_query(lines: list[str], labels, k: int) -> dict[str, float]:
    """recall@k of each query with a relevant page (grade >= 1), computed here from the lines."""
    ranked = defaultdict(list)
    for line in lines:
        query_id, _, doc_id, rank, _, _ = line.split()
        ranked[query_id].append((int(rank), doc_id))
    found = {}
    for query_id, grades in labels.items():
        relevant = {doc for doc, grade in grades.items() if grade >= 1}
        if relevant:
            top = {doc for _, doc in sorted(ranked.get(query_id, []))[:k]}
            found[query_id] = len(top & relevant) / len(relevant)
    return found


def test_noise_alone_sends_at_most_alpha_of_nights_and_a_real_slice_drop_is_sent_at_once(cranfield, django_capture_on_commit_callbacks):
    golden_set, version, base, labels, parts = cranfield
    settings = evaluation_settings(golden_set)
    rng = np.random.default_rng(27)
    sent_nights, noise_nights = 0, 0
    last_two = []
    for number in range(NIGHTS):
        lines = night_lines(base, rng)
        run = upload_night(golden_set, number, lines, django_capture_on_commit_callbacks)
        drops = Alert.objects.filter(run=run, kind__in=DROPS)
        sent_nights += drops.filter(within_noise=False).exists()
        noise_nights += drops.filter(within_noise=True).exists()
        last_two = [*last_two[-1:], (run, lines)]
    assert Evaluation.objects.filter(version=version, status=Evaluation.Status.DONE).count() == NIGHTS

    # Without the test, a plain 3-point rule would have paged on these nights.
    assert noise_nights >= 5
    assert sent_nights / NIGHTS <= settings.alert_alpha
    every = Alert.objects.filter(kind__in=DROPS)
    assert all(alert.p_value is not None and alert.queries_compared for alert in every)
    assert (
        every.filter(within_noise=True).filter(Q(message__contains="within noise: p = ")).count() == every.filter(within_noise=True).count()
    )

    # The detectable drop each slice shows, against statsmodels on the last two nights'
    # paired differences, computed here from the run lines.
    (_, before_lines), (latest, latest_lines) = last_two
    shown = slice_power(Evaluation.objects.get(run=latest, version=version))
    k = version.k_first
    before, after = recall_per_query(before_lines, labels, k), recall_per_query(latest_lines, labels, k)
    figures = 2 + len(SLICES)  # recall@k_first and recall@k_final overall, one recall per slice
    alpha = settings.alert_alpha / (2 * figures)
    for name, members in [("", set(before)), *((f"query:part={p}", {q for q in before if parts[q] == p}) for p in SLICES)]:
        differences = np.array([before[q] - after[q] for q in sorted(members)])
        sd = differences.std(ddof=1)
        expected = TTestPower().solve_power(nobs=len(differences), alpha=alpha, power=settings.alert_power, alternative="larger") * sd
        power = shown[name]
        assert (power.paired, power.queries) == (True, len(differences))
        assert power.detectable_points == pytest.approx(expected * 100, rel=1e-4)
        assert power.underpowered == (expected * 100 > settings.alert_drop_points)
    assert shown["query:part=c"].underpowered and shown["query:part=c"].needed > SLICES["c"]

    # A real drop: slice a's relevant pages missed 8% more often, about 5 points of recall.
    lose = {q for q, p in parts.items() if p == "a"}
    recall_a = np.mean([after[q] for q in lose if q in after])
    lines = night_lines(base, rng, lose=lose, labels=labels, lose_share=0.05 / recall_a)
    run = upload_night(golden_set, NIGHTS, lines, django_capture_on_commit_callbacks)
    dropped = recall_per_query(lines, labels, k)
    shift = np.mean([after[q] - dropped[q] for q in lose if q in after]) * 100
    assert 3.5 < shift < 7
    sent = Alert.objects.filter(run=run, kind__in=DROPS, slice="query:part=a", within_noise=False)
    assert sent.exists(), list(Alert.objects.filter(run=run).values_list("message", flat=True))
    assert sent.first().p_value <= alpha
    assert math.isfinite(sent.first().detectable_points)
