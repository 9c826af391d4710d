from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from parcels.second_factor import second_factor_enrolled, second_factor_reset


class Command(BaseCommand):
    help = ("Removes a user's second-factor devices (authenticator app and recovery codes) so they enrol again at "
            "the next sign-in; recorded in the audit trail under the administrator named by --by.")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--by", required=True, help="Your own user name: the audit trail records who reset it.")
        parser.add_argument("--reason", required=True, help="Why (e.g. 'teléfono perdido'), kept in the audit trail.")
        parser.add_argument("--dry-run", action="store_true", help="Say what would be removed; change nothing.")

    def handle(self, *args, username, by, reason, dry_run, **options):
        User = get_user_model()
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"unknown user {username!r}")
        admin = User.objects.filter(username=by, is_active=True).first()
        if admin is None or not (admin.is_staff or admin.is_superuser):
            raise CommandError(f"--by {by!r} must be an active administrator account (is_staff)")
        if dry_run:
            state = "enrolled" if second_factor_enrolled(user) else "not enrolled"
            self.stdout.write(f"dry run: {username} is {state}; nothing changed")
            return
        try:
            record = second_factor_reset(acting_user=admin, user=user, reason=reason)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(f"reset {username}: {record.devices_removed} device(s) removed; "
                          "they enrol an authenticator app again at their next sign-in")
