"""Issue 19, bank payment files (¶13: a bank the Secretary designates acts as a Collector's office,
a payment through it is made on its value date). On worked example 1 (P1 100 acres: halves
9,180.00; P2 250 acres: halves 22,950.00; P4 75.5 acres: halves 6,930.90), with hand-built files:
the same file twice applies once; a malformed line refuses the whole file by its line number and
writes nothing; exceptions resolved each way; an NSF return voids the payment and the statement,
the ledger and the receipt (ANULADO) agree; ``verify_books`` stays clean after all of it."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.db import IntegrityError, transaction

from billing import accounts, documents
from billing.errors import BillingError
from billing.models import (
    BankFile,
    BankFileLine,
    BankLineResolution,
    Charge,
    LedgerEntry,
    Office,
    Payment,
    PaymentVoid,
    Receipt,
)
from billing.references import payment_reference
from billing.services import bank, counter
from parcels.models import Parcel
from tests.billing.conftest import billing_cmd
from tests.billing.test_documents import flat, text_of
from tests.clock import move_clock_to
from tests.commands import run_command

D = Decimal
PR = ZoneInfo("America/Puerto_Rico")
HEADER = "trace_number,value_date,amount,reference,payer_name,kind,original_trace_number,return_reason\n"


def at(monkeypatch, day: date, hour: int = 10) -> None:
    move_clock_to(monkeypatch, datetime(day.year, day.month, day.day, hour, tzinfo=PR))


@pytest.fixture
def bppr(db):
    return Office.objects.create(code="BPPR", name="Banco Popular — agente recaudador", kind=Office.Kind.BANK)


def july(parcel_id: str) -> Charge:
    return Charge.objects.get(parcel__parcel_id=parcel_id, kind=Charge.Kind.INSTALLMENT, number=1)


def mistyped(reference: str) -> str:
    """The reference with its last digit changed: the check digits no longer match."""
    return reference[:-1] + str((int(reference[-1]) + 1) % 10)


def first_file() -> bytes:
    rf1 = payment_reference(july("P1").pk)
    return (HEADER
            + f"T1001,2026-07-15,9180.00,{rf1},Carmen Irizarry,,,\n"
            + "T1002,2026-07-16,500.00,P4,Carmen Irizarry,,,\n"
            + f"T1003,2026-07-16,10.00,{mistyped(rf1)},Juan del Pueblo,,,\n"
            + "T1004,2026-07-17,100000.00,P2,Carmen Irizarry,,,\n"
            + "T1005,2026-07-17,25.00,LAJ-999999,Nadie,,,\n").encode()


def import_file(staff, bppr, data: bytes, name: str = "bppr-20260720.csv") -> BankFile:
    return bank.bank_file_import(acting_user=staff["supervisor"], bank=bppr, name=name, data=data)


def books_clean() -> None:
    code, out, err = run_command("verify_books", "--no-record")
    assert code == 0, out + err


@pytest.mark.django_db
def test_the_same_file_twice_applies_once(district_1, staff, bppr, monkeypatch, tmp_path):
    at(monkeypatch, date(2026, 7, 20))
    data = first_file()
    path = tmp_path / "bppr.csv"
    path.write_bytes(data)
    code, out, err = billing_cmd("payments-import", str(path), "--bank", "BPPR", "--user", "sup", "--dry-run")
    assert code == 0, err
    assert out.strip().splitlines()[-1] == "applied 2, exceptions 3, already applied 0"
    assert not BankFile.objects.exists() and not Payment.objects.exists()  # the dry run wrote nothing

    code, out, err = billing_cmd("payments-import", str(path), "--bank", "BPPR", "--user", "sup")
    assert code == 0, err
    assert out.strip().splitlines()[-1] == "applied 2, exceptions 3, already applied 0"
    (first,) = BankFile.objects.all()
    assert (first.applied_count, first.applied_total.amount, first.exception_count, first.exception_total.amount) == (
        2, D("9680.00"), 3, D("100035.00"))
    lines = {line.trace_number: line for line in first.lines.all()}
    # each applied line is a payment dated its value date, its receipt numbered in the bank's own series
    receipts = Receipt.objects.filter(office=bppr).order_by("number")
    assert [(r.number, r.payment.paid_on, r.payment.amount.amount, r.payment.method) for r in receipts] == [
        (1, date(2026, 7, 15), D("9180.00"), "transfer"), (2, date(2026, 7, 16), D("500.00"), "transfer")]
    assert lines["T1001"].payment == receipts[0].payment and receipts[0].display_number == "BPPR-2026-2027-000001"
    assert receipts[0].snapshot["office"]["name"] == "Banco Popular — agente recaudador"
    # the bank's receipts are links 1, 2 of their own series in the chain of issued records
    from levy.models import ChainLink
    assert list(ChainLink.objects.filter(series="receipt BPPR 2026-2027").order_by("position")
                .values_list("position", "record_id")) == [(1, receipts[0].pk), (2, receipts[1].pk)]
    # applied like counter money: P1's July half settled, P4's July half lowered by 500.00
    statement = accounts.statement(parcel=Parcel.objects.get(parcel_id="P1"), as_of=date(2026, 7, 20))
    assert [(line.number, line.balance) for line in statement.lines] == [(1, D("0.00")), (2, D("9180.00"))]
    assert accounts.account_state(parcel=Parcel.objects.get(parcel_id="P4"), as_of=date(2026, 7, 20)).state.total_due == D("6430.90")
    reasons = {trace: lines[trace].exception_reason for trace in ("T1003", "T1004", "T1005")}
    assert "dígitos de control" in reasons["T1003"]  # a mistyped RF reference is caught by its check digits
    assert "mayor que lo pendiente" in reasons["T1004"] and "$45,900.00" in reasons["T1004"]
    assert "ni un número de catastro" in reasons["T1005"]

    # the same file again: nothing new is applied, every line is "already applied"
    code, out, err = billing_cmd("payments-import", str(path), "--bank", "BPPR", "--user", "sup")
    assert code == 0, err
    assert out.strip().splitlines()[-1] == "applied 0, exceptions 0, already applied 5"
    assert Payment.objects.count() == 2 and Receipt.objects.filter(office=bppr).count() == 2
    assert BankFile.objects.count() == 2
    # the database keeps one line per (bank, trace number) besides the repeats
    with pytest.raises(IntegrityError), transaction.atomic():
        BankFileLine.objects.create(file=first, bank=bppr, line_number=99, trace_number="T1001", value_date=date(2026, 7, 15),
                                    amount=D("1.00"), kind="payment", outcome="exception", exception_reason="x")
    books_clean()


@pytest.mark.django_db
def test_a_malformed_line_refuses_the_whole_file_by_its_line_number(district_1, staff, bppr, monkeypatch, tmp_path):
    at(monkeypatch, date(2026, 7, 20))
    data = (HEADER + "T1,2026-07-15,9180.00,P1,A,,,\n" + "T2,2026-07-16,1,234.00,P4,B,,,\n"
            + "T3,15/07/2026,10.00,P4,C,,,\n" + "T1,2026-07-16,10.00,P4,D,,,\n" + "T5,2026-07-30,10.00,P4,E,,,\n"
            + "T6,2026-07-16,10.00,P4,F,return,,\n").encode()
    with pytest.raises(bank.MalformedFile) as refused:
        import_file(staff, bppr, data)
    errors = refused.value.errors
    assert any(e.startswith("línea 3: más campos") for e in errors)  # the thousands comma split the amount
    assert any(e.startswith("línea 4: fecha valor «15/07/2026» inválida") for e in errors)
    assert any(e.startswith("línea 5: número de rastreo T1 repetido (ya en la línea 2)") for e in errors)
    assert any(e.startswith("línea 6: fecha valor 30/07/2026 posterior a hoy") for e in errors)
    assert any(e.startswith("línea 7: una devolución requiere original_trace_number") for e in errors)
    assert not any(e.startswith("línea 2") for e in errors)  # the good line is not blamed
    assert not BankFile.objects.exists() and not BankFileLine.objects.exists() and not Payment.objects.exists()

    path = tmp_path / "bad.csv"
    path.write_bytes(HEADER.encode() + b"T1,2026-07-15,12.5,P1,A,,,\n")
    code, out, err = billing_cmd("payments-import", str(path), "--bank", "BPPR", "--user", "sup")
    assert code == 1 and len(err.strip().splitlines()) == 1 and "línea 2" in err and "cantidad «12.5» inválida" in err
    assert not BankFile.objects.exists() and not Payment.objects.exists()
    code, out, err = billing_cmd("payments-import", str(path), "--bank", "LAJ", "--user", "sup")
    assert code == 1 and "LAJ es una colecturía" in err


@pytest.mark.django_db
def test_exceptions_resolved_each_way(district_1, staff, bppr, monkeypatch):
    at(monkeypatch, date(2026, 7, 18))
    p3 = Parcel.objects.get(parcel_id="P3")
    counter.payment_record(acting_user=staff["collector"], parcel=p3, amount=D("100.00"))  # at the counter, on 18/07
    at(monkeypatch, date(2026, 7, 20))
    bank_file = import_file(staff, bppr, first_file() + b"T1006,2026-07-16,50.00,P3,Ana,,,\n")
    lines = {line.trace_number: line for line in bank_file.lines.all()}
    assert "anterior a lo ya registrado en la cuenta del predio P3 (Pago del 18/07/2026)" in lines["T1006"].exception_reason
    assert [line.trace_number for line in bank.bank_exceptions_open()] == ["T1003", "T1004", "T1005", "T1006"]

    with pytest.raises(BillingError, match="Solo un supervisor"):
        bank.bank_exception_resolve(acting_user=staff["collector"], line=lines["T1003"], action="unapplied")
    # apply to a parcel: P2, through the counter's posting path; beyond what P2 owes is its credit
    applied = bank.bank_exception_resolve(acting_user=staff["supervisor"], line=lines["T1004"], action="apply")
    assert applied.parcel.parcel_id == "P2" and applied.payment.paid_on == date(2026, 7, 17)
    assert applied.payment.receipt.display_number == "BPPR-2026-2027-000003" and applied.resolved_by == staff["supervisor"]
    p2 = accounts.account_state(parcel=Parcel.objects.get(parcel_id="P2"), as_of=date(2026, 7, 20)).state
    assert (p2.total_balance, p2.credit_balance) == (D("0.00"), D("100000.00") - D("45900.00"))
    # the mistyped reference belongs to P1 in fact: applied there; the line's value date stands (nothing later on P1 … but
    # T1001 was dated 15/07, before 16/07), so it is dated its value date
    to_p1 = bank.bank_exception_resolve(acting_user=staff["supervisor"], line=lines["T1003"], action="apply", parcel_code="P1")
    assert (to_p1.payment.parcel.parcel_id, to_p1.payment.paid_on) == ("P1", date(2026, 7, 16))
    # P3 has a counter payment after the value date: applied, it is dated today (never before what the account records)
    late = bank.bank_exception_resolve(acting_user=staff["supervisor"], line=lines["T1006"], action="apply")
    assert late.payment.paid_on == date(2026, 7, 20)
    # kept as unapplied funds, and returned to the payer (a note says how)
    kept = bank.bank_exception_resolve(acting_user=staff["supervisor"], line=lines["T1005"], action="unapplied")
    assert kept.payment is None and bank.unapplied_funds_total() == (1, D("25.00"))
    with pytest.raises(BillingError, match="ya la resolvió sup"):
        bank.bank_exception_resolve(acting_user=staff["supervisor"], line=lines["T1005"], action="return", note="x")
    assert bank.bank_exceptions_open() == []

    other = import_file(staff, bppr, (HEADER + "T2001,2026-07-19,70.00,LAJ-424242,Pedro,,,\n").encode(), name="b.csv")
    (line,) = other.lines.all()
    with pytest.raises(BillingError, match="Escriba una nota"):
        bank.bank_exception_resolve(acting_user=staff["supervisor"], line=line, action="return")
    returned = bank.bank_exception_resolve(acting_user=staff["supervisor"], line=line, action="return",
                                           note="Transferencia de vuelta, ref. 55123")
    assert (returned.action, returned.note, returned.payment) == ("return", "Transferencia de vuelta, ref. 55123", None)
    assert BankLineResolution.objects.count() == 5

    register = bank.bank_files_register(date(2026, 7, 20), date(2026, 7, 20))
    totals = {total.name: (total.count, total.amount) for total in register.totals}
    assert totals["lines"] == (7, D("109835.00")) and totals["applied"] == (2, D("9680.00"))
    assert totals["exceptions"] == (5, D("100155.00")) and totals["exceptions_open"] == (0, D("0.00"))
    assert totals["exceptions_apply"] == (3, D("100060.00")) and totals["exceptions_unapplied"] == (1, D("25.00"))
    assert totals["exceptions_return"] == (1, D("70.00"))
    assert [len(item.lines) for item in register.files] == [6, 1]
    assert bank.bank_files_register(date(2026, 7, 21), date(2026, 7, 31)).files == ()
    books_clean()


@pytest.mark.django_db
def test_an_nsf_return_voids_the_payment_and_statement_ledger_and_receipt_agree(district_1, staff, bppr, monkeypatch):
    at(monkeypatch, date(2026, 7, 20))
    import_file(staff, bppr, first_file())
    p1 = Parcel.objects.get(parcel_id="P1")
    paid = BankFileLine.objects.get(trace_number="T1001").payment
    at(monkeypatch, date(2026, 7, 24))
    returns = (HEADER + "R9001,2026-07-23,9180.00,,,return,T1001,R01 fondos insuficientes (NSF)\n"
               + "R9002,2026-07-23,500.00,,,return,T1999,R01\n"
               + "R9003,2026-07-23,499.00,,,return,T1002,R01\n").encode()
    returned = import_file(staff, bppr, returns, name="bppr-devoluciones.csv")
    outcomes = {line.trace_number: (line.outcome, line.exception_reason) for line in returned.lines.all()}
    assert outcomes["R9001"] == ("returned", "")
    assert outcomes["R9002"][0] == "exception" and "T1999" in outcomes["R9002"][1]
    assert outcomes["R9003"][0] == "exception" and "$499.00" in outcomes["R9003"][1]  # not the original's amount
    void = PaymentVoid.objects.get(payment=paid)
    assert void.voided_on == date(2026, 7, 24) and void.voided_by == staff["supervisor"]
    assert void.reason == "Devuelto por BPPR (rastreo R9001, del pago T1001): R01 fondos insuficientes (NSF)"
    # statement: the July half is owed again; ledger: a void entry of the amount; they agree
    statement = accounts.statement(parcel=p1, as_of=date(2026, 7, 24))
    assert [(line.number, line.balance) for line in statement.lines] == [(1, D("9180.00")), (2, D("9180.00"))]
    (entry,) = LedgerEntry.objects.filter(payment=paid, kind=LedgerEntry.Kind.VOID)
    assert (entry.debit.amount, entry.entry_date) == (D("9180.00"), date(2026, 7, 24))
    account = accounts.account_state(parcel=p1, as_of=date(2026, 7, 24))
    assert accounts.ledger_balance(p1) == account.ledger.ledger_balance == D("18360.00") == account.state.total_balance
    # the receipt as issued, every download stamped ANULADO with the bank's reason
    text = flat(text_of(documents.document_download(documents.receipt_document(paid.receipt), copy=False)))
    assert "ANULADO" in text and "R01 fondos insuficientes (NSF)" in text
    # the same return again voids nothing more
    again = import_file(staff, bppr, returns, name="bppr-devoluciones.csv")
    assert (again.already_count, again.returned_count, PaymentVoid.objects.count()) == (3, 0, 1)
    # the return that matched nothing is noted by a supervisor
    noted = bank.bank_exception_resolve(acting_user=staff["supervisor"], line=BankFileLine.objects.get(trace_number="R9002", outcome="exception"),
                                        action="noted", note="El banco confirmó que fue un error suyo")
    assert noted.action == "noted"
    register = bank.bank_files_register(date(2026, 7, 1), date(2026, 7, 31))
    totals = {total.name: (total.count, total.amount) for total in register.totals}
    assert totals["returned"] == (1, D("9180.00")) and totals["already_applied"] == (3, D("10179.00"))
    books_clean()


@pytest.mark.django_db
def test_a_bank_is_not_a_counter(district_1, staff, bppr, monkeypatch):
    at(monkeypatch, date(2026, 7, 20))
    with pytest.raises(BillingError, match="banco agente recaudador"):
        counter.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id="P1"), amount=D("1.00"),
                               office_code="BPPR")
    with pytest.raises(BillingError, match="no cierra días"):
        counter.day_close(acting_user=staff["supervisor"], office=bppr, day=date(2026, 7, 20), counted_cash=D("0"),
                          counted_checks=D("0"))
    # a district with one counter still needs no assignment: the bank is not a second counter
    receipt = counter.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id="P1"), amount=D("1.00"))
    assert receipt.office.code == "LAJ"


@pytest.mark.django_db
def test_the_upload_page_refuses_a_malformed_file_by_line_and_only_a_supervisor_uploads(client, district_1, staff, bppr,
                                                                                        monkeypatch):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    at(monkeypatch, date(2026, 7, 20))
    bad = SimpleUploadedFile("bad.csv", (HEADER + "T1,2026-07-15,9180,P1,A,,,\n").encode(), content_type="text/csv")
    client.force_login(staff["supervisor"])
    page = client.post(reverse("collections:bank-files"), {"bank": "BPPR", "file": bad}).content.decode()
    assert "se rechazó completo y no se registró nada" in page and "línea 2: cantidad «9180» inválida" in page
    assert not BankFile.objects.exists()
    good = SimpleUploadedFile("good.csv", first_file(), content_type="text/csv")
    page = client.post(reverse("collections:bank-files"), {"bank": "BPPR", "file": good}).content.decode()
    assert "Se aplicarán: 2" in page and "Irán a excepciones: 3" in page and not BankFile.objects.exists()
    # a confirmation whose fingerprint is not the preview's imports nothing: the preview is shown again
    sha = __import__("hashlib").sha256(first_file()).hexdigest()
    page = client.post(reverse("collections:bank-file-confirm"), {"sha256": sha, "reviewed": "x"}).content.decode()
    assert "cambió desde que lo revisó" in page and not BankFile.objects.exists()
    client.force_login(staff["hacienda"])
    assert client.get(reverse("collections:bank-files")).status_code == 200
    again = SimpleUploadedFile("good.csv", first_file(), content_type="text/csv")
    assert client.post(reverse("collections:bank-files"), {"bank": "BPPR", "file": again}).status_code == 403


@pytest.mark.django_db
def test_the_bank_pages_are_valid_html(client, district_1, staff, bppr, monkeypatch, tmp_path):
    """The files page, the preview, a file's lines and the exceptions queue (with a resolution),
    read by the Nu HTML Checker as tests/test_html_valid.py reads the other pages."""
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    from tests.test_html_valid import need_java, nu_errors

    need_java()
    at(monkeypatch, date(2026, 7, 20))
    client.force_login(staff["supervisor"])
    preview = client.post(reverse("collections:bank-files"),
                          {"bank": "BPPR", "file": SimpleUploadedFile("f.csv", first_file(), content_type="text/csv")})
    bank_file = import_file(staff, bppr, first_file())
    bank.bank_exception_resolve(acting_user=staff["supervisor"], line=bank_file.lines.get(trace_number="T1005"),
                                action="unapplied")
    pages = {"preview": preview.content, "files": client.get(reverse("collections:bank-files")).content,
             "file": client.get(reverse("collections:bank-file", args=[bank_file.pk])).content,
             "exceptions": client.get(reverse("collections:bank-exceptions")).content}
    for name, content in pages.items():
        assert b'<meta name="description"' in content, name
        (tmp_path / f"{name}.html").write_bytes(content)
    assert nu_errors(tmp_path) == []
