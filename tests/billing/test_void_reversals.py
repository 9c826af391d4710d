"""Issue 17 §2: a bounced check can always be voided. On worked example 1 (P1 100 acres: net
18,360.00, halves 9,180.00; P4 75.5 acres: net 13,861.80, halves 6,930.90; no credits), the void
of a payment reverses, newest first, each later entry that moved its money, as new entries dated
the void's day, then the payment's own allocation; a refund already paid out of it becomes a
charge due at once. Afterwards the statement equals the ledger, nothing is negative without a
credit, and the receipts stay as issued."""

from __future__ import annotations

import io
from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command

from billing import accounts, books, rules
from billing.models import (
    Charge,
    CreditApplication,
    GiveBack,
    LedgerEntry,
    PaymentVoid,
    Receipt,
    Refund,
    VoidReversal,
)
from billing.services import collection, corrections, counter, voids
from levy.models import RollLine
from parcels.models import Parcel
from tests.clock import move_clock_to

D = Decimal
PR = ZoneInfo("America/Puerto_Rico")


def at(monkeypatch, day: date, hour: int = 10) -> None:
    move_clock_to(monkeypatch, datetime(day.year, day.month, day.day, hour, tzinfo=PR))


def ledger_equals_statement(parcel: Parcel, on: date) -> Decimal:
    """Σ balances − unpaid surcharge − credit == the ledger's rows == ``LedgerState.ledger_balance``;
    no charge paid below zero or beyond its principal, and the credit not negative."""
    account = accounts.account_state(parcel=parcel, as_of=on)
    unpaid = sum((c.surcharge - c.surcharge_paid for c in account.state.charges), D(0))
    from_statement = account.state.total_balance - unpaid - account.state.credit_balance
    assert from_statement == accounts.ledger_balance(parcel) == account.ledger.ledger_balance
    assert account.ledger.credit >= 0
    for charge in account.ledger.charges:
        assert 0 <= charge.principal_paid <= charge.principal and 0 <= charge.surcharge_paid <= charge.surcharge, charge
    return from_statement


def lines(parcel: Parcel, on: date) -> list[tuple]:
    shown = accounts.statement(parcel=parcel, as_of=on)
    return [(line.kind, line.number, line.principal, line.surcharge, line.paid, line.balance) for line in shown.lines]


@pytest.mark.django_db
def test_a_void_after_a_closure_takes_back_the_surcharge_given_back_and_the_credit_applied(district_1, staff, monkeypatch):
    p4 = Parcel.objects.get(parcel_id="P4")
    at(monkeypatch, date(2026, 9, 1))
    # Sep 1 is the first delinquent day of July: ½% × 6,930.90 = 34.65; 34.66 goes to January early
    receipt = counter.payment_record(acting_user=staff["collector"], parcel=p4, amount=D("7000.21"))
    printed = Receipt.objects.get(pk=receipt.pk).snapshot
    at(monkeypatch, date(2026, 9, 5))
    collection.office_closure_record(acting_user=staff["hacienda"], day=date(2026, 8, 31), reason="Huracán")
    (back,) = GiveBack.objects.all()  # July's last day moved to Sep 1: its 34.65 was never owed
    (applied,) = CreditApplication.objects.all()  # and went to January
    assert (back.surcharge.amount, applied.principal.amount, applied.charge.number) == (D("34.65"), D("34.65"), 2)

    at(monkeypatch, date(2026, 9, 10))
    preview = voids.void_preview(acting_user=staff["supervisor"], payment=receipt.payment, reason="Cheque devuelto")
    # newest first: the crédito aplicado (recorded after the give-back), the give-back, then the payment's own rows
    assert [(e.kind, e.on, e.surcharge, e.principal) for e in preview.entries] == [
        ("credit_applied", date(2026, 9, 5), D("0.00"), D("34.65")),
        ("give_back", date(2026, 9, 5), D("34.65"), D("0.00")),
        ("payment", date(2026, 9, 10), D("34.65"), D("6930.90")),
        ("payment", date(2026, 9, 10), D("0.00"), D("34.66")),
    ]
    void = voids.payment_void(acting_user=staff["supervisor"], payment=receipt.payment, reason="Cheque devuelto")
    rows = sorted((r.kind, r.surcharge.amount, r.principal.amount, r.entry_date) for r in void.reversals.all())
    assert rows == [("credit_applied", D("0.00"), D("34.65"), date(2026, 9, 10)),
                    ("give_back", D("34.65"), D("0.00"), date(2026, 9, 10))]
    assert list(LedgerEntry.objects.filter(kind__in=["give_back_void", "credit_app_void"]).values_list("kind", "debit", "credit")) == [
        ("give_back_void", D("34.65"), D("0.00"))]  # the crédito aplicado paid no surcharge: no ledger row of its own
    # As of Sep 10 the check was never received: July delinquent from Sep 2 (the closure still
    # holds): ½% × 6,930.90 = 34.65, unpaid; January not due, unpaid; no credit.
    assert lines(p4, date(2026, 9, 10)) == [
        ("installment", 1, D("6930.90"), D("34.65"), D("0.00"), D("6965.55")),
        ("installment", 2, D("6930.90"), D("0.00"), D("0.00"), D("6930.90")),
    ]
    statement = accounts.statement(parcel=p4, as_of=date(2026, 9, 10))
    assert (statement.total_due, statement.credit_balance) == (D("6965.55"), D("0.00"))
    # 13,861.80 − 7,000.21 + 34.65 − 34.65 + 7,000.21 − 34.65 + 34.65 = 13,861.80
    assert ledger_equals_statement(p4, date(2026, 9, 10)) == D("13861.80")
    # the day before the void, the account is as it was: January paid 34.66 + 34.65
    assert lines(p4, date(2026, 9, 9))[1] == ("installment", 2, D("6930.90"), D("0.00"), D("69.31"), D("6861.59"))
    assert Receipt.objects.get(pk=receipt.pk).snapshot == printed
    assert books.verify() == []


@pytest.mark.django_db
def test_a_void_after_a_correction_takes_back_the_credito_aplicado_made_from_its_money(district_1, staff, monkeypatch):
    p1 = Parcel.objects.get(parcel_id="P1")
    at(monkeypatch, date(2026, 7, 10))
    receipt = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=D("9180.00"))
    at(monkeypatch, date(2026, 11, 16))
    corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=RollLine.objects.get(parcel=p1, levy__status="final"),
                                       om_charge_delta=D("-100.00"), reason="Mensura")
    # each half falls 50.00: July was paid 9,180.00, 50.00 beyond 9,130.00, applied to January
    (back,) = GiveBack.objects.all()
    (applied,) = CreditApplication.objects.all()
    assert (back.surcharge.amount, back.principal.amount, applied.charge.number, applied.principal.amount) == (
        D("0.00"), D("50.00"), 2, D("50.00"))

    at(monkeypatch, date(2026, 11, 20))
    void = voids.payment_void(acting_user=staff["supervisor"], payment=receipt.payment, reason="Cheque devuelto")
    rows = sorted((r.kind, r.charge.number, r.surcharge.amount, r.principal.amount) for r in void.reversals.all())
    assert rows == [("credit_applied", 2, D("0.00"), D("50.00")), ("give_back", 1, D("0.00"), D("50.00"))]
    # July 9,130.00 unpaid since Aug 31: 3 periods (Sep 1, Oct 1, Nov 1) × ½% × 9,130.00 = 136.95
    assert lines(p1, date(2026, 11, 20)) == [
        ("installment", 1, D("9130.00"), D("136.95"), D("0.00"), D("9266.95")),
        ("installment", 2, D("9130.00"), D("0.00"), D("0.00"), D("9130.00")),
    ]
    # 18,360.00 − 9,180.00 − 100.00 + 9,180.00 = 18,260.00: no row for principal moved
    assert ledger_equals_statement(p1, date(2026, 11, 20)) == D("18260.00")
    assert books.verify() == []


@pytest.mark.django_db
def test_a_void_after_a_refund_makes_the_refund_a_charge_due_at_once(district_1, staff, monkeypatch):
    p1 = Parcel.objects.get(parcel_id="P1")
    at(monkeypatch, date(2026, 7, 10))
    receipt = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=D("18400.00"))  # 40.00 credit
    at(monkeypatch, date(2026, 7, 15))
    refund = counter.refund_issue(acting_user=staff["supervisor"], parcel=p1, amount=D("40.00"), reason="Pago de más")
    at(monkeypatch, date(2026, 7, 20))
    void = counter.payment_void(acting_user=staff["supervisor"], payment=receipt.payment, reason="Cheque devuelto")
    (reversal,) = void.reversals.all()
    charge = reversal.charge
    assert (reversal.kind, reversal.refund_id, reversal.principal.amount) == ("refund", refund.pk, D("40.00"))
    assert (charge.kind, charge.principal.amount, charge.due_date, charge.last_day_to_pay, charge.accrues_surcharge) == (
        "void_refund", D("40.00"), date(2026, 7, 20), date(2026, 7, 20), False)
    assert "Reembolso del 15/07/2026" in charge.description
    assert lines(p1, date(2026, 7, 20)) == [
        ("installment", 1, D("9180.00"), D("0.00"), D("0.00"), D("9180.00")),
        ("void_refund", None, D("40.00"), D("0.00"), D("0.00"), D("40.00")),
        ("installment", 2, D("9180.00"), D("0.00"), D("0.00"), D("9180.00")),
    ]
    statement = accounts.statement(parcel=p1, as_of=date(2026, 7, 20))
    assert (statement.total_due, statement.total_balance, statement.credit_balance) == (D("9220.00"), D("18400.00"), D("0.00"))
    # 18,360.00 − 18,400.00 + 40.00 (refund) + 18,400.00 (void) + 40.00 − 40.00 = 18,400.00
    assert ledger_equals_statement(p1, date(2026, 7, 20)) == D("18400.00")
    # before the void it did not exist; months later it has no ¶12 surcharge and the same last day
    assert [row[0] for row in lines(p1, date(2026, 7, 19))] == ["installment", "installment"]
    late = accounts.statement(parcel=p1, as_of=date(2026, 12, 1))
    (owed,) = [line for line in late.lines if line.kind == "void_refund"]
    assert (owed.surcharge, owed.last_day_to_pay, owed.balance) == (D("0.00"), date(2026, 7, 20), D("40.00"))
    # a closure on its last day does not move it (it is not an installment)
    at(monkeypatch, date(2026, 7, 25))
    collection.office_closure_record(acting_user=staff["hacienda"], day=date(2026, 7, 20), reason="Apagón")
    assert not charge.last_day_moves.exists()
    assert accounts.statement(parcel=p1, as_of=date(2026, 7, 25)).lines[1].last_day_to_pay == date(2026, 7, 20)
    assert ledger_equals_statement(p1, date(2026, 7, 25)) == D("18400.00")
    assert books.verify() == []
    assert Refund.objects.count() == 1 and PaymentVoid.objects.count() == 1


@pytest.mark.django_db
def test_only_the_part_of_a_refund_paid_with_the_voided_money_becomes_a_charge(district_1, staff, monkeypatch):
    p1 = Parcel.objects.get(parcel_id="P1")
    at(monkeypatch, date(2026, 7, 10))
    counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=D("18390.00"))  # 30.00 credit, kept
    bounced = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=D("25.00"))  # 25.00 more credit
    at(monkeypatch, date(2026, 7, 15))
    counter.refund_issue(acting_user=staff["supervisor"], parcel=p1, amount=D("45.00"), reason="Pago de más")  # 10.00 left
    at(monkeypatch, date(2026, 7, 20))
    void = voids.payment_void(acting_user=staff["supervisor"], payment=bounced.payment, reason="Cheque devuelto")
    # credit 30.00 + 25.00 − 45.00 = 10.00; without the 25.00: −15.00, so 15.00 of the refund is owed
    (reversal,) = void.reversals.all()
    assert (reversal.kind, reversal.principal.amount) == ("refund", D("15.00"))
    statement = accounts.statement(parcel=p1, as_of=date(2026, 7, 20))
    assert (statement.total_due, statement.credit_balance) == (D("15.00"), D("0.00"))
    assert ledger_equals_statement(p1, date(2026, 7, 20)) == D("15.00")
    assert books.verify() == []


@pytest.mark.django_db
def test_billing_void_dry_run_lists_every_entry_and_writes_nothing(district_1, staff, monkeypatch):
    p1 = Parcel.objects.get(parcel_id="P1")
    at(monkeypatch, date(2026, 7, 10))
    receipt = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=D("9180.00"))
    at(monkeypatch, date(2026, 11, 16))
    corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=RollLine.objects.get(parcel=p1, levy__status="final"),
                                       om_charge_delta=D("-100.00"), reason="Mensura")
    at(monkeypatch, date(2026, 11, 20))
    before = (LedgerEntry.objects.count(), VoidReversal.objects.count(), Charge.objects.count())
    out = io.StringIO()
    call_command("billing", "void", receipt.display_number, "--reason", "Cheque devuelto", "--user", "sup", "--dry-run",
                 stdout=out)
    text = out.getvalue()
    assert (LedgerEntry.objects.count(), VoidReversal.objects.count(), Charge.objects.count()) == before
    assert not PaymentVoid.objects.exists()
    assert f"voiding the payment of receipt {receipt.display_number} ($9,180.00 of 2026-07-10) on 2026-11-20" in text
    assert "would post 3 entries; nothing recorded" in text
    listed = [line.strip() for line in text.splitlines()[1:]]
    assert listed[0].startswith("1. Se revierte el crédito aplicado del 16/11/2026 a «2026-2027 plazo 2 (enero)»")
    assert listed[0].endswith(": $50.00")
    assert listed[1].startswith("2. Se revierte la devolución del 16/11/2026 en «2026-2027 plazo 1 (julio)»")
    assert listed[1].endswith(": $50.00")
    assert listed[2] == ("3. Se anula lo que el pago pagó a «2026-2027 plazo 1 (julio)»: recargo $0.00, principal $9,180.00: "
                         "$9,180.00")
    out = io.StringIO()
    call_command("billing", "void", receipt.display_number, "--reason", "Cheque devuelto", "--user", "sup", stdout=out)
    assert "voided on 2026-11-20 (3 entries posted)" in out.getvalue()
    assert VoidReversal.objects.count() == 2
    assert books.verify() == []


def test_void_plan_reverses_only_what_the_voided_money_moved():
    """¶13, pure: a give-back of 10.00 surcharge of which 4.00 was another payment's stays 4.00."""
    july = rules.ChargeRecord(key="C1", principal=D("1000.00"), due=date(2026, 7, 1), last_day=date(2026, 8, 31))
    paid_by_q = rules.StoredPayment(key="Q", paid_on=date(2026, 9, 2),
                                    allocations=(rules.StoredAllocation(charge_key="C1", surcharge=D("4.00"), principal=D("0.00")),))
    paid_by_p = rules.StoredPayment(key="P", paid_on=date(2026, 9, 3),
                                    allocations=(rules.StoredAllocation(charge_key="C1", surcharge=D("6.00"), principal=D("1000.00")),))
    back = rules.GivenBack(charge_key="C1", entry_date=date(2026, 9, 10), surcharge=D("10.00"), principal=D("0.00"),
                           source="closure", ref="G1")
    plan = rules.void_plan(charges=[july], payments=[paid_by_q, paid_by_p], given_back=[back], payment_key="P",
                           on=date(2026, 9, 15), schedule=((date(2000, 1, 1), D("0.005")),))
    # without P: surcharge paid 4.00 − 10.00 = −6.00, so 6.00 of the give-back is reversed; the
    # credit is then 10.00 − 6.00 = 4.00, Q's, and stays
    assert plan.reversals == (rules.Reversal(kind="give_back", target="G1", charge_key="C1", entry_date=date(2026, 9, 15),
                                             effective_from=date(2026, 9, 10), surcharge=D("6.00")),)
    assert plan.allocations == paid_by_p.allocations


def test_void_plan_refuses_a_void_dated_before_a_later_entry_it_would_not_see():
    """¶13, pure: the reversals are planned as of the void's date, so it is not before them."""
    july = rules.ChargeRecord(key="C1", principal=D("100.00"), due=date(2026, 7, 1), last_day=date(2026, 8, 31))
    paid = rules.StoredPayment(key="P", paid_on=date(2026, 7, 10), allocations=(), to_credit=D("50.00"))
    refund = rules.RefundRecord(refunded_on=date(2026, 7, 20), amount=D("50.00"), ref="R1")
    schedule = ((date(2000, 1, 1), D("0.005")),)
    with pytest.raises(rules.BillingRuleError, match="dated on or after it"):
        rules.void_plan(charges=[july], payments=[paid], refunds=[refund], payment_key="P", on=date(2026, 7, 15),
                        schedule=schedule)
    plan = rules.void_plan(charges=[july], payments=[paid], refunds=[refund], payment_key="P", on=date(2026, 7, 20),
                           schedule=schedule)
    assert [(r.kind, r.charge_key, r.principal) for r in plan.reversals] == [("refund", "refund-charge:R1", D("50.00"))]
    assert plan.to_credit == D("50.00")
