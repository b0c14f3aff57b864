import json

from django.core.management.base import BaseCommand, CommandError

from evaluation.alerts.selectors import alert_records
from evaluation.models import Incident
from goldenset.models import GoldenSet


class Command(BaseCommand):
    help = (
        "List every alert of a golden set, newest first: kind, metric, slice, value and reference (fractions), "
        "within_noise (true: a drop past the threshold that the paired test could not tell from chance; recorded, "
        "shown, never sent), the incident it belongs to and that incident's state (open, acknowledged, muted, "
        "resolved; 'within_noise' for a within-noise alert, which joins no incident), and its run and night. "
        "--state keeps the alerts whose incident is in that state. Alerts of archived or partial runs are left out, "
        "as on the alerts page."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("--format", choices=["table", "json"], default="table", dest="fmt", help="table (default) or json")
        parser.add_argument("--state", choices=Incident.State.values, help="only alerts whose incident is in this state")

    def handle(self, *args, slug, fmt, state, **options):
        golden_set = GoldenSet.objects.filter(slug=slug).first()
        if golden_set is None:
            raise CommandError(f"no golden set {slug!r}")
        records = alert_records(golden_set, state=state)
        if fmt == "json":
            self.stdout.write(json.dumps(records, indent=2, ensure_ascii=False))
            return
        if not records:
            self.stdout.write(f"no alert{' in state ' + state if state else ''} in {slug}")
            return
        header = ["id", "kind", "metric", "slice", "value", "reference", "noise", "incident", "state", "run", "night"]
        rows = [
            [
                str(r["id"]),
                r["kind"],
                r["metric"],
                r["slice"] or "all",
                f"{r['value']:.3f}",
                "-" if r["reference"] is None else f"{r['reference']:.3f}",
                "yes" if r["within_noise"] else "no",
                "-" if r["incident"] is None else f"#{r['incident']}",
                r["state"] or "-",
                r["run"] or f"endpoint {r['endpoint']}",
                (r["night"] or "-")[:16].replace("T", " "),
            ]
            for r in records
        ]
        widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
        self.stdout.write("values are fractions; noise: within noise, recorded but not sent")
        for row in [header, *rows]:
            self.stdout.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
