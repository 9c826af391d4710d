"""The ledger's stored allocations and dated entries (issue 11): the data migration stores, for
every payment made before, the allocation its receipt printed; the new tables refuse UPDATE,
DELETE and rows that break their constraints."""

from __future__ import annotations

import importlib
from datetime import date
from decimal import Decimal

import pgtrigger
import pytest
from django.apps import apps
from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.utils import DatabaseError

from billing import accounts
from billing.models import (
    Charge,
    CorrectionCharge,
    CreditApplication,
    GiveBack,
    LastDayMove,
    OfficeClosure,
    Payment,
    PaymentAllocation,
    PaymentVoid,
    PrincipalAdjustment,
    Source,
    VoidReversal,
)
from billing.services import counter
from levy.models import RollCorrection
from parcels.models import Parcel
from tests.billing import conftest as billing_fixtures
from tests.clock import on_day
from tests.test_books import build_books

district_1 = billing_fixtures.district_1
staff = billing_fixtures.staff

store_allocations = importlib.import_module("billing.migrations.0012_store_allocations_of_existing_payments").store_allocations


def forget_allocations() -> None:
    """The payments of ``build_books`` as they were before the counter stored allocations."""
    with pgtrigger.ignore("billing.PaymentAllocation:append_only"):
        PaymentAllocation.objects.all().delete()


def fill_ledger_tables(staff: dict) -> None:
    """One row in each new ledger table, on the books of ``tests.test_books.build_books``: the
    allocations, correction charges and adjustments by the services, the rest by hand."""
    hacienda = staff["hacienda"]
    lowered = RollCorrection.objects.get(roll_line__parcel__parcel_id="P3")
    january = Charge.objects.get(parcel__parcel_id="P3", kind=Charge.Kind.INSTALLMENT, number=2)
    july = Charge.objects.get(parcel__parcel_id="P3", kind=Charge.Kind.INSTALLMENT, number=1)
    closure = OfficeClosure.objects.create(day=date(2027, 3, 2), reason="Huracán", created_by=hacienda)
    LastDayMove.objects.create(charge=january, closure=closure, last_day=date(2027, 3, 3), entry_date=date(2027, 3, 5),
                               created_by=hacienda)
    GiveBack.objects.create(parcel=january.parcel, charge=july, surcharge=Decimal("0.00"), principal=Decimal("25.00"),
                            source=Source.CORRECTION, correction=lowered, entry_date=date(2026, 11, 1), created_by=hacienda)
    applied = CreditApplication.objects.create(parcel=january.parcel, charge=january, principal=Decimal("25.00"),
                                               source=Source.CORRECTION, correction=lowered, entry_date=date(2026, 11, 1),
                                               created_by=hacienda)
    # issue 17: a void's reversal (by hand: the books' own voids moved no money later)
    void = PaymentVoid.objects.order_by("pk").first()
    VoidReversal.objects.create(void=void, parcel=january.parcel, kind=VoidReversal.Kind.CREDIT_APPLIED,
                                credit_application=applied, charge=january, principal=Decimal("5.00"),
                                entry_date=date(2026, 11, 2), created_by=hacienda)


@pytest.mark.django_db
def test_the_data_migration_stores_what_each_receipt_printed(district_1, staff):
    build_books(staff)
    def allocations() -> list[tuple]:
        rows = PaymentAllocation.objects.values_list("payment_id", "charge_id", "surcharge", "principal")
        return sorted(rows, key=lambda row: (row[0], row[1] or 0))

    stored = allocations()
    forget_allocations()
    store_allocations(apps, None)
    # what the migration stores for old payments is what the counter stored for them
    assert allocations() == stored
    payments = Payment.objects.select_related("receipt").order_by("pk")
    assert payments.count() == 5  # P1, P4, P2 (voided), P5 (voided) and P5
    for payment in payments:
        rows = list(PaymentAllocation.objects.filter(payment=payment).order_by("pk"))
        # The whole payment is allocated: to charges, and what is left to credit.
        assert sum((row.amount.amount for row in rows), Decimal(0)) == payment.amount.amount
        printed = [(Decimal(line["surcharge"]), Decimal(line["principal_paid"])) for line in payment.receipt.snapshot["applications"]]
        assert [(row.surcharge.amount, row.principal.amount) for row in rows if row.charge_id] == printed
    # Hand-computed from tests/test_books.py: P4's 7,000.21 on 2026-10-15 is the July half
    # 6,930.90 with ½% × 2 months = 69.31; P5's 5,000.00 on 2026-10-20 leaves a credit.
    p4 = Payment.objects.get(parcel__parcel_id="P4")
    (row,) = PaymentAllocation.objects.filter(payment=p4)
    assert (row.charge.number, row.surcharge.amount, row.principal.amount) == (1, Decimal("69.31"), Decimal("6930.90"))
    p5 = Payment.objects.get(parcel__parcel_id="P5", amount=Decimal("5000.00"))
    credit = PaymentAllocation.objects.get(payment=p5, charge__isnull=True)
    assert credit.principal.amount == Decimal("5000.00") - sum(
        (a.amount.amount for a in PaymentAllocation.objects.filter(payment=p5, charge__isnull=False)), Decimal(0))
    assert credit.principal.amount > 0
    # the voided check of P5 keeps its stored allocation: 11.25 of surcharge settled (test_books)
    bounced = Payment.objects.get(parcel__parcel_id="P5", amount=Decimal("1000.00"))
    assert sum((a.surcharge.amount for a in PaymentAllocation.objects.filter(payment=bounced)), Decimal(0)) == Decimal("11.25")


@pytest.mark.django_db
def test_the_stored_allocation_matches_todays_replay_for_a_simple_account(district_1, staff):
    parcel = Parcel.objects.get(parcel_id="P4")
    with on_day(date(2026, 10, 15)):
        counter.payment_record(acting_user=staff["collector"], parcel=parcel, amount=Decimal("7000.21"), paid_on=date(2026, 10, 15))
    with on_day(date(2026, 12, 1)):
        counter.payment_record(acting_user=staff["collector"], parcel=parcel, amount=Decimal("100.00"), paid_on=date(2026, 12, 1))
    forget_allocations()
    store_allocations(apps, None)
    replay = accounts.account_state(parcel=parcel, as_of=date(2026, 12, 1)).state.applications
    stored = [(f"P{a.payment_id:012d}", f"C{a.charge_id:012d}", a.surcharge.amount, a.principal.amount)
              for a in PaymentAllocation.objects.filter(payment__parcel=parcel, charge__isnull=False).order_by("payment", "pk")]
    assert stored == [(a.payment_key, a.charge_key, a.surcharge, a.principal) for a in replay]


@pytest.mark.django_db
def test_the_ledger_tables_are_append_only_and_checked(district_1, staff):
    build_books(staff)
    fill_ledger_tables(staff)
    for model in (PaymentAllocation, CorrectionCharge, PrincipalAdjustment, LastDayMove, GiveBack, CreditApplication,
                  VoidReversal):
        row = model.objects.first()
        assert row is not None, model
        with pytest.raises(DatabaseError), transaction.atomic():
            model.objects.filter(pk=row.pk).update(id=F("id"))
        with pytest.raises(DatabaseError), transaction.atomic():
            model.objects.filter(pk=row.pk).delete()
    payment = Payment.objects.first()
    charge = Charge.objects.first()
    with pytest.raises(IntegrityError), transaction.atomic():  # surcharge on the credit part
        PaymentAllocation.objects.create(payment=payment, charge=None, surcharge=Decimal("1.00"))
    with pytest.raises(IntegrityError), transaction.atomic():  # empty
        PaymentAllocation.objects.create(payment=payment, charge=charge)
    lowered = RollCorrection.objects.get(roll_line__parcel__parcel_id="P3")
    with pytest.raises(IntegrityError), transaction.atomic():  # a closure give-back must name its closure
        GiveBack.objects.create(parcel=charge.parcel, charge=charge, principal=Decimal("1.00"), source=Source.CLOSURE,
                                correction=lowered, entry_date=date(2026, 11, 1), created_by=staff["hacienda"])
    with pytest.raises(IntegrityError), transaction.atomic():
        CreditApplication.objects.create(parcel=charge.parcel, charge=charge, principal=Decimal("-1.00"), source=Source.PAYMENT,
                                         payment=payment, entry_date=date(2026, 11, 1), created_by=staff["hacienda"])
    with pytest.raises(IntegrityError), transaction.atomic():  # a reversal names what it reverses, and only that
        VoidReversal.objects.create(void=PaymentVoid.objects.first(), parcel=charge.parcel, kind=VoidReversal.Kind.GIVE_BACK,
                                    credit_application=CreditApplication.objects.first(), charge=charge,
                                    principal=Decimal("1.00"), entry_date=date(2026, 11, 2), created_by=staff["hacienda"])
