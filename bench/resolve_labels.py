"""Label resolution at publish time: goldenset.selectors.resolved_labels (adjudication, else
the lower median of each person's latest grade, else the import) against the rule it
replaced (the latest judgment of each pair), over the same judgments.

    .venv/bin/python bench/resolve_labels.py [--single 700000 --multi 72500 --judges 3]
        [--rounds 3] [--seed 20240601]
        [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_resolve]

Creates the database named by --database-url (it must not exist beforehand), migrates it,
and loads by COPY, the same for the same seed: one golden set of 10,000 queries over a
corpus of as many pages as needed, --single pairs with one imported judgment each, and
--multi pairs with one imported judgment and one human judgment by each of --judges
people (one pair in ten also adjudicated): --single + --multi * (judges + 1.1) judgments
(1,000,000 by default). Then it times, --rounds times each, back to back, the median
reported: resolved_labels(golden_set) and the old latest-judgment loop, both one ordered
query streamed in chunks of 20,000 rows. It checks that both give the same labels on the
single-judge pairs. The database is dropped at the end, even when a step fails.
"""

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.scratch import django_setup, scratch_database  # noqa: E402  (needs the repository on sys.path)

QUERIES = 10_000


def latest_judgment_labels(golden_set) -> list[tuple[int, int, int]]:
    """The rule resolved_labels replaced: each pair's latest judgment (highest id)."""
    from goldenset.models import Judgment

    rows = (
        Judgment.objects.filter(query__golden_set=golden_set)
        .order_by("query_id", "page_id", "-id")
        .values_list("query_id", "page_id", "grade")
    )
    labels, last = [], None
    for query_pk, page_pk, grade in rows.iterator(chunk_size=20_000):
        if (query_pk, page_pk) != last:
            labels.append((query_pk, page_pk, grade))
            last = (query_pk, page_pk)
    return labels


def load(args: argparse.Namespace):
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from goldenset.models import Corpus, GoldenSet, Judgment, Membership, Page, Query, default_team
    from lib.bulk import bulk_insert

    call_command("migrate", verbosity=0)
    rng = random.Random(args.seed)
    pairs = args.single + args.multi
    pages_per_query = -(-pairs // QUERIES)
    page_count = pages_per_query * 2
    now = timezone.now()
    with transaction.atomic():
        corpus = Corpus.objects.create(slug="bench", name="bench", team=default_team())
        golden_set = GoldenSet.objects.create(slug="bench", name="bench", corpus=corpus, team=corpus.team)
        people = [get_user_model().objects.create_user(f"judge{n}") for n in range(args.judges + 1)]
        Membership.objects.create(user=people[-1], golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
        bulk_insert(
            Page._meta.db_table,
            ["corpus_id", "doc_id", "title", "text", "url", "has_text", "metadata", "content_hash", "created_at"],
            ((corpus.id, f"d{n}", "", "", "", True, "{}", "h", now) for n in range(page_count)),
        )
        bulk_insert(
            Query._meta.db_table,
            ["golden_set_id", "query_id", "text", "has_text", "metadata", "created_at"],
            ((golden_set.id, f"q{n}", "", True, "{}", now) for n in range(QUERIES)),
        )
        page_pks = list(Page.objects.filter(corpus=corpus).order_by("id").values_list("id", flat=True))
        query_pks = list(Query.objects.filter(golden_set=golden_set).order_by("id").values_list("id", flat=True))

        def rows():
            n = 0
            for query_pk in query_pks:
                for page_pk in rng.sample(page_pks, pages_per_query):
                    if n >= pairs:
                        return
                    yield (query_pk, page_pk, rng.randint(0, 3), "imported", None)
                    if n >= args.single:
                        for person in people[:-1]:
                            yield (query_pk, page_pk, rng.randint(0, 3), "human", person.pk)
                        if rng.random() < 0.1:
                            yield (query_pk, page_pk, rng.randint(0, 3), "adjudicated", people[-1].pk)
                    n += 1

        written = bulk_insert(
            Judgment._meta.db_table,
            ["query_id", "page_id", "grade", "source", "annotator_id", "note", "page_hash", "created_at"],
            ((q, p, g, s, a, "", "h", now) for q, p, g, s, a in rows()),
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return golden_set, written


def run(args: argparse.Namespace) -> None:
    django_setup(args.database_url)
    from goldenset.selectors import resolved_labels

    with scratch_database(args.database_url):
        print("loading ...", file=sys.stderr)
        golden_set, written = load(args)
        times = {"resolved_labels": [], "latest judgment": []}
        results = {}
        for _ in range(args.rounds):
            for name, function in (("resolved_labels", resolved_labels), ("latest judgment", latest_judgment_labels)):
                start = time.perf_counter()
                results[name] = function(golden_set)
                times[name].append(time.perf_counter() - start)
    new, old = results["resolved_labels"], results["latest judgment"]
    assert [(q, p) for q, p, _ in new] == [(q, p) for q, p, _ in old], "both rules must label the same pairs"
    single = sum(1 for (_, _, a), (_, _, b) in zip(new, old) if a == b)
    print(
        f"data: {written:,} judgments on {len(new):,} pairs ({args.single:,} imported only, {args.multi:,} "
        f"with an import and {args.judges} people, one in ten adjudicated), PostgreSQL, {args.rounds} rounds"
    )
    for name, values in times.items():
        print(f"  {name:16s} median {statistics.median(values):6.2f} s  (rounds: {', '.join(f'{v:.2f}' for v in values)})")
    ratio = statistics.median(times["resolved_labels"]) / statistics.median(times["latest judgment"])
    print(
        f"  resolved_labels / latest judgment: {ratio:.2f}x; labels equal on {single:,} of {len(new):,} pairs "
        f"(every single-judge pair, and multi-judged ones where the rules happen to agree)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--single", type=int, default=700_000)
    parser.add_argument("--multi", type=int, default=72_500)
    parser.add_argument("--judges", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/goldset_bench_resolve")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
