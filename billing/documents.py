"""Issued documents: tax receipts (*recibo contributivo*, ¶9), bills (*aviso de contribución*,
¶12) and debt certificates (*certificación de deuda*, ¶11) as stored PDFs.

Design (pretix's invoices; house style lessons 2 and 15):
- Each document is rendered once, when it is issued, inside the transaction that issues it, and
  its bytes are stored in ``IssuedDocument`` with their SHA-256. It is served as stored, never
  rendered again from live data. A reprint is the stored bytes with a "COPIA" stamp laid over
  them (``document_copy``); the stored bytes do not change.
- Every document carries a verification code and its QR code. The code is the document's kind
  and number signed with ``django.core.signing`` (salt ``lajas.verify``): unique per document
  and impossible to guess without the secret key. The public page ``/verificar/<code>/`` looks
  the stored code up; it does not re-check the signature, so rotating ``SECRET_KEY`` never
  makes paper already handed out unverifiable.
- A bill states its amounts as of its issue date (its ``snapshot``); the current amount is on
  the statement. Bills exist only for installments of a finalized roll.
- The landowner's portal access code printed on a bill is ``portal_access_code``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.db.models import QuerySet
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.crypto import salted_hmac
from django.utils.dateformat import format as date_format
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from levy.models import FiscalYear, Levy
from parcels.models import Job, Parcel
from parcels.roles import COLLECTOR, HACIENDA, SUPERVISOR, has_role
from parcels.templatetags.lajas import money

from . import chain, pdf, services
from .models import Bill, BillBatch, Charge, DebtCertificate, DocumentSeries, IssuedDocument, Receipt
from .services import BillingError, rate_label, surcharge_text

logger = logging.getLogger(__name__)
VERIFY_SALT = "lajas.verify"
PORTAL_SALT = "lajas.portal-access"
KIND_LETTER = {IssuedDocument.Kind.RECEIPT: "R", IssuedDocument.Kind.BILL: "A", IssuedDocument.Kind.CERTIFICATE: "C"}
BILL_PREFIX = "AV"  # aviso de contribución
BILL_USERS = (HACIENDA, COLLECTOR, SUPERVISOR)
BATCH_FILTERS = ("parcel_ids", "parcel_prefix", "owner_key")


# --- Codes ------------------------------------------------------------------------------------


def portal_access_code(parcel_id: str, owner_key: str) -> str:
    """The access code of a parcel for the landowner portal, printed on its bills: an HMAC of
    ``"<cadastre number>:<owner key>"`` (``salted_hmac``, salt ``lajas.portal-access``) as ten
    base32 characters, ``XXXXX-XXXXX``. A new owner gets a new code; the claim page
    (``parcels.portal``) recomputes it with this function."""
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


def long_date(day: date | None, lang_key: str) -> str:
    return date_format(day, pdf.LONG_DATE[lang_key]) if day else ""


# --- Storing ----------------------------------------------------------------------------------


def _document(*, kind: str, number: str, parcel_id: int, code: str, data: bytes, **source: Any) -> IssuedDocument:
    return IssuedDocument(kind=kind, number=number, parcel_id=parcel_id, verification_code=code, pdf=data,
                          sha256=hashlib.sha256(data).hexdigest(), **source)


def _store(document: IssuedDocument) -> IssuedDocument:
    document.full_clean()
    document.save()
    return document


def document_pdf(document: IssuedDocument) -> bytes:
    """The stored bytes, exactly as issued."""
    return bytes(document.pdf)


# --- Receipts (¶9, ¶13) ---------------------------------------------------------------------


def render_receipt(receipt: Receipt, *, code: str = "", lang: str | None = None) -> bytes:
    """¶9: the receipt as a one-page letter PDF (set tighter when it pays many charges), from its
    snapshot only (never live data)."""
    from .selectors import receipt_display

    display = receipt_display(receipt)
    url = verification_url(code) if code else ""
    context = {
        "r": display, "issued_on": timezone.localdate(receipt.issued_at), "verify_url": url, "verify_code": code, "one_page": True,
        "qr": pdf.qr_data_uri(url) if url else "", "rate": rate_label(services.delinquency_parameters(display.paid_on).surcharge_rate),
    }

    with pdf.document_language(lang) as key:
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
    return _store(_document(kind=IssuedDocument.Kind.RECEIPT, number=number, parcel_id=receipt.payment.parcel_id, code=code,
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


def _billable(charge: Charge | int) -> Charge:
    pk = charge if isinstance(charge, int) else charge.pk
    charge = (Charge.objects.select_related("roll_line__levy", "fiscal_year", "parcel__owner").filter(pk=pk).first())
    if charge is None:
        raise BillingError(_("Cargo desconocido."))
    if charge.kind != Charge.Kind.INSTALLMENT or charge.roll_line is None:
        raise BillingError(_("Solo los plazos de la contribución llevan aviso."))
    if charge.roll_line.levy.status != Levy.Status.FINAL:
        raise BillingError(_("Un padrón en borrador no se factura: solo se emiten avisos de un padrón finalizado."))
    return charge


@dataclass(frozen=True)
class AccountFacts:
    """What a bill needs of the parcel's account as of its issue date."""

    state: Any  # rules.ChargeState of the billed charge
    total_due: Decimal
    rate: Decimal
    grace_days: int


def account_facts(*, charge: Charge, parcel: Parcel, issued_on: date) -> AccountFacts:
    return accounts_facts(charges=[charge], issued_on=issued_on)[charge.pk]


def accounts_facts(*, charges: Sequence[Charge], issued_on: date) -> dict[int, AccountFacts]:
    """``AccountFacts`` of many charges, their parcels' accounts replayed together."""
    parcels = {charge.parcel_id: charge.parcel for charge in charges}
    many = getattr(services, "account_states", None)
    if many is not None:
        accounts = many(parcels=parcels.values(), as_of=issued_on)
    else:
        accounts = {pk: services.account_state(parcel=parcel, as_of=issued_on) for pk, parcel in parcels.items()}
    params = services.delinquency_parameters(issued_on)
    facts = {}
    for charge in charges:
        account = accounts[charge.parcel_id]
        key = services.charge_key(charge.pk)
        state = next(s for s in account.state.charges if s.key == key)
        facts[charge.pk] = AccountFacts(state=state, total_due=account.state.total_due, rate=params.surcharge_rate,
                                        grace_days=params.grace_days)
    return facts


def bill_snapshot(*, charge: Charge, issued_on: date, facts: AccountFacts | None = None) -> dict[str, Any]:
    """¶9, ¶12: what the bill prints, frozen as of its issue date. The parcel's figures are the
    roll's (what the charge was computed from); the owner is the parcel's owner when billed."""
    parcel = charge.parcel
    line = charge.roll_line
    facts = facts or account_facts(charge=charge, parcel=parcel, issued_on=issued_on)
    state = facts.state
    return {
        "parcel_id": parcel.parcel_id,
        "owner_name": parcel.owner.name,
        "owner_key": parcel.owner.owner_key,
        "gravity_acres": str(line.gravity_acres),
        "pumped_acres": str(line.pumped_acres),
        "equivalent_acres": str(line.equivalent_acres),
        "fiscal_year": charge.fiscal_year.label,
        "number": charge.number,
        "description": charge.description,
        "om_charge": str(line.om_charge),
        "credit_percent": str(line.credit_percent),
        "credit": str(line.credit),
        "net": str(line.net),
        "first_installment": str(line.first_installment),
        "second_installment": str(line.second_installment),
        "principal": str(state.principal),
        "due_date": state.due.isoformat(),
        "last_day_to_pay": state.last_day.isoformat(),
        "as_of": issued_on.isoformat(),
        "surcharge": str(state.surcharge),
        "surcharge_groups": services.surcharge_groups(state),
        "surcharge_rate": str(facts.rate),
        "grace_days": facts.grace_days,
        "paid": str(state.paid),
        "balance": str(state.balance),
        "total_due": str(facts.total_due),
        "roll_hash": chain.roll_hash(line.levy_id),  # the final roll's link in the chain (billing.chain)
    }


def _allocate_numbers(kind: str, prefix: str, on: date, count: int) -> list[str]:
    """``count`` consecutive numbers of a gapless series (the same rows and format as
    ``services.document_number``), under the series' row lock in the caller's transaction."""
    DocumentSeries.objects.get_or_create(kind=kind, year=on.year)
    series = DocumentSeries.objects.select_for_update().get(kind=kind, year=on.year)
    first = series.last_number + 1
    series.last_number += count
    series.save(update_fields=["last_number"])
    return [f"{prefix}-{on.year}-{n:06d}" for n in range(first, first + count)]


def bill_html(*, number: str, snapshot: dict[str, Any], issued_on: date, code: str, lang: str | None = None) -> str:
    """The HTML of a bill (rendered to PDF by ``pdf.html_to_pdf``, possibly in another process)."""
    url = verification_url(code) if code else ""
    snap = snapshot
    with pdf.document_language(lang) as key:
        title = _("Aviso de contribución %(n)s") % {"n": number}
        rate = Decimal(snap["surcharge_rate"])
        context = {
            "number": number, "b": snap, "issued_on": issued_on,
            "due_date": date.fromisoformat(snap["due_date"]), "last_day_to_pay": date.fromisoformat(snap["last_day_to_pay"]),
            "delinquent_from": date.fromordinal(date.fromisoformat(snap["last_day_to_pay"]).toordinal() + 1),
            "credit": Decimal(snap["credit"]) > 0, "rate": rate_label(rate),
            # ¶13: the account's total due shows only when other charges are overdue besides this one.
            "other_charges_due": Decimal(snap["total_due"]) > Decimal(snap["balance"]),
            "surcharge_basis": surcharge_text(snap.get("surcharge_groups", []), rate),
            "access_code": portal_access_code(snap["parcel_id"], snap["owner_key"]), "portal_url": portal_url(),
            "verify_url": url, "verify_code": code, "qr": pdf.qr_data_uri(url) if url else "", "one_page": True,
        }
        return pdf.html_for("billing/pdf/bill.html", context, title=title, lang=key)


def render_bill(bill: Bill, *, code: str = "", lang: str | None = None) -> bytes:
    return pdf.html_to_fitting_pdf(bill_html(number=bill.number, snapshot=bill.snapshot, issued_on=bill.issued_on, code=code,
                                             lang=lang))


def _check_bill_user(acting_user: Any) -> None:
    if not has_role(acting_user, *BILL_USERS):
        raise BillingError(_("El usuario %(u)s no puede emitir avisos de contribución.") % {"u": getattr(acting_user, "username", None)})


@transaction.atomic
def bill_issue(*, acting_user: Any, charge: Charge | int, issued_on: date | None = None, lang: str | None = None) -> Bill:
    """¶12: a bill for one installment of a finalized roll, numbered (``AV-<year>-000001``),
    with its amounts as of ``issued_on``; its PDF is stored in the same transaction."""
    _check_bill_user(acting_user)
    charge = _billable(charge)
    on = issued_on or timezone.localdate()
    snapshot = bill_snapshot(charge=charge, issued_on=on)
    number = _allocate_numbers("bill", BILL_PREFIX, on, 1)[0]
    bill = Bill(number=number, charge=charge, parcel_id=charge.parcel_id, issued_on=on, snapshot=snapshot, issued_by=acting_user)
    bill.full_clean()
    bill.save()
    code = verification_code(IssuedDocument.Kind.BILL, number)
    data = pdf.html_to_fitting_pdf(bill_html(number=number, snapshot=snapshot, issued_on=on, code=code, lang=lang))
    _store(_document(kind=IssuedDocument.Kind.BILL, number=number, parcel_id=charge.parcel_id, code=code, data=data, bill=bill))
    chain.link(chain.BILL, bill.pk)
    return bill


def bill_for_installment(*, parcel_code: str, fiscal_year: str, number: int) -> Charge:
    charge = (Charge.objects.filter(parcel__parcel_id=parcel_code, fiscal_year__label=fiscal_year, number=number,
                                    kind=Charge.Kind.INSTALLMENT).first())
    if charge is None:
        services.parcel_by_code(parcel_code)  # an unknown parcel says so
        raise BillingError(_("El predio %(p)s no tiene el plazo %(n)s del año fiscal %(y)s.") % {
            "p": parcel_code, "n": number, "y": fiscal_year})
    return charge


def bill_get_or_issue(*, acting_user: Any | None, charge: Charge, lang: str | None = None) -> tuple[Bill, bool]:
    """The bill of an installment issued outside a batch (the latest one), or a new one."""
    _billable(charge)
    existing = Bill.objects.filter(charge=charge, batch__isnull=True).order_by("-issued_at", "-pk").first()
    if existing is not None:
        return existing, False
    if acting_user is None:
        raise BillingError(_("El plazo no tiene aviso todavía; indique el usuario que lo emite."))
    return bill_issue(acting_user=acting_user, charge=charge, lang=lang), True


# --- Debt certificates (¶11) ---------------------------------------------------------------------


def certificate_document_store(certificate: DebtCertificate, *, lang: str | None = None) -> IssuedDocument:
    """Render and store the certificate's PDF once, inside ``services.certificate_issue``."""
    existing = IssuedDocument.objects.filter(certificate=certificate).first()
    if existing is not None:
        return existing
    code = verification_code(IssuedDocument.Kind.CERTIFICATE, certificate.number)
    data = pdf.render_certificate_pdf(certificate=certificate, verify_url=verification_url(code), code=code, lang=lang)
    return _store(_document(kind=IssuedDocument.Kind.CERTIFICATE, number=certificate.number, parcel_id=certificate.parcel_id,
                            code=code, data=data, certificate=certificate))


# --- Reprints ---------------------------------------------------------------------------------


def document_copy(document: IssuedDocument, *, on: date | None = None, lang: str | None = None) -> bytes:
    """A reprint: the stored bytes with a "COPIA — reimpreso el …" stamp laid over each page
    (WeasyPrint renders the stamp, pypdf merges it). The stored document is not touched, and a
    copy of a voided payment's receipt says so."""
    from pypdf import PdfReader, PdfWriter

    on = on or timezone.localdate()
    with pdf.document_language(lang) as key:
        text = _("COPIA — reimpreso el %(d)s") % {"d": long_date(on, key)}
        status = document_status(document)
        if status.voided_on is not None:
            text += " · " + _("PAGO ANULADO el %(d)s") % {"d": long_date(status.voided_on, key)}
    stamp = PdfReader(io.BytesIO(pdf.render_stamp(text=text, lang=lang))).pages[0]
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(document_pdf(document))))
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
    superseded_by: str = ""
    facts: tuple[tuple[str, str], ...] = ()  # (label, value) lines, in the active language

    @property
    def valid(self) -> bool:
        return self.status == "valid"


def document_status(document: IssuedDocument) -> DocumentStatus:
    if document.kind == IssuedDocument.Kind.RECEIPT:
        void = getattr(Receipt.objects.select_related("payment__void").get(pk=document.receipt_id).payment, "void", None)
        if void is not None:
            return DocumentStatus(document=document, status="voided", voided_on=void.voided_on)
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
                                                                "certificate").filter(verification_code=code).first())


def verification(code: str) -> dict[str, Any] | None:
    """For the public page: the document's kind, number, parcel, amounts and status, from its
    snapshot (no owner names: the page is public). ``None`` when the code is not recognized."""
    document = document_by_code(code)
    if document is None:
        return None
    status = document_status(document)
    key = "en" if (get_language() or "").startswith("en") else "es"

    def day(value: date | str) -> str:
        return long_date(date.fromisoformat(value) if isinstance(value, str) else value, key)

    facts: list[tuple[str, str]] = [(_("Predio (número de catastro)"), document.parcel.parcel_id)]
    if document.kind == IssuedDocument.Kind.RECEIPT:
        snap = document.receipt.snapshot
        facts += [(_("Fecha de pago"), day(snap["paid_on"])), (_("Cantidad pagada"), money(snap["amount"]))]
        for item in snap.get("applications", []):
            facts.append((item["description"], money(Decimal(item["surcharge"]) + Decimal(item["principal_paid"]))))
    elif document.kind == IssuedDocument.Kind.BILL:
        snap = document.bill.snapshot
        facts += [
            (_("Año fiscal"), snap["fiscal_year"]), (_("Plazo"), str(snap["number"])),
            (_("Contribución neta (¶9)"), money(snap["net"])), (_("Importe del plazo"), money(snap["principal"])),
            (_("Vence"), day(snap["due_date"])), (_("Último día para pagar"), day(snap["last_day_to_pay"])),
            (_("Balance del plazo a la fecha del aviso"), money(snap["balance"])),
            (_("Fecha del aviso"), day(document.bill.issued_on)),
        ]
    else:
        cert = document.certificate
        facts += [(_("Deuda al"), day(cert.as_of)), (_("Total adeudado"), money(cert.snapshot["total_due"]))]
    return {"document": document, "status": status, "facts": facts}


# --- Bulk printing (the job itself is ``billing.bulk``) -------------------------------------------


def _clean_filters(filters: dict[str, Any] | None) -> dict[str, Any]:
    filters = dict(filters or {})
    unknown = sorted(set(filters) - set(BATCH_FILTERS))
    if unknown:
        raise BillingError(_("Filtro desconocido: %(f)s.") % {"f": ", ".join(unknown)})
    clean: dict[str, Any] = {}
    if filters.get("parcel_ids"):
        clean["parcel_ids"] = sorted({str(p).strip() for p in filters["parcel_ids"] if str(p).strip()})
    for name in ("parcel_prefix", "owner_key"):
        if str(filters.get(name) or "").strip():
            clean[name] = str(filters[name]).strip()
    return clean


def bill_batch_charges(batch: BillBatch) -> QuerySet[Charge]:
    """The installments a batch prints, in cadastre order (stable, so a restart finds the same parts)."""
    charges = Charge.objects.filter(kind=Charge.Kind.INSTALLMENT, fiscal_year_id=batch.fiscal_year_id, number=batch.number,
                                    roll_line__levy__status=Levy.Status.FINAL)
    filters = batch.filters or {}
    if filters.get("parcel_ids"):
        charges = charges.filter(parcel__parcel_id__in=filters["parcel_ids"])
    if filters.get("parcel_prefix"):
        charges = charges.filter(parcel__parcel_id__startswith=filters["parcel_prefix"])
    if filters.get("owner_key"):
        charges = charges.filter(parcel__owner__owner_key=filters["owner_key"])
    return charges.order_by("parcel__parcel_id", "pk")


BILL_BATCH = "bill_batch"  # the procrastinate task (billing/bulk.py)


def _bill_batch_defer(acting_user: Any, batch: BillBatch, processes: int | None, queue: str | None = None) -> Job:
    """The batch's job: one bill batch per semester at a time, whatever its filters (two batches
    of the same installments at once would number their bills twice)."""
    from parcels.jobs import JobBusy, job_defer

    payload: dict[str, Any] = {"batch_id": batch.pk}
    if processes:
        payload["processes"] = processes
    what = _("los avisos de %(y)s, plazo %(n)s") % {"y": batch.fiscal_year.label, "n": batch.number}
    try:
        return job_defer(kind=BILL_BATCH, key=f"{batch.fiscal_year.label}/{batch.number}", payload=payload,
                         acting_user=acting_user, what=what, queue=queue)
    except JobBusy as exc:
        raise BillingError(str(exc)) from None


@transaction.atomic
def bill_batch_start(acting_user: Any, fiscal_year: str | FiscalYear, number: int, filters: dict[str, Any] | None = None,
                     processes: int | None = None, queue: str | None = None) -> BillBatch:
    """Hacienda prints a semester's bills (installment ``number`` of ``fiscal_year``, or the
    ``filters``: ``parcel_ids``, ``parcel_prefix``, ``owner_key``) as merged PDFs of at most 250
    pages, made by a background job (task ``bill_batch``, rendering in ``processes`` processes,
    on procrastinate's ``queue``: every worker takes every queue). Refused while another batch of the same semester is queued or running."""
    if not has_role(acting_user, HACIENDA):
        raise BillingError(_("Solo Hacienda imprime los avisos en lote."))
    label = fiscal_year.label if isinstance(fiscal_year, FiscalYear) else str(fiscal_year)
    year = FiscalYear.objects.filter(label=label).first()
    if year is None:
        raise BillingError(_("Año fiscal desconocido «%(y)s».") % {"y": label})
    if number not in (1, 2):
        raise BillingError(_("El plazo es 1 (julio) o 2 (enero)."))
    if not Levy.objects.filter(fiscal_year=year, status=Levy.Status.FINAL).exists():
        raise BillingError(_("El padrón de %(y)s no está finalizado: no hay avisos que imprimir.") % {"y": label})
    batch = BillBatch(fiscal_year=year, number=number, filters=_clean_filters(filters), created_by=acting_user)
    if not bill_batch_charges(batch).exists():
        raise BillingError(_("Ningún plazo corresponde a esa selección."))
    batch.save()
    batch.job = _bill_batch_defer(acting_user, batch, processes, queue)
    batch.save(update_fields=["job"])
    return batch


@transaction.atomic
def bill_batch_resume(acting_user: Any, batch: BillBatch) -> BillBatch:
    """Start a failed batch again with a new job: the bills and parts already made are kept and
    skipped (``bulk.bill_batch_run`` resumes), so nothing is billed twice. Refused while another
    batch of the same semester is queued or running."""
    if not has_role(acting_user, HACIENDA):
        raise BillingError(_("Solo Hacienda imprime los avisos en lote."))
    batch = BillBatch.objects.select_for_update(of=("self",)).select_related("job", "fiscal_year").get(pk=batch.pk)
    if batch.job is not None and batch.job.status != Job.Status.FAILED:
        raise BillingError(_("El lote no falló: no hay nada que reanudar."))
    logger.info("bill batch %s resumed by %s", batch.pk, getattr(acting_user, "username", None))
    batch.job = _bill_batch_defer(acting_user, batch, (batch.job.payload.get("processes") if batch.job else None))
    batch.save(update_fields=["job"])
    return batch


@transaction.atomic
def bill_batch_issue(*, batch: BillBatch, charge_ids: Sequence[int], issued_on: date,
                     render_many: Callable[[list[str]], list[bytes]], lang: str | None = None) -> int:
    """Issue the bills of ``charge_ids`` in ``batch`` (those not billed in it yet) and store
    their PDFs, in one transaction. The bill series is locked first, so two runs of the same
    batch cannot both bill a charge; ``render_many`` turns HTML into one-page PDFs (in worker
    processes when the job has several cores)."""
    numbers_needed = list(charge_ids)
    DocumentSeries.objects.get_or_create(kind="bill", year=issued_on.year)
    DocumentSeries.objects.select_for_update().get(kind="bill", year=issued_on.year)
    done = set(Bill.objects.filter(batch=batch, charge_id__in=numbers_needed).values_list("charge_id", flat=True))
    charges = {c.pk: c for c in Charge.objects.filter(pk__in=[pk for pk in numbers_needed if pk not in done])
               .select_related("roll_line__levy", "fiscal_year", "parcel__owner")}
    todo = [charges[pk] for pk in numbers_needed if pk in charges]
    if not todo:
        return 0
    for charge in todo:
        if charge.kind != Charge.Kind.INSTALLMENT or charge.roll_line.levy.status != Levy.Status.FINAL:
            raise BillingError(_("Un padrón en borrador no se factura: solo se emiten avisos de un padrón finalizado."))
    numbers = _allocate_numbers("bill", BILL_PREFIX, issued_on, len(todo))
    facts = accounts_facts(charges=todo, issued_on=issued_on)
    bills, htmls, codes = [], [], []
    for charge, number in zip(todo, numbers, strict=True):
        snapshot = bill_snapshot(charge=charge, issued_on=issued_on, facts=facts[charge.pk])
        code = verification_code(IssuedDocument.Kind.BILL, number)
        bills.append(Bill(number=number, charge=charge, parcel_id=charge.parcel_id, issued_on=issued_on, snapshot=snapshot,
                          batch=batch, issued_by_id=batch.created_by_id))
        htmls.append(bill_html(number=number, snapshot=snapshot, issued_on=issued_on, code=code, lang=lang))
        codes.append(code)
    pdfs = render_many(htmls)
    Bill.objects.bulk_create(bills)
    IssuedDocument.objects.bulk_create([
        _document(kind=IssuedDocument.Kind.BILL, number=bill.number, parcel_id=bill.parcel_id, code=code, data=data, bill=bill)
        for bill, code, data in zip(bills, codes, pdfs, strict=True)
    ])
    chain.link(chain.BILL, [bill.pk for bill in bills])
    return len(bills)
