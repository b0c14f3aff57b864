from django.core.management.base import BaseCommand, CommandError

from lib.errors import GoldsetError
from monitoring.endpoints.services import endpoint_add
from monitoring.management.commands._lookup import golden_set_named
from monitoring.models import (
    DEFAULT_INDEX_PROBE_SCHEDULE,
    DEFAULT_INDEX_RECALL_FLOOR,
    DEFAULT_PROBE_SCHEDULE,
    DEFAULT_RUN_SCHEDULE,
    Endpoint,
)


class Command(BaseCommand):
    help = (
        "Register the HTTP endpoint of one stage of a retrieval system for nightly runs and canary probes. "
        "A preset fills in the request and where the answer holds its hits (goldset: POST {query, query_id, k} "
        "answering {results: [{doc_id, score}]}; opensearch/elasticsearch: _search; solr: /select; vespa: "
        "/search/); generic takes them from the options. Templates hold {{query}}, {{query_id}} and {{k}}. "
        "A header's secret part names an environment variable ('Authorization: Bearer ${SEARCH_TOKEN}'), "
        "resolved by the worker at send time and never stored. With --exact-body or --exact-params (the same query asked "
        "exactly: brute force, OpenSearch script_score instead of knn, or a flag of your service) an index probe compares "
        "the two and reports ANN recall@k, per shard with --shard-path."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("--name", required=True, help="the endpoint's name within the set, e.g. prod-hybrid-first")
        parser.add_argument("--system", required=True, help="the retrieval system, e.g. prod-hybrid")
        parser.add_argument("--stage", required=True, choices=Endpoint.Stage.values)
        parser.add_argument("--preset", required=True, choices=Endpoint.Preset.values)
        parser.add_argument("--url", required=True, help="e.g. http://search:9200/wiki/_search")
        parser.add_argument("--series", default="", help="series its nightly runs join (default: '<name> nightly')")
        parser.add_argument("--method", choices=["GET", "POST"])
        parser.add_argument("--body-template", dest="body_template", help="JSON body with {{query}}, {{query_id}}, {{k}}")
        parser.add_argument("--params-template", dest="params_template", help="URL query string, e.g. 'q={{query}}&rows={{k}}'")
        parser.add_argument(
            "--header",
            dest="headers",
            action="append",
            default=[],
            metavar="'NAME: VALUE'",
            help="a request header; repeat for more. Secrets as ${ENV_VAR}",
        )
        parser.add_argument("--hits-path", dest="hits_path", help="dotted path of the hit list, e.g. hits.hits")
        parser.add_argument("--doc-id-path", dest="doc_id_path", help="in a hit, e.g. _id")
        parser.add_argument("--score-path", dest="score_path", help="in a hit, e.g. _score (empty: rank order)")
        parser.add_argument("--index-size-path", dest="index_size_path", help="in a search answer, the documents searched")
        parser.add_argument("--count-url", dest="count_url", help="a GET URL answering the index size, e.g. .../_count")
        parser.add_argument("--count-path", dest="count_path", help="in the count answer, e.g. count")
        parser.add_argument("--timeout", dest="timeout_seconds", type=float, help="seconds per request (default 10)")
        parser.add_argument("--retries", type=int, help="extra attempts on errors, 429 and 5xx (default 2)")
        parser.add_argument("--max-in-flight", dest="max_in_flight", type=int, help="requests open at once (default 8)")
        parser.add_argument("--max-per-second", dest="max_per_second", type=float, help="requests started per second (default 20)")
        parser.add_argument("--run-schedule", dest="run_schedule", help=f"cron line, UTC (default '{DEFAULT_RUN_SCHEDULE}')")
        parser.add_argument("--probe-schedule", dest="probe_schedule", help=f"cron line, UTC (default '{DEFAULT_PROBE_SCHEDULE}')")
        parser.add_argument(
            "--exact-body", dest="exact_body_template", help="JSON body of the exact (brute-force) request; turns the index probe on"
        )
        parser.add_argument(
            "--exact-params", dest="exact_params_template", help="URL query string of the exact request, e.g. '...&exact=true'"
        )
        parser.add_argument("--shard-path", dest="shard_path", help="in a hit, the shard it came from, e.g. _shard")
        parser.add_argument(
            "--index-probe-schedule",
            dest="index_probe_schedule",
            help=f"cron line, UTC, of the index probes (default '{DEFAULT_INDEX_PROBE_SCHEDULE}')",
        )
        parser.add_argument(
            "--index-recall-floor",
            dest="index_recall_floor",
            type=float,
            help=f"ANN recall@k (a fraction) under which an index alert is raised (default {DEFAULT_INDEX_RECALL_FLOOR})",
        )
        parser.add_argument("--disabled", action="store_true", help="register it without schedules running")

    def handle(self, *args, slug, name, system, stage, preset, url, series, headers, disabled, **options):
        golden_set = golden_set_named(slug)
        spec_options = {
            key: options[key]
            for key in (
                "method",
                "body_template",
                "params_template",
                "hits_path",
                "doc_id_path",
                "score_path",
                "index_size_path",
                "count_url",
                "count_path",
                "timeout_seconds",
                "retries",
                "max_in_flight",
                "max_per_second",
                "run_schedule",
                "probe_schedule",
                "exact_body_template",
                "exact_params_template",
                "shard_path",
                "index_probe_schedule",
                "index_recall_floor",
            )
            if options.get(key) is not None
        }
        try:
            endpoint = endpoint_add(
                golden_set=golden_set,
                name=name,
                system=system,
                stage=stage,
                preset=preset,
                url=url,
                series=series,
                headers="\n".join(headers),
                enabled=not disabled,
                **spec_options,
            )
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"endpoint {endpoint.name} of {slug}: {endpoint.system} {endpoint.stage}, {endpoint.get_preset_display()} at "
            f"{endpoint.url}; runs '{endpoint.run_schedule}', probes '{endpoint.probe_schedule}', series '{endpoint.series.name}'"
            + (
                f"; index probes '{endpoint.index_probe_schedule}' (ANN recall floor {endpoint.index_recall_floor:g})"
                if endpoint.exact_body_template or endpoint.exact_params_template
                else ""
            )
        )
