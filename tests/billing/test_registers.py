"""Issue 19: registers for auditors (``billing.registers``, ``billing register KIND``). A period is
built through the services (worked example 1: P3 owes 9,180.00 in two halves of 4,590.00): in
July 2026 two payments, a bounced check voided, a refund, a day close short by 10.00 with its
explanation, a roll correction and a COPIA reprint; each register lists them, its totals are
``billing.books``' figures (over the whole books, ``verify_books``' control totals), the CSV has
its documented columns and the PDF prints the totals."""

from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal

import pdfplumber
import pytest
from django.db import connection
from django.urls import reverse

from billing import books, registers
from billing.errors import BillingError
from billing.models import Office, ReprintLog
from billing.services import counter, reprints
from billing.services.corrections import roll_correction_create
from levy.models import RollLine
from parcels.models import Parcel
from tests.billing.conftest import billing_cmd, example_1_finalize
from tests.clock import on_day

D = Decimal
JULY = (date(2026, 7, 1), date(2026, 7, 31))


@pytest.fixture
def july(district_1, staff):
    """The month of July 2026 at the LAJ office, each event on its day."""
    p3, p4 = Parcel.objects.get(parcel_id="P3"), Parcel.objects.get(parcel_id="P4")
    office = Office.objects.get(code="LAJ")
    with on_day(date(2026, 7, 15)):
        cash = counter.payment_record(acting_user=staff["collector"], parcel=p3, amount=D("9300.00"), paid_on=date(2026, 7, 15))
        check = counter.payment_record(acting_user=staff["collector"], parcel=p4, amount=D("500.00"), paid_on=date(2026, 7, 15),
                                       method="check", reference="771")
        counter.refund_issue(acting_user=staff["supervisor"], parcel=p3, amount=D("50.00"), reason="Pagó de más",
                             method="check", check_number="9001")
        # the drawer holds 9,300.00 in cash and the 500.00 check; 10.00 of cash is missing
        counter.day_close(acting_user=staff["supervisor"], office=office, day=date(2026, 7, 15), counted_cash=D("9290.00"),
                          counted_checks=D("500.00"), explanation="Faltan $10.00: cambio mal dado")
    with on_day(date(2026, 7, 20)):
        counter.payment_void(acting_user=staff["supervisor"], payment=check.payment, reason="Cheque devuelto por el banco",
                             voided_on=date(2026, 7, 20))
        roll_correction_create(acting_user=staff["hacienda"], roll_line=RollLine.objects.get(parcel=p4, levy__status="final"),
                               om_charge_delta=D("-100.00"), credit_delta=D("0"), reason="Área corregida", made_on=date(2026, 7, 20))
        reprints.reprint_issue(acting_user=staff["collector"], document=cash.document, channel=ReprintLog.Channel.COUNTER)
    with on_day(date(2026, 8, 3)):  # outside the period
        counter.payment_record(acting_user=staff["collector"], parcel=p4, amount=D("100.00"), paid_on=date(2026, 8, 3))
        reprints.reprint_issue(acting_user=staff["supervisor"], document=cash.document, channel=ReprintLog.Channel.COUNTER)
    return {"cash": cash, "check": check}


def totals(register: registers.Register) -> dict[str, object]:
    return {t.key: t.value for t in register.totals}


@pytest.mark.django_db
def test_each_register_lists_what_happened_in_the_period(july):
    receipts = registers.register_build("receipts", *JULY)
    assert [(row[0], row[1], row[2], row[5], row[7]) for row in receipts.rows] == [
        ("LAJ-2026-2027-000001", date(2026, 7, 15), "P3", D("9300.00"), ""),
        ("LAJ-2026-2027-000002", date(2026, 7, 15), "P4", D("500.00"), date(2026, 7, 20)),  # the voided one stays, marked
    ]
    assert totals(receipts) == {"receipts": 2, "series": 1, "amount": D("9800.00"), "voided": 1, "voided_amount": D("500.00"),
                                "payments": 2}
    voids = registers.register_build("voids", *JULY)
    assert [row[:6] for row in voids.rows] == [(date(2026, 7, 20), "LAJ-2026-2027-000002", date(2026, 7, 15), "P4", D("500.00"),
                                                 "Cheque devuelto por el banco")]
    assert voids.rows[0][6] == "sup" and totals(voids) == {"voids": 1, "amount": D("500.00")}
    refunds = registers.register_build("refunds", *JULY)
    assert [row[:6] for row in refunds.rows] == [("RE-2026-000001", date(2026, 7, 15), "P3", D("50.00"), "Cheque", "9001")]
    assert totals(refunds) == {"refunds": 1, "amount": D("50.00")}
    corrections = registers.register_build("corrections", *JULY)
    assert [row[:7] for row in corrections.rows] == [(date(2026, 7, 20), "2026-2027", 1, "P4", D("-100.00"), D("0.00"), D("-100.00"))]
    assert totals(corrections) == {"corrections": 1, "net": D("-100.00"), "corrections 2026-2027": 1, "net 2026-2027": D("-100.00")}
    closes = registers.register_build("day-closes", *JULY)
    assert [row[:9] for row in closes.rows] == [(date(2026, 7, 15), "LAJ", D("9300.00"), D("9290.00"), D("-10.00"), D("500.00"),
                                                  D("500.00"), D("0.00"), "Faltan $10.00: cambio mal dado")]
    assert totals(closes) == {"closes": 1, "cash_over_short": D("-10.00"), "checks_over_short": D("0.00"), "unmatched": 1}
    reprinted = registers.register_build("reprints", *JULY)
    assert [(row[0], row[2], row[3], row[5]) for row in reprinted.rows] == [
        (date(2026, 7, 20), "Recibo contributivo", "LAJ-2026-2027-000001", "col")]  # the August reprint is not in July
    assert totals(reprinted) == {"reprints": 1, "reprints receipt": 1}
    # a period with nothing in it
    assert registers.register_build("voids", date(2026, 6, 1), date(2026, 6, 30)).rows == ()
    assert totals(registers.register_build("voids", date(2026, 6, 1), date(2026, 6, 30))) == {"voids": 0, "amount": D("0")}


@pytest.mark.django_db
def test_the_registers_totals_are_verify_books_control_totals(july):
    """The same functions of ``billing.books``: for the period, and over all time they are the control totals."""
    with connection.cursor() as cursor:
        assert registers.register_build("receipts", *JULY).total("amount") == books.payment_totals(cursor, start=JULY[0], end=JULY[1])[1]
        assert registers.register_build("refunds", *JULY).total("amount") == books.ledger_totals(cursor, start=JULY[0], end=JULY[1]).refunds
    everything = (date(2025, 1, 1), date(2026, 12, 31))
    control = books.control_totals()
    receipts = registers.register_build("receipts", *everything)
    assert control["payments"] == f"{receipts.total('payments')} ({receipts.total('amount')})" == "3 (9900.00)"
    assert control["receipts"] == f"{receipts.total('receipts')} in {receipts.total('series')} series ({receipts.total('voided')} of voided payments)"
    voids = registers.register_build("voids", *everything)
    assert control["payments voided"] == f"{voids.total('voids')} ({voids.total('amount')})" == "1 (500.00)"
    assert control["refunds"] == str(registers.register_build("refunds", *everything).total("amount")) == "50.00"
    corrections = registers.register_build("corrections", *everything)
    assert control["corrections 2026-2027"] == f"{corrections.total('corrections 2026-2027')} ({corrections.total('net 2026-2027')})"
    assert control["bills"] == str(registers.register_build("bills", *everything).total("bills"))
    assert books.verify() == []


@pytest.mark.django_db
def test_a_reprint_is_logged_and_the_stored_document_does_not_change(july, staff):
    document = july["cash"].document
    stored = bytes(document.pdf)
    logs = list(ReprintLog.objects.order_by("pk").values_list("document_id", "printed_by__username", "printed_on", "channel"))
    assert logs == [(document.pk, "col", date(2026, 7, 20), "counter"), (document.pk, "sup", date(2026, 8, 3), "counter")]
    document.refresh_from_db()
    assert bytes(document.pdf) == stored
    with pytest.raises(BillingError, match="identifíquese"):
        reprints.reprint_issue(acting_user=None, document=document, channel="counter")
    assert ReprintLog.objects.count() == 2


@pytest.mark.django_db
def test_late_finalizations_register(make_parcel, owner_a, staff):
    """¶11: a roll finalized after July 1 is in the register of late finalizations of the period it was finalized in."""
    with on_day(date(2026, 7, 10)):
        levy = example_1_finalize(make_parcel, owner_a, staff, finalized_on=date(2026, 7, 10))
    assert levy.finalized_late
    register = registers.register_build("late-finalizations", *JULY)
    assert [row[:5] for row in register.rows] == [("2026-2027", date(2026, 7, 1), date(2026, 7, 10), 9, "hac")]
    assert totals(register) == {"rolls": 1, "total_levy": levy.total_levy.amount, "roll_net": levy.roll_net.amount}
    assert books.control_totals()["levy 2026-2027"] == str(register.total("total_levy"))
    assert registers.register_build("late-finalizations", date(2026, 8, 1), date(2026, 8, 31)).rows == ()


@pytest.mark.django_db
def test_the_command_writes_csv_and_pdf_and_refuses_bad_input(july, tmp_path):
    code, out, err = billing_cmd("register", "day-closes", "--from", "2026-07-01", "--to", "2026-07-31", "--format", "csv")
    assert code == 0, err
    lines = list(csv.reader(io.StringIO(out)))
    assert lines[0] == ["day", "office", "expected_cash", "counted_cash", "cash_over_short", "expected_checks", "counted_checks",
                        "checks_over_short", "explanation", "closed_by"]
    assert lines[1] == ["2026-07-15", "LAJ", "9300.00", "9290.00", "-10.00", "500.00", "500.00", "0.00",
                        "Faltan $10.00: cambio mal dado", "sup"]
    assert lines[2] == [] and ["total", "cash_over_short", "-10.00"] in lines[3:]
    code, out, err = billing_cmd("register", "receipts", "--from", "2026-07-01", "--to", "2026-07-31")
    header, *rows = list(csv.reader(io.StringIO(out)))
    assert header == ["receipt", "paid_on", "parcel", "payer", "method", "amount", "collector", "voided_on"]
    assert rows[0][0] == "LAJ-2026-2027-000001" and ["total", "amount", "9800.00"] in rows
    target = tmp_path / "voids.pdf"
    code, out, err = billing_cmd("register", "voids", "--from", "2026-07-01", "--to", "2026-07-31", "--format", "pdf", "--out", str(target))
    assert code == 0, err
    with pdfplumber.open(target) as document:
        text = "\n".join(page.extract_text() for page in document.pages)
    assert "Registro de recibos anulados" in text and "Anulaciones 1" in text and "Cantidad anulada $500.00" in text
    assert "LAJ-2026-2027-000002" in text and "Cheque devuelto por el banco" in text and "20/07/2026" in text
    for args, reason in [
        (("register", "nothing", "--from", "2026-07-01", "--to", "2026-07-31"), "Registro desconocido: nothing"),
        (("register", "voids", "--from", "2026-07-31", "--to", "2026-07-01"), "antes de empezar"),
        (("register", "voids", "--from", "31/07/2026", "--to", "2026-07-31"), "malformed date"),
        (("register", "voids", "--from", "2026-07-01", "--to", "2026-07-31", "--format", "pdf"), "give --out"),
    ]:
        code, out, err = billing_cmd(*args)
        assert code == 1 and reason in err and len(err.strip().splitlines()) == 1, (args, err)


@pytest.mark.django_db
def test_the_pdf_in_english_prints_the_totals(july):
    data = registers.register_pdf(registers.register_build("refunds", *JULY), lang="en")
    with pdfplumber.open(io.BytesIO(data)) as document:
        text = "\n".join(page.extract_text() for page in document.pages)
        assert document.metadata.get("Title", "").startswith("Refund register")
    assert "Refunds 1" in text and "Amount refunded $50.00" in text and "RE-2026-000001" in text


@pytest.mark.django_db
def test_the_page_shows_the_register_with_its_totals_and_downloads_it(july, make_user, client):
    auditor = make_user("aud", "auditor")
    client.force_login(auditor)
    url = reverse("registers:register")
    page = client.get(url)
    assert page.status_code == 200 and "Registro de recibos emitidos" in page.content.decode()  # the form, nothing yet
    query = {"kind": "day-closes", "start": "01/07/2026", "end": "31/07/2026"}
    html = client.get(url, query).content.decode()
    assert "Registro de cierres del día" in html and "Faltan $10.00: cambio mal dado" in html and "-$10.00" in html
    assert "15/07/2026" in html and 'id="register-csv"' in html
    download = client.get(url, {**query, "format": "csv"})
    assert download["Content-Type"].startswith("text/csv") and "registro-day-closes-2026-07-01-2026-07-31.csv" in download["Content-Disposition"]
    assert download.content.decode().splitlines()[1].startswith("2026-07-15,LAJ,9300.00,9290.00,-10.00")
    document = client.get(url, {**query, "format": "pdf"})
    with pdfplumber.open(io.BytesIO(document.content)) as pdf:
        text = "\n".join(page.extract_text() for page in pdf.pages)
    assert "Cierres que no cuadraron 1" in text and "Sobrante o faltante de efectivo -$10.00" in text
    # a bad period is said on the page, and nothing is downloaded
    html = client.get(url, {**query, "start": "31/07/2026", "end": "01/07/2026", "format": "csv"}).content.decode()
    assert "antes de empezar" in html
    client.force_login(make_user("col9", "collector"))
    assert client.get(url, query).status_code == 403


@pytest.mark.django_db
def test_every_copia_from_the_pages_is_logged_and_a_plain_download_is_not(july, client, make_user, owner_a):
    """The counter's ``?copia=1`` (collector; a landowner's from the portal) and the portal's second
    download of a bill are each a ``ReprintLog`` row; the receipt as issued is not a reprint."""
    from billing.models import Bill, Charge

    before = ReprintLog.objects.count()
    receipt = july["cash"]
    client.force_login(make_user("col7", "collector"))
    url = reverse("billing:receipt-pdf", args=[receipt.pk])
    assert client.get(url).status_code == 200
    assert ReprintLog.objects.count() == before  # the receipt as issued: not a reprint
    assert client.get(url + "?copia=1").status_code == 200
    carmen = make_user("carmen", "landowner", owner_a)
    client.force_login(carmen)
    assert client.get(url + "?copia=1").status_code == 200
    bill_url = reverse("portal:installment-bill", args=[Charge.objects.get(parcel__parcel_id="P2", kind="installment", number=1).pk])
    client.post(bill_url)  # issued: not a reprint
    client.post(bill_url)  # the COPIA
    bill = Bill.objects.get()
    logged = list(ReprintLog.objects.order_by("pk").values_list("document__number", "printed_by__username", "channel")[before:])
    assert logged == [(receipt.display_number, "col7", "counter"), (receipt.display_number, "carmen", "portal"),
                      (bill.number, "carmen", "portal")]
