"""The books' invariants (``billing.books``, ``manage.py verify_books``): clean books built through
the services pass with their control totals; each kind of tampering is found and named."""

from __future__ import annotations

import hashlib
import json
from datetime import date
from decimal import Decimal
from pathlib import Path

import pgtrigger
import pytest
from django.utils import timezone

from billing import books
from billing.models import Charge, IssuedDocument, LedgerEntry, Receipt
from billing.services import bills, collection, counter, statements
from billing.services.corrections import roll_correction_create
from billing.storage import document_storage
from levy.models import RollLine
from parcels.models import Parcel
from tests.billing import conftest as billing_fixtures
from tests.clock import on_day
from tests.commands import run_command

# verify_books with no anchor key configured (the test settings) says so rather than passing silently
WITHOUT_ANCHORS = ("warning: no anchors checked: no public key (ANCHOR_SIGNING_KEY_FILE is not set); the books were "
                   "checked against the database alone")

district_1 = billing_fixtures.district_1
staff = billing_fixtures.staff


def parcel(code: str) -> Parcel:
    return Parcel.objects.get(parcel_id=code)


def build_books(staff: dict) -> None:
    """On a finalized district (worked example 1): payments on time and late, voids with and
    without a settled surcharge, corrections both ways, a refund, a bill, a debt certificate and
    a seizure notice, every one through its service, each recorded on its day (each parcel's
    events in the order of their days, so what was recorded by then is what happened by then)."""
    collector, supervisor, hacienda = staff["collector"], staff["supervisor"], staff["hacienda"]

    def pay(code: str, amount: str, on: date, **kwargs) -> Receipt:
        with on_day(on):
            return counter.payment_record(acting_user=collector, parcel=parcel(code), amount=Decimal(amount), paid_on=on, **kwargs)

    def void(receipt: Receipt, on: date) -> None:
        with on_day(on):
            counter.payment_void(acting_user=supervisor, payment=receipt.payment, reason="Cheque devuelto", voided_on=on)

    pay("P1", "9180.00", date(2026, 7, 2))
    pay("P4", "7000.21", date(2026, 10, 15))  # the July half, late: ½% × 2 months
    bounced = pay("P2", "22950.00", date(2026, 7, 10), method="check")
    void(bounced, date(2026, 7, 20))
    late = pay("P5", "1000.00", date(2026, 9, 15), method="check")  # settles 11.25 of surcharge
    void(late, date(2026, 9, 20))
    pay("P5", "5000.00", date(2026, 10, 20))  # more than everything owed: a credit
    with on_day(date(2026, 10, 25)):
        counter.refund_issue(acting_user=supervisor, parcel=parcel("P5"), amount=Decimal("100.00"), reason="Sobrepago",
                             refunded_on=date(2026, 10, 25))
    with on_day(date(2026, 11, 1)):
        line = RollLine.objects.get(parcel__parcel_id="P1", levy__status="final")
        # ¶12: +120.00 of net splits +60.00 / +60.00: the July half due the day it is made, January on Jan 1.
        roll_correction_create(acting_user=hacienda, roll_line=line, om_charge_delta=Decimal("120.00"), credit_delta=Decimal("0"),
                               reason="Área corregida", made_on=date(2026, 11, 1))
        line = RollLine.objects.get(parcel__parcel_id="P3", levy__status="final")
        # ¶9: −50.00 of O&M charge (P3 has no credit, so its credit stays 0): each half lowered by 25.00.
        roll_correction_create(acting_user=hacienda, roll_line=line, om_charge_delta=Decimal("-50.00"), credit_delta=Decimal("0"),
                               reason="Área corregida a la baja", made_on=date(2026, 11, 1))
    bills.bill_issue(acting_user=hacienda, charge=Charge.objects.get(parcel__parcel_id="P3", number=2),
                         issued_on=date(2026, 12, 1))
    collection.certificate_issue(acting_user=hacienda, parcel=parcel("P3"), as_of=date(2026, 12, 1))
    statements.statement_issue(parcel=parcel("P3"), channel="counter", acting_user=collector, as_of=date(2026, 12, 1))
    collection.seizure_step_issue(acting_user=hacienda, parcel=parcel("P3"), kind="notice", on=date(2026, 12, 1))


def verify_books(*args: str) -> tuple[int, str, str]:
    return run_command("verify_books", *args)


@pytest.fixture
def books_district(district_1, staff):
    build_books(staff)
    return district_1


# --- Clean books ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_empty_database_has_balanced_books():
    assert books.verify() == []
    assert books.control_totals()["payments"] == "0 (0)"


@pytest.mark.django_db
def test_books_built_through_the_services_balance(books_district):
    assert books.verify() == []
    totals = books.control_totals()
    assert totals["levy 2026-2027"] == "91800.00"
    assert totals["levy 2026-2027 lines"] == "5 (5 levied)"
    assert totals["charges 2026-2027 installment"] == "10 (91800.00)"
    assert totals["charges 2026-2027 correction"] == "2 (120.00)"
    assert totals["corrections 2026-2027"] == "2 (70.00)"
    assert totals["payments"] == "5 (45130.21)"
    assert totals["payments voided"] == "2 (23950.00)"
    assert totals["surcharges realized"] == "91.80"  # P4's 69.31 and P5's 22.49; the voided payment's 11.25 was reversed
    assert totals["correction credits"] == "50.00"
    assert totals["refunds"] == "100.00"
    assert totals["receipts"] == "5 in 1 series (2 of voided payments)"
    assert (totals["documents receipt"], totals["documents bill"], totals["documents certificate"]) == ("5", "1", "1")
    assert totals["seizure notices"] == "1"
    ledger = LedgerEntry.objects.all()
    assert Decimal(totals["ledger balance"]) == sum(e.debit.amount - e.credit.amount for e in ledger)
    assert Decimal(totals["ledger balance"]) == (
        Decimal("91800.00") + Decimal("120.00") + Decimal("100.00") + Decimal("91.80")  # charges, refund, surcharges
        - (Decimal("45130.21") - Decimal("23950.00")) - Decimal("50.00")  # payments kept, correction credit
    )


@pytest.mark.django_db
def test_verify_books_prints_the_control_totals_and_compares_them(books_district, tmp_path):
    code, out, err = verify_books()
    assert code == 0, out + err
    assert out.splitlines()[0] == "books balance; control totals:"
    assert "  levy 2026-2027 " in out and "91800.00" in out and "documents digest" in out
    code, out, err = verify_books("--format", "json")
    data = json.loads(out)
    assert code == 0 and data["ok"] and data["findings"] == []
    saved = tmp_path / "totals.json"
    saved.write_text(json.dumps(data))
    assert verify_books("--compare", str(saved))[0] == 0
    data["totals"]["payments"] = "4 (45030.21)"
    saved.write_text(json.dumps(data))
    code, out, err = verify_books("--compare", str(saved))
    assert code == 1
    assert out.splitlines() == ["totals: payments: expected 4 (45030.21), found 5 (45130.21)"]
    assert err.strip().splitlines() == [WITHOUT_ANCHORS, "verify_books: 1 finding(s)"]


@pytest.mark.django_db
def test_the_checks_are_set_based(books_district, staff, django_assert_max_num_queries):
    """The number of queries does not grow with the books (one query per check; the chain's
    records are one query of every kind together; the statements of every parcel, a few queries
    per 2,000 parcels)."""
    with django_assert_max_num_queries(43) as before:  # issue 19: three for the fund journal's checks
        assert books.verify() == []
    for day in range(3, 9):
        with on_day(date(2026, 7, day)):
            counter.payment_record(acting_user=staff["collector"], parcel=parcel("P3"), amount=Decimal("10.00"), paid_on=date(2026, 7, day))
    with django_assert_max_num_queries(len(before.captured_queries)):
        assert books.verify() == []


# --- Tampering is found ---------------------------------------------------------------------------


def forge_file(name: str, data: bytes) -> None:
    """Replace a stored document's file behind the storage API (the folder's owner can)."""
    path = Path(document_storage().path(name))
    path.chmod(0o644)
    path.write_bytes(data)


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_changed_stored_document_is_found(document_store, books_district):
    receipt = Receipt.objects.get(payment__parcel__parcel_id="P1")
    forge_file(IssuedDocument.objects.get(receipt=receipt).pdf.name, b"%PDF-1.7 forged")  # behind the storage API
    findings = [str(f) for f in books.verify()]
    assert len(findings) == 1
    assert findings[0].startswith(f"documents: receipt {receipt.display_number}: stored bytes hash to ")
    code, out, err = verify_books()
    assert code == 1 and out.splitlines() == findings


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_changed_seizure_notice_and_a_changed_bulk_part_are_found(document_store, books_district, staff):
    from billing import bulk
    from billing.models import BillBatchPart, SeizureStep

    step = SeizureStep.objects.get()
    assert step.sha256 == hashlib.sha256(bytes(step.pdf)).hexdigest()
    batch = bills.bill_batch_start(staff["hacienda"], "2026-2027", 2)
    bulk.bill_batch_run(batch=batch, processes=1)
    part = BillBatchPart.objects.get(batch=batch)
    assert books.verify() == []
    forge_file(step.pdf.name, b"%PDF-1.7 forged")
    with part.pdf.open("ab") as handle:  # a page slipped into the print shop's file
        handle.write(b"%% forged\n")
    findings = [str(f) for f in books.verify()]
    assert len(findings) == 2, findings
    assert findings[0].startswith(f"documents: seizure notice {step.number}: stored bytes hash to ")
    assert findings[1].startswith(f"documents: bulk-printing part file {part.pdf.name}: hashes to ")


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_changed_ledger_entry_is_found(books_district):
    entry = LedgerEntry.objects.get(kind="payment", payment__parcel__parcel_id="P1")
    with pgtrigger.ignore("billing.LedgerEntry:append_only"):
        LedgerEntry.objects.filter(pk=entry.pk).update(credit=Decimal("9179.00"))
    findings = [str(f) for f in books.verify()]
    assert findings == [
        f"ledger: payment P{entry.payment_id} (parcel P1, 9180.00), receipt surcharge 0.00: ledger has payment 1×9179.00, "
        "void 0×0, surcharge 0×0, surcharge reversal 0×0",
        "ledger: parcel P1: charges + surcharges − payments − credits = 9300.00, the ledger balance is 9301.00",
        f"statements: parcel P1: the statement as of {timezone.localdate()} says 9300.00 (balances less unpaid surcharge and credit), "
        "its charges less principal paid and credit 9300.00, the ledger entries 9301.00",
    ]


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_missing_ledger_entry_and_a_charge_outside_the_ledger_are_found(books_district, staff):
    year = Charge.objects.first().fiscal_year
    water = Charge.objects.create(parcel=parcel("P2"), kind=Charge.Kind.WATER, fiscal_year=year, principal=Decimal("20.00"),
                                  description="Agua", due_date=date(2026, 9, 1), last_day_to_pay=date(2026, 9, 1),
                                  accrues_surcharge=False, created_by=staff["authority"])
    findings = [str(f) for f in books.verify()]
    assert f"ledger: charge C{water.pk} (parcel P2, water of 20.00) is in the ledger 0 time(s) for 0" in findings
    assert "ledger: parcel P2: charges + surcharges − payments − credits = 45920.00, the ledger balance is 45900.00" in findings


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_receipt_number_gap_is_found(books_district):
    last = Receipt.objects.order_by("-number").first()
    with pgtrigger.ignore("billing.Receipt:append_only"):
        Receipt.objects.filter(pk=last.pk).update(number=last.number + 2)
    findings = [str(f) for f in books.verify()]
    assert findings == [
        "receipts: series LAJ 2026-2027: last number allocated 5, highest receipt 7",
        "receipts: series LAJ 2026-2027: missing numbers 5, 6",
        "chain: series receipt LAJ 2026-2027 link 5 (recibo LAJ-2026-2027-000007): the record now carries number 7 of "
        "series receipt LAJ 2026-2027",
    ]


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_changed_final_roll_is_found(books_district):
    line = RollLine.objects.get(parcel__parcel_id="P2", levy__status="final")
    with pgtrigger.ignore("levy.RollLine:final_roll_lines_no_update", "levy.RollLine:final_roll_lines_not_moved"):
        RollLine.objects.filter(pk=line.pk).update(om_charge=line.om_charge + 1, net=line.net + 1,
                                                   first_installment=line.first_installment + 1)
    findings = [str(f).split(" (content hash ")[0] for f in books.verify()]
    assert findings == [
        "levy: 2026-2027: final roll lines add to 91801.00, the levy (¶4) is 91800.00",
        "levy: 2026-2027: roll lines' credits/net 0.00/91801.00 differ from the stored 0.00/91800.00",
        "installments: 2026-2027 parcel P2: net 45901.00, installments issued 22950.00 + 22950.00 (1 + 1 charges), "
        "expected 22951.00 + 22950.00",
        "chain: series roll link 1 (padrón 2026-2027): the record differs from what was chained",
    ]


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_correction_credit_missing_from_the_ledger_is_found(books_district):
    with pgtrigger.ignore("billing.LedgerEntry:append_only"):
        LedgerEntry.objects.filter(kind="correction").delete()
    findings = [str(f) for f in books.verify()]
    assert findings == [
        "corrections: parcel P3 on 2026-11-01: corrections lower the debt by 50.00, the ledger credits 0",
        "ledger: parcel P3: charges + surcharges − payments − credits = 9130.00, the ledger balance is 9180.00",
        f"statements: parcel P3: the statement as of {timezone.localdate()} says 9130.00 (balances less unpaid surcharge and credit), "
        "its charges less principal paid and credit 9130.00, the ledger entries 9180.00",
    ]


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_changed_stored_allocation_is_found(books_district):
    from billing.models import PaymentAllocation

    row = PaymentAllocation.objects.get(payment__parcel__parcel_id="P1", charge__number=1)
    with pgtrigger.ignore("billing.PaymentAllocation:append_only"):
        PaymentAllocation.objects.filter(pk=row.pk).update(principal=Decimal("9179.00"))
    findings = [str(f) for f in books.verify()]
    receipt = Receipt.objects.get(payment=row.payment)
    assert (
        f"receipts: receipt {receipt.display_number}: it printed [0.00/9180.00] (surcharge/principal), its stored "
        "allocation is [0.00/9179.00] of 9179.00 for a payment of 9180.00"
    ) in findings
    assert any(f.startswith("statements: parcel P1: ") and f.endswith("says 9301.00 (balances less unpaid surcharge and credit), its charges less principal paid and credit 9301.00, the ledger entries 9300.00") for f in findings)


# --- Issued documents equal the statement of their day (issue 17 §1) ------------------------------


def issued_findings() -> list[str]:
    findings, _totals = books.check(issued_sample=books.ISSUED_ALL)
    return [str(finding) for finding in findings if finding.check == "issued"]


@pytest.mark.django_db
def test_issued_documents_read_again_equal_what_they_stored(books_district, staff):
    """The estado, certificate and bill of P3 as of 2026-12-01 (issued after that day, so read as the
    books stood at its end) still match after later entries: a payment recorded today."""
    with on_day(date(2026, 12, 5)):
        counter.payment_record(acting_user=staff["collector"], parcel=parcel("P3"), amount=Decimal("10.00"),
                               paid_on=date(2026, 12, 5))
        assert issued_findings() == []
        code, out, err = verify_books("--no-record", "--full")
    assert code == 0, out + err
    code, out, err = verify_books("--no-record", "--sample", "1")
    assert code == 0, out + err


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_tampered_estado_or_certificate_snapshot_is_found_naming_it(books_district):
    from billing.models import AccountStatement, DebtCertificate

    estado, certificate = AccountStatement.objects.get(), DebtCertificate.objects.get()
    estado_total = estado.snapshot["total_due"]
    forged = {**estado.snapshot, "total_due": str(Decimal(estado.snapshot["total_due"]) - Decimal("100.00"))}
    with pgtrigger.ignore("billing.AccountStatement:append_only"):
        AccountStatement.objects.filter(pk=estado.pk).update(snapshot=forged)
    assert issued_findings() == [
        f"issued: estado {estado.number} (P3, as of 2026-12-01): the statement of that day recomputed now differs from "
        f"the one it stored (total_due: stored {forged['total_due']}, now {estado_total})"]
    code, out, _err = verify_books("--no-record")
    assert code == 1 and f"issued: estado {estado.number} " in out
    installments = certificate.snapshot["installments"]
    forged = {**certificate.snapshot, "installments": [{**installments[0], "paid": "1.00"}, *installments[1:]]}
    with pgtrigger.ignore("billing.DebtCertificate:append_only"):
        DebtCertificate.objects.filter(pk=certificate.pk).update(snapshot=forged)
    finding = issued_findings()[1]
    assert finding.startswith(f"issued: debt certificate {certificate.number} (P3, as of 2026-12-01)")
    assert finding.endswith("(installments differs)")


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_row_back_dated_into_an_issued_day_is_found_naming_the_documents(books_district, staff):
    """A supervisor's back-dated payment of 25.00 dated 2026-12-01, recorded on 2026-12-04, is not in
    the statement of 2026-12-01 (nor in the documents issued of it). Moving its recorded moment to
    2026-12-01 (a rewrite of when it was recorded) puts it in that day's statement: the estado, the
    certificate and the bill of that day no longer match, and each is named."""
    from billing.models import AccountStatement, Bill, DebtCertificate, Payment

    with on_day(date(2026, 12, 4)):
        receipt = counter.payment_record(acting_user=staff["supervisor"], parcel=parcel("P3"), amount=Decimal("25.00"),
                                         paid_on=date(2026, 12, 1), backdate_reason="Giro recibido el 1/12")
    assert issued_findings() == []
    moment = timezone.make_aware(timezone.datetime(2026, 12, 1, 9, 0))
    with pgtrigger.ignore("billing.Payment:append_only"):
        Payment.objects.filter(pk=receipt.payment_id).update(created_at=moment)
    estado, certificate, bill = AccountStatement.objects.get(), DebtCertificate.objects.get(), Bill.objects.get()
    found = issued_findings()
    assert [line.split(" (")[0] for line in found] == [
        f"issued: estado {estado.number}", f"issued: debt certificate {certificate.number}", f"issued: bill {bill.number}"]
    code, out, _err = verify_books("--no-record", "--full")
    assert code == 1 and f"issued: bill {bill.number} (P3, issued 2026-12-01)" in out


@pytest.mark.django_db
def test_the_issued_check_reads_a_bounded_sample(books_district, staff, django_assert_max_num_queries):
    """Its queries grow with the sample, not with the documents issued: ten more estados of P3
    read with a sample of one cost no more than one did."""
    from billing.issued import check_issued

    with django_assert_max_num_queries(80) as before:
        assert check_issued(sample=1) == []
    for _ in range(10):
        statements.statement_issue(parcel=parcel("P3"), channel="counter", acting_user=staff["collector"],
                                   as_of=date(2026, 12, 1))
    with django_assert_max_num_queries(len(before.captured_queries)):
        assert check_issued(sample=1) == []
