"""``manage.py roll …``: finalizing the roll (¶11) and correcting a final roll line (¶9, ¶11),
through the same services as the pages. ``manage.py levy finalize`` and ``levy correct`` hand
over to this command by name, so that levy imports nothing of billing."""

from __future__ import annotations

from datetime import date
from decimal import Decimal, InvalidOperation

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.services.corrections import roll_correction_create
from billing.services.installments import roll_finalize
from levy.models import RollLine
from levy.services import LevyError, final_levy, fiscal_year_get


class Command(BaseCommand):
    help = "The finalized roll: finalize, correct."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)

        def add(name: str, help_text: str) -> CommandParser:
            command = sub.add_parser(name, help=help_text)
            command.add_argument("--fiscal-year", required=True, help="e.g. 2026-2027")
            command.add_argument("--user", required=True, help="the acting user's username")
            return command

        add("finalize", "finalize the roll (Hacienda; not the certifier)")
        correct = add("correct", "a supplementary entry on a finalized roll line (Hacienda)")
        correct.add_argument("--parcel", required=True)
        correct.add_argument("--om-charge-delta", default="0", help="change in the O&M charge (may be negative)")
        correct.add_argument("--credit-delta", default="0",
                             help="change in the water-right credit (may be negative); only with a --credit-percent that "
                                  "differs from the line's; 0: the credit follows the charge and the percentage (¶7)")
        correct.add_argument("--credit-percent", default=None, help="a new sec. 372 percentage (0-100) for the line: the credit becomes "
                                  "round(percent x corrected charge) and the halves are split again")
        correct.add_argument("--reason", required=True)
        correct.add_argument("--due", default=None,
                             help="a later due date for the rises, YYYY-MM-DD (never earlier than the rule's)")

    def handle(self, *args, action: str, fiscal_year: str, **options) -> None:
        try:
            getattr(self, f"do_{action}")(fiscal_year, options)
        except (LevyError, CommandError) as exc:
            self.stderr.write(f"error: {exc}")
            raise SystemExit(1) from None

    def user(self, options: dict):
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"unknown user {options['user']!r}")
        return user

    def do_finalize(self, fiscal_year: str, options: dict) -> None:
        levy = roll_finalize(acting_user=self.user(options), fiscal_year=fiscal_year)
        late = " (late: after July 1, ¶11)" if levy.finalized_late else ""
        self.stdout.write(f"roll for {fiscal_year} finalized on {levy.finalized_on.isoformat()} by {levy.finalized_by.username}{late}")

    def do_correct(self, fiscal_year: str, options: dict) -> None:
        year = fiscal_year_get(fiscal_year)
        levy = final_levy(year)
        if levy is None:
            raise CommandError(f"the roll of {fiscal_year} is not finalized")
        line = RollLine.objects.filter(levy=levy, parcel_code=options["parcel"]).first()
        if line is None:
            raise CommandError(f"parcel {options['parcel']!r} is not on the {fiscal_year} roll")
        try:
            due = date.fromisoformat(options["due"]) if options["due"] else None
            deltas = [Decimal(options["om_charge_delta"]), Decimal(options["credit_delta"])]
            percent = Decimal(options["credit_percent"]) if options["credit_percent"] is not None else None
        except (ValueError, InvalidOperation):
            raise CommandError("bad --due date, amount or percentage") from None
        correction = roll_correction_create(
            acting_user=self.user(options), roll_line=line, om_charge_delta=deltas[0], credit_delta=deltas[1],
            reason=options["reason"], due_date=due, credit_percent=percent,
        )
        self.stdout.write(
            f"correction {correction.pk} on {line.parcel_code}: O&M charge {correction.om_charge_delta.amount:+}, "
            f"credit {correction.credit_delta.amount:+}, net {correction.net_delta.amount:+}"
        )
