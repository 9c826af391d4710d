"""¶13 (issue 19): payment files of a collecting bank, its exceptions queue and its register.

A bank the Secretary designates as collecting agent is an ``Office`` of kind ``bank`` (reading of
¶13 in ``docs/interpretations.md``): it acts as a Collector's office, a payment through it is made
on its value date, and its receipts are numbered in its own series (per office and fiscal year,
links of their own series in the chain). It has no counter and no day close.

The layout of a file is ``docs/payment-files.md``. The flow:

- ``bank_file_parse``: a malformed file is refused WHOLE (``MalformedFile``), every error by line
  number, nothing written.
- ``bank_file_preview``: what each line would do, nothing written (the page's preview and
  ``billing payments-import --dry-run``).
- ``bank_file_import``: the same plan, written in one transaction. A payment line is applied
  through ``counter.payment_post``, the counter's own posting path (allocation oldest charge
  first, ledger, numbered receipt), dated its value date; a line the system cannot apply goes to
  the exceptions queue; a trace number the bank already sent is "already applied" (the
  idempotency key is ``(bank, trace_number)``: the same file twice applies nothing new); a
  ``return`` line voids its original payment through ``voids.payment_void``, the supervisor's
  own void, dated the day of the import.
- ``bank_exception_resolve``: a supervisor resolves an exception: apply it to a parcel (through
  the same posting path), keep it as unapplied funds, or return it to the payer; who and when
  are recorded.
- ``bank_files_register``: the files of a period with their lines and control totals (for the
  auditors' registers).
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from parcels.models import Parcel
from parcels.money import money_text
from parcels.roles import SUPERVISOR, has_role

from ..accounts import account_state, parcel_by_code
from ..errors import BillingError
from ..models import (
    BankFile,
    BankFileLine,
    BankLineResolution,
    Charge,
    Journal,
    LedgerEntry,
    Office,
    Payment,
    PaymentVoid,
    Receipt,
)
from ..references import InvalidReference, charge_id_from_reference, looks_like_reference
from . import counter, journal, voids

ZERO = Decimal("0.00")
REQUIRED_COLUMNS = ("trace_number", "value_date", "amount", "reference", "payer_name")
OPTIONAL_COLUMNS = ("kind", "original_trace_number", "return_reason")
MAX_BYTES = 5_000_000
MAX_LINES = 20_000
_AMOUNT = re.compile(r"^[0-9]{1,11}\.[0-9]{2}$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_TRACE = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._/-]{0,39}$")


# --- Reading a file ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FileLine:
    """One well-formed line of a bank file (``line_number`` counts the header as line 1)."""

    line_number: int
    trace_number: str
    value_date: date
    amount: Decimal
    reference: str
    payer_name: str
    kind: str = BankFileLine.Kind.PAYMENT
    original_trace_number: str = ""
    return_reason: str = ""


class MalformedFile(BillingError):
    """The file is refused whole: ``errors`` are every problem found, each naming its line."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__(_("Archivo rechazado: %(n)s error(es); no se registró nada. %(first)s")
                         % {"n": len(errors), "first": errors[0]})


def bank_file_parse(data: bytes, *, today: date) -> list[FileLine]:
    """The lines of a bank file, or ``MalformedFile`` with every error by line number.

    Refused: not UTF-8, a missing column, a blank or malformed trace number, one repeated in the
    file, a date not ``YYYY-MM-DD`` or after ``today``, an amount not ``1234.56`` or not above
    zero, a payment without reference, an unknown ``kind``, a return without
    ``original_trace_number``, an empty file. Whether a reference names a charge or a parcel is
    not a question of form: a line whose reference matches nothing goes to the exceptions queue."""
    if len(data) > MAX_BYTES:
        raise MalformedFile([_("el archivo pasa de %(n)s MB") % {"n": MAX_BYTES // 1_000_000}])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise MalformedFile([_("el archivo no es UTF-8")]) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    columns = [name.strip() for name in (reader.fieldnames or [])]
    missing = [name for name in REQUIRED_COLUMNS if name not in columns]
    if missing:
        raise MalformedFile([_("línea 1: faltan columnas %(c)s") % {"c": ", ".join(missing)}])
    unknown = [name for name in columns if name not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS]
    if unknown:
        raise MalformedFile([_("línea 1: columnas desconocidas %(c)s") % {"c": ", ".join(unknown)}])
    reader.fieldnames = columns
    errors: list[str] = []
    lines: list[FileLine] = []
    seen: dict[str, int] = {}
    for row in reader:
        number = reader.line_num
        if len(lines) + len(errors) >= MAX_LINES:
            errors.append(_("el archivo pasa de %(n)s líneas") % {"n": MAX_LINES})
            break
        if None in row:
            errors.append(_("línea %(l)s: más campos que columnas") % {"l": number})
            continue
        cells = {name: (row.get(name) or "").strip() for name in REQUIRED_COLUMNS + OPTIONAL_COLUMNS}
        if not any(cells.values()):
            continue  # a blank line
        problems: list[str] = []
        trace = cells["trace_number"]
        if not _TRACE.match(trace):
            problems.append(_("número de rastreo «%(v)s» inválido (letras, dígitos, . _ / -; hasta 40)") % {"v": trace})
        elif trace in seen:
            problems.append(_("número de rastreo %(v)s repetido (ya en la línea %(o)s)") % {"v": trace, "o": seen[trace]})
        value_date = None
        if not _DATE.match(cells["value_date"]):
            problems.append(_("fecha valor «%(v)s» inválida (use AAAA-MM-DD)") % {"v": cells["value_date"]})
        else:
            try:
                value_date = date.fromisoformat(cells["value_date"])
            except ValueError:
                problems.append(_("fecha valor «%(v)s» no existe") % {"v": cells["value_date"]})
            else:
                if value_date > today:
                    problems.append(_("fecha valor %(v)s posterior a hoy") % {"v": value_date.strftime("%d/%m/%Y")})
        amount = None
        if not _AMOUNT.match(cells["amount"]):
            problems.append(_("cantidad «%(v)s» inválida (use 1234.56: punto decimal, dos decimales, sin comas)")
                            % {"v": cells["amount"]})
        else:
            amount = Decimal(cells["amount"])
            if amount <= 0:
                problems.append(_("la cantidad debe ser mayor que cero"))
        kind = cells["kind"].lower() or BankFileLine.Kind.PAYMENT
        if kind not in BankFileLine.Kind.values:
            problems.append(_("tipo «%(v)s» desconocido (payment o return)") % {"v": cells["kind"]})
        elif kind == BankFileLine.Kind.PAYMENT:
            if not cells["reference"]:
                problems.append(_("falta la referencia (una referencia RF o un número de catastro)"))
            if cells["original_trace_number"]:
                problems.append(_("un pago no lleva original_trace_number"))
        elif not cells["original_trace_number"]:
            problems.append(_("una devolución requiere original_trace_number"))
        for name, limit in (("reference", 40), ("payer_name", 200), ("original_trace_number", 40), ("return_reason", 120)):
            if len(cells[name]) > limit:
                problems.append(_("%(c)s pasa de %(n)s caracteres") % {"c": name, "n": limit})
        if trace and trace not in seen:
            seen[trace] = number
        if problems:
            errors.extend(_("línea %(l)s: %(e)s") % {"l": number, "e": problem} for problem in problems)
            continue
        lines.append(FileLine(line_number=number, trace_number=trace, value_date=value_date, amount=amount,
                              reference=cells["reference"], payer_name=cells["payer_name"], kind=kind,
                              original_trace_number=cells["original_trace_number"], return_reason=cells["return_reason"]))
    if not errors and not lines:
        errors.append(_("el archivo no tiene líneas"))
    if errors:
        raise MalformedFile(errors)
    return lines


# --- The plan: what each line does -------------------------------------------------------------


@dataclass(frozen=True)
class LinePlan:
    """What the import does with one line: ``outcome`` (``BankFileLine.Outcome``), the parcel it
    names (when known), the payment a return voids, and for an exception or a repeat why."""

    line: FileLine
    outcome: str
    parcel: Parcel | None = None
    payment: Payment | None = None
    reason: str = ""

    @property
    def outcome_label(self) -> str:
        return str(BankFileLine.Outcome(self.outcome).label)


@dataclass(frozen=True)
class BankFilePlan:
    bank: Office
    name: str
    sha256: str
    lines: tuple[LinePlan, ...]

    def of(self, outcome: str) -> list[LinePlan]:
        return [plan for plan in self.lines if plan.outcome == outcome]

    def total(self, outcome: str) -> Decimal:
        return sum((plan.line.amount for plan in self.of(outcome)), ZERO)

    @property
    def applied(self) -> list[LinePlan]:
        return self.of(BankFileLine.Outcome.APPLIED)

    @property
    def exceptions(self) -> list[LinePlan]:
        return self.of(BankFileLine.Outcome.EXCEPTION)

    @property
    def already(self) -> list[LinePlan]:
        return self.of(BankFileLine.Outcome.ALREADY)

    @property
    def returned(self) -> list[LinePlan]:
        return self.of(BankFileLine.Outcome.RETURNED)

    @property
    def summary(self) -> str:
        """The command's last line."""
        return f"applied {len(self.applied)}, exceptions {len(self.exceptions)}, already applied {len(self.already)}"


def bank_office(code: str) -> Office:
    """The collecting bank of ``code``; ``BillingError`` when there is none (or it is a counter)."""
    office = Office.objects.filter(code=code).first()
    if office is None:
        raise BillingError(_("Banco desconocido «%(c)s».") % {"c": code})
    if not office.is_bank:
        raise BillingError(_("%(c)s es una colecturía, no un banco agente recaudador.") % {"c": office.code})
    return office


def _parcel_of(reference: str) -> tuple[Parcel | None, str]:
    """The parcel a line's reference names (an RF reference of a charge, or a cadastre number),
    or why none (for the exceptions queue)."""
    if looks_like_reference(reference):
        try:
            charge_id = charge_id_from_reference(reference)
        except InvalidReference as exc:
            return None, _("Referencia inválida: %(e)s.") % {"e": exc}
        charge = Charge.objects.filter(pk=charge_id).select_related("parcel__owner").first()
        if charge is None:
            return None, _("La referencia %(r)s no es de ningún cargo emitido.") % {"r": reference}
        return charge.parcel, ""
    try:
        return parcel_by_code(reference), ""
    except BillingError:
        return None, _("La referencia «%(r)s» no es una referencia RF ni un número de catastro conocido.") % {"r": reference}


def _bank_key(bank: Office, trace_number: str) -> str:
    """The payment's idempotency key: one payment per bank trace number, whatever happens."""
    return f"bank:{bank.pk}:{trace_number}"[:64]


def _line_payment(line: BankFileLine) -> Payment | None:
    """The payment a payment line brought in: at import, or when its exception was applied."""
    if line.payment_id:
        return line.payment
    resolution = getattr(line, "resolution", None)
    return resolution.payment if resolution is not None else None


def _plan(*, bank: Office, name: str, data: bytes, today: date) -> BankFilePlan:
    lines = bank_file_parse(data, today=today)
    earlier = {line.trace_number: line for line in BankFileLine.objects.filter(
        bank=bank, trace_number__in=[line.trace_number for line in lines]).exclude(outcome=BankFileLine.Outcome.ALREADY)
        .select_related("file")}
    planned_amount: dict[int, Decimal] = defaultdict(lambda: ZERO)
    planned_latest: dict[int, date] = {}
    planned_voids: set[int] = set()
    plans: list[LinePlan] = []
    for line in lines:
        if line.trace_number in earlier:
            seen = earlier[line.trace_number]
            plans.append(LinePlan(line=line, outcome=BankFileLine.Outcome.ALREADY, parcel=seen.parcel, reason=_(
                "Ya importada: archivo «%(f)s» del %(d)s, línea %(n)s.") % {
                    "f": seen.file.original_name, "d": timezone.localtime(seen.file.imported_at).strftime("%d/%m/%Y"),
                    "n": seen.line_number}))
        elif line.kind == BankFileLine.Kind.PAYMENT:
            plan = _plan_payment(line=line, planned_amount=planned_amount, planned_latest=planned_latest)
            if plan.outcome == BankFileLine.Outcome.APPLIED:
                planned_amount[plan.parcel.pk] += line.amount
                planned_latest[plan.parcel.pk] = max(line.value_date, planned_latest.get(plan.parcel.pk, line.value_date))
            plans.append(plan)
        else:
            plan = _plan_return(bank=bank, line=line, planned_voids=planned_voids)
            if plan.outcome == BankFileLine.Outcome.RETURNED:
                planned_voids.add(plan.payment.pk)
            plans.append(plan)
    return BankFilePlan(bank=bank, name=name, sha256=hashlib.sha256(data).hexdigest(), lines=tuple(plans))


def _plan_payment(*, line: FileLine, planned_amount: dict[int, Decimal], planned_latest: dict[int, date]) -> LinePlan:
    parcel, why = _parcel_of(line.reference)
    if parcel is None:
        return LinePlan(line=line, outcome=BankFileLine.Outcome.EXCEPTION, reason=why)
    exception = BankFileLine.Outcome.EXCEPTION
    day = line.value_date.strftime("%d/%m/%Y")
    later = counter.later_entry(parcel=parcel, day=line.value_date)
    if later is not None:
        return LinePlan(line=line, outcome=exception, parcel=parcel, reason=_(
            "La fecha valor %(d)s es anterior a lo ya registrado en la cuenta del predio %(p)s (%(k)s del %(l)s).") % {
                "d": day, "p": parcel.parcel_id, "k": LedgerEntry.Kind(later.kind).label,
                "l": later.entry_date.strftime("%d/%m/%Y")})
    if planned_latest.get(parcel.pk, line.value_date) > line.value_date:
        return LinePlan(line=line, outcome=exception, parcel=parcel, reason=_(
            "La fecha valor %(d)s es anterior a la de otro pago del mismo archivo para el predio %(p)s.") % {
                "d": day, "p": parcel.parcel_id})
    open_total = account_state(parcel=parcel, as_of=line.value_date, known_by=None).state.total_balance - planned_amount[parcel.pk]
    if open_total <= 0:
        return LinePlan(line=line, outcome=exception, parcel=parcel, reason=_(
            "El predio %(p)s no tiene cargos emitidos pendientes al %(d)s.") % {"p": parcel.parcel_id, "d": day})
    if line.amount > open_total:
        return LinePlan(line=line, outcome=exception, parcel=parcel, reason=_(
            "La cantidad %(a)s es mayor que lo pendiente de los cargos emitidos del predio %(p)s (%(o)s).") % {
                "a": money_text(line.amount), "p": parcel.parcel_id, "o": money_text(open_total)})
    return LinePlan(line=line, outcome=BankFileLine.Outcome.APPLIED, parcel=parcel)


def _plan_return(*, bank: Office, line: FileLine, planned_voids: set[int]) -> LinePlan:
    exception = BankFileLine.Outcome.EXCEPTION
    original = (BankFileLine.objects.filter(bank=bank, trace_number=line.original_trace_number, kind=BankFileLine.Kind.PAYMENT)
                .exclude(outcome=BankFileLine.Outcome.ALREADY)
                .select_related("payment__parcel", "resolution__payment__parcel").first())
    if original is None:
        return LinePlan(line=line, outcome=exception, reason=_(
            "No hay un pago de este banco con el número de rastreo %(t)s.") % {"t": line.original_trace_number})
    payment = _line_payment(original)
    if payment is None:
        return LinePlan(line=line, outcome=exception, parcel=original.parcel, reason=_(
            "El pago del rastreo %(t)s no se aplicó a ninguna cuenta (excepción sin aplicar): nada que anular.")
            % {"t": line.original_trace_number})
    if PaymentVoid.objects.filter(payment=payment).exists() or payment.pk in planned_voids:
        return LinePlan(line=line, outcome=BankFileLine.Outcome.ALREADY, parcel=payment.parcel, payment=payment, reason=_(
            "El pago del rastreo %(t)s ya estaba anulado.") % {"t": line.original_trace_number})
    if payment.amount.amount != line.amount:
        return LinePlan(line=line, outcome=exception, parcel=payment.parcel, reason=_(
            "La devolución es de %(a)s y el pago del rastreo %(t)s fue de %(p)s.") % {
                "a": money_text(line.amount), "t": line.original_trace_number, "p": money_text(payment.amount.amount)})
    return LinePlan(line=line, outcome=BankFileLine.Outcome.RETURNED, parcel=payment.parcel, payment=payment)


def _check_user(acting_user: Any) -> None:
    if not has_role(acting_user, SUPERVISOR):
        raise BillingError(_("Solo un supervisor importa archivos de pagos del banco y resuelve sus excepciones."))


def bank_file_preview(*, acting_user: Any, bank: Office, name: str, data: bytes) -> BankFilePlan:
    """What importing ``data`` would do, line by line, nothing written (``MalformedFile`` when
    it would be refused)."""
    _check_user(acting_user)
    if not bank.is_bank:
        raise BillingError(_("%(c)s es una colecturía, no un banco agente recaudador.") % {"c": bank.code})
    return _plan(bank=bank, name=name, data=data, today=timezone.localdate())


# --- Import ------------------------------------------------------------------------------------


def _void_reason(bank: Office, line: FileLine) -> str:
    why = line.return_reason or _("devolución del banco")
    return (_("Devuelto por %(b)s (rastreo %(t)s, del pago %(o)s): %(r)s")
            % {"b": bank.code, "t": line.trace_number, "o": line.original_trace_number, "r": why})[:200]


def _post(*, acting_user: Any, bank: Office, parcel: Parcel, trace_number: str, amount: Decimal, paid_on: date,
          payer_name: str) -> Receipt:
    parcel = Parcel.objects.select_for_update().select_related("owner").get(pk=parcel.pk)
    return counter.payment_post(
        acting_user=acting_user, parcel=parcel, office=bank, amount=amount, paid_on=paid_on, method=Payment.Method.TRANSFER,
        reference=trace_number, idempotency_key=_bank_key(bank, trace_number), payer_name=payer_name or parcel.owner.name,
    )


@transaction.atomic
def bank_file_import(*, acting_user: Any, bank: Office, name: str, data: bytes) -> BankFile:
    """¶13: import a collecting bank's payment file, all in one transaction (the plan of
    ``bank_file_preview``, under the bank's row lock so two imports of one bank are serialized).
    Each applied line is a payment dated its value date with its receipt in the bank's series;
    each return voids its payment (dated today, the reason naming the trace numbers)."""
    _check_user(acting_user)
    bank = Office.objects.select_for_update().get(pk=bank.pk)
    if not bank.is_bank:
        raise BillingError(_("%(c)s es una colecturía, no un banco agente recaudador.") % {"c": bank.code})
    today = timezone.localdate()
    plan = _plan(bank=bank, name=name, data=data, today=today)
    bank_file = BankFile(
        bank=bank, original_name=name[:255], sha256=plan.sha256, imported_by=acting_user, line_count=len(plan.lines),
        applied_count=len(plan.applied), applied_total=plan.total(BankFileLine.Outcome.APPLIED),
        exception_count=len(plan.exceptions), exception_total=plan.total(BankFileLine.Outcome.EXCEPTION),
        already_count=len(plan.already), returned_count=len(plan.returned),
        returned_total=plan.total(BankFileLine.Outcome.RETURNED),
    )
    bank_file.full_clean()
    bank_file.save()
    payments: list[Payment] = []
    voided: list[PaymentVoid] = []
    for item in plan.lines:
        line = item.line
        payment = None
        if item.outcome == BankFileLine.Outcome.APPLIED:
            payment = _post(acting_user=acting_user, bank=bank, parcel=item.parcel, trace_number=line.trace_number,
                            amount=line.amount, paid_on=line.value_date, payer_name=line.payer_name).payment
            payments.append(payment)
        elif item.outcome == BankFileLine.Outcome.RETURNED:
            payment = item.payment
            voided.append(voids.payment_void(acting_user=acting_user, payment=payment, reason=_void_reason(bank, line),
                                             voided_on=today))
        BankFileLine.objects.create(
            file=bank_file, bank=bank, line_number=line.line_number, trace_number=line.trace_number,
            value_date=line.value_date, amount=line.amount, reference=line.reference, payer_name=line.payer_name,
            kind=line.kind, original_trace_number=line.original_trace_number, return_reason=line.return_reason,
            outcome=item.outcome, parcel=item.parcel, payment=payment,
            exception_reason=item.reason[:300] if item.outcome == BankFileLine.Outcome.EXCEPTION else "",
        )
    bank_file_collections_posted(acting_user=acting_user, bank_file=bank_file, payments=payments, voids=voided)
    return bank_file


def bank_file_collections_posted(*, acting_user: Any, bank_file: BankFile, payments: list[Payment],
                                 voids: list[PaymentVoid], line: BankFileLine | None = None) -> Journal | None:
    """THE single place where a bank file's collections are known, inside its import's
    transaction: ``payments`` applied (each with its receipt in the bank's series, dated its
    value date) and ``voids`` its returns posted. The fund journal (``services.journal``) writes
    the file's collections journal here: bank debited against levy receivable, surcharge income,
    water sales and unapplied credits, the voids as their own lines, split by fund; posted on the
    day the file was imported (a bank has no office day to close: its journal is per file). An
    exception a supervisor applies later (``line``) gets a journal of its own, on its day."""
    if line is not None:
        source, source_id = Journal.Source.BANK_EXCEPTION, line.pk
        description = f"Excepción aplicada: línea {line.line_number} del archivo {bank_file.original_name} ({bank_file.bank.code})"
    else:
        source, source_id = Journal.Source.BANK_FILE, bank_file.pk
        description = f"Archivo del banco {bank_file.original_name} ({bank_file.bank.code})"
    return journal.collections_journal_post(
        acting_user=acting_user, payments=payments, voids=voids, source=source, source_id=source_id,
        posted_on=timezone.localdate(), office=bank_file.bank, description=description[:200], money_account="bank",
    )


# --- The exceptions queue ----------------------------------------------------------------------


def bank_exceptions_open() -> list[BankFileLine]:
    """Exception lines no supervisor has resolved yet, oldest first."""
    return list(BankFileLine.objects.filter(outcome=BankFileLine.Outcome.EXCEPTION, resolution__isnull=True)
                .select_related("file", "bank", "parcel").order_by("file__imported_at", "file_id", "line_number"))


def bank_exception_choices(line: BankFileLine) -> list[str]:
    """The resolutions a line may take: a payment is applied, kept or returned; a return that
    matched no payment is only noted."""
    if line.kind == BankFileLine.Kind.RETURN:
        return [BankLineResolution.Action.NOTED]
    return [BankLineResolution.Action.APPLY, BankLineResolution.Action.UNAPPLIED, BankLineResolution.Action.RETURN]


@transaction.atomic
def bank_exception_resolve(*, acting_user: Any, line: BankFileLine, action: str, parcel_code: str = "",
                           note: str = "") -> BankLineResolution:
    """A supervisor resolves an exception line, once:

    - ``apply``: to a parcel (``parcel_code``, or the one the reference named), through the
      counter's posting path with the bank's receipt series; dated the value date, or today when
      the account already records something after it (a receipt is never put before what it did
      not see). Beyond the open charges, the rest stays as the account's credit (¶13, as at the counter).
    - ``unapplied``: kept as unapplied funds (on no account; the queue shows their total).
    - ``return``: returned to the payer; ``note`` says how (e.g. the transfer's reference).
    - ``noted``: a return line that matched no payment; ``note`` says why nothing was voided."""
    _check_user(acting_user)
    line = BankFileLine.objects.select_for_update(of=("self",)).select_related("bank", "file", "parcel").get(pk=line.pk)
    if line.outcome != BankFileLine.Outcome.EXCEPTION:
        raise BillingError(_("La línea %(n)s no es una excepción.") % {"n": line.line_number})
    done = BankLineResolution.objects.filter(line=line).select_related("resolved_by").first()
    if done is not None:
        raise BillingError(_("Esa excepción ya la resolvió %(u)s el %(d)s.") % {
            "u": done.resolved_by.get_username(), "d": timezone.localtime(done.resolved_at).strftime("%d/%m/%Y %H:%M")})
    if action not in bank_exception_choices(line):
        raise BillingError(_("Resolución «%(a)s» no permitida para esta línea.") % {"a": action})
    note = note.strip()
    if action in (BankLineResolution.Action.RETURN, BankLineResolution.Action.NOTED) and not note:
        raise BillingError(_("Escriba una nota: cómo se devolvió el dinero, o por qué no hay nada que anular."))
    if len(note) > 200:
        raise BillingError(_("La nota es demasiado larga (hasta 200 caracteres)."))
    parcel = None
    payment = None
    if action == BankLineResolution.Action.APPLY:
        parcel = parcel_by_code(parcel_code) if parcel_code.strip() else line.parcel
        if parcel is None:
            raise BillingError(_("Indique el predio al que se aplica el pago."))
        paid_on = line.value_date if counter.later_entry(parcel=parcel, day=line.value_date) is None else timezone.localdate()
        payment = _post(acting_user=acting_user, bank=line.bank, parcel=parcel, trace_number=line.trace_number,
                        amount=line.amount.amount, paid_on=paid_on, payer_name=line.payer_name).payment
    resolution = BankLineResolution(line=line, action=action, parcel=parcel, payment=payment, note=note,
                                    resolved_by=acting_user)
    resolution.full_clean()
    resolution.save()
    if payment is not None:
        bank_file_collections_posted(acting_user=acting_user, bank_file=line.file, payments=[payment], voids=[], line=line)
    return resolution


def unapplied_funds_total() -> tuple[int, Decimal]:
    """Exception lines kept as unapplied funds: how many and their sum."""
    rows = BankLineResolution.objects.filter(action=BankLineResolution.Action.UNAPPLIED).select_related("line")
    amounts = [row.line.amount.amount for row in rows]
    return len(amounts), sum(amounts, ZERO)


# --- The register (issue 19: registers for auditors) -----------------------------------------------


@dataclass(frozen=True)
class RegisterTotal:
    """One control total: ``name`` (a stable key), its label, how many lines and their sum."""

    name: str
    label: str
    count: int
    amount: Decimal


@dataclass(frozen=True)
class RegisterFile:
    bank_file: BankFile
    lines: tuple[BankFileLine, ...]  # with ``resolution`` (when resolved) and ``payment.receipt`` read


@dataclass(frozen=True)
class BankFilesRegister:
    """The bank files imported from ``start`` to ``end`` (inclusive, by the day of import in
    Puerto Rico) with every line, and the control totals over their lines."""

    start: date
    end: date
    files: tuple[RegisterFile, ...]
    totals: tuple[RegisterTotal, ...] = field(default=())


def bank_files_register(start: date, end: date) -> BankFilesRegister:
    """The register of bank files for a period (issue 19, *registros*): each file with its lines
    (outcome, parcel, receipt, exception reason, resolution with who and when) and the control
    totals, count and sum of: lines, applied, exceptions (and of those: still open, applied to a
    parcel, kept as unapplied funds, returned to the payer, noted), already applied, returned
    (payments voided). ``applied`` + ``exceptions`` + ``already`` + ``returned`` = ``lines``, and
    each file's stored counts are the sums of its own lines. Three queries."""
    files = list(BankFile.objects.filter(imported_at__date__gte=start, imported_at__date__lte=end)
                 .select_related("bank", "imported_by").order_by("imported_at", "id"))
    lines = list(BankFileLine.objects.filter(file__in=files)
                 .select_related("parcel", "payment__receipt__office", "resolution__resolved_by",
                                 "resolution__payment__receipt__office", "resolution__parcel")
                 .order_by("file_id", "line_number"))
    by_file: dict[int, list[BankFileLine]] = defaultdict(list)
    for line in lines:
        by_file[line.file_id].append(line)

    def total(name: str, label: str, rows: list[BankFileLine]) -> RegisterTotal:
        return RegisterTotal(name=name, label=label, count=len(rows), amount=sum((row.amount.amount for row in rows), ZERO))

    def resolved(line: BankFileLine) -> str:
        resolution = getattr(line, "resolution", None)
        return resolution.action if resolution is not None else ""

    outcome = BankFileLine.Outcome
    exceptions = [line for line in lines if line.outcome == outcome.EXCEPTION]
    totals = (
        total("lines", _("Líneas"), lines),
        total("applied", _("Aplicadas"), [line for line in lines if line.outcome == outcome.APPLIED]),
        total("exceptions", _("Excepciones"), exceptions),
        total("exceptions_open", _("Excepciones sin resolver"), [line for line in exceptions if not resolved(line)]),
        *(total(f"exceptions_{action.value}", str(action.label), [line for line in exceptions if resolved(line) == action])
          for action in BankLineResolution.Action),
        total("already_applied", _("Ya aplicadas"), [line for line in lines if line.outcome == outcome.ALREADY]),
        total("returned", _("Devueltas (pago anulado)"), [line for line in lines if line.outcome == outcome.RETURNED]),
    )
    return BankFilesRegister(start=start, end=end, totals=totals,
                             files=tuple(RegisterFile(bank_file=item, lines=tuple(by_file[item.pk])) for item in files))
