import json

from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from evaluation.models import Completeness, Score
from evaluation.reports.completeness import run_completeness
from evaluation.selectors import evaluation_settings
from evaluation.services import golden_set_evaluate_now
from evaluation.weighted import evaluations_weighted
from goldenset.models import Chunking, GoldenSet
from goldenset.selectors import version_get


class Command(BaseCommand):
    help = (
        "Evaluate every run of a golden set against a version (the latest unless --version), now, in this "
        "process, and print the results overall and per slice. Values are fractions in [0, 1]; queries with no "
        "relevant page are left out of the averages and counted. Beside each record: Judged@k_final and "
        "Judged@k_first (share of the run's top k with a label), and overall the leave-one-run-out figures "
        "(scores without the pages only the run's system pooled; changes in points). A run whose Judged@k_final "
        "is under the set's floor is marked unreliable. A run of a chunking has a second, chunk-level record: its "
        "chunks against the labels projected onto the chunking, with evidence recall@k and prompt tokens@k_final "
        "(the document-level record maps its chunks to their documents). A version drawn from a query log has, on "
        "each run's overall record, the traffic-weighted estimate of recall@k_first, recall@k_final, nDCG@10 and MRR "
        "with its 95% interval, overall and per stratum, over the drawn queries with a relevant page; queries added "
        "by hand are counted apart (unweighted_queries), never weighted."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # Django's own --version gives way to ours: the golden set version.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("--version", type=int, dest="number", help="version number (default: the latest)")
        parser.add_argument("--format", choices=["table", "json"], default="table", dest="fmt")

    def handle(self, *args, slug, number, fmt, **options):
        golden_set = GoldenSet.objects.filter(slug=slug).first()
        if golden_set is None:
            raise CommandError(f"no golden set {slug!r}")
        try:
            version = version_get(golden_set, number)
        except Http404 as exc:
            raise CommandError(str(exc)) from exc
        evaluations = golden_set_evaluate_now(golden_set, version)
        if not evaluations:
            raise CommandError(f"golden set {slug!r} has no runs (upload one with import_run)")
        settings = evaluation_settings(golden_set)
        weighted = evaluations_weighted(evaluations)
        records = []
        for evaluation in evaluations:
            by_slice: dict[tuple[str, str], dict] = {}
            counts: dict[tuple[str, str], int] = {}
            for score in Score.every_level.filter(evaluation=evaluation).order_by("id"):
                by_slice.setdefault((score.level, score.slice), {})[score.metric] = round(score.value, 6)
                counts.setdefault((score.level, score.slice), score.queries_averaged)
            completeness = {row.slice: row for row in Completeness.objects.filter(evaluation=evaluation)}
            run = evaluation.run
            for (level, slice_name), metrics in by_slice.items():
                record = {
                    "run": run.name,
                    "system": run.system,
                    "stage": run.stage,
                    "version": version.number,
                    # A run of a chunking has a row at each level (SEMANTICS.md): chunks
                    # mapped to their documents, and chunks against the projected labels.
                    "level": level,
                    "chunking": run.chunking.name if run.chunking else Chunking.DOCUMENTS,
                    "slice": slice_name or None,
                    "queries": counts[(level, slice_name)],
                    "metrics": metrics,
                    "completeness": _completeness(completeness.get(slice_name), run, version, settings)
                    if level == Score.Level.DOCUMENT
                    else None,
                }
                if level == Score.Level.DOCUMENT and not slice_name and evaluation.pk in weighted:
                    figures = weighted[evaluation.pk]
                    record["weighted"] = figures.to_dict()
                    record["weighted_strata"] = figures.strata_dict()
                    record["unweighted_queries"] = figures.unweighted_queries
                if level == Score.Level.CHUNK:
                    record["prompt_tokens"] = {"k": version.k_final, "value": evaluation.prompt_tokens_k_final}
                records.append(record)
        if fmt == "json":
            self.stdout.write(json.dumps(records, indent=2, ensure_ascii=False))
            return
        self._table(records, version, evaluations)
        self._weighted(records)

    def _weighted(self, records):
        for r in records:
            if not r.get("weighted"):
                continue
            figures = ", ".join(
                f"{metric} {found['estimate']:.4f} [{found['low']:.4f}, {found['high']:.4f}]" for metric, found in r["weighted"].items()
            )
            queries = max(found["queries"] for found in r["weighted"].values())
            line = f"{r['run']}: for the traffic (95% interval, {queries} drawn queries): {figures}"
            if r["unweighted_queries"]:
                line += f"; {r['unweighted_queries']} queries added by hand are not in the weighted estimate"
            self.stdout.write(line)

    def _table(self, records, version, evaluations):
        metric_names = list(evaluations[0].metrics)
        self.stdout.write(
            f"version {version.number} ({version.short_hash}); values are fractions; k_first={version.k_first}, k_final={version.k_final}"
        )
        judged = f"judged@{version.k_final}"
        header = ["run", "slice", "queries", *metric_names, judged]
        rows = [
            [
                r["run"] + (" (chunk level)" if r["level"] == Score.Level.CHUNK else ""),
                r["slice"] or "all",
                str(r["queries"]),
                *(f"{r['metrics'].get(m, float('nan')):.4f}" for m in metric_names),
                f"{r['completeness']['judged_at_k_final']:.4f}" if r["completeness"] else "-",
            ]
            for r in records
        ]
        widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
        for row in [header, *rows]:
            self.stdout.write("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)))
        for r in records:
            if r["slice"] is None and r["completeness"] and r["completeness"]["warning"]:
                self.stdout.write(f"{r['run']}: {r['completeness']['warning']}")
        for evaluation in evaluations:
            if evaluation.unanswered_count or evaluation.no_relevant_count:
                self.stdout.write(
                    f"{evaluation.run.name}: {evaluation.unanswered_count} queries unanswered (scored 0), "
                    f"{evaluation.no_relevant_count} with no relevant page (left out)"
                )


def _completeness(row: Completeness | None, run, version, settings) -> dict | None:
    """The record's completeness object: Judged@k (fractions) for an overall or query-slice
    record, with the unreliable-scores warning and the leave-one-run-out figures (changes
    in points) on the overall one; None for a page slice, which has no such figures."""
    if row is None:
        return None
    found = {
        "k_final": version.k_final,
        "judged_at_k_final": round(row.judged_at_k_final, 6),
        "k_first": version.k_first,
        "judged_at_k_first": round(row.judged_at_k_first, 6),
        "queries": row.queries,
        "judged_floor": settings.judged_floor,
    }
    if not row.slice:
        found["warning"] = run_completeness(row, run, version, settings, run.golden_set.slug).warning or None
        found["leave_one_run_out"] = (
            None
            if row.loro_other_runs is None
            else {
                "depth": row.loro_depth,
                "other_runs": row.loro_other_runs,
                f"recall@{version.k_first}": round(row.loro_recall_k_first, 6),
                f"recall@{version.k_first}_change_points": round(row.loro_recall_change_points, 4),
                "ndcg@10": round(row.loro_ndcg_10, 6),
                "ndcg@10_change_points": round(row.loro_ndcg_change_points, 4),
                "unique_relevant_pages": row.unique_relevant_count,
                "emptied_queries": row.loro_emptied_queries,
            }
        )
    return found
