"""Printable documents: receipts, bills and debt certificates as stored one-page PDFs, read back
as text; their QR codes decoded from a rendered image and opened on the public verification
page; COPIA reprints; bulk printing and its restart; the command line."""

from __future__ import annotations

import hashlib
import io
import re
import subprocess
from datetime import date
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from pypdf import PdfReader

from billing import bulk, documents, pdf
from billing.errors import BillingError
from billing.models import Bill, BillBatch, BillBatchPart, Charge, IssuedDocument, ReprintLog
from billing.services import bills, counter
from billing.services.installments import roll_finalize
from levy.models import Levy, RollLine
from levy.services import estimate_certify, estimate_enter, levy_compute
from parcels.models import Job, Parcel
from tests.billing.conftest import billing_cmd
from tests.clock import on_day
from tests.known_codes import ACCESS_CODES, TEST_SECRET_KEY, VERIFICATION_CODES

# Example 2 of the worked examples (2027-2028): A has a 25% credit for ceded water rights.
EXAMPLE_2 = [("A", "120", "0", "25"), ("B", "0", "80", "0"), ("C", "60", "40", "10"), ("D", "200", "0", "0"), ("E", "33.3", "0", "50")]


def text_of(data: bytes) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)


def page_count(data: bytes) -> int:
    return len(PdfReader(io.BytesIO(data)).pages)


def flat(text: str) -> str:
    """The text with its line breaks as spaces (a long label may wrap)."""
    return re.sub(r"\s+", " ", text)


def pay(staff, code: str, amount: str, on: date):
    with on_day(on):
        return counter.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id=code),
                                       amount=Decimal(amount), paid_on=on)


@pytest.fixture
def district_2(make_parcel, owner_a, owner_b, staff):
    """Example 2 (2027-2028), finalized on time on 2027-06-30."""
    for parcel_id, gravity, pumped, credit in EXAMPLE_2:
        make_parcel(parcel_id, owner_a if parcel_id in "AB" else owner_b, gravity=gravity, pumped=pumped, credit=credit)
    estimate_enter(acting_user=staff["authority"], fiscal_year="2027-2028", om_estimate=Decimal("250000.00"),
                   reserve=Decimal("5000.00"), misc_income=Decimal("20000.00"), deficit=Decimal("12345.67"))
    estimate_certify(acting_user=staff["authority"], fiscal_year="2027-2028")
    levy_compute(acting_user=staff["hacienda"], fiscal_year="2027-2028")
    return roll_finalize(acting_user=staff["hacienda"], fiscal_year="2027-2028", today=date(2027, 6, 30))


# --- codes ------------------------------------------------------------------------------------------


def test_portal_access_code_is_the_agreed_hmac(settings):
    settings.SECRET_KEY = TEST_SECRET_KEY
    # known answers worked out with the standard library alone (tests/known_codes.py): a new owner
    # (OWN-B) or another parcel (LAJ-A2) gets another code
    for (parcel_id, owner_key), code in ACCESS_CODES.items():
        assert documents.portal_access_code(parcel_id, owner_key) == code, (parcel_id, owner_key)
    # the secret is part of the recipe: another installation prints other codes
    settings.SECRET_KEY = TEST_SECRET_KEY + "-elsewhere"
    assert documents.portal_access_code("LAJ-A1", "OWN-A") != ACCESS_CODES[("LAJ-A1", "OWN-A")]


def test_verification_codes_are_signed_unique_and_url_safe(settings):
    settings.SECRET_KEY = TEST_SECRET_KEY
    first = documents.verification_code("receipt", "LAJ-2026-2027-000001")
    assert first == VERIFICATION_CODES[("receipt", "LAJ-2026-2027-000001")]  # known answer, tests/known_codes.py
    second = documents.verification_code("receipt", "LAJ-2026-2027-000002")
    assert first != second and first != documents.verification_code("bill", "LAJ-2026-2027-000001")
    assert re.fullmatch(r"[A-Za-z0-9_.\-]+", first) and len(first) <= 80
    assert "LAJ-2026-2027-000001" in first
    with pytest.raises(Exception, match="[Ss]ignature"):
        from django.core import signing

        signing.Signer(salt="lajas.verify", sep=".").unsign(first[:-1] + ("A" if first[-1] != "A" else "B"))


def test_the_pdf_fetcher_serves_only_bundled_files():
    font = pdf.font_dir() / "SourceSansPro-Regular.ttf"
    assert pdf._local_only(font.as_uri()).read(4)  # the bundled fonts
    for url in ("file:///etc/passwd", "http://example.com/x.css", f"file://{pdf.font_dir()}/../../../../etc/hosts"):
        with pytest.raises(ValueError):
            pdf._local_only(url)


# --- receipts ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_receipt_pdf_is_one_page_with_every_required_line(district_1, staff):
    receipt = pay(staff, "P4", "7000.21", date(2026, 10, 15))  # worked example 1: the late July half
    document = IssuedDocument.objects.get(receipt=receipt)
    data = bytes(document.pdf)
    assert (document.kind, document.number, document.parcel.parcel_id) == ("receipt", "LAJ-2026-2027-000001", "P4")
    assert document.sha256 == hashlib.sha256(data).hexdigest()
    assert page_count(data) == 1
    text = flat(text_of(data))
    for expected in [
        "Gobierno de Puerto Rico", "Departamento de Hacienda", "Autoridad de Tierras", "Distrito de Regadío del Valle de Lajas",
        "Recibo contributivo", "LAJ-2026-2027-000001", "2026-2027", "Plazo 1", "primer semestre (julio)",
        "Número de catastro P4", "Carmen Irizarry Vélez", "Acres por gravedad 75.5000", "Acres equivalentes1 75.5000",  # ¹: the law (¶5) in a footnote
        "Contribución de operación y mantenimiento impuesta, año fiscal 2026-2027 $13,861.80",
        "Contribución neta, pagadera en dos plazos", "$6,930.90", "$69.31", "½% × 2 meses sobre $6,930.90", "Cantidad pagada $7,000.21",
        "15 de octubre de 2026", "Vence: 1 de julio de 2026", "Último día: 31 de agosto de 2026", "Queda adeudado al 15 de octubre de 2026 $0.00",
        "sus recargos son un gravamen sobre el predio", "(¶11).", "(¶12 de la ley)", "Recibido por Oficial Col Prueba", "/verificar/",
    ]:
        assert expected in text, expected
    assert "Crédito por derechos de agua cedidos" not in text  # P4 has no credit (¶9: "cuando así corresponda")
    assert "(¶6, ¶9) $" not in text and "OWN-A" not in text  # the law in footnotes, no internal owner key
    # tagged PDF/UA with a title and a language
    reader = PdfReader(io.BytesIO(data))
    root = reader.trailer["/Root"]
    assert "/StructTreeRoot" in root and root["/MarkInfo"]["/Marked"] and str(root["/Lang"]).startswith("es")
    assert reader.metadata.title == "Recibo contributivo LAJ-2026-2027-000001"
    fonts = {str(font["/BaseFont"]) for page in reader.pages for font in page["/Resources"]["/Font"].values()}
    assert fonts and all("Source-Sans-Pro" in font for font in fonts), fonts


@pytest.mark.django_db
def test_receipt_shows_the_credit_for_ceded_water_rights(district_2, staff):
    receipt = pay(staff, "A", "27189.50", date(2027, 7, 15))
    data = bytes(receipt.document.pdf)
    assert page_count(data) == 1
    text = flat(text_of(data))
    assert "Contribución de operación y mantenimiento impuesta, año fiscal 2027-2028 $72,505.34" in text
    assert "Crédito por derechos de agua cedidos: 25.00 % de la contribución -$18,126.34" in text
    assert "$54,379.00" in text and "$27,189.50" in text and "Plazo 1, año fiscal 2027-2028" in text
    assert "Vence: 1 de julio de 2027" in text and "Último día: 30 de agosto de 2027" in text


@pytest.mark.books_unchecked  # water charges made without their ledger entries (no service bills water to a levied parcel)
@pytest.mark.django_db
def test_a_receipt_paying_many_charges_is_set_tighter_to_stay_on_one_page(district_1, staff):
    p4 = Parcel.objects.get(parcel_id="P4")
    year = Charge.objects.filter(parcel=p4).first().fiscal_year
    for month in range(1, 11):  # ten months of water sales besides the two installments
        Charge.objects.create(parcel=p4, kind=Charge.Kind.WATER, fiscal_year=year, principal=Decimal("20.00"),
                              description=f"Agua {month:02d}/2026: 10.000 acres-pie (sec. 374a)", due_date=date(2026, month, 1),
                              last_day_to_pay=date(2026, month, 1), accrues_surcharge=False, created_by=staff["authority"])
    receipt = pay(staff, "P4", "20000.00", date(2027, 1, 2))
    assert len(receipt.snapshot["applications"]) == 12
    data = bytes(receipt.document.pdf)
    text = flat(text_of(data))
    assert page_count(data) == 1
    assert "Agua 01/2026" in text and "Agua 10/2026" in text and "Plazo 2, año fiscal 2026-2027" in text
    assert "Crédito a favor" in text and "¶11" in text and "/verificar/" in text


@pytest.mark.django_db
def test_receipt_in_english_on_request(district_1, staff):
    receipt = pay(staff, "P4", "7000.21", date(2026, 10, 15))
    data = documents.render_receipt(receipt, lang="en")
    text = flat(text_of(data))
    assert page_count(data) == 1
    assert "15 October 2026" in text and "1 July 2026" in text and "$7,000.21" in text
    assert "Cadastre number" in text  # a label the English catalog has
    assert "15 de octubre de 2026" in flat(text_of(bytes(receipt.document.pdf)))  # the stored one stays Spanish
    assert str(PdfReader(io.BytesIO(data)).trailer["/Root"]["/Lang"]) == "en"


# --- the QR code and the verification page ---------------------------------------------------------


def qr_url(data: bytes, tmp_path: Path) -> str:
    import PIL.Image
    import zxingcpp

    (tmp_path / "doc.pdf").write_bytes(data)
    subprocess.run(["/usr/bin/pdftoppm", "-png", "-r", "150", "-f", "1", "-l", "1", str(tmp_path / "doc.pdf"), str(tmp_path / "page")],
                   check=True)
    image = PIL.Image.open(next(tmp_path.glob("page*.png")))
    found = [result.text for result in zxingcpp.read_barcodes(image) if result.format == zxingcpp.BarcodeFormat.QRCode]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.django_db
def test_receipt_qr_opens_the_public_page_and_a_tampered_code_is_refused(client, district_1, staff, tmp_path):
    receipt = pay(staff, "P4", "7000.21", date(2026, 10, 15))
    url = qr_url(bytes(receipt.document.pdf), tmp_path)
    assert url == f"{settings.SITE_URL}/verificar/{receipt.document.verification_code}/"
    response = client.get(urlsplit(url).path)  # nobody is signed in
    page = response.content.decode()
    assert response.status_code == 200
    assert "DOCUMENTO VÁLIDO" in page and "LAJ-2026-2027-000001" in page and "Recibo contributivo" in page
    assert "P4" in page and "$7,000.21" in page and "15 de octubre de 2026" in page
    assert "Carmen" not in page  # a public page names no owner
    code = receipt.document.verification_code
    for bad in (code[:-1] + ("x" if code[-1] != "x" else "y"), code.replace("000001", "000002"), "R-LAJ-2026-2027-000001", "nada"):
        refused = client.get(f"/verificar/{bad}/")
        assert refused.status_code == 404 and "no reconocido" in refused.content.decode(), bad


@pytest.mark.django_db
def test_voided_payment_verifies_as_anulado_and_its_copy_says_so(client, district_1, staff):
    receipt = pay(staff, "P1", "9180.00", date(2026, 7, 6))
    before = bytes(receipt.document.pdf)
    counter.payment_void(acting_user=staff["supervisor"], payment=receipt.payment, reason="Cheque devuelto",
                          voided_on=date(2026, 7, 9))
    page = client.get(f"/verificar/{receipt.document.verification_code}/").content.decode()
    assert "ANULADO" in page and "9 de julio de 2026" in page and "DOCUMENTO VÁLIDO" not in page
    receipt.document.refresh_from_db()
    assert bytes(receipt.document.pdf) == before  # the receipt stays as issued
    copy = flat(text_of(documents.document_copy(receipt.document, on=date(2026, 7, 10))))
    assert "COPIA — reimpreso el 10 de julio de 2026" in copy and "PAGO ANULADO el 9 de julio de 2026" in copy


@pytest.mark.django_db
def test_copy_is_stamped_and_the_stored_bytes_do_not_change(district_1, staff, tmp_path):
    receipt = pay(staff, "P4", "7000.21", date(2026, 10, 15))
    document = receipt.document
    stored = hashlib.sha256(bytes(document.pdf)).hexdigest()
    copy = documents.document_copy(document, on=date(2026, 12, 5))
    assert page_count(copy) == 1
    text = flat(text_of(copy))
    assert "COPIA — reimpreso el 5 de diciembre de 2026" in text and "LAJ-2026-2027-000001" in text and "$7,000.21" in text
    document.refresh_from_db()
    assert hashlib.sha256(bytes(document.pdf)).hexdigest() == stored == document.sha256
    # the command line: the stored bytes as they are, or the copy
    out = tmp_path / "r.pdf"
    code, stdout, err = billing_cmd("receipt", "LAJ-2026-2027-000001", "--out", str(out))
    assert code == 0, err
    assert out.read_bytes() == bytes(document.pdf)
    code, stdout, err = billing_cmd("receipt", "LAJ-2026-2027-000001", "--out", str(out), "--copy")
    assert code == 1 and "give --user" in err  # issue 19: every COPIA is logged with who printed it
    code, stdout, err = billing_cmd("receipt", "LAJ-2026-2027-000001", "--out", str(out), "--copy", "--user", "sup")
    assert code == 0 and "COPIA" in text_of(out.read_bytes())
    assert [(r.document_id, r.printed_by.username, r.channel) for r in ReprintLog.objects.all()] == [(document.pk, "sup", "command")]
    assert IssuedDocument.objects.count() == 1


# --- bills ------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_bill_through_the_command_line_with_the_credit_and_access_code(district_2, staff, tmp_path, monkeypatch):
    from django.utils import timezone

    monkeypatch.setattr(timezone, "localdate", lambda *args, **kwargs: date(2027, 7, 1))
    out = tmp_path / "bill.pdf"
    code, stdout, err = billing_cmd("bill", "--parcel", "A", "--fiscal-year", "2027-2028", "--installment", "1", "--out", str(out),
                                    "--user", "hac")
    assert code == 0, err
    bill = Bill.objects.get()
    assert bill.number == "AV-2027-000001" and bill.batch is None and bill.issued_on == date(2027, 7, 1)
    data = out.read_bytes()
    assert data == bytes(bill.document.pdf) and page_count(data) == 1
    text = flat(text_of(data))
    for expected in [
        "Aviso de contribución", "AV-2027-000001", "Departamento de Hacienda", "Autoridad de Tierras", "2027-2028",
        "Plazo 1 — primer semestre (julio)", "Fecha del aviso 1 de julio de 2027", "Número de catastro A", "Carmen Irizarry Vélez",
        "Acres por gravedad 120.0000", "Acres equivalentes1 120.0000",
        "Contribución de operación y mantenimiento impuesta, año fiscal 2027-20285 $72,505.34",
        "Crédito por derechos de agua cedidos: 25.00 % de la contribución -$18,126.34", "$54,379.00",
        "Total a pagar $27,189.50", "Vence (pagadero por adelantado)3 1 de julio de 2027",
        "31 de agosto de 2027", "Ninguno a la fecha del aviso", "Plazo 1 del año fiscal 2027-2028 — este aviso 01/07/2027 $27,189.50 $0.00 $27,189.50",
        "Las cantidades de este aviso son al 1 de julio de 2027", "estado de cuenta", "(¶11)", "(¶13)", "½%",
        documents.portal_access_code("A", "OWN-A"), "/verificar/",
    ]:
        assert expected in text, expected
    # again, without a user: the stored bill, not a new one
    again = tmp_path / "again.pdf"
    code, stdout, err = billing_cmd("bill", "--parcel", "A", "--fiscal-year", "2027-2028", "--installment", "1", "--out", str(again))
    assert code == 0 and "stored" in stdout
    assert again.read_bytes() == data and Bill.objects.count() == 1


@pytest.mark.django_db
def test_bill_states_amounts_as_of_its_date_with_the_surcharge_counted(district_1, staff, client):
    charge = Charge.objects.get(parcel__parcel_id="P4", number=1)
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=charge, issued_on=date(2026, 10, 15))
    text = flat(text_of(bytes(bill.document.pdf)))
    assert "Recargo3 Contado así: ½% × 2 meses sobre $6,930.90 $69.31" in text
    assert "01/07/2026 $6,930.90 $69.31 $7,000.21" in text and "Total a pagar $7,000.21" in text
    assert "Crédito por derechos de agua cedidos" not in text
    assert bill.snapshot["balance"] == "7000.21" and bill.snapshot["as_of"] == "2026-10-15"
    page = client.get(f"/verificar/{bill.document.verification_code}/").content.decode()
    assert "Aviso de contribución" in page and bill.number in page and "$7,000.21" in page and "DOCUMENTO VÁLIDO" in page
    english = flat(text_of(documents.render_bill(bill, lang="en")))
    assert "1 July 2026" in english and "15 October 2026" in english and "$7,000.21" in english


@pytest.mark.django_db
def test_a_crowded_second_installment_bill_is_set_tighter_not_refused(district_2, staff):
    """A January bill of a parcel with a credit, a long owner name and an overdue July installment
    (¶9 credit line, ¶12 surcharge, ¶13 account total) holds more lines than any other: it is set
    at a denser size to stay on one page (bulk printing of a semester once failed on it)."""
    from parcels.models import Owner

    Owner.objects.filter(owner_key="OWN-A").update(name=("Sucesión de Carmen Irizarry Vélez y otros herederos, " * 5)[:200])
    july = Charge.objects.get(parcel__parcel_id="A", number=1)
    january = Charge.objects.get(parcel__parcel_id="A", number=2)
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=january, issued_on=date(2027, 12, 15))
    data = bytes(bill.document.pdf)
    assert page_count(data) == 1
    html = documents.bill_html(number=bill.number, snapshot=bill.snapshot, issued_on=bill.issued_on, code="x")
    assert len(pdf._layout(pdf.with_density(html, "")).pages) == 2  # at the roomiest density it would not fit
    text = flat(text_of(data))
    assert "Crédito por derechos de agua cedidos: 25.00 %" in text and "Plazo 2 — segundo semestre (enero)" in text
    # The July installment is overdue: the total to pay and its breakdown name it.
    assert "Plazo 1 del año fiscal 2027-2028 — moroso" in text and "Desglose del total a pagar" in text
    assert pdf.with_density('<html><body class="">x', "dense") == '<html><body class="dense">x'
    # A July bill with nothing else overdue lists only itself.
    july_bill = bills.bill_issue(acting_user=staff["hacienda"], charge=july, issued_on=date(2027, 7, 1))
    july_text = flat(text_of(bytes(july_bill.document.pdf)))
    assert "— moroso" not in july_text and "Total adeudado en la cuenta" not in july_text


@pytest.mark.books_unchecked  # an installment of a draft roll, on purpose
@pytest.mark.django_db
def test_a_draft_roll_is_never_billed(district_1, staff):
    estimate_enter(acting_user=staff["authority"], fiscal_year="2027-2028", om_estimate=Decimal("100000.00"),
                   reserve=Decimal("1000.00"), misc_income=Decimal("0.00"))
    estimate_certify(acting_user=staff["authority"], fiscal_year="2027-2028")
    draft = levy_compute(acting_user=staff["hacienda"], fiscal_year="2027-2028")
    assert draft.status == Levy.Status.DRAFT
    line = RollLine.objects.filter(levy=draft, levied=True).first()
    charge = Charge.objects.create(  # what no service does: an installment of a draft roll
        parcel=line.parcel, kind=Charge.Kind.INSTALLMENT, fiscal_year=draft.fiscal_year, number=1, roll_line=line,
        description="draft", principal=line.first_installment, due_date=date(2027, 7, 1), last_day_to_pay=date(2027, 8, 30),
        created_by=staff["hacienda"],
    )
    with pytest.raises(BillingError, match="borrador"):
        bills.bill_issue(acting_user=staff["hacienda"], charge=charge)
    assert not Bill.objects.exists()
    with pytest.raises(BillingError):
        bills.bill_issue(acting_user=staff["authority"], charge=Charge.objects.get(
            parcel__parcel_id="P1", number=1, roll_line__levy__status="final"))


# --- debt certificates -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_certificate_command_and_a_superseded_certificate(client, district_1, staff, tmp_path):
    out = tmp_path / "cd.pdf"
    code, stdout, err = billing_cmd("certificate", "--parcel", "P4", "--as-of", "2026-10-15", "--out", str(out), "--user", "hac")
    assert code == 0, err
    first = IssuedDocument.objects.get(kind="certificate")
    assert out.read_bytes() == bytes(first.pdf)
    text = flat(text_of(out.read_bytes()))
    assert first.number in text and "Deuda al 15 de octubre de 2026" in text and "$7,000.21" in text and "¶11" in text
    assert "31 de agosto de 2026" in text
    url = qr_url(out.read_bytes(), tmp_path)
    assert "VÁLIDO" in client.get(urlsplit(url).path).content.decode()
    assert billing_cmd("certificate", "--parcel", "P4", "--as-of", "2026-10-16", "--out", str(out), "--user", "hac")[0] == 0
    second = IssuedDocument.objects.exclude(pk=first.pk).get(kind="certificate")
    page = client.get(urlsplit(url).path).content.decode()
    assert "SUSTITUIDA" in page and second.number in page
    assert "VÁLIDO" in client.get(f"/verificar/{second.verification_code}/").content.decode()


# --- the command line's refusals ----------------------------------------------------------------------


@pytest.mark.django_db
def test_document_commands_exit_1_with_a_reason(district_1, staff, tmp_path):
    out = str(tmp_path / "x.pdf")
    cases = [
        (["receipt", "LAJ-2026-2027-000099", "--out", out], "LAJ-2026-2027-000099"),
        (["receipt", "nonsense", "--out", out], "nonsense"),
        (["bill", "--parcel", "NOPE", "--fiscal-year", "2026-2027", "--installment", "1", "--out", out, "--user", "hac"], "NOPE"),
        (["bill", "--parcel", "P1", "--fiscal-year", "2030-2031", "--installment", "1", "--out", out, "--user", "hac"], "2030-2031"),
        (["bill", "--parcel", "P1", "--fiscal-year", "2026-2027", "--installment", "1", "--out", out], "usuario"),
        (["bill", "--parcel", "P1", "--fiscal-year", "2026-2027", "--installment", "1", "--out", out, "--user", "nobody"], "nobody"),
        (["bill", "--parcel", "P1", "--fiscal-year", "2026-2027", "--installment", "1", "--out", out, "--user", "aut"], "aut"),
        (["certificate", "--parcel", "P1", "--as-of", "2026-13-01", "--out", out, "--user", "hac"], "date"),
        (["certificate", "--parcel", "P1", "--as-of", "2026-10-01", "--out", out, "--user", "aut"], "certificaciones"),
        (["certificate", "--parcel", "P1", "--as-of", "2026-10-01", "--out", str(tmp_path / "no" / "x.pdf"), "--user", "hac"], "directory"),
        (["bulk-bills", "--fiscal-year", "2026-2027", "--installment", "1", "--user", "col"], "Hacienda"),
        (["bulk-bills", "--fiscal-year", "2031-2032", "--installment", "1", "--user", "hac"], "2031-2032"),
    ]
    for args, reason in cases:
        code, stdout, err = billing_cmd(*args)
        assert code == 1, (args, stdout)
        assert err.startswith("error:") and reason in err and len(err.strip().splitlines()) == 1, (args, err)
    assert not Path(out).exists() and not Bill.objects.exists()


# --- bulk printing -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_bulk_batch_parts_and_a_restart_duplicate_nothing(district_1, staff, monkeypatch, inline_jobs):
    monkeypatch.setattr(bulk, "PART_PAGES", 2)
    monkeypatch.setattr(bulk, "CHUNK", 1)
    batch = bills.bill_batch_start(staff["hacienda"], "2026-2027", 1)
    job = Job.objects.get(pk=batch.job_id)
    assert job.kind == "bill_batch" and job.status == Job.Status.QUEUED and job.payload == {"batch_id": batch.pk}
    assert job.key == "2026-2027/1" and inline_jobs.connector.jobs[job.procrastinate_job_id]["lock"] == "bill_batch:2026-2027/1"
    # issue 20: every bill is numbered first, in one transaction; then the parts (in the mailing list's
    # order, issue 19) are rendered and merged. The worker dies while rendering the third bill, then
    # (the next run) while writing the third part.
    real_render, real_part_write = bills.bill_documents_render, bulk.part_write
    rendered_chunks = []

    def dies_on_third_bill(**kwargs):
        if len(rendered_chunks) == 2:
            raise RuntimeError("worker killed")
        rendered_chunks.append(kwargs["bill_ids"])
        return real_render(**kwargs)

    def dies_on_third_part(*, index, **kwargs):
        if index == 2:
            raise RuntimeError("worker killed")
        return real_part_write(index=index, **kwargs)

    monkeypatch.setattr(bills, "bill_documents_render", dies_on_third_bill)
    with pytest.raises(RuntimeError):
        bulk.bill_batch_run(batch=batch, processes=1)
    assert batch.bills.count() == 5 and IssuedDocument.objects.filter(bill__batch=batch).count() == 2
    assert list(batch.parts.values_list("index", flat=True)) == [0]
    first_numbers = set(batch.bills.values_list("number", flat=True))
    first_bytes = dict(IssuedDocument.objects.filter(bill__batch=batch).values_list("number", "sha256"))
    monkeypatch.setattr(bills, "bill_documents_render", real_render)
    monkeypatch.setattr(bulk, "part_write", dies_on_third_part)
    with pytest.raises(RuntimeError):
        bulk.bill_batch_run(batch=batch, processes=1)
    assert IssuedDocument.objects.filter(bill__batch=batch).count() == 5
    assert list(batch.parts.values_list("index", flat=True)) == [0, 1]
    assert set(batch.bills.values_list("number", flat=True)) == first_numbers  # kept, not renumbered
    monkeypatch.setattr(bulk, "part_write", real_part_write)
    assert inline_jobs.run() == 4  # the job, run by a worker after the ones that died, and its 3 parts' tasks
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    assert job.result["bills"] == 5 and job.result["issued"] == 0 and job.result["parts_deferred"] == 3
    batch.refresh_from_db()
    assert batch.finished_at is not None and batch.parts_planned == 3
    assert batch.bills.count() == 5 and set(batch.bills.values_list("charge_id", flat=True)) == set(
        Charge.objects.filter(number=1).values_list("pk", flat=True))
    assert set(batch.bills.values_list("number", flat=True)) == first_numbers
    assert {n: h for n, h in IssuedDocument.objects.filter(bill__batch=batch).values_list("number", "sha256")
            if n in first_bytes} == first_bytes  # the documents stored before the crash are the ones kept
    parts = list(BillBatchPart.objects.filter(batch=batch).order_by("index"))
    assert [part.pages for part in parts] == [2, 2, 1]
    texts = []
    for part in parts:
        with part.pdf.open("rb") as handle:
            data = handle.read()
        assert page_count(data) == part.pages <= bulk.PART_PAGES
        merged = PdfReader(io.BytesIO(data))
        assert merged.metadata.title == f"Avisos de contribución 2026-2027, plazo 1, lote {batch.pk}, parte {part.index + 1}"
        assert merged.trailer["/Root"]["/Lang"] == "es-PR"
        texts.append(text_of(data))
    order = re.findall(r"Número de catastro (P\d)", flat(" ".join(texts)))
    assert order == ["P1", "P2", "P3", "P4", "P5"]
    # once more: nothing new at all, and the progress still reaches the end
    seen = []

    class Progress:
        def set(self, done, total):
            seen.append((done, total))

    result = bulk.bill_batch_run(batch=batch, processes=1, progress=Progress())
    assert result["issued"] == 0 and batch.bills.count() == 5 and batch.parts.count() == 3
    assert IssuedDocument.objects.filter(kind="bill").count() == 5
    assert seen[-1] == (5, 5)


@pytest.mark.django_db
def test_bulk_bills_command_renders_in_worker_processes(district_1, staff, inline_jobs):
    code, stdout, err = billing_cmd("bulk-bills", "--fiscal-year", "2026-2027", "--installment", "2", "--user", "hac",
                                    "--processes", "2")
    assert inline_jobs.statuses() == ["succeeded"]  # the command was the worker of its batch
    assert code == 0, err
    batch = BillBatch.objects.get()
    assert batch.number == 2 and batch.bills.count() == 5
    lines = stdout.strip().splitlines()
    assert lines[0] == f"batch {batch.pk}: 5 bills in 1 part(s)"
    path = Path(lines[1].split("\t")[0])
    assert path.is_file() and str(path).startswith(str(settings.MEDIA_ROOT))
    text = flat(text_of(path.read_bytes()))
    assert page_count(path.read_bytes()) == 5 and "segundo semestre (enero)" in text and "1 de enero de 2027" in text
    bill = batch.bills.get(parcel__parcel_id="P2")
    assert "Desglose del total a pagar" in text_of(bytes(bill.document.pdf)) and bill.snapshot["principal"] == "22950.00"


@pytest.mark.django_db
def test_bulk_start_refusals_and_filters(district_1, staff):
    for kwargs, reason in [
        ({"acting_user": staff["collector"], "fiscal_year": "2026-2027", "number": 1}, "Hacienda"),
        ({"acting_user": staff["hacienda"], "fiscal_year": "1999-2000", "number": 1}, "1999-2000"),
        ({"acting_user": staff["hacienda"], "fiscal_year": "2026-2027", "number": 3}, "plazo"),
        ({"acting_user": staff["hacienda"], "fiscal_year": "2026-2027", "number": 1, "filters": {"color": "red"}}, "color"),
        ({"acting_user": staff["hacienda"], "fiscal_year": "2026-2027", "number": 1, "filters": {"parcel_prefix": "Q"}}, "Ningún"),
    ]:
        with pytest.raises(BillingError, match=reason):
            bills.bill_batch_start(**kwargs)
    assert not BillBatch.objects.exists()
    batch = bills.bill_batch_start(staff["hacienda"], "2026-2027", 1, {"parcel_ids": ["P2", "P4"]})
    assert list(bills.bill_batch_charges(batch).values_list("parcel__parcel_id", flat=True)) == ["P2", "P4"]
    result = bulk.bill_batch_run(batch=batch, processes=1)
    assert result["bills"] == 2 and result["parts"] == 1


@pytest.mark.django_db
def test_a_bill_under_a_late_roll_states_the_actual_due_dates(make_parcel, owner_a, staff):
    """¶11, ¶12: a roll finalized on 2026-08-14, after July 1, makes the July half due that day; the
    bill says so instead of "1 de julio y 1 de enero" (docs/interpretations.md)."""
    from tests.billing.conftest import example_1_finalize

    with on_day(date(2026, 8, 14)):  # recorded that day: the bills of later days read its charges
        levy = example_1_finalize(make_parcel, owner_a, staff, finalized_on=date(2026, 8, 14))
    assert levy.finalized_late
    july = Charge.objects.get(parcel__parcel_id="P4", number=1)
    january = Charge.objects.get(parcel__parcel_id="P4", number=2)
    assert (july.due_date, january.due_date) == (date(2026, 8, 14), date(2027, 1, 1))
    for charge in (july, january):
        # January's bill is offered from 2026-11-17 (BILL_OFFER_DAYS, 45 days before it falls due).
        on = date(2026, 8, 20) if charge.number == 1 else date(2026, 11, 20)
        with on_day(on):
            bill = bills.bill_issue(acting_user=staff["hacienda"], charge=charge, issued_on=on)
        assert (bill.snapshot["first_due"], bill.snapshot["second_due"]) == ("2026-08-14", "2027-01-01")
        text = flat(text_of(bytes(bill.document.pdf)))
        assert "pagadera en dos plazos que vencen el 14 de agosto de 2026 y el 1 de enero de 2027" in text
        assert "Primer plazo, vence el 14 de agosto de 2026" in text and "Segundo plazo, vence el 1 de enero de 2027" in text
        assert "1 de julio y 1 de enero" not in text
    assert "Vence (pagadero por adelantado)3 14 de agosto de 2026" in flat(text_of(bytes(july.bills.get().document.pdf)))


@pytest.mark.django_db
def test_a_bill_frozen_before_the_due_dates_were_kept_keeps_its_wording(district_1, staff):
    charge = Charge.objects.get(parcel__parcel_id="P4", number=1)
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=charge, issued_on=date(2026, 7, 1))
    old = {key: value for key, value in bill.snapshot.items() if key not in ("first_due", "second_due")}
    text = flat(text_of(pdf.html_to_fitting_pdf(documents.bill_html(number=bill.number, snapshot=old, issued_on=bill.issued_on, code=""))))
    assert "pagadera en dos plazos: 1 de julio y 1 de enero" in text and "Primer plazo (julio)" in text
