"""``manage.py billing …``: the counter and statements from the shell, through the same services."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from billing import services
from billing.models import Payment


class Command(BaseCommand):
    help = "Billing and collection: pay, statement."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        pay = sub.add_parser("pay", help="record a payment as a collector does at the counter")
        pay.add_argument("--parcel", required=True)
        pay.add_argument("--amount", required=True)
        pay.add_argument("--date", required=True, help="YYYY-MM-DD")
        pay.add_argument("--user", required=True)
        pay.add_argument("--office")
        pay.add_argument("--method", default="cash", choices=Payment.Method.values)
        pay.add_argument("--reference", default="")
        statement = sub.add_parser("statement", help="the statement (estado de cuenta) as of a date")
        statement.add_argument("--parcel", required=True)
        statement.add_argument("--as-of", required=True, help="YYYY-MM-DD")
        statement.add_argument("--format", choices=["json", "text"], default="text")

    def handle(self, *args, action: str, **options) -> None:
        try:
            getattr(self, f"do_{action}")(options)
        except services.BillingError as exc:
            self.stderr.write(f"error: {exc}")
            raise SystemExit(1) from None

    @staticmethod
    def date(value: str) -> date:
        try:
            if len(value) != 10:
                raise ValueError
            return date.fromisoformat(value)
        except ValueError:
            raise services.BillingError(f"malformed date {value!r} (use YYYY-MM-DD)") from None

    def do_pay(self, options: dict) -> None:
        parcel = services.parcel_by_code(options["parcel"])
        amount = services.parse_amount(options["amount"])
        paid_on = self.date(options["date"])
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise services.BillingError(f"unknown user {options['user']!r}")
        receipt = services.payment_record(
            acting_user=user, parcel=parcel, amount=amount, paid_on=paid_on, method=options["method"],
            reference=options["reference"], office_code=options["office"],
        )
        snapshot = receipt.snapshot
        self.stdout.write(
            f"paid ${amount:,.2f} on {paid_on.isoformat()} for {parcel.parcel_id}; "
            f"due now ${Decimal(snapshot['total_due_after']):,.2f}; credit ${Decimal(snapshot['credit_balance']):,.2f}; "
            f"receipt {receipt.display_number}"
        )

    def do_statement(self, options: dict) -> None:
        parcel = services.parcel_by_code(options["parcel"])
        data = services.statement(parcel=parcel, as_of=self.date(options["as_of"]))
        if options["format"] == "json":
            self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False))
            return
        self.stdout.write(f"estado de cuenta {data['parcel_id']} al {data['as_of']}")
        for item in data["installments"] + data["other_charges"]:
            self.stdout.write(
                f"  {item['description']:<30} vence {item['due_date']} último día {item['last_day_to_pay']} "
                f"principal {item['principal']:>12} recargo {item['surcharge']:>10} pagado {item['paid']:>12} saldo {item['balance']:>12}"
                + (f"  ({item['surcharge_basis']})" if item["surcharge_basis"] else "")
            )
        self.stdout.write(f"  total adeudado hoy {data['total_due']}")
