"""Store the allocation of every payment made before allocations were stored (issue 11).

Each payment is replayed the way the counter allocated it when its receipt was issued: the
parcel's account as of the payment's date (the replay of the rules of that day, frozen in
``_replay_0012``: a migration does not import rules that change later) with only what had been recorded by then: the charges issued before it (with their last day
moved past the holidays and the closures recorded by then), the payments of that day or before recorded before it and not voided
by then, the corrections recorded before it that lowered what was owed (as credits on their
date), the legal parameters in force on that date. Replaying with what was recorded later would
put an old payment on a later correction charge, the very re-interpretation issue 11 removes. Where the receipt's lines name the same charges in the same
order, the receipt's own figures are stored, so every issued receipt keeps its figures exactly.
What the payment left beyond every charge is the allocation row without a charge.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from django.db import migrations

ZERO = Decimal("0.00")


def _receipt_figures(snapshot, applications, charges, labels):
    """The receipt's (surcharge, principal) per application when its lines name the same charges."""
    lines = (snapshot or {}).get("applications")
    if not isinstance(lines, list) or len(lines) != len(applications):
        return None
    figures = []
    for line, application in zip(lines, applications, strict=True):
        charge = charges[application.charge_key]
        same = (
            line.get("description") == charge["description"]
            and line.get("kind") == charge["kind"]
            and line.get("number") == charge["number"]
            and line.get("fiscal_year") == labels.get(charge["fiscal_year_id"])
        )
        if not same:
            return None
        figures.append((Decimal(line["surcharge"]), Decimal(line["principal_paid"])))
    return figures


def _voided(void, paid_on, recorded) -> bool:
    """Whether a void (its date, when it was recorded) had taken the other payment out by then."""
    return void is not None and void[0] <= paid_on and void[1] <= recorded


def store_allocations(apps, schema_editor):
    from . import _replay_0012 as rules

    Payment = apps.get_model("billing", "Payment")
    PaymentVoid = apps.get_model("billing", "PaymentVoid")
    PaymentAllocation = apps.get_model("billing", "PaymentAllocation")
    Charge = apps.get_model("billing", "Charge")
    Receipt = apps.get_model("billing", "Receipt")
    OfficeClosure = apps.get_model("billing", "OfficeClosure")
    LegalParameterSet = apps.get_model("levy", "LegalParameterSet")
    RollCorrection = apps.get_model("levy", "RollCorrection")
    FiscalYear = apps.get_model("levy", "FiscalYear")

    if not Payment.objects.exists():
        return
    parameter_rows = list(
        LegalParameterSet.objects.order_by("effective_from").values_list(
            "effective_from", "grace_days", "surcharge_rate", "saturdays_move_last_day"
        )
    )
    closures = list(OfficeClosure.objects.values_list("day", "created_at"))
    labels = dict(FiscalYear.objects.values_list("pk", "label"))
    holiday_cache: dict[int, frozenset] = {}

    def params_on(day):
        found = [row for row in parameter_rows if row[0] <= day]
        if not found:
            raise RuntimeError(f"no legal parameters in force on {day}")
        _, grace, rate, saturdays = found[-1]
        return rules.DelinquencyParameters(grace_days=grace, surcharge_rate=rate, saturdays_move=saturdays)

    def closed_days(years, recorded):
        """Holidays and the closures recorded by then (a later closure did not move the receipt's last day)."""
        days = frozenset(day for day, created in closures if created <= recorded)
        for year in years:
            if year not in holiday_cache:
                holiday_cache[year] = rules.pr_legal_holidays(years=[year])
            days |= holiday_cache[year]
        return days

    voided = {payment: (on, recorded) for payment, on, recorded in PaymentVoid.objects.values_list("payment_id", "voided_on", "created_at")}
    by_parcel = defaultdict(lambda: {"charges": {}, "payments": [], "corrections": []})
    for row in Charge.objects.order_by("pk").values(
        "pk", "parcel_id", "principal", "due_date", "last_day_to_pay", "accrues_surcharge", "description", "kind", "number",
        "fiscal_year_id", "created_at",
    ):
        by_parcel[row["parcel_id"]]["charges"][f"C{row['pk']:012d}"] = row
    for pk, parcel_id, paid_on, amount, recorded in Payment.objects.order_by("paid_on", "pk").values_list(
        "pk", "parcel_id", "paid_on", "amount", "created_at"
    ):
        by_parcel[parcel_id]["payments"].append((pk, paid_on, amount, recorded))
    for pk, parcel_id, on, net, recorded in RollCorrection.objects.filter(net_delta__lt=0).values_list(
        "pk", "roll_line__parcel_id", "due_date", "net_delta", "created_at"
    ):
        by_parcel[parcel_id]["corrections"].append((pk, on, net, recorded))
    stored = set(PaymentAllocation.objects.values_list("payment_id", flat=True))  # the counter stores them now
    rows = []
    for parcel_id in sorted(parcel for parcel, found in by_parcel.items() if found["payments"]):
        charges = by_parcel[parcel_id]["charges"]
        payments = by_parcel[parcel_id]["payments"]
        corrections = by_parcel[parcel_id]["corrections"]
        snapshots = dict(Receipt.objects.filter(payment__parcel_id=parcel_id).values_list("payment_id", "snapshot"))
        years = {row["last_day_to_pay"].year for row in charges.values()}
        years |= {year + 1 for year in years}
        for pk, paid_on, amount, recorded in payments:
            params = params_on(paid_on)
            issued = {key: row for key, row in charges.items() if row["created_at"] <= recorded}
            inputs = [
                rules.ChargeInput(
                    key=key, principal=row["principal"], due=row["due_date"],
                    last_day=rules.next_open_day(day=row["last_day_to_pay"], closed_days=closed_days(years, recorded), params=params),
                    accrues_surcharge=row["accrues_surcharge"],
                )
                for key, row in issued.items()
            ]
            replayed = [
                rules.PaymentInput(key=f"P{other:012d}", paid_on=on, amount=value)
                for other, on, value, other_recorded in payments
                if on <= paid_on and (other == pk or (other_recorded <= recorded and not _voided(voided.get(other), paid_on, recorded)))
            ]
            replayed += [
                rules.PaymentInput(key=f"K{correction:012d}", paid_on=on, amount=-net)
                for correction, on, net, correction_recorded in corrections
                if on <= paid_on and correction_recorded <= recorded
            ]
            applications = rules.replay_applications(charges=inputs, payments=replayed, as_of=paid_on, params=params)
            mine = [a for a in applications if a.payment_key == f"P{pk:012d}"]
            if pk in stored:
                continue
            figures = _receipt_figures(snapshots.get(pk), mine, charges, labels)
            if figures is None or sum((s + p for s, p in figures), ZERO) > amount:
                figures = [(a.surcharge, a.principal) for a in mine]
            for application, (surcharge, principal) in zip(mine, figures, strict=True):
                if surcharge or principal:
                    rows.append(PaymentAllocation(
                        payment_id=pk, charge_id=charges[application.charge_key]["pk"], surcharge=surcharge,
                        principal=principal,
                    ))
            left = amount - sum((s + p for s, p in figures), ZERO)
            if left > 0:
                rows.append(PaymentAllocation(payment_id=pk, charge_id=None, surcharge=ZERO, principal=left))
    PaymentAllocation.objects.bulk_create(rows, batch_size=2000)


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0011_ledger_allocations_and_entries"),
        ("levy", "0005_no_truncate_guard"),
    ]

    operations = [
        # Reversing drops nothing here (the rows are append-only); 0011's reverse drops the table.
        migrations.RunPython(store_allocations, migrations.RunPython.noop),
    ]
