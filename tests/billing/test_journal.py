"""Issue 19, "A fund journal for accounting": balanced journals of the levy's accrual (a roll
finalized, a correction) and of each closed office day's collections, split between the reserve
fund (¶1(2)) and the Operating Fund (¶2) by largest remainder; a void or refund dated in a closed
day posts its own adjustment; ``verify_books`` finds a tampered line; ``billing journal`` CSV.

Worked example 1: levy 91,800.00 with a ¶1(2) reserve of 1,500.00 and no credits, so the roll's
net is 91,800.00; P1 (100 ac) owes 1,800.00 a half, P3 (50 ac) 9,180.00 in all, P4 (75.5 ac)
1,359.00 a half. On 15/09/2026 the July half is delinquent (last day 30/08/2026): ½ % surcharge."""

from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, transaction
from hypothesis import given
from hypothesis import strategies as st

from billing import books, selectors
from billing.models import Journal, JournalLine, Office, Payment, PaymentAllocation
from billing.rules import BillingRuleError, fund_split
from billing.services import counter
from billing.services.corrections import roll_correction_create
from levy.models import RollLine
from parcels.models import Parcel
from tests.billing.conftest import billing_cmd
from tests.clock import on_day

D = Decimal
DAY = date(2026, 9, 15)
RESERVE, TOTAL = D("1500.00"), D("91800.00")  # example 1's ¶1(2) reserve and ¶4 levy


def parts(split) -> tuple[Decimal, Decimal]:
    return split.reserve, split.operating


def parcel(parcel_id: str) -> Parcel:
    return Parcel.objects.get(parcel_id=parcel_id)


def lines_of(journal: Journal) -> list[tuple]:
    return [(line.section, line.role, line.account, line.fund, line.debit, line.credit, line.receipts)
            for line in journal.lines.order_by("position")]


def balance(journal: Journal) -> tuple[Decimal, Decimal]:
    rows = list(journal.lines.all())
    return sum((r.debit for r in rows), D("0")), sum((r.credit for r in rows), D("0"))


def money_moved(journals) -> Decimal:
    """Σ (debit − credit) of the cash and bank lines of ``journals``."""
    return sum((line.debit - line.credit for j in journals for line in j.lines.all() if line.role in ("cash", "bank")), D("0"))


def close(staff, office: Office, day: date):
    report = selectors.day_report(office=office, day=day)
    return counter.day_close(acting_user=staff["supervisor"], office=office, day=day,
                             counted_cash=report.expected(Payment.Method.CASH), counted_checks=report.expected(Payment.Method.CHECK))


# --- The split by fund (pure) ---------------------------------------------------------------------------


def test_fund_split_of_example_1_gives_the_cent_to_the_larger_remainder():
    # 100.00 × 1,500 / 91,800 = 1.6339…: reserve 1.63 (remainder .39), operating 98.3660… → 98.37 (remainder .66)
    assert parts(fund_split(amount=D("100.00"), reserve=RESERVE, total_levy=TOTAL)) == (D("1.63"), D("98.37"))
    # a lowering mirrors the rise it undoes
    assert parts(fund_split(amount=D("-100.00"), reserve=RESERVE, total_levy=TOTAL)) == (D("-1.63"), D("-98.37"))
    # the whole levy splits into exactly its reserve
    assert parts(fund_split(amount=TOTAL, reserve=RESERVE, total_levy=TOTAL)) == (RESERVE, D("90300.00"))
    # an exact tie (0.005 each): the odd cent goes to the Operating Fund (the ascending id's tie rule)
    assert parts(fund_split(amount=D("0.01"), reserve=D("1.00"), total_levy=D("2.00"))) == (D("0.00"), D("0.01"))


def test_fund_split_refuses_what_is_not_a_levy():
    with pytest.raises(BillingRuleError):
        fund_split(amount=D("1.00"), reserve=D("2.00"), total_levy=D("1.00"))
    with pytest.raises(BillingRuleError):
        fund_split(amount=D("1.005"), reserve=D("1.00"), total_levy=D("2.00"))
    with pytest.raises(BillingRuleError):
        fund_split(amount=D("1.00"), reserve=D("0.00"), total_levy=D("0.00"))


cents = st.integers(min_value=-10**11, max_value=10**11).map(lambda n: D(n) / 100)


@given(amount=cents, reserve_cents=st.integers(min_value=0, max_value=10**10), extra_cents=st.integers(min_value=0, max_value=10**11))
def test_fund_split_parts_sum_to_the_whole_each_within_a_cent_of_its_exact_share(amount, reserve_cents, extra_cents):
    reserve = D(reserve_cents) / 100
    total = D(reserve_cents + extra_cents) / 100
    if total == 0:
        total = D("0.01")
    split = fund_split(amount=amount, reserve=reserve, total_levy=total)
    assert split.reserve + split.operating == amount
    exact_reserve = amount * reserve / total
    exact_operating = amount - exact_reserve
    assert abs(split.reserve - exact_reserve) < D("0.01")
    assert abs(split.operating - exact_operating) < D("0.01")
    assert split.reserve == split.reserve.quantize(D("0.01")) and split.operating == split.operating.quantize(D("0.01"))


# --- Accrual: finalize and corrections ---------------------------------------------------------------------


@pytest.mark.django_db
def test_finalizing_the_roll_writes_one_balanced_accrual_journal(district_1):
    journal = Journal.objects.get(source=Journal.Source.ROLL_FINALIZE, source_id=district_1.pk)
    assert (journal.kind, journal.posted_on) == ("accrual", date(2026, 6, 30))
    assert lines_of(journal) == [
        ("accrual", "levy_receivable", "1210-2026-2027", "reserve", D("1500.00"), D("0.00"), []),
        ("accrual", "levy_receivable", "1210-2026-2027", "operating", D("90300.00"), D("0.00"), []),
        ("accrual", "levy_income", "4110", "reserve", D("0.00"), D("1500.00"), []),
        ("accrual", "levy_income", "4110", "operating", D("0.00"), D("90300.00"), []),
    ]
    assert balance(journal) == (TOTAL, TOTAL)  # the roll's net: every installment issued


@pytest.mark.django_db
def test_a_correction_writes_its_own_dated_accrual_journal_split_by_largest_remainder(district_1, staff):
    line = RollLine.objects.get(levy=district_1, parcel__parcel_id="P1")
    with on_day(date(2026, 8, 3)):
        correction = roll_correction_create(acting_user=staff["hacienda"], roll_line=line, om_charge_delta=D("100.00"),
                                            reason="Área medida de nuevo")
    journal = Journal.objects.get(source=Journal.Source.ROLL_CORRECTION, source_id=correction.pk)
    assert (journal.kind, journal.posted_on) == ("accrual", date(2026, 8, 3))
    assert lines_of(journal) == [
        ("accrual", "levy_receivable", "1210-2026-2027", "reserve", D("1.63"), D("0.00"), []),
        ("accrual", "levy_receivable", "1210-2026-2027", "operating", D("98.37"), D("0.00"), []),
        ("accrual", "levy_income", "4110", "reserve", D("0.00"), D("1.63"), []),
        ("accrual", "levy_income", "4110", "operating", D("0.00"), D("98.37"), []),
    ]
    # the finalize journal is untouched: still the roll as finalized
    assert balance(Journal.objects.get(source=Journal.Source.ROLL_FINALIZE)) == (TOTAL, TOTAL)


@pytest.mark.django_db
def test_a_lowering_after_payment_moves_the_freed_money_to_unapplied_credits(district_1, staff):
    with on_day(date(2026, 7, 10)):
        counter.payment_record(acting_user=staff["collector"], parcel=parcel("P3"), amount=D("9180.00"))
    line = RollLine.objects.get(levy=district_1, parcel__parcel_id="P3")
    with on_day(date(2026, 7, 20)):
        correction = roll_correction_create(acting_user=staff["hacienda"], roll_line=line, om_charge_delta=D("-100.00"),
                                            reason="Área excluida")
    journal = Journal.objects.get(source=Journal.Source.ROLL_CORRECTION, source_id=correction.pk)
    assert lines_of(journal) == [
        ("accrual", "levy_income", "4110", "reserve", D("1.63"), D("0.00"), []),
        ("accrual", "levy_income", "4110", "operating", D("98.37"), D("0.00"), []),
        ("accrual", "levy_receivable", "1210-2026-2027", "reserve", D("0.00"), D("1.63"), []),
        ("accrual", "levy_receivable", "1210-2026-2027", "operating", D("0.00"), D("98.37"), []),
        ("reclass", "levy_receivable", "1210-2026-2027", "reserve", D("1.63"), D("0.00"), []),
        ("reclass", "levy_receivable", "1210-2026-2027", "operating", D("98.37"), D("0.00"), []),
        ("reclass", "unapplied_credits", "2150", "none", D("0.00"), D("100.00"), []),
    ]
    assert balance(journal) == (D("200.00"), D("200.00"))


# --- Collections: the day close ------------------------------------------------------------------------------


@pytest.fixture
def busy_day(district_1, staff):
    """15/09/2026 at LAJ: P1 pays 1,000.00 cash, P3 9,300.00 by check (120.00 beyond its charges
    … less the surcharge), P4 500.00 cash voided the same day; 20.00 of P3's credit refunded in
    cash; the day closed."""
    office = Office.objects.get(code="LAJ")
    with on_day(DAY):
        receipts = [
            counter.payment_record(acting_user=staff["collector"], parcel=parcel("P1"), amount=D("1000.00")),
            counter.payment_record(acting_user=staff["collector"], parcel=parcel("P3"), amount=D("9300.00"), method="check",
                                   reference="1201"),
            counter.payment_record(acting_user=staff["collector"], parcel=parcel("P4"), amount=D("500.00")),
        ]
        void = counter.payment_void(acting_user=staff["supervisor"], payment=receipts[2].payment, reason="Cobrado por error")
        refund = counter.refund_issue(acting_user=staff["supervisor"], parcel=parcel("P3"), amount=D("20.00"),
                                      reason="Pagó de más", method="cash")
        day_close = close(staff, office, DAY)
    return {"office": office, "receipts": receipts, "void": void, "refund": refund, "close": day_close}


@pytest.mark.django_db
def test_a_closed_days_journal_balances_and_equals_its_receipts_less_its_void_and_refund(busy_day):
    journal = Journal.objects.get(source=Journal.Source.DAY_CLOSE, source_id=busy_day["close"].pk)
    assert (journal.kind, journal.posted_on, journal.office, journal.day) == ("collections", DAY, busy_day["office"], DAY)
    debits, credits = balance(journal)
    assert debits == credits
    numbers = [r.display_number for r in busy_day["receipts"]]
    # receipts 10,800.00 − void 500.00 − refund 20.00
    assert money_moved([journal]) == D("10280.00")
    receipts_lines = [line for line in journal.lines.all() if line.section == "receipts"]
    assert sum((line.debit for line in receipts_lines if line.role == "cash"), D("0")) == D("10800.00")
    # every line sums stored allocation rows: levy by fund, surcharge to the Operating Fund, the rest unapplied
    allocations = PaymentAllocation.objects.filter(payment__receipt__in=[r.pk for r in busy_day["receipts"]])
    surcharge = sum((a.surcharge.amount for a in allocations), D("0"))
    to_credit = sum((a.principal.amount for a in allocations if a.charge_id is None), D("0"))
    levy = D("10800.00") - surcharge - to_credit
    by_role = {(line.role, line.fund): line for line in receipts_lines if line.credit}
    assert by_role[("surcharge_income", "operating")].credit == surcharge > 0
    assert by_role[("unapplied_credits", "none")].credit == to_credit > 0
    assert by_role[("unapplied_credits", "none")].receipts == [numbers[1]]
    split = fund_split(amount=levy, reserve=RESERVE, total_levy=TOTAL)
    assert (by_role[("levy_receivable", "reserve")].credit, by_role[("levy_receivable", "operating")].credit) == (
        split.reserve, split.operating)
    assert by_role[("levy_receivable", "reserve")].receipts == numbers
    # the void's own lines: the voided receipt's allocation reversed
    voids = [line for line in journal.lines.all() if line.section == "voids"]
    assert {tuple(line.receipts) for line in voids} == {(numbers[2],)}
    assert sum((line.credit for line in voids if line.role == "cash"), D("0")) == D("500.00")
    # the refund's: unapplied credits paid out of the drawer
    assert [(line.role, line.fund, line.debit, line.credit, line.receipts) for line in journal.lines.all()
            if line.section == "refunds"] == [
        ("unapplied_credits", "none", D("20.00"), D("0.00"), [busy_day["refund"].number]),
        ("cash", "none", D("0.00"), D("20.00"), [busy_day["refund"].number]),
    ]
    # each fund balances on its own
    for fund in ("reserve", "operating", "none"):
        rows = [line for line in journal.lines.all() if line.fund == fund]
        assert sum((r.debit for r in rows), D("0")) == sum((r.credit for r in rows), D("0"))
    assert books.verify() == []


@pytest.mark.django_db
def test_a_void_dated_in_a_closed_day_posts_an_adjustment_and_leaves_the_closed_journal_alone(district_1, staff):
    office = Office.objects.get(code="LAJ")
    with on_day(DAY):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=parcel("P1"), amount=D("1000.00"))
        close(staff, office, DAY)
    following = date(2026, 9, 16)
    with on_day(following):
        close(staff, office, following)  # nothing received that day: no journal
    assert Journal.objects.filter(kind="collections").count() == 1
    before = lines_of(Journal.objects.get(source="day_close"))
    with on_day(date(2026, 9, 17)):
        void = counter.payment_void(acting_user=staff["supervisor"], payment=receipt.payment, reason="Cheque devuelto",
                                    voided_on=following)
    adjustment = Journal.objects.get(source=Journal.Source.VOID, source_id=void.pk)
    assert (adjustment.kind, adjustment.posted_on, adjustment.office, adjustment.day) == (
        "adjustment", date(2026, 9, 17), office, following)
    assert money_moved([adjustment]) == D("-1000.00")
    assert {tuple(line.receipts) for line in adjustment.lines.all()} == {(receipt.display_number,)}
    assert lines_of(Journal.objects.get(source="day_close")) == before
    assert books.verify() == []


@pytest.mark.django_db
def test_a_check_refund_in_a_closed_day_posts_an_adjustment_from_the_bank(district_1, staff):
    office = Office.objects.get(code="LAJ")
    with on_day(DAY):
        counter.payment_record(acting_user=staff["collector"], parcel=parcel("P3"), amount=D("9500.00"))
        close(staff, office, DAY)
        refund = counter.refund_issue(acting_user=staff["supervisor"], parcel=parcel("P3"), amount=D("25.00"),
                                      reason="Pagó de más", method="check", check_number="3001")
    adjustment = Journal.objects.get(source=Journal.Source.REFUND, source_id=refund.pk)
    assert lines_of(adjustment) == [
        ("refunds", "unapplied_credits", "2150", "none", D("25.00"), D("0.00"), [refund.number]),
        ("refunds", "bank", "1020", "none", D("0.00"), D("25.00"), [refund.number]),
    ]
    assert books.verify() == []


@pytest.mark.django_db
def test_the_collections_service_posts_once_per_source(busy_day, staff):
    from billing.services.journal import collections_journal_post

    first = Journal.objects.get(source="day_close")
    again = collections_journal_post(acting_user=staff["supervisor"], payments=[r.payment for r in busy_day["receipts"]],
                                     source="day_close", source_id=busy_day["close"].pk, posted_on=DAY, description="x")
    assert again == first and Journal.objects.count() == 2  # the roll's and the day's


@pytest.mark.django_db
def test_account_codes_come_from_the_setting(district_1, staff, settings):
    settings.JOURNAL_ACCOUNTS = {**settings.JOURNAL_ACCOUNTS, "cash": "11-100", "surcharge_income": "41-200"}
    with on_day(DAY):
        counter.payment_record(acting_user=staff["collector"], parcel=parcel("P1"), amount=D("1000.00"))
        day_close = close(staff, Office.objects.get(code="LAJ"), DAY)
    accounts = {(line.role, line.account) for line in Journal.objects.get(source_id=day_close.pk, source="day_close").lines.all()}
    assert accounts == {("cash", "11-100"), ("surcharge_income", "41-200"), ("levy_receivable", "1210-2026-2027")}


# --- The database's guards ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_journal_lines_are_append_only(district_1):
    line = JournalLine.objects.first()
    with pytest.raises(Exception, match="append_only|Cannot update|protect"), transaction.atomic():
        JournalLine.objects.filter(pk=line.pk).update(debit=D("1.00"))
    with pytest.raises(Exception, match="append_only|Cannot delete|protect"), transaction.atomic():
        JournalLine.objects.filter(pk=line.pk).delete()


@pytest.mark.django_db
def test_a_journal_that_does_not_balance_is_refused_at_commit(district_1, staff):
    journal = Journal.objects.get(source="roll_finalize")
    with pytest.raises(IntegrityError, match="does not balance"), transaction.atomic():
        JournalLine.objects.create(journal=journal, position=99, section="accrual", role="levy_income", account="4110",
                                   fund="operating", credit=D("0.01"))
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # what COMMIT does: the deferred check runs


@pytest.mark.django_db
@pytest.mark.books_unchecked
def test_verify_books_finds_a_journal_line_changed_behind_the_triggers(busy_day):
    from tests.test_anchors import as_database_owner

    journal = Journal.objects.get(source="day_close")
    cash = journal.lines.filter(role="cash", section="receipts", fund="operating").get()
    assert books.verify() == []
    as_database_owner(("UPDATE billing_journalline SET debit = debit - 100 WHERE id = %s", [cash.pk]))
    found = [str(f) for f in books.verify()]
    assert f"journals: journal {journal.number}: 14 lines, debits 11220.00 ≠ credits 11320.00" in found
    assert "journals: office LAJ 2026-09-15: receipts less voids and refunds 10280.00, its journals move 10180.00" in found


@pytest.mark.django_db
@pytest.mark.books_unchecked
def test_verify_books_finds_a_receipt_of_a_closed_day_missing_from_every_journal(busy_day):
    from tests.test_anchors import as_database_owner

    journal = Journal.objects.get(source="day_close")
    as_database_owner(("DELETE FROM billing_journalline WHERE journal_id = %s", [journal.pk]))
    found = [str(f) for f in books.verify()]
    assert f"journals: journal {journal.number} has no lines" in found
    for receipt in busy_day["receipts"]:
        assert f"journals: receipt {receipt.display_number} is in no journal" in found
    assert f"journals: refund {busy_day['refund'].number} is in no journal" in found


# --- The CSV for Hacienda's accounting system ----------------------------------------------------------------


@pytest.mark.django_db
def test_the_journal_command_writes_the_days_lines_as_csv(busy_day):
    journal = Journal.objects.get(source="day_close")
    code, out, err = billing_cmd("journal", "--date", "2026-09-15", "--format", "csv")
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["journal", "posted_on", "account", "fund", "debit", "credit", "receipts"]
    assert len(rows) == 1 + journal.lines.count() == 15
    assert {row[0] for row in rows[1:]} == {journal.number} and {row[1] for row in rows[1:]} == {"2026-09-15"}
    numbers = " ".join(r.display_number for r in busy_day["receipts"])
    first = rows[1]
    assert first[2:4] == ["1010", "reserve"] and first[5] == "0.00" and first[6] == numbers
    assert sum(D(r[4]) for r in rows[1:]) == sum(D(r[5]) for r in rows[1:])
    assert rows[-1] == [journal.number, "2026-09-15", "1010", "none", "0.00", "20.00", busy_day["refund"].number]
    # another day: the header only
    assert billing_cmd("journal", "--date", "2026-09-14")[1] == "journal,posted_on,account,fund,debit,credit,receipts\n"


@pytest.mark.django_db
def test_the_journal_command_refuses_a_bad_date(district_1):
    code, out, err = billing_cmd("journal", "--date", "15/09/2026", "--format", "csv")
    assert (code, out) == (1, "")
    assert err.strip() == "error: malformed date '15/09/2026' (use YYYY-MM-DD)"
