from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from parcels.services import parcels_import


class Command(BaseCommand):
    help = (
        "Imports parcels from a UTF-8 CSV (upsert by parcel_id, all or nothing). "
        "Columns: parcel_id, owner_name, owner_email, owner_kind, gravity_acres, pumped_acres, "
        "inclusion, water_since, credit_percent [, owner_id, owner_address (\"line 1, line 2, town, PR 00667\") or "
        "owner_address_line1, owner_address_line2, owner_town, owner_state, owner_zip; owner_care_of, owner_language]. "
        "Values in Spanish or English (permanente/permanent, prueba/trial, excluido/excluded; privado/private, "
        "público/public; español/es, inglés/en); decimals with a point."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--dry-run", action="store_true", help="Check and count, write nothing.")
        parser.add_argument("--user", help="Username recorded in the history (default: the system).")

    def handle(self, *args, file, dry_run, user, **options):
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"no such file: {file}")
        acting_user = None
        if user:
            acting_user = get_user_model().objects.filter(username=user).first()
            if acting_user is None:
                raise CommandError(f"unknown user {user!r}")
        result = parcels_import(acting_user=acting_user, data=path.read_bytes(), dry_run=dry_run, source=f"import_parcels {path.name}")
        if not result.ok:
            for error in result.errors:
                self.stderr.write(f"line {error.line}, column {error.column or '-'}: {error.message}")
            self.stderr.write(f"rejected: {len(result.errors)} error(s); nothing was written")
            raise SystemExit(1)
        summary = result.summary
        prefix = "dry run, nothing written: " if dry_run else ""
        self.stdout.write(
            f"{prefix}created {summary['created']}, updated {summary['updated']}, unchanged {summary['unchanged']} "
            f"(owners created {summary['owners_created']}, updated {summary['owners_updated']})"
        )
        if dry_run:  # the page's preview, as lines: the first PREVIEW_LIMIT of each list
            for row in summary["created_rows"]:
                self.stdout.write(f"new {row['parcel_id']} · owner {row['owner']}")
            for kind, entries, name in (("parcel", summary["changes"], "parcel_id"), ("owner", summary["owner_changes"], "owner_key")):
                for entry in entries:
                    fields = "; ".join(f"{field}: {old or '-'} → {new or '-'}" for field, old, new in entry["fields"])
                    self.stdout.write(f"{kind} {entry[name]} · {fields}")
