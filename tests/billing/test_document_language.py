"""Issue 18, points 3 and 8.

3. Every document follows the owner's *idioma de los documentos* (``Owner.preferred_language``),
   chosen when it is issued and frozen in its snapshot: the receipt (¶9), the debt certificate
   (¶11) and the seizure notice (¶14) of an owner whose document language is English are English,
   with every date in one form, "2 March 2027" (never "02/03/2027" nor "March 2, 2027"); a Spanish
   owner's stay Spanish ("2 de marzo de 2027"). Read back from the PDFs with pdfplumber.
8. The COPIA/ANULADO band of a voided receipt leaves its QR code clear: the QR read from the
   rendered page (pdftoppm, zxing-cpp) is the receipt's verification URL, original and COPIA.

The figures are example 1's (tests/billing/conftest.py, ``district_1``): P2 has 250 acres at
183.60 $/acre, two halves of 22,950.00 due 1 July 2026 (last day 31 August 2026) and 1 January
2027 (last day 2 March 2027, ¶12)."""

from __future__ import annotations

import io
import re
import subprocess
from datetime import date
from decimal import Decimal
from pathlib import Path

import pdfplumber
import pytest
from pypdf import PdfReader

from billing import documents, pdf
from billing.models import IssuedDocument
from billing.services import collection, counter
from billing.services.corrections import roll_correction_create
from levy.models import RollLine
from parcels.models import Parcel
from tests.billing.test_certificate_documents import keep
from tests.clock import on_day
from tests.test_languages import MONTH_FIRST, wrong_language

SHORT_DATE = re.compile(r"\b\d{1,2}/\d{1,2}/\d{4}\b")
LONG_REASON = ("Cheque devuelto por el banco por fondos insuficientes; el pagador fue avisado por teléfono y por carta "
               "certificada, y se le pidió pagar en efectivo o con giro postal")


def pdf_text(data: bytes) -> str:
    with pdfplumber.open(io.BytesIO(data)) as document:
        return re.sub(r"\s+", " ", " ".join(page.extract_text() or "" for page in document.pages))


def pdf_lang(data: bytes) -> str:
    """The language the PDF declares (its catalog's /Lang, from the template's ``<html lang>``)."""
    return str(PdfReader(io.BytesIO(data)).trailer["/Root"]["/Lang"])


def qr_codes(data: bytes, tmp_path: Path, resolution: int) -> list[str]:
    """The QR codes zxing-cpp reads on the first page rendered by pdftoppm at ``resolution`` dpi."""
    import PIL.Image
    import zxingcpp

    folder = tmp_path / f"r{resolution}-{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / "doc.pdf").write_bytes(data)
    subprocess.run(["/usr/bin/pdftoppm", "-png", "-r", str(resolution), "-f", "1", "-l", "1", str(folder / "doc.pdf"),
                    str(folder / "page")], check=True)
    image = PIL.Image.open(next(folder.glob("page*.png")))
    return [result.text for result in zxingcpp.read_barcodes(image) if result.format == zxingcpp.BarcodeFormat.QRCode]


def issue_all(staff, make_user, owner, language: str) -> dict[str, bytes]:
    """For ``owner`` (all of example 1's parcels) in ``language``: a receipt of P1 paid 3 July
    2026, a correction lowering P2's levy by $20.00 made 1 September 2026 (a dated entry the
    certificate and the notice print), then P2's debt certificate and notice of seizure as of
    10 September 2026, all as stored when issued."""
    owner.preferred_language = language
    owner.save(update_fields=["preferred_language"])
    officer = make_user(f"hector_{language}", "hacienda", full_name="Héctor Nazario Bonilla", title="Subdirector de Recaudaciones")
    p1, p2 = Parcel.objects.get(parcel_id="P1"), Parcel.objects.get(parcel_id="P2")
    with on_day(date(2026, 7, 3)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("100.00"), paid_on=date(2026, 7, 3))
    roll_correction_create(acting_user=staff["hacienda"], roll_line=RollLine.objects.get(parcel=p2), om_charge_delta=Decimal("-20.00"),
                           credit_delta=Decimal("0"), reason="Cabida medida de nuevo", made_on=date(2026, 9, 1))
    with on_day(date(2026, 9, 10)):
        certificate = collection.certificate_issue(acting_user=officer, parcel=p2, as_of=date(2026, 9, 10))
        step = collection.seizure_step_issue(acting_user=officer, parcel=p2, kind="notice", on=date(2026, 9, 10))
    # the language is frozen in each snapshot at issue
    assert receipt.snapshot["language"] == language and certificate.snapshot["language"] == language
    assert step.debt["language"] == language
    issued = {"receipt": bytes(receipt.document.pdf),
              "certificate": bytes(IssuedDocument.objects.get(certificate=certificate).pdf), "seizure notice": bytes(step.pdf)}
    for kind, data in issued.items():
        keep(data, f"{kind.replace(' ', '_')}_{language}.pdf")
    return issued


@pytest.mark.django_db
def test_an_english_owners_receipt_certificate_and_seizure_notice_are_english_with_day_first_dates(district_1, staff, make_user,
                                                                                                    owner_a):
    issued = issue_all(staff, make_user, owner_a, "en")
    texts = {kind: pdf_text(data) for kind, data in issued.items()}
    for kind, data in issued.items():
        text = texts[kind]
        assert pdf_lang(data) == "en", kind
        assert not wrong_language(text, "en"), (kind, wrong_language(text, "en"))
        assert not SHORT_DATE.findall(text), (kind, SHORT_DATE.findall(text))
        assert not MONTH_FIRST.findall(text), (kind, MONTH_FIRST.findall(text))
        assert "favour" not in text and "in favor of the Secretary of the Treasury" in text, kind  # American spelling
    receipt = texts["receipt"]
    assert "Tax receipt" in receipt and "Payment date 3 July 2026" in receipt
    assert "Due: 1 July 2026" in receipt and "Last day: 31 August 2026" in receipt
    assert "Net levy, payable in two installments: 1 July and 1 January" in receipt
    certificate = texts["certificate"]
    assert "Debt certificate" in certificate and "Debt as of 10 September 2026" in certificate
    assert "Correction no. 1 of the 2026-2027 roll (¶9), 1 September 2026: −$10.00" in certificate
    notice = texts["seizure notice"]
    assert "Date 10 September 2026" in notice and "30 days, until 10 October 2026" in notice
    assert "Correction no. 1 of the 2026-2027 roll (¶9), 1 September 2026: −$10.00" in notice
    assert "2 March 2027" in certificate and "2 March 2027" in notice  # the January half's last day (¶12)
    # ¶12: July's half lowered by half the $20.00 correction, 22,940.00 × ½% × 1 month = 114.70
    assert "Owed today (10 September 2026) $23,054.70" in certificate and "Total lien on the parcel $45,994.70" in certificate


@pytest.mark.django_db
def test_a_spanish_owners_documents_stay_spanish(district_1, staff, make_user, owner_a):
    issued = issue_all(staff, make_user, owner_a, "es")
    texts = {kind: pdf_text(data) for kind, data in issued.items()}
    for kind, data in issued.items():
        assert pdf_lang(data) == "es-PR", kind
        assert not wrong_language(texts[kind], "es"), (kind, wrong_language(texts[kind], "es"))
    assert "Recibo contributivo" in texts["receipt"] and "Fecha de pago 3 de julio de 2026" in texts["receipt"]
    assert "Deuda al 10 de septiembre de 2026" in texts["certificate"] and "Emitida el 10 de septiembre de 2026." in texts["certificate"]
    # ¶12: July's half lowered by half the $20.00 correction, 22,940.00 × ½% × 1 month = 114.70
    assert "Adeudado hoy (10 de septiembre de 2026) $23,054.70" in texts["certificate"]
    # Spanish documents keep the project's forms: d/m/Y inside a dated entry, as the pages write it
    assert "Corrección n.º 1 del padrón 2026-2027 (¶9), 01/09/2026: −$10.00" in texts["certificate"]
    assert "30 días, hasta el 10 de octubre de 2026" in texts["seizure notice"]


@pytest.mark.django_db
def test_a_documents_language_is_the_one_it_was_issued_in(district_1, staff, owner_a):
    """Stored bytes are never rendered again: an owner who switches to English later keeps the
    Spanish receipt issued before; a receipt frozen before the language was (no ``language`` in
    its snapshot) renders in Spanish; the ANULADO stamp of an English receipt is English."""
    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(date(2026, 7, 3)):
        spanish = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("100.00"), paid_on=date(2026, 7, 3))
    owner_a.preferred_language = "en"
    owner_a.save(update_fields=["preferred_language"])
    with on_day(date(2026, 7, 3)):
        english = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("50.00"), paid_on=date(2026, 7, 3))
    assert "Recibo contributivo" in pdf_text(documents.document_pdf(spanish.document))
    assert "Tax receipt" in pdf_text(documents.document_pdf(english.document))
    old = {**english.snapshot}
    old.pop("language")
    english.snapshot = old
    assert pdf_lang(documents.render_receipt(english)) == "es-PR"
    english.refresh_from_db()
    counter.payment_void(acting_user=staff["supervisor"], payment=english.payment, reason="Bounced check", voided_on=date(2026, 7, 9))
    stamped = pdf_text(documents.document_download(english.document))
    assert "PAYMENT VOIDED on 9 July 2026: Bounced check. This receipt is not valid as proof of payment" in stamped
    copy = pdf_text(documents.document_copy(english.document, on=date(2026, 7, 10)))
    assert "COPY — reprinted on 10 July 2026" in copy and "PAYMENT VOIDED on 9 July 2026" in copy


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["es", "en"])
def test_the_qr_of_a_voided_receipt_reads_under_its_band_original_and_copy(district_1, staff, owner_a, tmp_path, language):
    """The band says COPIA and ANULADO with the void's date and a reason long enough to run over
    three lines; the QR beside it still reads, at screen and print resolutions."""
    owner_a.preferred_language = language
    owner_a.save(update_fields=["preferred_language"])
    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(date(2026, 7, 3)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("200.00"), paid_on=date(2026, 7, 3))
    counter.payment_void(acting_user=staff["supervisor"], payment=receipt.payment, reason=LONG_REASON, voided_on=date(2026, 7, 9))
    url = documents.verification_url(receipt.document.verification_code)
    original = documents.document_download(receipt.document)
    copy = documents.document_copy(receipt.document, on=date(2026, 7, 10))
    keep(original, f"receipt_voided_{language}.pdf")
    keep(copy, f"receipt_voided_copy_{language}.pdf")
    assert ("ANULADO" if language == "es" else "VOID") in pdf_text(original)
    assert ("COPIA —" if language == "es" else "COPY —") in pdf_text(copy)
    for data in (original, copy):
        for resolution in (100, 150, 300):
            assert qr_codes(data, tmp_path, resolution) == [url], resolution
    # the stored bytes, as issued, read the same
    assert qr_codes(documents.document_pdf(receipt.document), tmp_path, 150) == [url]
    assert pdf.pdf_language(language) == ("en" if language == "en" else "es-pr")
