"""Labels imported through the API at the per-request cap, against the import service alone.

    .venv/bin/python bench/api_import.py [--labels 200000] [--queries 20000] [--pages 100000]
        [--timeout 120] [--rounds 3] [--seed 20261202]
        [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_api_import]

Hardening finding 5 saw 10^6 labels sent as JSON answer 500 at gunicorn's 30 s timeout
although every judgment was committed: the answer lied. The API now refuses more labels
in one request than MAX_LABELS_PER_REQUEST (api/views/judgments.py) and the deployment's
gunicorn runs with --timeout 120 (Dockerfile, docker-compose.yml). This bench checks that
a request at the cap finishes well inside that timeout, so no accepted request can be cut
off after its commit:

- data: a golden set of --queries queries over --pages pages (made by the real
  golden_set_create), and --labels labels on them, each (query, page) once;
- time: POST /api/v1/golden-sets/<slug>/judgments/ with the labels as JSON, to gunicorn with
  one sync worker (DEBUG off, --timeout as given), from the request to the response, each
  round on a fresh set; against the same labels through qrels_import in this process (the
  service alone), in the same run. Median of --rounds.
- target: the API's time under half the worker timeout (PASS), with room for a slower
  machine or a busier database.

The database is created for the run and dropped at the end, even when a step fails.
"""

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.scratch import database_url_argument, django_setup, gunicorn_started, scratch_database, server_version  # noqa: E402


def make_set(slug: str, queries: int, pages: int) -> None:
    from goldenset.models import default_grade_scale
    from goldenset.services import GoldenSetSource, golden_set_create
    from lib.formats import JsonRecord

    source = GoldenSetSource(
        pages=[JsonRecord(line=n, id=f"kb/{n}", title=f"page {n}", text=f"text {n}") for n in range(pages)],
        queries=[JsonRecord(line=n, id=f"q{n}", text=f"question {n}") for n in range(queries)],
        qrels={},
        grade_scale=default_grade_scale(),
    )
    golden_set_create(slug=slug, name=slug, source=source)


def labels_for(count: int, queries: int, pages: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    pairs: set[tuple[int, int]] = set()
    while len(pairs) < count:
        pairs.add((rng.randrange(queries), rng.randrange(pages)))
    return [{"query_id": f"q{q}", "doc_id": f"kb/{p}", "grade": rng.choice((0, 1, 2, 3))} for q, p in sorted(pairs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labels", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--timeout", type=int, default=120, help="gunicorn's worker timeout, as the deployment sets it")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20261202)
    database_url_argument(parser, "goldset_bench_api_import")
    args = parser.parse_args()

    django_setup(args.database_url)
    from django.core.management import call_command

    with scratch_database(args.database_url):
        call_command("migrate", verbosity=0)
        from django.contrib.auth import get_user_model

        from api.services import api_token_create
        from api.views.judgments import MAX_LABELS_PER_REQUEST
        from goldenset.models import GoldenSet, Membership
        from goldenset.services import membership_grant, qrels_import

        if args.labels > MAX_LABELS_PER_REQUEST:
            raise SystemExit(f"--labels {args.labels} is over the API's cap of {MAX_LABELS_PER_REQUEST} a request")
        owner = get_user_model().objects.create_user("bench", password="bench-pw")
        secret = api_token_create(owner=owner, scope="write")[1]
        labels = labels_for(args.labels, args.queries, args.pages, args.seed)
        body = json.dumps({"labels": labels}).encode()
        lines = [f"{label['query_id']} 0 {label['doc_id']} {label['grade']}\n" for label in labels]
        print(
            f"data: {args.queries:,} queries, {args.pages:,} pages, {len(labels):,} labels a request "
            f"({len(body) / 1e6:.1f} MB of JSON); cap {MAX_LABELS_PER_REQUEST:,}; PostgreSQL {server_version()}"
        )

        service, api = [], []
        with (
            tempfile.TemporaryDirectory() as work,
            gunicorn_started(args.database_url, Path(work) / "gunicorn.log", timeout=args.timeout) as (base, _),
        ):
            for round_ in range(args.rounds):
                make_set(f"service-{round_}", args.queries, args.pages)
                started = time.perf_counter()
                qrels_import(golden_set_slug=f"service-{round_}", lines=lines, source_name="labels")
                service.append(time.perf_counter() - started)

                make_set(f"api-{round_}", args.queries, args.pages)
                membership_grant(user=owner, golden_set=GoldenSet.objects.get(slug=f"api-{round_}"), role=Membership.Role.MANAGER)
                started = time.perf_counter()
                response = requests.post(
                    f"{base}/api/v1/golden-sets/api-{round_}/judgments/",
                    data=body,
                    timeout=args.timeout * 2,
                    headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
                )
                api.append(time.perf_counter() - started)
                if response.status_code != 201 or response.json()["judgments_created"] != len(labels):
                    raise SystemExit(f"round {round_}: the API answered {response.status_code}: {response.text[:500]}")

        api_s, service_s = statistics.median(api), statistics.median(service)
        verdict = "PASS" if api_s < args.timeout / 2 else "MISS"
        print(f"import through the service alone   {service_s:7.2f} s")
        print(
            f"POST .../judgments/ on gunicorn    {api_s:7.2f} s   {api_s / service_s:.2f}x the service   "
            f"target under {args.timeout / 2:.0f} s (half the {args.timeout} s worker timeout)   {verdict}   "
            f"(median of {args.rounds})"
        )


if __name__ == "__main__":
    main()
