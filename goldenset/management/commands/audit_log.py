import json

from django.core.management.base import BaseCommand, CommandError

from goldenset.audit import audit_records
from goldenset.models import GoldenSet


class Command(BaseCommand):
    help = (
        "Print the golden set's audit trail, newest first: who did what to which object and when, with the values "
        "it changed (secrets are never recorded). Text lines by default; --format json prints one JSON array."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="slug of the golden set")
        parser.add_argument("--format", choices=("text", "json"), default="text", help="text lines (default) or a JSON array")
        parser.add_argument("--action", default="", help="only this action (token.revoke) or family of actions (token)")
        parser.add_argument("--user", default="", help="only the actions of this username")

    def handle(self, *args, slug, format, action, user, **options):
        golden_set = GoldenSet.objects.filter(slug=slug).first()
        if golden_set is None:
            raise CommandError(f"no golden set {slug!r}")
        records = audit_records(golden_set, action=action, username=user)
        if format == "json":
            self.stdout.write(json.dumps([record.to_dict() for record in records.iterator()], indent=2, ensure_ascii=False))
            return
        for record in records.iterator():
            changed = ", ".join(
                f"{name}: {record.before.get(name)!r} -> {record.after.get(name)!r}" for name in {**record.before, **record.after}
            )
            self.stdout.write(
                f"{record.at.isoformat(timespec='seconds')}  {record.username or 'system'}  {record.action}  "
                f"{record.object_label or '-'}" + (f"  ({changed})" if changed else "")
            )
