"""Issued documents: tax receipts (*recibo contributivo*, ¶9), bills (*aviso de contribución*,
¶12), debt certificates (*certificación de deuda*, ¶11) and seizure notices (¶14) as stored PDFs.

Design (pretix's invoices; house style lessons 2 and 15):
- Each document is rendered once, when it is issued, inside the transaction that issues it, and
  its bytes are written once to the document store (``STORAGES["documents"]``, ``billing.storage``:
  a write-once folder under ``MEDIA_ROOT`` or S3 with object lock), the ``IssuedDocument`` row
  keeping the file's name and SHA-256 (issue 20). Every read checks the hash (``document_pdf``). It is served as stored, never
  rendered again from live data. A reprint is the stored bytes with a "COPIA" stamp laid over
  them (``document_copy``), and every download of a voided payment's receipt carries ANULADO with
  the void's date and reason (``document_download``); the stored bytes do not change.
- A seizure step keeps its own bytes and verification code on ``SeizureStep`` (kind ``seizure``,
  letter ``E``); the public page finds it by that code like the others.
- Every document carries a verification code and its QR code. The code is the document's kind
  and number signed with ``django.core.signing`` (salt ``lajas.verify``): unique per document
  and impossible to guess without the secret key. The public page ``/verificar/<code>/`` looks
  the stored code up; it does not re-check the signature, so rotating ``SECRET_KEY`` never
  makes paper already handed out unverifiable.
- A bill states its amounts as of its issue date (its ``snapshot``, ``billing.snapshots``); the
  current amount is on the statement. Bills exist only for installments of a finalized roll; they
  are issued by ``billing.services.bills``, which renders them here.
- The landowner's portal access code printed on a bill is ``portal_access_code``.

This module renders and stores; it never imports ``billing.services`` (the writers call it).
"""

from __future__ import annotations

import base64
import hashlib
import io
import logging
import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.crypto import salted_hmac
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from pypdf import PdfReader, PdfWriter

from parcels.money import money_text as money

from . import pdf
from .accounts import delinquency_parameters
from .errors import BillingError
from .mailing import where_sent
from .models import Bill, DebtCertificate, IssuedDocument, Receipt, SeizureStep
from .references import reference_display
from .selectors import receipt_display
from .snapshots import BillOffice, BillOwedLine, BillSnapshot, CertificateSnapshot, ReceiptSnapshot
from .storage import DocumentAltered, document_name, document_write, stored_pdf  # noqa: F401 (DocumentAltered: the API)
from .wording import long_date, rate_label, surcharge_text

logger = logging.getLogger(__name__)
VERIFY_SALT = "lajas.verify"
PORTAL_SALT = "lajas.portal-access"
SEIZURE = "seizure"  # a seizure step (``SeizureStep``) keeps its own bytes and code, not an ``IssuedDocument``
KIND_LETTER = {IssuedDocument.Kind.RECEIPT: "R", IssuedDocument.Kind.BILL: "A", IssuedDocument.Kind.CERTIFICATE: "C", SEIZURE: "E",
               IssuedDocument.Kind.STATEMENT: "S"}


# --- Codes ------------------------------------------------------------------------------------


def portal_access_code(parcel_id: str, owner_key: str) -> str:
    """The access code of a parcel for the landowner portal, printed on its bills: an HMAC of
    ``"<cadastre number>:<owner key>"`` (``salted_hmac``, salt ``lajas.portal-access``) as ten
    base32 characters, ``XXXXX-XXXXX``. A new owner gets a new code; the claim page
    (``billing.portal``) recomputes it with this function."""
    digest = salted_hmac(PORTAL_SALT, f"{parcel_id}:{owner_key}").digest()
    code = base64.b32encode(digest).decode()[:10].upper()
    return f"{code[:5]}-{code[5:]}"


def verification_code(kind: str, number: str) -> str:
    """``<letter>-<number>.<signature>``: URL-safe (letters, digits, ``-``, ``_``, ``.``)."""
    return signing.Signer(salt=VERIFY_SALT, sep=".").sign(f"{KIND_LETTER[kind]}-{number}")


def verification_url(code: str) -> str:
    """The absolute address the QR code holds."""
    return settings.SITE_URL + reverse("verify:document", args=[code])


def portal_url() -> str:
    try:
        return settings.SITE_URL + reverse("portal:claim")
    except NoReverseMatch:
        return settings.SITE_URL + "/"


def owed_url() -> str:
    """The public "¿cuánto debo?" page (``billing.web.public``), printed on bills."""
    try:
        return settings.SITE_URL + reverse("owed:lookup")
    except NoReverseMatch:
        return settings.SITE_URL + "/"


# --- Storing ----------------------------------------------------------------------------------


def document_new(*, kind: str, number: str, parcel_id: int, code: str, data: bytes, **source: Any) -> IssuedDocument:
    """A new issued document (not saved yet) whose PDF ``data`` is written once to the document
    store now (``billing.storage``: ``STORAGES["documents"]``), so a caller may ``bulk_create``
    many; the row keeps the file's name and SHA-256. A row never saved (its transaction rolled
    back) leaves its file behind: the name carries the hash, so the number's next issue is not
    blocked, and the store never deletes."""
    sha256 = hashlib.sha256(data).hexdigest()
    name = document_write(name=document_name(kind=kind, number=number, sha256=sha256), data=data, sha256=sha256)
    document = IssuedDocument(kind=kind, number=number, parcel_id=parcel_id, verification_code=code, pdf=name, sha256=sha256,
                              **source)
    document._pdf_bytes = data  # served from memory in the request that issued it
    return document


def document_save(document: IssuedDocument) -> IssuedDocument:
    document.full_clean()
    document.save()
    return document


def document_pdf(document: IssuedDocument) -> bytes:
    """The stored bytes, exactly as issued: read from the document store and refused
    (``DocumentAltered``) unless they hash to the row's SHA-256."""
    data = getattr(document, "_pdf_bytes", None)
    if data is None:
        data = stored_pdf(document.pdf.name, sha256=document.sha256, label=f"{document.get_kind_display()} {document.number}")
        document._pdf_bytes = data
    return data


def seizure_step_store(step: SeizureStep, data: bytes) -> None:
    """¶14: write a seizure step's PDF once to the document store and set its file name and hash
    on the step (not saved yet; ``services.collection.seizure_step_issue`` saves it)."""
    step.sha256 = hashlib.sha256(data).hexdigest()
    step.pdf = document_write(name=document_name(kind=SEIZURE, number=step.number, sha256=step.sha256), data=data,
                              sha256=step.sha256)
    step._pdf_bytes = data


def seizure_step_pdf(step: SeizureStep) -> bytes:
    """A seizure step's stored bytes, checked against its hash like ``document_pdf``."""
    data = getattr(step, "_pdf_bytes", None)
    if data is None:
        data = stored_pdf(step.pdf.name, sha256=step.sha256, label=step.number)
        step._pdf_bytes = data
    return data


# --- Language ---------------------------------------------------------------------------------


def issued_language(snapshot: dict[str, Any] | None) -> str:
    """The language a document was issued in, as its snapshot froze it: the owner's *idioma de
    los documentos* (``parcels.Owner.preferred_language``) when it was issued; empty, that is
    Spanish, for documents frozen before the language was. Issued documents are never rendered
    again, so an owner who changes language later gets the new one on new documents only."""
    return str((snapshot or {}).get("language") or "")


def document_issued_language(document: IssuedDocument) -> str:
    """The language of a stored document (receipt, bill, certificate; statements do not freeze
    it), which its COPIA and ANULADO stamps are written in too."""
    for source in ("receipt", "bill", "certificate"):
        if getattr(document, f"{source}_id", None):
            return issued_language(getattr(document, source).snapshot)
    return ""


# --- Receipts (¶9, ¶13) ---------------------------------------------------------------------


def render_receipt(receipt: Receipt, *, code: str = "", lang: str | None = None) -> bytes:
    """¶9: the receipt as a one-page letter PDF (set tighter when it pays many charges), from its
    snapshot only (never live data), in ``lang`` or else the language frozen in it (the owner's
    document language at issue; Spanish for receipts frozen before it was)."""
    display = receipt_display(receipt)
    url = verification_url(code) if code else ""
    context = {
        "r": display, "issued_on": timezone.localdate(receipt.issued_at), "verify_url": url, "verify_code": code, "one_page": True,
        "qr": pdf.qr_data_uri(url) if url else "", "rate": rate_label(delinquency_parameters(display.paid_on).surcharge_rate),
    }

    with pdf.document_language(lang or issued_language(receipt.snapshot)) as key:
        title = _("Recibo contributivo %(n)s") % {"n": display.number}
        html = pdf.html_for("billing/pdf/receipt.html", context, title=title, lang=key)
    return pdf.html_to_fitting_pdf(html, pages=1)


def receipt_document_store(receipt: Receipt, *, lang: str | None = None) -> IssuedDocument:
    """Render and store the receipt's PDF once (inside the payment's transaction). Idempotent:
    a receipt that already has its document keeps it."""
    existing = IssuedDocument.objects.filter(receipt=receipt).first()
    if existing is not None:
        return existing
    number = receipt.display_number
    code = verification_code(IssuedDocument.Kind.RECEIPT, number)
    data = render_receipt(receipt, code=code, lang=lang)
    return document_save(document_new(kind=IssuedDocument.Kind.RECEIPT, number=number, parcel_id=receipt.payment.parcel_id, code=code,
                            data=data, receipt=receipt))


def receipt_by_number(number: str) -> Receipt:
    """A receipt by its number as printed (``LAJ-2026-2027-000001``)."""
    match = re.fullmatch(r"(?P<office>.+)-(?P<year>\d{4}-\d{4})-(?P<n>\d{1,9})", number.strip())
    receipt = None
    if match:
        receipt = (Receipt.objects.select_related("office", "payment").filter(
            office__code=match["office"], fiscal_year=match["year"], number=int(match["n"])).first())
    if receipt is None:
        raise BillingError(_("Recibo desconocido «%(n)s».") % {"n": number})
    return receipt


@transaction.atomic
def receipt_document(receipt: Receipt) -> IssuedDocument:
    """The receipt's stored document; a receipt issued before documents were stored gets its
    PDF now, from its immutable snapshot, once."""
    return receipt_document_store(receipt)


# --- Bills (¶9, ¶12) ------------------------------------------------------------------------


def bill_html(*, number: str, snapshot: dict[str, Any], issued_on: date, code: str, lang: str | None = None) -> str:
    """The HTML of a bill (rendered to PDF by ``pdf.html_to_pdf``, possibly in another process)."""
    url = verification_url(code) if code else ""
    if snapshot.get("nothing_to_pay"):
        return _zero_notice_html(number=number, snap=snapshot, issued_on=issued_on, url=url, code=code, lang=lang)
    bill = BillSnapshot.from_json(snapshot)
    with pdf.document_language(lang or bill.language) as key:
        title = _("Aviso de contribución %(n)s") % {"n": number}
        rate = bill.surcharge_rate
        context = {
            **_envelope_context(snapshot, key),
            # ¶12, ¶13: the one amount to pay and its last day (bills issued before it was frozen have none).
            "to_pay": bill.amount_to_pay, "pay_by": bill.pay_by,
            "owed": [_owed_row(line, rate) for line in bill.owed], "paid_any": bill.paid > 0,
            "number": number, "b": snapshot, "issued_on": issued_on,
            "due_date": bill.due_date, "last_day_to_pay": bill.last_day_to_pay,
            "delinquent_from": bill.delinquent_from,
            # ¶12: issued after the last day, the bill says it is overdue (issue 18, point 5), and
            # what charges after it already owe (``later_due``; none on bills issued before it).
            "late": bill.late and bill.balance > 0, "later_due": bill.later_due,
            # ¶12: bills issued before these were frozen say "1 de julio y 1 de enero".
            "first_due": bill.first_due, "second_due": bill.second_due,
            "credit": bill.credit > 0, "rate": rate_label(rate),
            # ¶13: the account's total due shows only when other charges are overdue besides this one.
            "other_charges_due": bill.total_due > bill.balance,
            "surcharge_basis": surcharge_text(bill.surcharge_groups, rate),
            # issue 19, ¶13: pay by bank transfer with the charge's RF reference (none on older bills)
            "reference": reference_display(bill.payment_reference) if bill.payment_reference else "",
            "transfer": bill.transfer or {},
            **_bill_links(parcel_id=bill.parcel_id, owner_key=bill.owner_key, url=url, code=code),
        }
        # Written dense: since a bill gained its mailing block, office, breakdown and footnotes
        # every bill needs the dense setting to stay on one page (30 of 30 sampled at 100,000
        # parcels), and trying the roomier one first was a second layout per bill (issue 20).
        return pdf.html_for("billing/pdf/bill.html", context, title=title, lang=key, density="dense")


def _owed_row(line: BillOwedLine, rate: Decimal) -> dict[str, Any]:
    """A row of the bill's breakdown of *total a pagar*, its label in the active language."""
    if line.kind == "installment":
        label = _("Plazo %(n)s del año fiscal %(y)s") % {"n": line.number, "y": line.fiscal_year}
    else:
        label = line.label
    basis = surcharge_text(line.surcharge_groups, rate) if line.surcharge_groups else ""
    return {"label": label, "line": line, "basis": basis}


def _envelope_context(snap: dict[str, Any], key: str) -> dict[str, Any]:
    """The mailing block and the Collector's office frozen in a bill's snapshot (none on bills
    issued before they were frozen), the office's prose in the bill's language."""
    office = BillOffice.from_json(snap["office"]) if snap.get("office") else None
    return {
        "mailing_block": list(snap.get("mailing_block") or []),
        "office": office,
        "office_hours": office.hours(key) if office else "",
        "office_ways": office.ways_to_pay(key) if office else "",
    }


def _bill_links(*, parcel_id: str, owner_key: str, url: str, code: str) -> dict[str, Any]:
    """What a bill and a zero notice both print to reach the office online: the portal and its
    access code, the public "¿cuánto debo?" (today's amount, a numbered estado de cuenta) and the
    verification link with its QR code; one page each."""
    return {
        "access_code": portal_access_code(parcel_id, owner_key), "portal_url": portal_url(), "owed_url": owed_url(),
        "verify_url": url, "verify_code": code, "qr": pdf.qr_data_uri(url) if url else "", "one_page": True,
    }


def _zero_notice_html(*, number: str, snap: dict[str, Any], issued_on: date, url: str, code: str, lang: str | None) -> str:
    """¶9: the bill template in its "nada que pagar" state: the levy and the credit, no installment."""
    with pdf.document_language(lang or snap.get("language")) as key:
        title = _("Aviso de contribución %(n)s") % {"n": number}
        context = {
            **_envelope_context(snap, key),
            "number": number, "b": snap, "issued_on": issued_on, "nothing_to_pay": True, "credit": Decimal(snap["credit"]) > 0,
            "first_due": date.fromisoformat(snap["first_due"]) if snap.get("first_due") else None,
            "second_due": date.fromisoformat(snap["second_due"]) if snap.get("second_due") else None,
            **_bill_links(parcel_id=snap["parcel_id"], owner_key=snap["owner_key"], url=url, code=code),
        }
        return pdf.html_for("billing/pdf/bill.html", context, title=title, lang=key)


def render_bill(bill: Bill, *, code: str = "", lang: str | None = None) -> bytes:
    return pdf.html_to_fitting_pdf(bill_html(number=bill.number, snapshot=bill.snapshot, issued_on=bill.issued_on, code=code,
                                             lang=lang))


def bill_document_store(bill: Bill, *, lang: str | None = None) -> IssuedDocument:
    """Render and store an issued bill's PDF once (inside ``services.bills.bill_issue``)."""
    code = verification_code(IssuedDocument.Kind.BILL, bill.number)
    data = render_bill(bill, code=code, lang=lang)
    return document_save(document_new(kind=IssuedDocument.Kind.BILL, number=bill.number, parcel_id=bill.parcel_id, code=code,
                                      data=data, bill=bill))


# --- Debt certificates (¶11) ---------------------------------------------------------------------


def certificate_document_store(certificate: DebtCertificate, *, lang: str | None = None) -> IssuedDocument:
    """Render and store the certificate's PDF once, inside ``services.collection.certificate_issue``."""
    existing = IssuedDocument.objects.filter(certificate=certificate).first()
    if existing is not None:
        return existing
    code = verification_code(IssuedDocument.Kind.CERTIFICATE, certificate.number)
    data = pdf.render_certificate_pdf(certificate=certificate, verify_url=verification_url(code), code=code, lang=lang)
    return document_save(document_new(kind=IssuedDocument.Kind.CERTIFICATE, number=certificate.number, parcel_id=certificate.parcel_id,
                            code=code, data=data, certificate=certificate))


# --- Seizure notices (¶14) ---------------------------------------------------------------------


def seizure_notice_render(step: SeizureStep, *, parcel: Any, lang: str | None = None) -> tuple[str, bytes]:
    """The verification code of a seizure step being issued and its PDF carrying the code's QR;
    ``services.collection.seizure_step_issue`` stores both on the step, once."""
    code = verification_code(SEIZURE, step.number)
    return code, pdf.render_seizure_notice(step=step, parcel=parcel, verify_url=verification_url(code), code=code, lang=lang)


@dataclass(frozen=True)
class SeizureDocument:
    """A seizure step as the verification page shows a document (kind, number, parcel)."""

    step: SeizureStep
    kind: str = SEIZURE

    @property
    def number(self) -> str:
        return self.step.number

    @property
    def parcel(self) -> Any:
        return self.step.case.parcel

    @property
    def seizure_id(self) -> int:  # the chain's id of the record (``chain.place``)
        return self.step.pk

    def get_kind_display(self) -> str:
        return str(self.step.get_kind_display())


# --- Reprints ---------------------------------------------------------------------------------


def document_copy(document: IssuedDocument, *, on: date | None = None, lang: str | None = None) -> bytes:
    """A reprint: the stored bytes with a "COPIA — reimpreso el …" stamp laid over each page
    (WeasyPrint renders the stamp, pypdf merges it). The stored document is not touched, and a
    copy of a voided payment's receipt says so (ANULADO, the date and the reason)."""
    return document_download(document, copy=True, on=on, lang=lang)


def document_download(document: IssuedDocument, *, copy: bool = False, on: date | None = None, lang: str | None = None) -> bytes:
    """What every download of a stored document serves: the stored bytes as issued, stamped at
    serving time when it is a reprint (COPIA and the day) or the receipt of a voided payment
    (ANULADO, the void's date and reason, on every download, the first one too). The stored bytes
    never change."""
    status = document_status(document)
    if not copy and status.voided_on is None:
        return document_pdf(document)
    on = on or timezone.localdate()
    lang = lang or document_issued_language(document)  # the stamp speaks the document's language
    with pdf.document_language(lang) as key:
        parts = [_("COPIA — reimpreso el %(d)s") % {"d": long_date(on, key)}] if copy else []
        if status.voided_on is not None:
            parts.append(_("PAGO ANULADO el %(d)s: %(r)s. Este recibo no vale como prueba de pago")
                         % {"d": long_date(status.voided_on, key), "r": status.void_reason})
            mark = _("ANULADO")
        else:
            mark = _("COPIA")
    return _stamped(document_pdf(document), text=" · ".join(parts), mark=mark, lang=lang)


def _stamped(data: bytes, *, text: str, mark: str, lang: str | None) -> bytes:
    stamp = PdfReader(io.BytesIO(pdf.render_stamp(text=text, mark=mark, lang=lang))).pages[0]
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    for page in writer.pages:
        page.merge_page(stamp, over=True)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# --- Verification ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DocumentStatus:
    """What the public verification page says about a stored document."""

    document: IssuedDocument
    status: str  # "valid", "voided" (the payment of a receipt), "superseded" (a certificate)
    voided_on: date | None = None
    void_reason: str = ""
    superseded_by: str = ""
    facts: tuple[tuple[str, str], ...] = ()  # (label, value) lines, in the active language

    @property
    def valid(self) -> bool:
        return self.status == "valid"


def document_status(document: IssuedDocument) -> DocumentStatus:
    if document.kind == IssuedDocument.Kind.RECEIPT:
        void = getattr(Receipt.objects.select_related("payment__void").get(pk=document.receipt_id).payment, "void", None)
        if void is not None:
            return DocumentStatus(document=document, status="voided", voided_on=void.voided_on, void_reason=void.reason)
    if document.kind == IssuedDocument.Kind.CERTIFICATE:
        later = DebtCertificate.objects.filter(supersedes_id=document.certificate_id).values_list("number", flat=True).first()
        if later:
            return DocumentStatus(document=document, status="superseded", superseded_by=later)
    return DocumentStatus(document=document, status="valid")


def document_by_code(code: str) -> IssuedDocument | None:
    """The stored document with this verification code, or ``None`` (unknown or altered code)."""
    if not code or len(code) > 80:
        return None
    return (IssuedDocument.objects.defer("pdf").select_related("parcel", "receipt__office", "receipt__payment", "bill",
                                                                "certificate", "statement").filter(verification_code=code).first())


def seizure_verification(code: str) -> dict[str, Any] | None:
    """The public page's facts of a seizure step (¶14), from what it froze; ``None`` if no step has ``code``."""
    if not code or len(code) > 80:
        return None
    step = SeizureStep.objects.defer("pdf").select_related("case__parcel").filter(verification_code=code).first()
    if step is None:
        return None
    key = "en" if (get_language() or "").startswith("en") else "es"
    facts: list[tuple[str, str]] = [
        (_("Predio (número de catastro)"), step.case.parcel.parcel_id), (_("Fecha"), long_date(step.issued_on, key)),
        (_("Adeudado hoy"), money(step.debt["total_due"])), (_("Gravamen total"), money(step.debt["total_balance"])),
    ]
    if step.term_ends:
        facts.append((_("Plazo para pagar hasta"), long_date(step.term_ends, key)))
    if step.debt.get("officer_name"):
        facts.append((_("Firmado por"), f'{step.debt["officer_name"]}, {step.debt.get("officer_title", "")}'))
    document = SeizureDocument(step=step)
    return {"document": document, "status": DocumentStatus(document=document, status="valid"), "facts": facts}  # type: ignore[arg-type]


def verification(code: str) -> dict[str, Any] | None:
    """For the public page: the document's kind, number, parcel, amounts and status, from its
    snapshot (no owner names: the page is public). ``None`` when the code is not recognized."""
    document = document_by_code(code)
    if document is None:
        return seizure_verification(code)
    status = document_status(document)
    key = "en" if (get_language() or "").startswith("en") else "es"

    def day(value: date | str) -> str:
        return long_date(date.fromisoformat(value) if isinstance(value, str) else value, key)

    facts: list[tuple[str, str]] = [(_("Predio (número de catastro)"), document.parcel.parcel_id)]
    if document.kind == IssuedDocument.Kind.RECEIPT:
        receipt = ReceiptSnapshot.from_json(document.receipt.snapshot)
        facts += [(_("Fecha de pago"), day(receipt.paid_on)), (_("Cantidad pagada"), money(str(receipt.amount)))]
        for item in receipt.applications:
            facts.append((item.label, money(item.paid)))
    elif document.kind == IssuedDocument.Kind.BILL and document.bill.snapshot.get("nothing_to_pay"):
        snap = document.bill.snapshot
        facts += [
            (_("Año fiscal"), snap["fiscal_year"]),
            (_("Contribución impuesta (¶9)"), money(snap["om_charge"])), (_("Crédito por derechos de agua cedidos (¶7, ¶9)"), money(snap["credit"])),
            (_("Contribución neta (¶9)"), money(snap["net"])), (_("A pagar"), _("nada que pagar")),
            (_("Fecha del aviso"), day(document.bill.issued_on)),
        ]
    elif document.kind == IssuedDocument.Kind.BILL:
        bill = BillSnapshot.from_json(document.bill.snapshot)
        facts += [
            (_("Año fiscal"), bill.fiscal_year), (_("Plazo"), str(bill.number)),
            (_("Contribución neta (¶9)"), money(str(bill.net))), (_("Importe del plazo"), money(str(bill.principal))),
            (_("Vence"), day(bill.due_date)), (_("Último día para pagar"), day(bill.last_day_to_pay)),
            (_("Balance del plazo a la fecha del aviso"), money(str(bill.balance))),
            (_("Fecha del aviso"), day(document.bill.issued_on)),
        ]
    elif document.kind == IssuedDocument.Kind.STATEMENT:
        frozen = document.statement.snapshot
        facts += [(_("Estado de cuenta al"), day(frozen["as_of"])), (_("Total adeudado"), money(frozen["total_due"]))]
    else:
        cert = document.certificate
        certified = CertificateSnapshot.from_json(cert.snapshot)
        facts += [(_("Deuda al"), day(cert.as_of)), (_("Adeudado hoy"), money(str(certified.statement.total_due))),
                  (_("Gravamen total"), money(str(certified.statement.total_balance)))]
        if certified.officer_name:
            facts.append((_("Firmado por"), f"{certified.officer_name}, {certified.officer_title}"))
    if document.kind == IssuedDocument.Kind.BILL and (sent := where_sent(document.bill.snapshot)):
        facts.append((_("Enviado"), sent))  # issue 19: town and ZIP only, or the e-mail masked
    return {"document": document, "status": status, "facts": facts}
