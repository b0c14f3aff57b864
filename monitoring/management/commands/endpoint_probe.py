import json

from django.conf import settings
from django.core.management.base import BaseCommand

from monitoring.endpoints.client import probe_sync
from monitoring.endpoints.services import endpoint_spec
from monitoring.management.commands._lookup import endpoint_named, golden_set_named
from monitoring.nightly.services import endpoint_depth, latest_version


class Command(BaseCommand):
    help = (
        "Try an endpoint with one query text: print the request as sent (secrets as ${VAR}), the raw answer and the "
        "ranking Goldset read from it, so that a wrong hits/doc id/score path shows at once."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("name", help="the endpoint's name")
        parser.add_argument("--query", required=True, help="the query text to send")
        parser.add_argument("--query-id", dest="query_id", default="probe", help="the query id to send (default 'probe')")
        parser.add_argument("--k", type=int, help="depth to ask (default: the stage's k of the latest version)")

    def handle(self, *args, slug, name, query, query_id, k, **options):
        golden_set = golden_set_named(slug)
        endpoint = endpoint_named(golden_set, name)
        version = latest_version(golden_set.pk)
        depth = k or (endpoint_depth(endpoint, version) if version else 10)
        answer = probe_sync(
            endpoint_spec(endpoint),
            query_id,
            query,
            depth,
            allowed_networks=settings.RETRIEVAL_ALLOWED_NETWORKS,
            env_prefix=settings.RETRIEVAL_HEADER_ENV_PREFIX,
        )
        write = self.stdout.write
        write(f"request: {answer.method} {answer.url}")
        for header, value in answer.headers:
            write(f"  {header}: {value}")
        if answer.body:
            write(f"  body: {answer.body}")
        status = f"HTTP {answer.status}" if answer.status is not None else "no answer"
        write(f"answer: {status} in {answer.latency_ms:.0f} ms")
        if answer.error:
            write(f"error: {answer.error}")
        raw = answer.raw_text
        try:
            raw = json.dumps(json.loads(raw), indent=2, ensure_ascii=False)[:20000]
        except (TypeError, ValueError):
            pass
        write(raw or "(empty)")
        if answer.truncated:
            write("(answer truncated)")
        write(f"ranking read ({len(answer.ranking)} of k={depth}):")
        for rank, (doc_id, score) in enumerate(answer.ranking, start=1):
            write(f"  {rank:>4}  {doc_id}  {score:g}")
        for problem in answer.problems:
            write(f"problem: {problem}")
