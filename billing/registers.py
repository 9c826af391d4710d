"""Issue 19: registers for auditors (*registros*). For any period (``start``..``end``, both days
included) a register lists what happened in it (receipts issued, receipts voided, refunds, roll
corrections, bills, COPIA reprints, day closes, late finalizations) with its control totals.

Design:
- ``REGISTERS`` maps a kind (``receipts``, ``voids`` …, the names ``billing register KIND``
  takes) to a function ``(start, end) -> Register``; ``register_kind`` adds one, so other
  registers (a bank's payment files, a refund's approval) plug in without touching the page, the
  command, the CSV or the PDF.
- A ``Register`` is a frozen value: title, columns (``key`` for the CSV header, ``label`` for the
  page and the PDF), rows (raw values: ``date``, ``Decimal``, ``int``, ``str``) and totals.
- Totals are never summed here: each comes from the function of ``billing.books`` that
  ``verify_books``' control totals use (``payment_totals``, ``void_totals``, ``ledger_totals``,
  ``correction_totals``, ``final_levy_totals`` …), called for the period; over the whole books
  they are the control totals (tests/billing/test_registers.py).
- Reads only; nothing here writes (the page and the command are its readers).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.db import connection
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from levy.exports import safe_cell
from levy.models import Levy, RollCorrection

from . import books, pdf
from .errors import BillingError
from .models import Bill, DayClose, IssuedDocument, PaymentVoid, Receipt, Refund, RefundRequest, ReprintLog

MAX_DAYS = 366 * 5  # the longest period a register covers (five fiscal years)


@dataclass(frozen=True)
class Column:
    key: str  # the CSV header: stable, ASCII, documented (README)
    label: str | Promise  # the page's and the PDF's header, in the active language
    numeric: bool = False


@dataclass(frozen=True)
class Total:
    key: str
    label: str | Promise
    value: int | Decimal


@dataclass(frozen=True)
class Register:
    kind: str
    title: str | Promise
    start: date
    end: date
    columns: tuple[Column, ...]
    rows: tuple[tuple[Any, ...], ...]
    totals: tuple[Total, ...]

    @property
    def display_rows(self) -> list[list[tuple[Any, bool, str | Promise]]]:
        """Each row's cells with whether their column is numeric (right-aligned) and its label
        (the narrow page stacks each cell under its label), for the templates."""
        return [[(cell, column.numeric, column.label) for cell, column in zip(row, self.columns, strict=True)] for row in self.rows]

    def total(self, key: str) -> int | Decimal:
        return next(t.value for t in self.totals if t.key == key)


RegisterFunction = Callable[[date, date], Register]
REGISTERS: dict[str, RegisterFunction] = {}
TITLES: dict[str, str | Promise] = {}


def register_kind(kind: str, title: str | Promise) -> Callable[[RegisterFunction], RegisterFunction]:
    """Decorator: ``fn(start, end) -> Register`` is the register ``kind``, titled ``title``."""

    def add(fn: RegisterFunction) -> RegisterFunction:
        REGISTERS[kind] = fn
        TITLES[kind] = title
        return fn

    return add


def register_build(kind: str, start: date | None, end: date | None) -> Register:
    """The register ``kind`` of the period, or ``BillingError`` saying what is wrong."""
    if kind not in REGISTERS:
        raise BillingError(_("Registro desconocido: %(k)s (hay: %(all)s).") % {"k": kind, "all": ", ".join(REGISTERS)})
    if start is None or end is None:
        raise BillingError(_("Indique el periodo: desde y hasta."))
    if end < start:
        raise BillingError(_("El periodo termina (%(e)s) antes de empezar (%(s)s).") % {"s": start.isoformat(), "e": end.isoformat()})
    if (end - start).days > MAX_DAYS:
        raise BillingError(_("Un registro abarca a lo sumo cinco años."))
    return REGISTERS[kind](start, end)


def _who(user: Any) -> str:
    return user.get_username() if user is not None else ""


def _local(moment: datetime) -> date:
    return timezone.localtime(moment).date()


# --- The registers ----------------------------------------------------------------------------------


@register_kind("receipts", gettext_lazy("Registro de recibos emitidos"))
def receipts_register(start: date, end: date) -> Register:
    """¶9, ¶13: every receipt of a payment dated in the period, voided ones included (marked)."""
    receipts = (Receipt.objects.filter(payment__paid_on__range=(start, end))
                .select_related("office", "payment__parcel", "payment__collector", "payment__void")
                .order_by("payment__paid_on", "office__code", "fiscal_year", "number"))
    rows = tuple(
        (r.display_number, r.payment.paid_on, r.payment.parcel.parcel_id, r.payment.payer_name, r.payment.get_method_display(),
         r.payment.amount.amount, _who(r.payment.collector), getattr(r.payment, "void", None) and r.payment.void.voided_on or "")
        for r in receipts
    )
    with connection.cursor() as cursor:
        count, amount, voided, voided_amount = books.payment_totals(cursor, start=start, end=end)
        receipts_n, _voided, series = books.receipt_totals(cursor, start=start, end=end)
    return Register("receipts", TITLES["receipts"], start, end, (
        Column("receipt", gettext_lazy("Recibo")), Column("paid_on", gettext_lazy("Fecha de pago")),
        Column("parcel", gettext_lazy("Predio")), Column("payer", gettext_lazy("Pagador")),
        Column("method", gettext_lazy("Forma de pago")), Column("amount", gettext_lazy("Cantidad"), numeric=True),
        Column("collector", gettext_lazy("Colector")), Column("voided_on", gettext_lazy("Anulado el")),
    ), rows, (
        Total("receipts", gettext_lazy("Recibos emitidos"), receipts_n),
        Total("series", gettext_lazy("Series de recibos"), series),
        Total("amount", gettext_lazy("Cantidad recibida"), amount),
        Total("voided", gettext_lazy("De ellos, de pagos anulados"), voided),
        Total("voided_amount", gettext_lazy("Cantidad de los pagos anulados"), voided_amount),
        Total("payments", gettext_lazy("Pagos"), count),
    ))


@register_kind("voids", gettext_lazy("Registro de recibos anulados"))
def voids_register(start: date, end: date) -> Register:
    """¶13: every void dated in the period (the receipt stays as issued; the void is its own dated entry)."""
    voids = (PaymentVoid.objects.filter(voided_on__range=(start, end))
             .select_related("payment__receipt__office", "payment__parcel", "voided_by").order_by("voided_on", "pk"))
    rows = tuple(
        (v.voided_on, v.payment.receipt.display_number, v.payment.paid_on, v.payment.parcel.parcel_id,
         v.payment.amount.amount, v.reason, _who(v.voided_by))
        for v in voids
    )
    with connection.cursor() as cursor:
        count, amount = books.void_totals(cursor, start=start, end=end)
    return Register("voids", TITLES["voids"], start, end, (
        Column("voided_on", gettext_lazy("Anulado el")), Column("receipt", gettext_lazy("Recibo")),
        Column("paid_on", gettext_lazy("Fecha de pago")), Column("parcel", gettext_lazy("Predio")),
        Column("amount", gettext_lazy("Cantidad"), numeric=True), Column("reason", gettext_lazy("Razón")),
        Column("voided_by", gettext_lazy("Anulado por")),
    ), rows, (
        Total("voids", gettext_lazy("Anulaciones"), count),
        Total("amount", gettext_lazy("Cantidad anulada"), amount),
    ))


@register_kind("refunds", gettext_lazy("Registro de reembolsos"))
def refunds_register(start: date, end: date) -> Register:
    """The refunds paid in the period, as recorded (number, how the money went back — the check's
    number or the transfer's reference —, who asked and who approved: issue 19's two people)."""
    refunds = (Refund.objects.filter(refunded_on__range=(start, end))
               .select_related("parcel", "office", "refunded_by", "request__requested_by").order_by("refunded_on", "pk"))
    rows = tuple(
        (r.number, r.refunded_on, r.parcel.parcel_id, r.amount.amount, r.get_method_display() if r.method else "",
         r.check_number or r.transfer_reference, r.office.code if r.office else "", r.reason,
         _who(getattr(getattr(r, "request", None), "requested_by", None)), _who(r.refunded_by))
        for r in refunds
    )
    with connection.cursor() as cursor:
        ledger = books.ledger_totals(cursor, start=start, end=end)
    return Register("refunds", TITLES["refunds"], start, end, (
        Column("number", gettext_lazy("Número")), Column("refunded_on", gettext_lazy("Fecha")),
        Column("parcel", gettext_lazy("Predio")), Column("amount", gettext_lazy("Cantidad"), numeric=True),
        Column("method", gettext_lazy("Forma")), Column("check_number", gettext_lazy("Cheque o transferencia")),
        Column("office", gettext_lazy("Oficina")), Column("reason", gettext_lazy("Razón")),
        Column("requested_by", gettext_lazy("Pedido por")), Column("refunded_by", gettext_lazy("Aprobado por")),
    ), rows, (
        Total("refunds", gettext_lazy("Reembolsos"), ledger.refund_count),
        Total("amount", gettext_lazy("Cantidad reembolsada"), ledger.refunds),
    ))


@register_kind("refund-requests", gettext_lazy("Registro de solicitudes de reembolso"))
def refund_requests_register(start: date, end: date) -> Register:
    """Issue 19: the refunds asked for in the period, each with what became of it (pending,
    approved by a second supervisor and paid as the refund numbered, or rejected with the reason)."""
    requests = (RefundRequest.objects.filter(requested_at__date__range=(start, end))
                .select_related("parcel", "office", "requested_by", "decided_by", "refund").order_by("requested_at", "pk"))
    rows = tuple(
        (r.pk, _local(r.requested_at), r.parcel.parcel_id, r.amount.amount, r.get_method_display(), r.office.code, r.reason,
         _who(r.requested_by), r.get_status_display(), _who(r.decided_by), _local(r.decided_at) if r.decided_at else "",
         r.refund.number if r.refund else r.decision_reason)
        for r in requests
    )
    Status = RefundRequest.Status

    def of(status: str | None) -> list[RefundRequest]:
        return [r for r in requests if status is None or r.status == status]

    return Register("refund-requests", TITLES["refund-requests"], start, end, (
        Column("request", gettext_lazy("Solicitud")), Column("requested_on", gettext_lazy("Fecha")),
        Column("parcel", gettext_lazy("Predio")), Column("amount", gettext_lazy("Cantidad"), numeric=True),
        Column("method", gettext_lazy("Forma")), Column("office", gettext_lazy("Oficina")),
        Column("reason", gettext_lazy("Razón")), Column("requested_by", gettext_lazy("Pedido por")),
        Column("status", gettext_lazy("Estado")), Column("decided_by", gettext_lazy("Decidido por")),
        Column("decided_on", gettext_lazy("Decidido el")),
        Column("outcome", gettext_lazy("Reembolso o razón del rechazo")),
    ), rows, (
        Total("requested", gettext_lazy("Solicitudes"), len(requests)),
        Total("requested_amount", gettext_lazy("Cantidad solicitada"), sum((r.amount.amount for r in requests), Decimal("0.00"))),
        Total("approved", gettext_lazy("Aprobadas y pagadas"), len(of(Status.APPROVED))),
        Total("approved_amount", gettext_lazy("Cantidad pagada"),
              sum((r.amount.amount for r in of(Status.APPROVED)), Decimal("0.00"))),
        Total("rejected", gettext_lazy("Rechazadas"), len(of(Status.REJECTED))),
        Total("pending", gettext_lazy("Pendientes"), len(of(Status.REQUESTED))),
    ))


@register_kind("bank-files", gettext_lazy("Registro de archivos del banco y sus excepciones"))
def bank_files_register(start: date, end: date) -> Register:
    """Issue 19, ¶13: every line of the collecting banks' files imported in the period, with its
    outcome, receipt and, for an exception, how a supervisor resolved it; the control totals are
    ``services.bank.bank_files_register``'s (count and sum of lines, applied, exceptions by
    resolution, already applied, returned)."""
    from .services import bank

    found = bank.bank_files_register(start, end)
    rows = []
    for item in found.files:
        for line in item.lines:
            resolution = getattr(line, "resolution", None)
            receipt = getattr(line.payment, "receipt", None) if line.payment_id else None
            if resolution is not None and resolution.payment_id:
                receipt = resolution.payment.receipt
            rows.append((
                item.bank_file.bank.code, item.bank_file.original_name, _local(item.bank_file.imported_at), line.line_number,
                line.trace_number, line.value_date, line.amount.amount, line.reference, line.get_outcome_display(),
                line.parcel.parcel_id if line.parcel_id else "", receipt.display_number if receipt else "",
                line.exception_reason, resolution.get_action_display() if resolution else "",
                _who(resolution.resolved_by) if resolution else "",
            ))
    totals = []
    for total in found.totals:
        totals.append(Total(total.name, total.label, total.count))
        totals.append(Total(f"{total.name}_amount", f"{total.label} ($)", total.amount))
    return Register("bank-files", TITLES["bank-files"], start, end, (
        Column("bank", gettext_lazy("Banco")), Column("file", gettext_lazy("Archivo")),
        Column("imported_on", gettext_lazy("Importado el")), Column("line", gettext_lazy("Línea"), numeric=True),
        Column("trace_number", gettext_lazy("Número de rastreo")), Column("value_date", gettext_lazy("Fecha valor")),
        Column("amount", gettext_lazy("Cantidad"), numeric=True), Column("reference", gettext_lazy("Referencia")),
        Column("outcome", gettext_lazy("Resultado")), Column("parcel", gettext_lazy("Predio")),
        Column("receipt", gettext_lazy("Recibo")), Column("exception", gettext_lazy("Excepción")),
        Column("resolution", gettext_lazy("Resolución")), Column("resolved_by", gettext_lazy("Resuelta por")),
    ), tuple(rows), tuple(totals))


@register_kind("corrections", gettext_lazy("Registro de correcciones del padrón"))
def corrections_register(start: date, end: date) -> Register:
    """¶9: the roll corrections made in the period, with their number in their roll."""
    corrections = (RollCorrection.objects.numbered().filter(created_at__date__range=(start, end))  # the district's day
                   .select_related("roll_line", "created_by").order_by("created_at", "pk"))
    rows = tuple(
        (_local(c.created_at), c.roll, c.number, c.roll_line.parcel_code, c.om_charge_delta.amount, c.credit_delta.amount,
         c.net_delta.amount, c.due_date, c.reason, _who(c.created_by))
        for c in corrections
    )
    with connection.cursor() as cursor:
        per_year = books.correction_totals(cursor, start=start, end=end)
    totals = [Total("corrections", gettext_lazy("Correcciones"), sum(count for _y, count, _n in per_year)),
              Total("net", gettext_lazy("Cambio neto"), sum((net for _y, _c, net in per_year), Decimal("0.00")))]
    for label, count, net in per_year:
        totals += [Total(f"corrections {label}", _("Correcciones del padrón %(y)s") % {"y": label}, count),
                   Total(f"net {label}", _("Cambio neto del padrón %(y)s") % {"y": label}, net)]
    return Register("corrections", TITLES["corrections"], start, end, (
        Column("made_on", gettext_lazy("Fecha")), Column("fiscal_year", gettext_lazy("Padrón")),
        Column("number", gettext_lazy("N.º"), numeric=True), Column("parcel", gettext_lazy("Predio")),
        Column("om_charge_delta", gettext_lazy("Cambio en O&M"), numeric=True),
        Column("credit_delta", gettext_lazy("Cambio en el crédito"), numeric=True),
        Column("net_delta", gettext_lazy("Cambio neto"), numeric=True), Column("due_date", gettext_lazy("Vence")),
        Column("reason", gettext_lazy("Razón")), Column("made_by", gettext_lazy("Hecha por")),
    ), rows, tuple(totals))


@register_kind("bills", gettext_lazy("Registro de avisos emitidos"))
def bills_register(start: date, end: date) -> Register:
    """¶12: the bills (*avisos*) issued in the period, on demand or in bulk printing; their COPIA
    reprints are the register ``reprints``."""
    bills = Bill.objects.filter(issued_on__range=(start, end)).select_related("parcel", "charge", "issued_by").order_by("number")
    rows = tuple(
        (b.number, b.issued_on, b.parcel.parcel_id, b.charge.description if b.charge else _("Aviso sin nada que pagar (¶9)"),
         b.batch_id or "", _who(b.issued_by))
        for b in bills
    )
    with connection.cursor() as cursor:
        count = books.bill_totals(cursor, start=start, end=end)
    return Register("bills", TITLES["bills"], start, end, (
        Column("bill", gettext_lazy("Aviso")), Column("issued_on", gettext_lazy("Emitido el")),
        Column("parcel", gettext_lazy("Predio")), Column("charge", gettext_lazy("Cargo")),
        Column("batch", gettext_lazy("Impresión masiva")), Column("issued_by", gettext_lazy("Emitido por")),
    ), rows, (Total("bills", gettext_lazy("Avisos emitidos"), count),))


@register_kind("reprints", gettext_lazy("Registro de reimpresiones (COPIA)"))
def reprints_register(start: date, end: date) -> Register:
    """Every COPIA reprint of an issued document printed in the period: who, when, which document."""
    logs = (ReprintLog.objects.filter(printed_on__range=(start, end)).select_related("document__parcel", "printed_by")
            .order_by("printed_at", "pk"))
    kinds = dict(IssuedDocument.Kind.choices)
    rows = tuple(
        (g.printed_on, timezone.localtime(g.printed_at).strftime("%H:%M"), kinds.get(g.document.kind, g.document.kind),
         g.document.number, g.document.parcel.parcel_id, _who(g.printed_by), g.get_channel_display())
        for g in logs
    )
    with connection.cursor() as cursor:
        per_kind = books.reprint_totals(cursor, start=start, end=end)
    totals = [Total("reprints", gettext_lazy("Reimpresiones"), sum(count for _k, count in per_kind))]
    totals += [Total(f"reprints {kind}", kinds.get(kind, kind), count) for kind, count in per_kind]
    return Register("reprints", TITLES["reprints"], start, end, (
        Column("printed_on", gettext_lazy("Fecha")), Column("time", gettext_lazy("Hora")),
        Column("document_kind", gettext_lazy("Documento")), Column("number", gettext_lazy("Número")),
        Column("parcel", gettext_lazy("Predio")), Column("printed_by", gettext_lazy("Reimpreso por")),
        Column("channel", gettext_lazy("Desde")),
    ), rows, tuple(totals))


@register_kind("day-closes", gettext_lazy("Registro de cierres del día"))
def day_closes_register(start: date, end: date) -> Register:
    """The day closes of days in the period: what the receipts said, what was counted, the over
    (+) or short (−) and its explanation."""
    closes = DayClose.objects.filter(day__range=(start, end)).select_related("office", "closed_by").order_by("day", "office__code")
    rows = tuple(
        (c.day, c.office.code, c.expected_cash.amount, c.counted_cash.amount, c.counted_cash.amount - c.expected_cash.amount,
         c.expected_checks.amount, c.counted_checks.amount, c.counted_checks.amount - c.expected_checks.amount,
         c.explanation, _who(c.closed_by))
        for c in closes
    )
    with connection.cursor() as cursor:
        count, cash, checks, unmatched = books.day_close_totals(cursor, start=start, end=end)
    return Register("day-closes", TITLES["day-closes"], start, end, (
        Column("day", gettext_lazy("Día")), Column("office", gettext_lazy("Oficina")),
        Column("expected_cash", gettext_lazy("Efectivo según recibos"), numeric=True),
        Column("counted_cash", gettext_lazy("Efectivo contado"), numeric=True),
        Column("cash_over_short", gettext_lazy("Sobrante o faltante de efectivo"), numeric=True),
        Column("expected_checks", gettext_lazy("Cheques según recibos"), numeric=True),
        Column("counted_checks", gettext_lazy("Cheques contados"), numeric=True),
        Column("checks_over_short", gettext_lazy("Sobrante o faltante de cheques"), numeric=True),
        Column("explanation", gettext_lazy("Explicación")), Column("closed_by", gettext_lazy("Cerrado por")),
    ), rows, (
        Total("closes", gettext_lazy("Cierres"), count),
        Total("cash_over_short", gettext_lazy("Sobrante o faltante de efectivo"), cash),
        Total("checks_over_short", gettext_lazy("Sobrante o faltante de cheques"), checks),
        Total("unmatched", gettext_lazy("Cierres que no cuadraron"), unmatched),
    ))


@register_kind("late-finalizations", gettext_lazy("Registro de padrones finalizados tarde"))
def late_finalizations_register(start: date, end: date) -> Register:
    """¶11: the rolls finalized in the period after their July 1 (recorded as late when finalized)."""
    levies = (Levy.objects.filter(status=Levy.Status.FINAL, finalized_late=True, finalized_on__range=(start, end))
              .select_related("fiscal_year", "finalized_by").order_by("finalized_on"))
    rows = tuple(
        (lv.fiscal_year.label, lv.fiscal_year.roll_deadline, lv.finalized_on, (lv.finalized_on - lv.fiscal_year.roll_deadline).days,
         _who(lv.finalized_by), lv.total_levy.amount, lv.roll_net.amount)
        for lv in levies
    )
    with connection.cursor() as cursor:
        late = books.final_levy_totals(cursor, start=start, end=end, late_only=True)
    return Register("late-finalizations", TITLES["late-finalizations"], start, end, (
        Column("fiscal_year", gettext_lazy("Año fiscal")), Column("deadline", gettext_lazy("Fecha límite (¶11)")),
        Column("finalized_on", gettext_lazy("Finalizado el")), Column("days_late", gettext_lazy("Días de atraso"), numeric=True),
        Column("finalized_by", gettext_lazy("Finalizado por")), Column("total_levy", gettext_lazy("Contribución total (¶4)"), numeric=True),
        Column("roll_net", gettext_lazy("Neto del padrón"), numeric=True),
    ), rows, (
        Total("rolls", gettext_lazy("Padrones finalizados tarde"), len(late)),
        Total("total_levy", gettext_lazy("Contribución total (¶4)"), sum((row[1] for row in late), Decimal("0.00"))),
        Total("roll_net", gettext_lazy("Neto del padrón"), sum((row[3] for row in late), Decimal("0.00"))),
    ))


# --- Output ------------------------------------------------------------------------------------------


def plain(value: Any) -> str:
    """A cell as the CSV writes it: ISO dates, plain decimals (``1234.50``), text made safe."""
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (Decimal, int)):
        return str(value)
    return safe_cell(str(value))


def register_csv(register: Register) -> str:
    """The register as CSV: a header of column keys, the rows, then one line per total
    (``total,<key>,<value>``) after an empty line."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c.key for c in register.columns])
    writer.writerows([plain(cell) for cell in row] for row in register.rows)
    writer.writerow([])
    writer.writerows(["total", t.key, plain(t.value)] for t in register.totals)
    return out.getvalue()


def register_title(register: Register) -> str:
    return _("%(t)s, del %(s)s al %(e)s") % {"t": register.title, "s": register.start.strftime("%d/%m/%Y"),
                                              "e": register.end.strftime("%d/%m/%Y")}


def register_pdf(register: Register, *, lang: str | None = None) -> bytes:
    """The register as a tagged PDF/UA-1 (``billing/pdf/register.html``), landscape, in ``lang``."""
    with pdf.document_language(lang):
        title = register_title(register)
        context = {"register": register, "printed_at": timezone.localtime()}
    return pdf.render_pdf("billing/pdf/register.html", context, title=title, lang=lang)
