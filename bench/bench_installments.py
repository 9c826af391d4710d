"""Issue the July and January installments of a finalized roll of 100,000 parcels
(``billing.services.installments.installments_issue``, which ``roll_finalize`` calls), timed apart
from the compute. No target in the issue; the roll's (under 15 s on 2 cores) is the yardstick.

The district is the one of ``bench_registry_and_roll`` (same CSV, same estimates). The roll is
finalized with the installment step held back, so the finalization and the installments are timed
separately; then the installments are issued again to time the idempotent no-op.

Last, the collection dashboard (``billing.charts.dashboard``, ``/cobros/resumen/``) over these
charges, once stored records of collection are added (``collection_records``): issue 11's
figures read every parcel's allocations, voids, lowerings, give-backs and *crédito aplicado*."""

from __future__ import annotations

import os
import time
from datetime import date
from decimal import Decimal
from unittest import mock

from common import certified_estimates, registry_csv, setup_fresh_database, timed

PARCELS = int(os.environ.get("BENCH_PARCELS", "100000"))
TARGET_SECONDS = 15.0


def main() -> list[tuple[str, str]]:
    setup_fresh_database()

    from billing.models import Charge, LedgerEntry
    from billing.services import installments
    from billing.services.installments import roll_finalize
    from levy.services import levy_compute
    from parcels.services import parcels_import, user_create

    results: list[tuple[str, str]] = []
    result = parcels_import(acting_user=None, data=registry_csv(PARCELS), source="bench installments")
    assert result.ok, result.errors[:3]
    _, hacienda = certified_estimates("2026-2027")
    finalizer = user_create(username="bench_hac2", role="hacienda", password=None)  # not the certifier
    setup: list[tuple[str, str]] = []
    with timed(f"(setup) compute the roll of {PARCELS:,} parcels", setup):
        levy = levy_compute(acting_user=hacienda, fiscal_year="2026-2027")
    # roll_finalize (billing.services.installments) issues the installments as it finalizes: hold them back.
    with mock.patch.object(installments, "installments_issue", return_value=0):
        with timed(f"finalize the roll of {PARCELS:,} parcels (without installments)", results):
            levy = roll_finalize(acting_user=finalizer, fiscal_year="2026-2027", today=date(2026, 6, 30))
    assert not Charge.objects.exists()

    start = time.perf_counter()
    issued = installments.installments_issue(acting_user=finalizer, levy=levy)
    seconds = time.perf_counter() - start
    ledger = LedgerEntry.objects.count()
    print(f"installments: {seconds:.2f} s for {issued:,} charges and {ledger:,} ledger entries "
          f"({levy.parcels_levied:,} parcels levied)", flush=True)
    flag = "" if seconds <= TARGET_SECONDS else f"; MISSED the {TARGET_SECONDS:.0f} s yardstick"
    results.append((f"issue the installments of {PARCELS:,} finalized parcels",
                    f"{seconds:.2f} s ({issued:,} charges + {ledger:,} ledger entries{flag})"))
    with timed("issue them again (idempotent: nothing new)", results):
        again = installments.installments_issue(acting_user=finalizer, levy=levy)
    assert again == 0 and LedgerEntry.objects.count() == ledger

    records = collection_records(hacienda)
    from billing import charts

    timings = []
    for _ in range(3):
        start = time.perf_counter()
        data = charts.dashboard(as_of=date(2026, 10, 15))
        timings.append(time.perf_counter() - start)
    print(f"dashboard: {', '.join(f'{t:.2f}' for t in timings)} s; collected ${data.totals.collected:,.2f} "
          f"of ${data.totals.billed:,.2f}", flush=True)
    results.append((f"collection dashboard over {issued:,} charges ({records})", f"{min(timings):.2f} s (best of 3)"))
    return results


def collection_records(hacienda) -> str:
    """A season of collection in stored records, written straight to the tables (no receipts: the
    dashboard reads none): every other parcel paid its July half on 2026-08-15 (its payment, its
    stored allocation and its ledger entry); one of those payments in 50 was voided on 2026-09-10;
    one paid parcel in 100 had both halves lowered 100.00 by a correction on 2026-10-01, the July
    principal freed given back and applied to January. Returns what was written, in words."""
    from billing import models as billing
    from levy.models import RollCorrection
    from parcels.services import user_create

    collector = user_create(username="bench_col", role="collector", password=None)
    office = billing.Office.objects.create(code="BENCH", name="Colecturía de prueba")
    halves: dict[int, dict[int, tuple[int, int, object]]] = {}
    for pk, parcel_id, number, roll_line_id, principal in (
        billing.Charge.objects.filter(kind=billing.Charge.Kind.INSTALLMENT).order_by("parcel_id", "number")
        .values_list("pk", "parcel_id", "number", "roll_line_id", "principal")
    ):
        halves.setdefault(parcel_id, {})[number] = (pk, roll_line_id, principal)
    paid = [parcel_id for index, parcel_id in enumerate(sorted(halves)) if index % 2 == 0 and halves[parcel_id][1][2] > 0]
    august, september, october = date(2026, 8, 15), date(2026, 9, 10), date(2026, 10, 1)
    payments = billing.Payment.objects.bulk_create(
        billing.Payment(parcel_id=parcel_id, office=office, collector=collector, paid_on=august,
                        amount=halves[parcel_id][1][2], method=billing.Payment.Method.CASH,
                        idempotency_key=f"bench-{parcel_id}", payer_name="Banco de pruebas")
        for parcel_id in paid
    )
    billing.PaymentAllocation.objects.bulk_create(
        billing.PaymentAllocation(payment=payment, charge_id=halves[payment.parcel_id][1][0], principal=payment.amount)
        for payment in payments
    )
    voided = payments[::50]
    billing.PaymentVoid.objects.bulk_create(
        billing.PaymentVoid(payment=payment, voided_on=september, reason="Cheque devuelto", voided_by=collector)
        for payment in voided
    )
    ledger = billing.LedgerEntry
    ledger.objects.bulk_create(
        [ledger(parcel_id=payment.parcel_id, entry_date=august, kind=ledger.Kind.PAYMENT, credit=payment.amount,
                payment=payment, description="Pago", created_by=collector) for payment in payments]
        + [ledger(parcel_id=payment.parcel_id, entry_date=september, kind=ledger.Kind.VOID, debit=payment.amount,
                  payment=payment, description="Anulación", created_by=collector) for payment in voided]
    )
    lowered = [payment.parcel_id for payment in payments[1::100]]  # none of them voided
    fall = Decimal("100.00")
    made = RollCorrection.objects.bulk_create(
        RollCorrection(roll_line_id=halves[parcel_id][1][1], om_charge_delta=-2 * fall, credit_delta=0, net_delta=-2 * fall,
                       reason="Área corregida", due_date=october, created_by=hacienda)
        for parcel_id in lowered
    )
    adjustments, backs, applied, entries = [], [], [], []
    for parcel_id, correction in zip(lowered, made, strict=True):
        july, january = halves[parcel_id][1][0], halves[parcel_id][2][0]
        named = {"correction": correction, "entry_date": october, "created_by": hacienda}
        adjustments += [billing.PrincipalAdjustment(charge_id=july, amount=fall, effective_from=date(2026, 7, 1), **named),
                        billing.PrincipalAdjustment(charge_id=january, amount=fall, effective_from=date(2027, 1, 1), **named)]
        backs.append(billing.GiveBack(parcel_id=parcel_id, charge_id=july, principal=fall, source=billing.Source.CORRECTION,
                                      **named))
        applied.append(billing.CreditApplication(parcel_id=parcel_id, charge_id=january, principal=fall,
                                                 source=billing.Source.CORRECTION, **named))
        entries.append(ledger(parcel_id=parcel_id, entry_date=october, kind=ledger.Kind.CORRECTION, credit=2 * fall,
                              description="Corrección", created_by=hacienda))
    for model, rows in ((billing.PrincipalAdjustment, adjustments), (billing.GiveBack, backs),
                        (billing.CreditApplication, applied), (ledger, entries)):
        model.objects.bulk_create(rows)
    return f"{len(payments):,} payments, {len(voided):,} voided, {len(lowered):,} parcels lowered"


if __name__ == "__main__":
    main()
