"""Issue 11, "done when": random sequences of payments, voids, refunds, corrections up and down,
office closures and new legal-parameter rows over two fiscal years (2026-2027, 2027-2028, whose
roll is finalized at its own point in the sequence). After every step:

- the statement equals the ledger (¶12, ¶13): for every parcel and date D, Σ balances of the
  statement as of D − surcharge accrued and still unpaid − credit = Σ debits − Σ credits of its
  ``LedgerEntry`` rows that count on D (every issued charge, due or not; every other entry dated
  by D), which is also ``rules.LedgerState.ledger_balance`` (what ``verify_books`` compares). The
  surcharge paid is read from the stored allocations, *crédito aplicado* and give-back rows, not
  from the replay being tested;
- no issued receipt changed: snapshot and stored PDF (its bytes' SHA-256) as when issued;
- no roll line, counting its corrections, has a net below zero or a credit above its charge
  (¶7, ¶9, ¶11), and what its charges bill is that corrected net;
- no charge is paid beyond its principal (nor, as of today, beyond its accrued surcharge) and the
  credit is never negative: what is paid beyond a charge is credit (¶12, ¶13);
- ``billing.books.verify()`` (``verify_books``) finds nothing.

A service may refuse a step (a correction past the roll
line's limits, a parameter row on a taken date): then nothing is written. At the end of a sequence
the statements of earlier days it visited still equal the ledger.

Time only moves forward; each step happens "today" (``tests.clock``), payments by a collector on
that day. Each example runs inside a savepoint that is rolled back at its end. Its "no surcharge
paid beyond what accrued" check is the one a closure broke when it skipped a last day that a row
with more grace days had moved (found while writing this test, by reading the closure; the random
walks rarely reach it: ``test_ledger_findings.test_a_closure_on_a_last_day_that_more_grace_days_moved_gives_back_its_surcharge``).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.db import transaction
from django.db.models import Q, Sum
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from billing import accounts, books, documents
from billing.errors import BillingError
from billing.models import (
    Charge,
    CreditApplication,
    GiveBack,
    IssuedDocument,
    LastDayMove,
    LedgerEntry,
    OfficeClosure,
    Payment,
    PaymentAllocation,
    PaymentVoid,
    PrincipalAdjustment,
    Receipt,
    Refund,
    VoidReversal,
)
from billing.services import collection, counter, installments, voids
from billing.services.corrections import roll_correction_create
from levy.models import ChainLink, LegalParameterSet, Levy, RollCorrection, RollLine
from levy.services import LevyError, estimate_certify, estimate_enter, legal_parameters_add, levy_compute
from parcels.models import Parcel
from tests.clock import move_clock_to, on_day

PR = ZoneInfo("America/Puerto_Rico")
CENT = Decimal("0.01")
ZERO = Decimal("0.00")
FIRST_DAY = date(2026, 6, 30)  # 2026-2027's roll is finalized on time (¶11)
LAST_DAY = date(2028, 6, 30)  # the end of fiscal year 2027-2028
# (parcel, gravity acres, pumped acres, sec. 372 credit %): a plain parcel, one with a credit (¶7)
# and one watered by the owner's pumps (¶5, ¶6).
PARCELS = (("Q1", "100", "0", "0"), ("Q2", "60", "0", "25"), ("Q3", "0", "80", "0"))


def stand_in_receipt_pdf(receipt: Receipt, *, code: str = "", lang: str | None = None) -> bytes:
    """Bytes stored as the receipt's PDF: WeasyPrint takes about half a second a receipt, the
    rendering has its own tests (test_documents.py), and what matters here is that the bytes stored
    at issue never change. Each call gives new bytes, so a receipt rendered again would show."""
    return (f"%PDF-1.7\n% stand-in: receipt {receipt.display_number}, rendering {uuid.uuid4().hex}\n".encode()
            + json.dumps(receipt.snapshot, sort_keys=True).encode())


@pytest.fixture
def two_years(make_parcel, owner_a, staff, monkeypatch):
    """Three parcels; 2026-2027's roll final on 2026-06-30; 2027-2028's estimates certified (its
    roll is computed and finalized in each sequence, on the day the sequence says)."""
    monkeypatch.setattr(documents, "render_receipt", stand_in_receipt_pdf)
    with on_day(FIRST_DAY):  # recorded on that day: statements of the days after it read them
        return _two_years(make_parcel, owner_a, staff)


def _two_years(make_parcel, owner_a, staff) -> dict[str, Parcel]:
    for parcel_id, gravity, pumped, credit in PARCELS:
        make_parcel(parcel_id, owner_a, gravity=gravity, pumped=pumped, credit=credit)
    estimate_enter(acting_user=staff["authority"], fiscal_year="2026-2027", om_estimate=Decimal("30000.00"),
                   reserve=Decimal("500.00"), misc_income=Decimal("2500.00"), surplus=Decimal("1000.00"))
    estimate_certify(acting_user=staff["authority"], fiscal_year="2026-2027")
    levy_compute(acting_user=staff["hacienda"], fiscal_year="2026-2027")
    installments.roll_finalize(acting_user=staff["hacienda"], fiscal_year="2026-2027", today=FIRST_DAY)
    estimate_enter(acting_user=staff["authority"], fiscal_year="2027-2028", om_estimate=Decimal("33000.00"),
                   reserve=Decimal("600.00"), misc_income=Decimal("2000.00"), deficit=Decimal("700.00"))
    estimate_certify(acting_user=staff["authority"], fiscal_year="2027-2028")
    return {p.parcel_id: p for p in Parcel.objects.filter(parcel_id__in=[row[0] for row in PARCELS])}


# --- what is written, and what was issued ---------------------------------------------------------

WRITTEN = (Charge, LedgerEntry, Payment, PaymentAllocation, PaymentVoid, Refund, Receipt, IssuedDocument, GiveBack,
           CreditApplication, PrincipalAdjustment, LastDayMove, OfficeClosure, RollCorrection, LegalParameterSet,
           ChainLink, Levy, RollLine, VoidReversal)


def written() -> tuple[int, ...]:
    """How many rows each table a step may write holds (a refused step leaves every count)."""
    return tuple(model.objects.count() for model in WRITTEN)


def issued_receipts() -> dict[int, tuple[str, str, str]]:
    """Each receipt: its snapshot (canonical JSON), its stored PDF's recorded hash and its bytes' hash."""
    return {
        receipt.pk: (json.dumps(receipt.snapshot, sort_keys=True), receipt.document.sha256,
                     hashlib.sha256(bytes(receipt.document.pdf)).hexdigest())
        for receipt in Receipt.objects.select_related("document")
    }


# --- the checks after every step -----------------------------------------------------------------


def ledger_on(day: date) -> dict[int, Decimal]:
    """Per parcel, Σ debits − Σ credits of its ledger rows that count on ``day``: every charge
    issued (due or not; a charge's row is dated on its due date) and every other row dated by
    ``day``; of a past day, only those recorded by its end (issue 17 §1)."""
    rows = LedgerEntry.objects.filter(Q(kind=LedgerEntry.Kind.CHARGE) | Q(entry_date__lte=day))
    if (known_by := accounts.known_by_end_of(day)) is not None:
        rows = rows.filter(created_at__lt=known_by)
    return {pk: debit - credit for pk, debit, credit in
            rows.values_list("parcel_id").annotate(Sum("debit"), Sum("credit")).values_list("parcel_id", "debit__sum",
                                                                                           "credit__sum")}


def surcharge_paid_on(day: date) -> dict[int, Decimal]:
    """¶12: per parcel, the surcharge paid on ``day`` from the stored rows: the allocations of the
    payments made by then and not voided by then, plus *crédito aplicado* to surcharge, less
    surcharge given back; a void's reversals (issue 17) of a give-back add, of a crédito aplicado
    take away."""
    paid: dict[int, Decimal] = {}
    kept = PaymentAllocation.objects.filter(payment__paid_on__lte=day)
    applied, backs = CreditApplication.objects.filter(entry_date__lte=day), GiveBack.objects.filter(entry_date__lte=day)
    reversed_on = VoidReversal.objects.filter(entry_date__lte=day)
    if (known_by := accounts.known_by_end_of(day)) is not None:  # a past day: what was recorded by its end
        kept = kept.filter(payment__created_at__lt=known_by).exclude(payment__void__voided_on__lte=day,
                                                                     payment__void__created_at__lt=known_by)
        applied, backs = applied.filter(created_at__lt=known_by), backs.filter(created_at__lt=known_by)
        reversed_on = reversed_on.filter(created_at__lt=known_by)
    else:
        kept = kept.exclude(payment__void__voided_on__lte=day)
    for sign, rows, parcel in ((1, kept, "payment__parcel_id"), (1, applied, "parcel_id"), (-1, backs, "parcel_id"),
                               (1, reversed_on.filter(kind=VoidReversal.Kind.GIVE_BACK), "parcel_id"),
                               (-1, reversed_on.filter(kind=VoidReversal.Kind.CREDIT_APPLIED), "parcel_id")):
        for pk, amount in rows.values_list(parcel).annotate(Sum("surcharge")).values_list(parcel, "surcharge__sum"):
            paid[pk] = paid.get(pk, ZERO) + sign * amount
    return paid


def assert_statements_are_the_ledger(parcels: Iterable[Parcel], day: date, *, today: bool) -> None:
    """For each parcel on ``day``: the statement's Σ balances − surcharge accrued and unpaid − credit
    = its ledger rows = ``LedgerState.ledger_balance``; no principal paid beyond the charge's, and
    the credit is not negative; no surcharge is paid beyond what accrued either. A past day is read
    as the books stood at its end (issue 17 §1): the closures recorded later are not known on it.
    (``today`` is kept for the callers: every day is now held to the same checks.)"""
    parcels = list(parcels)
    entries, surcharge_paid = ledger_on(day), surcharge_paid_on(day)
    states = accounts.account_states(parcels=parcels, as_of=day, roll_lines=False)
    for parcel in parcels:
        shown = accounts.statement(parcel=parcel, as_of=day)
        accrued = sum((line.surcharge for line in shown.lines), ZERO)
        unpaid_surcharge = accrued - surcharge_paid.get(parcel.pk, ZERO)
        from_statement = shown.total_balance - unpaid_surcharge - shown.credit_balance
        ledger = states[parcel.pk].ledger
        assert from_statement == entries.get(parcel.pk, ZERO) == ledger.ledger_balance, (
            f"{parcel.parcel_id} on {day}: statement {from_statement}, ledger rows {entries.get(parcel.pk)}, "
            f"ledger state {ledger.ledger_balance}")
        assert shown.total_balance == sum((line.balance for line in shown.lines), ZERO)
        # What is paid beyond a charge is credit (¶12, ¶13), never an overpaid charge; credit is not negative.
        assert ledger.credit >= 0, f"{parcel.parcel_id} on {day}: credit {ledger.credit}"
        for charge in ledger.charges:
            assert 0 <= charge.principal_paid <= charge.principal, f"{parcel.parcel_id} on {day}: {charge}"
            assert 0 <= charge.surcharge_paid, f"{parcel.parcel_id} on {day}: {charge}"
            assert charge.surcharge_paid <= charge.surcharge, f"{parcel.parcel_id} on {day} (today: {today}): {charge}"


def _sums(rows, key: str, *amounts: str) -> dict[int, tuple[Decimal, ...]]:
    return {found[0]: tuple(found[1:]) for found in
            rows.values_list(key).annotate(*(Sum(a) for a in amounts)).values_list(key, *(f"{a}__sum" for a in amounts))}


def assert_roll_lines_within_the_law() -> None:
    """¶7, ¶9, ¶11: counting every correction, each final line's charge ≥ 0, 0 ≤ credit ≤ charge,
    net = charge − credit ≥ 0, and its installments and correction charges, less what corrections
    lowered, bill exactly that net."""
    corrected = _sums(RollCorrection.objects.all(), "roll_line_id", "om_charge_delta", "credit_delta", "net_delta")
    billed = _sums(Charge.objects.exclude(roll_line=None), "roll_line_id", "principal")
    lowered = _sums(PrincipalAdjustment.objects.all(), "charge__roll_line_id", "amount")
    lines = RollLine.objects.filter(levy__status=Levy.Status.FINAL, levied=True).values_list(
        "pk", "parcel_code", "levy__fiscal_year__label", "om_charge", "credit", "net")
    for pk, parcel_code, year, om_charge, credit, net in lines:
        deltas = corrected.get(pk, (ZERO, ZERO, ZERO))
        charge, credit, net = om_charge + deltas[0], credit + deltas[1], net + deltas[2]
        where = f"{parcel_code} {year}"
        assert charge >= 0 and 0 <= credit <= charge and net == charge - credit >= 0, (where, charge, credit, net)
        bill = billed.get(pk, (ZERO,))[0] - lowered.get(pk, (ZERO,))[0]
        assert bill == net, f"{where}: its charges bill {bill}, its corrected net is {net}"


@dataclass
class Walk:
    """A sequence's walk through the district: today, the receipts issued so far, the days checked."""

    staff: dict
    parcels: dict[str, Parcel]
    monkeypatch: pytest.MonkeyPatch
    today: date = FIRST_DAY
    receipts: dict[int, tuple[str, str, str]] = field(default_factory=dict)
    days: list[date] = field(default_factory=list)
    past: dict[tuple[str, date], dict] = field(default_factory=dict)  # (parcel, past day) → Statement.to_json()

    def move_to(self, day: date) -> None:
        assert day >= self.today, "time only moves forward"
        self.today = day
        move_clock_to(self.monkeypatch, datetime(day.year, day.month, day.day, 10, 0, tzinfo=PR))

    def check(self) -> None:
        # Receipts issued before are unchanged; the new ones are remembered as issued.
        now = issued_receipts()
        for pk, issued in self.receipts.items():
            assert now.get(pk) == issued, f"receipt {pk} changed since it was issued"
        for pk, issued in now.items():
            assert issued[1] == issued[2], f"receipt {pk}: stored PDF bytes differ from their hash"
            self.receipts.setdefault(pk, issued)
        self.days.append(self.today)
        assert_past_statements_unchanged(self)
        assert_statements_are_the_ledger(self.parcels.values(), self.today, today=True)
        assert_roll_lines_within_the_law()
        findings = books.verify()
        assert not findings, "\n".join(str(finding) for finding in findings)


def assert_past_statements_unchanged(world: Walk, *, days: int = 4) -> None:
    """Issue 17 §1: a statement of a past day never changes. The statements of a few days the walk
    visited (the first and the latest before today, up to ``days`` days), read once those days
    were past, are read again after every later step and must be identical (``Statement.to_json``)."""
    for (code, day), stored in world.past.items():
        again = accounts.statement(parcel=world.parcels[code], as_of=day).to_json()
        assert again == stored, f"the statement of {code} as of {day} changed on {world.today}"
    earlier = [day for day in world.days if day < world.today]
    kept = {day for _code, day in world.past}
    for day in sorted({earlier[0], earlier[-1]} - kept if earlier else set()):
        if len(kept) < days:
            kept.add(day)
            for code, parcel in world.parcels.items():
                world.past[(code, day)] = accounts.statement(parcel=parcel, as_of=day).to_json()


# --- the steps -----------------------------------------------------------------------------------


def refused(do: Callable[[], object]) -> bool:
    """Run a step; a refusal (BillingError, LevyError) is a legal outcome that writes nothing."""
    before = written()
    try:
        with transaction.atomic():
            do()
    except (BillingError, LevyError) as refusal:
        note(f"    refused: {refusal}")
        assert written() == before, "a refused step wrote rows"
        return True
    return False


def cents(value: int) -> Decimal:
    return (Decimal(value) * CENT).quantize(CENT)


def step_pay(world: Walk, data) -> None:
    parcel = world.parcels[data.draw(st.sampled_from(sorted(world.parcels)), label="parcel")]
    state = accounts.account_state(parcel=parcel, as_of=world.today).state
    owed = int(state.total_balance / CENT)
    due = int(state.total_due / CENT)
    amount = cents(data.draw(st.one_of(
        st.sampled_from([n for n in (due, owed) if n > 0] or [100]),  # exactly what is due, or the whole lien
        st.integers(min_value=1, max_value=max(100, owed * 2)),  # some more than owed: a credit
    ), label="cents"))
    note(f"{world.today}: {parcel.parcel_id} pays {amount} (due {state.total_due}, balance {state.total_balance})")
    counter.payment_record(acting_user=world.staff["collector"], parcel=parcel, amount=amount, paid_on=world.today)


def step_void(world: Walk, data) -> None:
    """Issue 17 §2: a bounced check can always be voided, after corrections, closures and refunds
    too: a void is never refused here (each payment is voided once, on or after its day). Most
    draws prefer a payment whose money a later entry moved (a give-back, a crédito aplicado or a
    refund after it), so the reversals are walked often."""
    payments = list(Payment.objects.filter(void__isnull=True).order_by("pk"))
    if not payments:
        note(f"{world.today}: no payment to void")
        return
    moved = [p for p in payments if GiveBack.objects.filter(parcel_id=p.parcel_id, created_at__gt=p.created_at).exists()
             or CreditApplication.objects.filter(parcel_id=p.parcel_id, created_at__gt=p.created_at).exists()
             or Refund.objects.filter(parcel_id=p.parcel_id, created_at__gt=p.created_at).exists()]
    payment = data.draw(st.sampled_from(moved if moved and data.draw(st.booleans(), label="moved money") else payments),
                        label="payment")
    note(f"{world.today}: void P{payment.pk} ({payment.parcel.parcel_id}, {payment.amount.amount} of {payment.paid_on})"
         + (" after later entries moved money" if payment in moved else ""))
    before = VoidReversal.objects.count()
    void = voids.payment_void(acting_user=world.staff["supervisor"], payment=payment, reason="Cheque devuelto")
    for reversal in VoidReversal.objects.filter(pk__gt=0).order_by("pk")[before:]:
        note(f"    reversed {reversal.kind}: surcharge {reversal.surcharge.amount}, principal {reversal.principal.amount}")
    assert void.voided_on == world.today


def step_refund(world: Walk, data) -> None:
    parcel = world.parcels[data.draw(st.sampled_from(sorted(world.parcels)), label="parcel")]
    credit = accounts.account_state(parcel=parcel, as_of=world.today).state.credit_balance
    if credit <= 0:
        note(f"{world.today}: {parcel.parcel_id} has no credit to refund")
        return
    amount = cents(data.draw(st.integers(min_value=1, max_value=int(credit / CENT)), label="cents"))
    note(f"{world.today}: refund {amount} of {parcel.parcel_id}'s credit {credit}")
    counter.refund_issue(acting_user=world.staff["supervisor"], parcel=parcel, amount=amount, reason="Reembolso del crédito")


def step_correct(world: Walk, data) -> None:
    lines = list(RollLine.objects.filter(levy__status=Levy.Status.FINAL, levied=True).select_related("levy__fiscal_year")
                 .order_by("levy__fiscal_year__start", "parcel_code"))
    line = data.draw(st.sampled_from(lines), label="roll line")
    charge = line.om_charge + sum((c.om_charge_delta.amount for c in line.corrections.all()), ZERO)
    delta = cents(data.draw(st.integers(min_value=-int(charge / CENT) - 500, max_value=int(charge / CENT)), label="cents"))
    percent = data.draw(st.one_of(st.none(), st.integers(min_value=0, max_value=100).map(Decimal)), label="credit %")
    note(f"{world.today}: correct {line.parcel_code} {line.levy.fiscal_year.label} O&M {charge} by {delta}"
         + (f", credit {percent}%" if percent is not None else ""))
    was_refused = refused(lambda: roll_correction_create(
        acting_user=world.staff["hacienda"], roll_line=line, om_charge_delta=delta, credit_percent=percent,
        reason="Área corregida"))
    if charge + delta < 0:
        assert was_refused, "a correction below a zero charge was accepted"


def step_closure(world: Walk, data) -> None:
    taken = set(OfficeClosure.objects.values_list("day", flat=True))
    # The interesting days are the last days to pay as the accounts read them now (¶12), most of
    # all those of charges whose surcharge was paid: the closure gives it back.
    charges = [charge for parcel in world.parcels.values()
               for charge in accounts.account_state(parcel=parcel, as_of=world.today).ledger.charges
               if charge.last_day <= world.today and charge.last_day not in taken]
    span = (world.today - FIRST_DAY).days
    choices = [st.integers(min_value=0, max_value=span).map(lambda n: FIRST_DAY + timedelta(days=n))]
    for found in ([c for c in charges if c.surcharge_paid > 0], charges):
        if found:
            choices.insert(0, st.sampled_from(sorted({c.last_day for c in found})))
    day = data.draw(st.one_of(*choices), label="closed day")
    if day in taken:
        note(f"{world.today}: offices already closed on {day}")
        return
    note(f"{world.today}: offices were closed on {day}")
    collection.office_closure_record(acting_user=world.staff["hacienda"], day=day, reason="Huracán")


def step_parameters(world: Walk, data) -> None:
    effective = world.today + timedelta(days=data.draw(st.integers(min_value=0, max_value=200), label="days ahead"))
    changes = {"surcharge_rate": Decimal(data.draw(st.integers(min_value=1, max_value=200), label="rate ‱")) / 10000}
    if data.draw(st.booleans(), label="grace days too"):  # ¶12: more (or fewer) days to pay than 60
        changes["grace_days"] = data.draw(st.one_of(st.sampled_from([30, 90, 120]), st.integers(min_value=30, max_value=120)),
                                          label="grace days")
    note(f"{world.today}: legal parameters from {effective}: {changes}")
    refused(lambda: legal_parameters_add(acting_user=world.staff["hacienda"], effective_from=effective, changes=changes,
                                         reason="Ley de prueba"))


def finalize_second_year(world: Walk) -> None:
    note(f"{world.today}: 2027-2028 roll computed and finalized")
    levy_compute(acting_user=world.staff["hacienda"], fiscal_year="2027-2028")
    installments.roll_finalize(acting_user=world.staff["hacienda"], fiscal_year="2027-2028", today=world.today)


STEPS = {"pay": step_pay, "void": step_void, "refund": step_refund, "correct": step_correct, "closure": step_closure,
         "parameters": step_parameters}
KINDS = st.sampled_from(["pay", "pay", "pay", "void", "refund", "correct", "correct", "closure", "closure", "parameters"])
GAPS = st.one_of(st.just(0), st.integers(min_value=1, max_value=30), st.integers(min_value=31, max_value=150))


@pytest.mark.django_db
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_random_sequences_keep_the_statement_equal_to_the_ledger(two_years, staff, monkeypatch, data):
    world = Walk(staff=staff, parcels=two_years, monkeypatch=monkeypatch)
    second_year_on = data.draw(st.dates(min_value=date(2027, 6, 1), max_value=date(2027, 10, 31)), label="2027-2028 final on")
    start = FIRST_DAY + timedelta(days=data.draw(st.integers(min_value=0, max_value=300), label="first day"))
    with transaction.atomic():
        world.move_to(start)
        for _ in range(data.draw(st.integers(min_value=1, max_value=10), label="steps")):
            day = min(LAST_DAY, world.today + timedelta(days=data.draw(GAPS, label="days later")))
            if world.today <= second_year_on <= day and not Levy.objects.filter(
                fiscal_year__label="2027-2028", status=Levy.Status.FINAL
            ).exists():
                world.move_to(second_year_on)
                finalize_second_year(world)
                world.check()
            world.move_to(day)
            STEPS[data.draw(KINDS, label="step")](world, data)
            world.check()
        # The statement of earlier days of the sequence (its first, one drawn, and its horizon)
        # still equals the ledger: what was recorded later never reached back.
        for day in sorted({world.days[0], data.draw(st.sampled_from(world.days), label="day read again"), LAST_DAY}):
            assert_statements_are_the_ledger(world.parcels.values(), day, today=False)
        transaction.set_rollback(True)
