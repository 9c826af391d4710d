"""Issue 11's findings 1, 2, 3 and 5, each with hand-computed figures, on worked example 1
(P1 100 acres: net 18,360.00, halves 9,180.00; P4 75.5 acres: net 13,861.80, halves 6,930.90;
no credits): the ledger is the one truth, the statement equals it, receipts never change."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from billing import accounts, books
from billing.models import Charge, CreditApplication, GiveBack, LastDayMove, PrincipalAdjustment, Receipt
from billing.services import collection, corrections, counter
from levy.models import RollCorrection, RollLine
from levy.services import LevyError, legal_parameters_add
from parcels.models import Parcel
from tests.billing.test_delinquency import billing_cmd_levy
from tests.clock import move_clock_to, on_day

D = Decimal


def line(code: str) -> RollLine:
    return RollLine.objects.get(parcel__parcel_id=code, levy__status="final")


def ledger_equals_statement(code: str, on: date) -> Decimal:
    """The issue's definition: Σ balances − unpaid surcharge − credit == the ledger's balance."""
    parcel = Parcel.objects.get(parcel_id=code)
    account = accounts.account_state(parcel=parcel, as_of=on)
    unpaid = sum((c.surcharge - c.surcharge_paid for c in account.state.charges), D(0))
    from_statement = account.state.total_balance - unpaid - account.state.credit_balance
    assert from_statement == accounts.ledger_balance(parcel) == account.ledger.ledger_balance
    return from_statement


@pytest.mark.django_db
def test_finding_1_a_correction_below_zero_or_a_credit_above_the_charge_is_refused(district_1, staff):
    code, _out, err = billing_cmd_levy("correct", "--fiscal-year", "2026-2027", "--parcel", "P1",
                                       "--om-charge-delta", "-100000.00", "--reason", "x", "--user", "hac")
    assert code == 1
    assert "El cargo de O&M quedaría bajo cero: el cambio no puede ser menor que -$18,360.00." in err
    assert "cargo de O&M $18,360.00, crédito $0.00 y neto $18,360.00" in err
    # the credit follows the charge (¶7): a credit delta needs a sec. 372 percentage other than the line's
    code, _out, err = billing_cmd_levy("correct", "--fiscal-year", "2026-2027", "--parcel", "P1",
                                       "--credit-delta", "5000.00", "--reason", "x", "--user", "hac")
    assert code == 1 and "se acepta solo con un por ciento de la sec. 372 distinto del que el renglón ya tiene (0 %)" in err
    # at 100 % credit (credit 18,360.00 = the charge) 5,000.00 more credit would exceed the charge
    code, _out, err = billing_cmd_levy("correct", "--fiscal-year", "2026-2027", "--parcel", "P1", "--credit-percent", "100",
                                       "--credit-delta", "23360.00", "--reason", "x", "--user", "hac")
    assert code == 1 and "el crédito no puede exceder el cargo" in err and "$18,360.00" in err
    assert not RollCorrection.objects.exists()
    today = timezone.localdate()
    assert accounts.statement(parcel=Parcel.objects.get(parcel_id="P1"), as_of=today).credit_balance == D("0.00")
    # sub-cent deltas are refused, never rounded
    with pytest.raises(LevyError, match="centavos enteros"):
        corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line("P1"), om_charge_delta=D("-0.005"),
                                           reason="x", made_on=date(2026, 11, 1))


@pytest.mark.django_db
def test_finding_2_a_fall_lowers_principal_and_gives_back_only_the_surcharge_not_owed(district_1, staff):
    p4 = Parcel.objects.get(parcel_id="P4")
    with on_day(date(2026, 10, 15)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=p4, amount=D("7000.21"), paid_on=date(2026, 10, 15))
    printed = Receipt.objects.get(pk=receipt.pk).snapshot
    # July half 6,930.90 + ½% × 2 months (Sep 1, Oct 1) = 69.31 of surcharge, stored as the receipt shows
    (allocation,) = receipt.payment.allocations.all()
    assert (allocation.surcharge.amount, allocation.principal.amount) == (D("69.31"), D("6930.90"))
    # −1,861.80 of O&M charge: net 12,000.00, halves 6,000.00 each (each falls 930.90)
    with on_day(date(2026, 11, 1)):
        corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line("P4"), om_charge_delta=D("-1861.80"),
                                           reason="Área corregida", made_on=date(2026, 11, 1))
    assert sorted(a.amount.amount for a in PrincipalAdjustment.objects.all()) == [D("930.90"), D("930.90")]
    # surcharge owed on 6,000.00 for the same two periods: 60.00; given back 9.31; principal freed 930.90
    (back,) = GiveBack.objects.all()
    assert (back.surcharge.amount, back.principal.amount, back.source) == (D("9.31"), D("930.90"), "correction")
    (applied,) = CreditApplication.objects.all()  # the money freed goes to the oldest open charge: January
    assert (applied.charge.number, applied.surcharge.amount, applied.principal.amount) == (2, D("0.00"), D("940.21"))
    state = accounts.statement(parcel=p4, as_of=date(2026, 11, 1))
    july, january = state.lines
    assert (july.principal, july.surcharge, july.paid, july.balance) == (D("6000.00"), D("60.00"), D("6060.00"), D("0.00"))
    assert (january.principal, january.paid, january.balance) == (D("6000.00"), D("940.21"), D("5059.79"))
    assert state.credit_balance == D("0.00")
    # 13,861.80 − 7,000.21 + 69.31 − 1,861.80 − 9.31 = 5,059.79
    assert ledger_equals_statement("P4", date(2026, 11, 1)) == D("5059.79")
    assert Receipt.objects.get(pk=receipt.pk).snapshot == printed
    assert books.verify() == []


@pytest.mark.django_db
def test_finding_3_a_rise_is_due_by_the_rule_and_never_earlier(district_1, staff):
    made = date(2026, 11, 1)
    for too_early in (date(2026, 8, 1), date(2026, 6, 1)):  # before the day it is made; before its fiscal year
        with pytest.raises(LevyError, match="no puede ser anterior al 01/11/2026"):
            corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line("P1"), om_charge_delta=D("120.00"),
                                               reason="x", due_date=too_early, made_on=made)
    with on_day(made):
        corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line("P1"), om_charge_delta=D("120.00"),
                                           reason="Área mal medida", made_on=made)
    july, january = Charge.objects.filter(kind=Charge.Kind.CORRECTION).order_by("number")
    assert (july.principal.amount, july.due_date) == (D("60.00"), made)
    assert (january.principal.amount, january.due_date) == (D("60.00"), date(2027, 1, 1))  # not before January 1
    assert july.last_day_to_pay >= date(2026, 12, 31)  # due + 60 days, shifted past closed days
    assert july.description.startswith("Corrección n.º 1 del padrón 2026-2027 (¶9)")
    # no ¶12 surcharge the day it appears, nor on its last day to pay
    for on in (made, july.last_day_to_pay):
        (found,) = [s for s in accounts.account_state(parcel=july.parcel, as_of=on).state.charges if s.key.endswith(f"{july.pk:012d}")]
        assert found.surcharge == D("0.00")
    assert books.verify() == []


@pytest.mark.django_db
def test_finding_5_a_closure_recorded_after_a_payment_gives_back_its_surcharge(district_1, staff):
    p4 = Parcel.objects.get(parcel_id="P4")
    july = Charge.objects.get(parcel=p4, number=1, kind=Charge.Kind.INSTALLMENT)
    assert july.last_day_to_pay == date(2026, 8, 31)  # Jul 1 + 60 days is Sunday Aug 30
    with on_day(date(2026, 9, 1)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=p4, amount=D("7000.21"), paid_on=date(2026, 9, 1))
    printed = Receipt.objects.get(pk=receipt.pk).snapshot
    # Sep 1 is the first delinquent day: ½% × 6,930.90 = 34.65; 34.66 is January paid early
    rows = sorted((a.charge.number, a.surcharge.amount, a.principal.amount) for a in receipt.payment.allocations.all())
    assert rows == [(1, D("34.65"), D("6930.90")), (2, D("0.00"), D("34.66"))]
    closure, moved = collection.office_closure_record(acting_user=staff["hacienda"], day=date(2026, 8, 31), reason="Huracán")
    assert moved == 5  # every parcel's July half had its last day on Aug 31
    move = LastDayMove.objects.get(charge=july)
    assert (move.last_day, move.closure_id) == (date(2026, 9, 1), closure.pk)
    (back,) = GiveBack.objects.all()  # nothing was delinquent on Sep 1 after all
    assert (back.surcharge.amount, back.principal.amount, back.closure_id) == (D("34.65"), D("0.00"), closure.pk)
    (applied,) = CreditApplication.objects.all()
    assert (applied.charge.number, applied.principal.amount) == (2, D("34.65"))
    today = timezone.localdate()
    state = accounts.statement(parcel=p4, as_of=today)
    first, second = state.lines
    assert (first.surcharge, first.paid, first.balance) == (D("0.00"), D("6930.90"), D("0.00"))
    assert (second.paid, second.balance) == (D("69.31"), D("6861.59"))
    # 13,861.80 − 7,000.21 + 34.65 − 34.65 = 6,861.59
    assert ledger_equals_statement("P4", today) == D("6861.59")
    assert Receipt.objects.get(pk=receipt.pk).snapshot == printed
    assert books.verify() == []


@pytest.mark.django_db
def test_a_void_is_recorded_even_once_a_later_entry_moved_its_money(district_1, staff):
    """Issue 17 §2 turned the old refusal round: the refund paid out of the voided money becomes
    a charge due at once (tests/billing/test_void_reversals.py has the other cases)."""
    p3 = Parcel.objects.get(parcel_id="P3")
    with on_day(date(2026, 7, 5)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=p3, amount=D("9200.00"), paid_on=date(2026, 7, 5))
    credit = accounts.account_state(parcel=p3, as_of=date(2026, 7, 5)).state.credit_balance
    with on_day(date(2026, 7, 6)):
        counter.refund_issue(acting_user=staff["supervisor"], parcel=p3, amount=D("20.00"), reason="Pago de más",
                             refunded_on=date(2026, 7, 6))
    with on_day(date(2026, 7, 10)):  # recorded on their days: the statement of 10 July reads them (issue 17 §1)
        void = counter.payment_void(acting_user=staff["supervisor"], payment=receipt.payment, reason="Cheque devuelto",
                                    voided_on=date(2026, 7, 10))
    (reversal,) = void.reversals.all()
    assert credit >= D("20.00") and (reversal.kind, reversal.principal.amount) == ("refund", D("20.00"))
    assert accounts.account_state(parcel=p3, as_of=date(2026, 7, 10)).state.credit_balance == D("0.00")
    assert books.verify() == []


@pytest.mark.django_db
def test_a_void_is_not_refused_for_what_moved_money_the_same_day_before_the_payment(district_1, staff, monkeypatch):
    """Seen in the browser: P1 lowered by 100.00 in the morning of 2026-11-16 (July paid 9,180.00 in
    July, so 50.00 of it became a crédito aplicado to January, dated that day); a payment at noon on
    the same day can still be voided: the morning's entry moved none of its money."""
    p1 = Parcel.objects.get(parcel_id="P1")
    move_clock_to(monkeypatch, datetime(2026, 7, 10, 10, tzinfo=ZoneInfo("America/Puerto_Rico")))
    counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=D("9180.00"), paid_on=date(2026, 7, 10))
    move_clock_to(monkeypatch, datetime(2026, 11, 16, 9, tzinfo=ZoneInfo("America/Puerto_Rico")))
    corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line("P1"), om_charge_delta=D("-100.00"),
                                       reason="Mensura", made_on=date(2026, 11, 16))
    assert CreditApplication.objects.get(parcel=p1).principal.amount == D("50.00")  # July's half of the fall (¶12)
    move_clock_to(monkeypatch, datetime(2026, 11, 16, 12, tzinfo=ZoneInfo("America/Puerto_Rico")))
    noon = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=D("100.00"), paid_on=date(2026, 11, 16))
    void = counter.payment_void(acting_user=staff["supervisor"], payment=noon.payment, reason="Cobro duplicado",
                                voided_on=date(2026, 11, 16))
    assert void.payment_id == noon.payment_id
    assert ledger_equals_statement("P1", date(2026, 11, 16)) == D("9080.00")  # 18,260.00 − 9,180.00 paid

def test_a_closure_on_a_last_day_that_more_grace_days_moved_gives_back_its_surcharge(district_1, staff, monkeypatch):
    """Found by test_ledger_sequences: the closure looked only at charges whose *stored* last day
    was near it, so a January half whose last day a 120-day row had moved (2027-03-02 stored,
    2027-05-01 read) was skipped: no move recorded, and the surcharge paid for a period that the
    closure says never began stayed on the charge (its balance −34.65) instead of being given back."""

    def on(day: date) -> None:
        move_clock_to(monkeypatch, datetime(day.year, day.month, day.day, 10, tzinfo=ZoneInfo("America/Puerto_Rico")))

    p4 = Parcel.objects.get(parcel_id="P4")
    january = Charge.objects.get(parcel=p4, number=2, kind=Charge.Kind.INSTALLMENT)
    assert january.last_day_to_pay == date(2027, 3, 2)  # due Jan 1 + 60 days
    on(date(2026, 12, 1))
    legal_parameters_add(acting_user=staff["hacienda"], effective_from=date(2027, 1, 1), changes={"grace_days": 120},
                         reason="Reforma: 120 días para pagar")
    on(date(2027, 5, 3))
    # Jan 1 + 120 days = Saturday May 1 (Saturdays do not move it): delinquent from May 2.
    # July half: 9 periods (Sep 1 … May 1) × ½% × 6,930.90 = 311.8905 → 311.89; January half: 1
    # period (May 2) × ½% × 6,930.90 = 34.6545 → 34.65; 2 × 6,930.90 + 311.89 + 34.65 = 14,208.34.
    receipt = counter.payment_record(acting_user=staff["collector"], parcel=p4, amount=D("14208.34"), paid_on=date(2027, 5, 3))
    rows = sorted((a.charge.number, a.surcharge.amount, a.principal.amount) for a in receipt.payment.allocations.all())
    assert rows == [(1, D("311.89"), D("6930.90")), (2, D("34.65"), D("6930.90"))]
    printed = Receipt.objects.get(pk=receipt.pk).snapshot
    on(date(2027, 5, 10))
    closure, moved = collection.office_closure_record(acting_user=staff["hacienda"], day=date(2027, 5, 1), reason="Huracán")
    assert moved == 5  # every parcel's January half had its last day on May 1
    move = LastDayMove.objects.get(charge=january)
    assert (move.last_day, move.closure_id, move.entry_date) == (date(2027, 5, 3), closure.pk, date(2027, 5, 10))  # May 2 is a Sunday
    # Delinquent from May 4 now: the payment of May 3 was on time, its 34.65 of surcharge is given
    # back; every charge is paid, so it stays as credit (refundable).
    (back,) = GiveBack.objects.all()
    assert (back.charge_id, back.surcharge.amount, back.principal.amount) == (january.pk, D("34.65"), D("0.00"))
    assert not CreditApplication.objects.exists()
    state = accounts.statement(parcel=p4, as_of=date(2027, 5, 10))
    first, second = state.lines
    assert (first.surcharge, first.balance) == (D("311.89"), D("0.00"))
    assert (second.last_day_to_pay, second.surcharge, second.paid, second.balance) == (
        date(2027, 5, 3), D("0.00"), D("6930.90"), D("0.00"))
    assert state.credit_balance == D("34.65")
    # 13,861.80 − 14,208.34 + 311.89 + 34.65 (receipt surcharge) − 34.65 (given back) = −34.65
    assert ledger_equals_statement("P4", date(2027, 5, 10)) == D("-34.65")
    assert Receipt.objects.get(pk=receipt.pk).snapshot == printed
    assert books.verify() == []


@pytest.mark.django_db
def test_a_closure_of_a_whole_districts_last_day_stops_a_seizure_and_replays_only_what_it_must(
    district_1, staff, django_assert_max_num_queries,
):
    """¶12, ¶14: a storm closes the offices on the July half's last day, recorded the next day:
    every parcel's July half moves to 1 September, so nothing is delinquent on that day and an
    open seizure case stops. With no surcharge paid on a moved charge, nothing is given back and
    no account but the seized one is replayed: the queries do not grow with the district."""
    from billing.models import SeizureCase

    p2 = Parcel.objects.get(parcel_id="P2")
    case = SeizureCase.objects.create(parcel=p2, opened_by=staff["hacienda"])
    with on_day(date(2026, 9, 1)), django_assert_max_num_queries(40):
        closure, moved = collection.office_closure_record(acting_user=staff["hacienda"], day=date(2026, 8, 31), reason="Huracán")
    assert moved == 5 and LastDayMove.objects.filter(closure=closure).count() == 5
    assert not GiveBack.objects.exists() and not CreditApplication.objects.exists()
    case.refresh_from_db()
    assert (case.status, case.closed_on) == (SeizureCase.Status.PAID, date(2026, 9, 1))
