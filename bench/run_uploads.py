"""How long the runs page's upload request holds its web worker for a large run: read in the
request (as every upload was) against spooled for a worker (over RUN_INLINE_UPLOAD_MB), in one run.

    .venv/bin/python bench/run_uploads.py [--queries 10000] [--depth 220]

In a scratch PostgreSQL database: a set of `queries` queries over 4 x `queries` id-only
pages, and one TREC run of `depth` entries a query (about 88 MB at the defaults, under
MAX_REQUEST_MB). The same file is POSTed to the runs page twice through Django's test
client, as a logged-in manager, with tasks on the web server's background thread (the
embedded default, standing for a worker): once with RUN_INLINE_UPLOAD_MB above its size
(parsed and stored in the request), once at the default 8 MB (spooled, the job run after).
Printed: the file's size, each request's seconds, and the spooled job's seconds from the
request's answer until its run was stored.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.scratch import database_url_argument, django_setup, scratch_database  # noqa: E402  (needs the repository on sys.path)


def run_file(path: Path, query_ids: list[str], doc_ids: list[str], depth: int) -> int:
    with path.open("w", encoding="utf-8") as out:
        for q, query_id in enumerate(query_ids):
            for rank in range(1, depth + 1):
                doc_id = doc_ids[(q * 7919 + rank * 104729) % len(doc_ids)]
                out.write(f"{query_id} Q0 {doc_id} {rank} {1000 - rank / 7:.4f} bench\n")
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=220)
    database_url_argument(parser, "goldset_bench_run_uploads")
    args = parser.parse_args()
    spool = tempfile.mkdtemp(prefix="goldset-bench-spool-")
    django_setup(args.database_url, RUN_UPLOAD_SPOOL=spool)
    with scratch_database(args.database_url):
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.test import Client
        from django.urls import reverse

        from bench.data import GRADE_SCALE, doc_id_of, question_records
        from evaluation.models import Run, RunUploadJob
        from goldenset.models import GoldenSet, Membership
        from goldenset.services import GoldenSetSource, golden_set_create, membership_grant
        from goldset.celery import tasks_inline, tasks_off_request_thread
        from lib.formats import JsonRecord

        call_command("migrate", verbosity=0)
        query_ids = [f"q{n}" for n in range(args.queries)]
        doc_ids = [doc_id_of(n) for n in range(4 * args.queries)]
        source = GoldenSetSource(
            pages=[JsonRecord(line=n, id=doc_id, title=doc_id) for n, doc_id in enumerate(doc_ids, 1)],
            queries=question_records(query_ids),
            qrels={(query_ids[0], doc_ids[0]): 1},
            grade_scale=GRADE_SCALE,
        )
        golden_set_create(slug="uploads", name="upload bench", source=source)
        golden_set = GoldenSet.objects.get(slug="uploads")
        manager = get_user_model().objects.create_user("manager", password="bench")
        membership_grant(user=manager, golden_set=golden_set, role=Membership.Role.MANAGER)
        path = Path(spool).parent / "goldset-bench-upload.run"
        size = run_file(path, query_ids, doc_ids, args.depth)
        print(f"run file: {args.queries:,} queries x {args.depth} entries, {size / 2**20:.1f} MB; MAX_REQUEST_MB {settings.MAX_REQUEST_MB}")

        client = Client()
        client.force_login(manager)
        url = reverse("runs", kwargs={"slug": golden_set.slug})
        tasks_off_request_thread()  # as the web server runs tasks without a broker
        try:
            for label, inline_mb in (("read in the request", size // 2**20 + 1), ("spooled for a worker", 8)):
                settings.RUN_INLINE_UPLOAD_MB = inline_mb
                with path.open("rb") as handle:
                    started = time.perf_counter()
                    response = client.post(url, {"file": handle, "system": label, "stage": "first_stage"})
                    answered = time.perf_counter() - started
                assert response.status_code == 302, response.content[:2000]
                line = f"{label:>22}: the request answered in {answered:6.2f} s"
                if inline_mb == 8:
                    tasks_inline()  # waits for the job queued on the background thread
                    job = RunUploadJob.objects.get()
                    took = (job.finished_at - job.created_at).total_seconds()
                    line += f"; its job ({job.status}) stored the run {took:6.2f} s after the upload was recorded"
                    tasks_off_request_thread()
                run = Run.objects.get(system=label)
                print(f"{line} ({run.entry_count:,} entries)")
        finally:
            tasks_inline()
            path.unlink(missing_ok=True)
            Path(spool).rmdir()


if __name__ == "__main__":
    main()
