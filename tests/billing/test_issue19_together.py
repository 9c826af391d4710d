"""Issue 19's parts together, on worked example 1: a bank file posts its own collections journal
(bank against what its receipts paid, its return's void as its own lines, each fund balanced), an
exception applied later posts one of its own; the registers list the bank files with
``services.bank``'s control totals and the refund requests with what became of each."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from billing import registers
from billing.models import BankFileLine, Journal
from billing.services import bank, counter
from parcels.models import Parcel
from tests.billing.test_bank_files import HEADER, at, first_file, import_file

D = Decimal


def sums(journal: Journal) -> tuple[Decimal, Decimal]:
    lines = list(journal.lines.all())
    return sum((line.debit for line in lines), D("0")), sum((line.credit for line in lines), D("0"))


@pytest.fixture
def bppr(db):
    from billing.models import Office

    return Office.objects.create(code="BPPR", name="Banco Popular — agente recaudador", kind=Office.Kind.BANK)


@pytest.mark.django_db
def test_a_bank_file_and_an_exception_applied_later_post_their_own_balanced_journals(district_1, staff, bppr, monkeypatch):
    at(monkeypatch, date(2026, 7, 20))
    bank_file = import_file(staff, bppr, first_file())
    journal = Journal.objects.get(source=Journal.Source.BANK_FILE, source_id=bank_file.pk)
    assert journal.kind == Journal.Kind.COLLECTIONS and journal.posted_on == date(2026, 7, 20) and journal.office == bppr
    debit, credit = sums(journal)
    applied = sum((line.amount.amount for line in bank_file.lines.filter(outcome=BankFileLine.Outcome.APPLIED)), D("0"))
    assert debit == credit == applied == D("9680.00")
    bank_lines = [line for line in journal.lines.all() if line.account == "1020"]
    assert sum((line.debit for line in bank_lines), D("0")) == applied  # the bank account, not the cash drawer
    receipts = {number for line in journal.lines.all() for number in line.receipts}
    assert receipts == {line.payment.receipt.display_number for line in bank_file.lines.filter(outcome="applied")}
    # an exception applied by a supervisor: a journal of its own, the file's stays as it was
    line = bank_file.lines.get(trace_number="T1004")
    bank.bank_exception_resolve(acting_user=staff["supervisor"], line=line, action="apply")
    own = Journal.objects.get(source=Journal.Source.BANK_EXCEPTION, source_id=line.pk)
    assert sums(own) == (D("100000.00"), D("100000.00")) and sums(journal) == (debit, credit)
    # a return in a later file: its void gets its own lines in that file's journal
    at(monkeypatch, date(2026, 7, 24))
    returned = import_file(staff, bppr, (HEADER + "R9001,2026-07-23,9180.00,,,return,T1001,R01 NSF\n").encode(), name="r.csv")
    voided = Journal.objects.get(source=Journal.Source.BANK_FILE, source_id=returned.pk)
    assert sums(voided) == (D("9180.00"), D("9180.00"))
    assert {line.section for line in voided.lines.all()} == {"voids"}

    register = registers.register_build("bank-files", date(2026, 7, 1), date(2026, 7, 31))
    assert len(register.rows) == 6 and register.total("lines") == 6 and register.total("returned") == 1
    expected = {t.name: t for t in bank.bank_files_register(date(2026, 7, 1), date(2026, 7, 31)).totals}
    assert register.total("exceptions_apply_amount") == expected["exceptions_apply"].amount == D("100000.00")
    t1004 = next(row for row in register.rows if row[4] == "T1004")
    assert t1004[10].startswith("BPPR-2026-2027-") and t1004[13] == "sup"


@pytest.mark.django_db
def test_the_refund_requests_register_says_what_became_of_each(district_1, staff, make_user, monkeypatch):
    second = make_user("sup2", "supervisor")
    at(monkeypatch, date(2026, 7, 20))
    p1 = Parcel.objects.get(parcel_id="P1")
    counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=D("18460.00"))  # 100.00 beyond the year
    asked = counter.refund_request(acting_user=staff["supervisor"], parcel=p1, amount=D("60.00"), reason="Pagó de más",
                                   method="check")
    refused = counter.refund_request(acting_user=staff["supervisor"], parcel=p1, amount=D("40.00"), reason="Otro")
    refund = counter.refund_approve(acting_user=second, request=asked, check_number="1234")
    counter.refund_reject(acting_user=second, request=refused, reason="El dueño prefiere el crédito")
    register = registers.register_build("refund-requests", date(2026, 7, 20), date(2026, 7, 20))
    assert [(row[0], row[8], row[11]) for row in register.rows] == [
        (asked.pk, "Aprobado", refund.number), (refused.pk, "Rechazado", "El dueño prefiere el crédito")]
    assert (register.total("requested"), register.total("requested_amount"), register.total("approved"),
            register.total("approved_amount"), register.total("rejected"), register.total("pending")) == (
        2, D("100.00"), 1, D("60.00"), 1, 0)
    paid = registers.register_build("refunds", date(2026, 7, 20), date(2026, 7, 20))
    (row,) = paid.rows
    assert (row[0], row[5], row[8], row[9]) == (refund.number, "1234", "sup", "sup2")


@pytest.mark.django_db
@pytest.mark.books_unchecked
def test_verify_books_finds_a_bank_receipt_missing_from_every_journal(district_1, staff, bppr, monkeypatch):
    from billing import books
    from tests.test_anchors import as_database_owner

    at(monkeypatch, date(2026, 7, 20))
    bank_file = import_file(staff, bppr, first_file())
    assert books.verify() == []  # collected by the bank and journaled with its file
    journal = Journal.objects.get(source=Journal.Source.BANK_FILE, source_id=bank_file.pk)
    as_database_owner(("DELETE FROM billing_journalline WHERE journal_id = %s", [journal.pk]))
    found = [str(f) for f in books.verify()]
    for line in bank_file.lines.filter(outcome=BankFileLine.Outcome.APPLIED):
        assert f"journals: receipt {line.payment.receipt.display_number} is in no journal" in found
