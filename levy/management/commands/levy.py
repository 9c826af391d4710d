"""``manage.py levy …``: the levy workflow for batch work, through the same services as the pages."""

from __future__ import annotations

import csv
import json
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from levy import rules, selectors, services
from levy.exports import ROLL_COLUMNS, levy_summary, roll_rows
from levy.models import LegalParameterSet, Levy


def amount(value: str) -> Decimal:
    try:
        result = Decimal(value)
    except InvalidOperation:
        raise CommandError(f"not an amount: {value!r}") from None
    if not result.is_finite():
        raise CommandError(f"not an amount: {value!r}")
    if result < 0:
        raise CommandError(f"amounts cannot be negative: {value}")
    return result


def yes_no(value: str) -> bool:
    if value.lower() in ("yes", "sí", "si", "true"):
        return True
    if value.lower() in ("no", "false"):
        return False
    raise CommandError(f"write yes or no, not {value!r}")


def whole(value: str) -> int:
    if not value.isdigit():
        raise CommandError(f"not a whole number of zero or more: {value!r}")
    return int(value)


def iso_date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"not a date (YYYY-MM-DD): {value!r}") from None


# ``levy parameters add`` takes every value field of a legal-parameter row as an option.
PARAMETER_OPTIONS: dict[str, Any] = {
    "source": str, "reserve_cap_rate": amount, "safety_margin_rate": amount, "pumped_weight": amount,
    "water_months": whole, "month_convention": str, "grace_days": whole, "surcharge_rate": amount,
    "saturdays_move_last_day": yes_no, "late_roll_due_on_finalization": yes_no, "water_first_year_rate": amount,
    "water_max_authority_rate": amount, "water_pumped_rate": amount,
}
assert tuple(PARAMETER_OPTIONS) == LegalParameterSet.VALUE_FIELDS


class Command(BaseCommand):
    help = "The yearly levy: estimates, certify, compute, finalize, show, export; dated legal parameters."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)

        def add(name: str, help_text: str, user: bool = True) -> CommandParser:
            command = sub.add_parser(name, help=help_text)
            command.add_argument("--fiscal-year", required=True, help="e.g. 2026-2027")
            if user:
                command.add_argument("--user", required=True, help="the acting user's username")
            return command

        estimates = add("estimates", "enter the year's estimates (Authority staff; uncertified)")
        estimates.add_argument("--om-estimate", required=True)
        estimates.add_argument("--reserve", required=True)
        estimates.add_argument("--misc-income", required=True)
        estimates.add_argument("--deficit")
        estimates.add_argument("--surplus")
        estimates.add_argument("--credits", help="a certified factor (3) amount instead of the solved one")
        estimates.add_argument("--reason", default="", help="why certified estimates are replaced")
        add("certify", "certify the year's estimates (Authority staff)")
        add("compute", "compute the draft levy and roll (Hacienda)")
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
        show = add("show", "print the levy", user=False)
        show.add_argument("--format", choices=["json", "text"], default="text")
        export = add("export", "print the roll", user=False)
        export.add_argument("--format", choices=["csv"], default="csv")

        parameters = sub.add_parser("parameters", help="the dated legal parameters (¶1–¶12, sec. 374a)")
        parameters_sub = parameters.add_subparsers(dest="parameters_action", required=True)
        parameters_sub.add_parser("list", help="print every row, newest first")
        new = parameters_sub.add_parser(
            "add", help="a new row from a date (Hacienda): the row in force then, with the given fields changed"
        )
        new.add_argument("--effective-from", required=True, help="YYYY-MM-DD, today or later")
        for name, kind in PARAMETER_OPTIONS.items():
            field = LegalParameterSet._meta.get_field(name)
            hint = "yes/no" if kind is yes_no else "|".join(value for value, _label in field.choices) if field.choices else None
            fraction = name in ("reserve_cap_rate", "safety_margin_rate", "pumped_weight", "surcharge_rate")
            new.add_argument(
                f"--{name.replace('_', '-')}", dest=f"set_{name}", metavar=hint or name.upper(),
                help=f"{field.verbose_name}" + (" (a fraction: 0.01 is 1 %%)" if fraction else ""),
            )
        new.add_argument("--reason", required=True, help="why (the law or decree that changes it)")
        new.add_argument("--user", required=True, help="the acting user's username")

    def handle(self, *args, action: str, fiscal_year: str | None = None, **options) -> None:
        try:
            getattr(self, f"do_{action}")(fiscal_year, options)
        except services.LevyError as exc:
            self.stderr.write(f"error: {exc}")
            raise SystemExit(1) from None
        except CommandError as exc:
            self.stderr.write(f"error: {exc}")
            raise SystemExit(1) from None

    def user(self, options: dict):
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"unknown user {options['user']!r}")
        return user

    def do_estimates(self, fiscal_year: str, options: dict) -> None:
        if options["deficit"] is not None and options["surplus"] is not None:
            raise CommandError("give a deficit or a surplus, not both (¶2)")
        given = {name: amount(options[name]) for name in ("om_estimate", "reserve", "misc_income")}
        optional = {name: amount(options[name]) if options[name] is not None else None for name in ("deficit", "surplus", "credits")}
        estimate = services.estimate_enter(
            acting_user=self.user(options), fiscal_year=fiscal_year, **given,
            deficit=optional["deficit"] or Decimal("0"), surplus=optional["surplus"] or Decimal("0"),
            certified_credits=optional["credits"], reason=options["reason"],
        )
        self.stdout.write(f"estimates for {fiscal_year} entered (uncertified) by {estimate.entered_by.username}")

    def do_certify(self, fiscal_year: str, options: dict) -> None:
        estimate = services.estimate_certify(acting_user=self.user(options), fiscal_year=fiscal_year)
        self.stdout.write(f"estimates for {fiscal_year} certified by {estimate.certified_by.username}")

    def do_compute(self, fiscal_year: str, options: dict) -> None:
        levy = services.levy_compute(acting_user=self.user(options), fiscal_year=fiscal_year)
        self.write_worksheet(levy)

    # Finalizing and correcting create charges: billing's ``roll`` command does them (called by
    # name, so levy imports nothing of billing); the arguments are the same.
    def do_finalize(self, fiscal_year: str, options: dict) -> None:
        call_command("roll", "finalize", "--fiscal-year", fiscal_year, "--user", options["user"], stdout=self.stdout,
                     stderr=self.stderr)

    def do_correct(self, fiscal_year: str, options: dict) -> None:
        extra = []
        if options["due"]:
            extra += ["--due", options["due"]]
        if options["credit_percent"] is not None:
            extra += ["--credit-percent", options["credit_percent"]]
        call_command("roll", "correct", "--fiscal-year", fiscal_year, "--user", options["user"], "--parcel", options["parcel"],
                     f"--om-charge-delta={options['om_charge_delta']}", f"--credit-delta={options['credit_delta']}",
                     "--reason", options["reason"], *extra, stdout=self.stdout, stderr=self.stderr)

    def do_parameters(self, fiscal_year: None, options: dict) -> None:
        if options["parameters_action"] == "list":
            self.write_parameters()
            return
        changes = {
            name: kind(options[f"set_{name}"]) for name, kind in PARAMETER_OPTIONS.items() if options[f"set_{name}"] is not None
        }
        if not changes:
            raise CommandError("give at least one parameter to change, e.g. --surcharge-rate 0.01")
        row = services.legal_parameters_add(
            acting_user=self.user(options), effective_from=iso_date(options["effective_from"]), changes=changes,
            reason=options["reason"],
        )
        changed = ", ".join(f"{name} {row.snapshot()[name]}" for name in changes)
        self.stdout.write(f"legal parameters in force from {row.effective_from.isoformat()} added by "
                          f"{row.created_by.username}: {changed}")

    def write_parameters(self) -> None:
        for row in selectors.parameter_sets():
            who = f" by {row.created_by.username}" if row.created_by else ""
            self.stdout.write(f"from {row.effective_from.isoformat()}{who}: {row.reason or row.source}")
            for name, value in row.snapshot().items():
                if name != "effective_from":
                    self.stdout.write(f"  {name:<30} {value}")

    def levy(self, fiscal_year: str) -> Levy:
        year = services.fiscal_year_get(fiscal_year)
        levy = services.final_levy(year) or services.draft_levy(year)
        if levy is None:
            raise CommandError(f"no levy computed for {fiscal_year}")
        return levy

    def do_show(self, fiscal_year: str, options: dict) -> None:
        levy = self.levy(fiscal_year)
        if options["format"] == "json":
            self.stdout.write(json.dumps(levy_summary(levy), indent=2))
        else:
            self.write_worksheet(levy)

    def do_export(self, fiscal_year: str, options: dict) -> None:
        writer = csv.writer(self.stdout, lineterminator="\n")
        writer.writerow(ROLL_COLUMNS)
        for row in roll_rows(self.levy(fiscal_year)):
            writer.writerow(row)

    def write_worksheet(self, levy: Levy) -> None:
        summary = levy_summary(levy)
        rows = [
            ("¶1(1) O&M estimate", summary["om_estimate"]),
            ("¶1(2) reserve fund", summary["reserve"]),
            ("¶1(3) credits for ceded water rights" + (" (certified)" if levy.credits_certified else ""), summary["credits"]),
            ("¶2 + deficit", summary["deficit"]),
            ("¶2 − surplus", summary["surplus"]),
            ("¶3 − miscellaneous income", summary["misc_income"]),
            ("subtotal", summary["subtotal"]),
            ("¶3 + 2% safety margin", summary["safety_margin"]),
            ("¶4 total levy", summary["total_levy"]),
            ("¶5 equivalent acres (paying parcels)", summary["equivalent_acres"]),
            ("¶6 rate per gravity acre", summary["rate_gravity"]),
            ("¶6 rate per pumped acre", summary["rate_pumped"]),
            ("parcels levied", str(summary["parcels_levied"])),
            ("roll total (= levy)", summary["roll_total"]),
            ("credits granted", summary["roll_credits"]),
            ("roll net", summary["roll_net"]),
        ]
        self.stdout.write(f"levy {levy.fiscal_year.label} ({levy.status})")
        for label, value in rows:
            self.stdout.write(f"  {label:<42} {value:>18}")
        margin_rate = Decimal(levy.parameters.get("safety_margin_rate", "0.02"))
        check = rules.credits_multiplier(k0=levy.k0.amount, total_levy=levy.total_levy.amount, safety_margin_rate=margin_rate)
        if check.exceeds:
            if check.multiplier is None:
                detail = f"is all credits: K0 is {check.k0}"
            else:
                detail = (f"is {check.multiplier} times {1 + margin_rate} × K0 = {check.base}, over the review limit "
                          f"{rules.CREDITS_WARNING_FACTOR} × that = {check.threshold}")
            self.stdout.write(f"  WARNING ¶1(3), ¶3, ¶7: the total levy {check.total_levy} {detail}.")
