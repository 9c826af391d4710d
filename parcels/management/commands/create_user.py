import sys

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from parcels.models import Owner
from parcels.roles import ROLES, STAFF_ROLES
from parcels.second_factor import second_factor_required
from parcels.services import user_create


class Command(BaseCommand):
    help = "Creates a user in one role (IT staff provision accounts from the shell)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, help=f"One of: {', '.join(ROLES)}")
        parser.add_argument("--email", default="")
        parser.add_argument("--owner", help="Owner key (e.g. DL-000123) a landowner account is linked to.")
        parser.add_argument("--full-name", default="", help='Staff: the name documents are signed with, e.g. "Ana Rivera Soto" '
                            "(the first word becomes the first name, the rest the last name).")
        parser.add_argument("--title", default="", help='Staff: the title (cargo) printed under the signature, e.g. '
                            '"Colector de Rentas Internas".')
        parser.add_argument("--password-stdin", action="store_true", help="Read a first password from standard input "
                            "(the user must change it at the first sign-in).")

    def handle(self, *args, username, role, email, owner, password_stdin, full_name, title, **options):
        if role not in ROLES:
            raise CommandError(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
        owner_record = None
        if owner:
            owner_record = Owner.objects.filter(owner_key=owner).first()
            if owner_record is None and owner.isdigit():
                owner_record = Owner.objects.filter(pk=int(owner)).first()
            if owner_record is None:
                raise CommandError(f"unknown owner {owner!r}")
        password = sys.stdin.readline().rstrip("\n") if password_stdin else None
        try:
            user = user_create(username=username, role=role, email=email, password=password, owner=owner_record,
                               full_name=full_name, title=title, password_change_due=bool(password))
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        note = (" (a first password: it must be changed at the first sign-in, before anything else)" if password
                else " (no password set: use password reset or --password-stdin)")
        self.stdout.write(f"created {user.username} ({role}){note}")
        if role in STAFF_ROLES and not (full_name and title):
            self.stdout.write(f"note: {user.username} cannot sign certificates or notices until a full name and a title "
                              "are set (--full-name and --title, or the site administration's user page)")
        if second_factor_required(user):
            # The secret is not made here: it would pass through the administrator's terminal.
            self.stdout.write(f"second factor: at the first sign-in {user.username} adds an authenticator app "
                              "(QR code or secret on the page, confirmed with a first code) and gets 10 recovery codes")

