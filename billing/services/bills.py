"""¶9, ¶12: bills (*avisos de contribución*) of the installments of a finalized roll, one at a
time (numbered ``AV-<year>-000001``, its amounts frozen as of its issue date in a
``snapshots.BillSnapshot``) or a semester in a background batch (the job is ``billing.bulk``).
Rendering and storing the PDFs is ``billing.documents``."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Min, QuerySet
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from levy.models import FiscalYear, Levy, RollLine
from parcels.bulk import copy_insert
from parcels.jobs import JobBusy, job_defer
from parcels.models import Job, Owner, Parcel
from parcels.roles import COLLECTOR, HACIENDA, LANDOWNER, SUPERVISOR, has_role

from .. import chain, documents, mailing, pdf, rules
from ..accounts import (
    AS_OF_DAY,
    KnownBy,
    account_states,
    charge_key,
    delinquency_parameters,
    known_by_of,
    line_as_corrected,
    parcel_by_code,
)
from ..errors import BillingError
from ..models import Bill, BillBatch, Charge, DocumentSeries, IssuedDocument, Office, charge_names
from ..references import transfer_details
from ..snapshots import BillOffice, BillOwedLine, BillSnapshot
from ..wording import long_date, surcharge_groups
from .numbering import numbers_allocate

logger = logging.getLogger(__name__)
BILL_PREFIX = "AV"  # aviso de contribución
BILL_USERS = (HACIENDA, COLLECTOR, SUPERVISOR)
BATCH_FILTERS = ("parcel_ids", "parcel_prefix", "owner_key")


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
    """What a bill needs of the parcel's account as of its issue date: the billed charge's state,
    the account's total due, and what the bill asks to pay (``rules.amount_to_pay``) with the
    charges it pays."""

    state: Any  # rules.ChargeState of the billed charge
    total_due: Decimal
    rate: Decimal
    grace_days: int
    to_pay: rules.AmountToPay | None = None
    owed: tuple[BillOwedLine, ...] = ()


def _owed_lines(account: Any, to_pay: rules.AmountToPay, billed_key: str) -> tuple[BillOwedLine, ...]:
    states = {state.key: state for state in account.state.charges}
    names = charge_names(account.charges[key] for key in to_pay.owed_keys)
    lines = []
    for key in to_pay.owed_keys:
        state, charge = states[key], account.charges[key]
        lines.append(BillOwedLine(**names[charge.pk],
            fiscal_year=charge.fiscal_year.label, number=charge.number, kind=charge.kind, description=charge.description,
            due_date=state.due, last_day_to_pay=state.last_day, principal_due=state.principal_due,
            surcharge_due=state.surcharge_due, periods=state.periods, balance=state.balance, billed=key == billed_key,
            surcharge_groups=tuple((months, unpaid) for months, unpaid in surcharge_groups(state)),
        ))
    return tuple(lines)


def account_facts(*, charge: Charge, parcel: Parcel, issued_on: date) -> AccountFacts:
    return accounts_facts(charges=[charge], issued_on=issued_on)[charge.pk]


def accounts_facts(*, charges: Sequence[Charge], issued_on: date, known_by: KnownBy = AS_OF_DAY) -> dict[int, AccountFacts]:
    """``AccountFacts`` of many charges, their parcels' accounts replayed together, as the books
    stood at ``known_by`` (by default: at the end of ``issued_on`` when it is past, else now)."""
    cut = known_by_of(known_by, issued_on)
    parcels = {charge.parcel_id: charge.parcel for charge in charges}
    accounts = account_states(parcels=parcels.values(), as_of=issued_on, known_by=cut)
    params = delinquency_parameters(issued_on, known_by=cut)
    facts = {}
    for charge in charges:
        account = accounts[charge.parcel_id]
        key = charge_key(charge.pk)
        state = next((s for s in account.state.charges if s.key == key), None)
        if state is None:  # the books of that day did not hold the charge yet
            raise BillingError(_("El cargo %(c)s no estaba en los libros el %(d)s: no se emite un aviso de un día "
                                 "anterior al cargo.") % {"c": charge.description, "d": issued_on.strftime("%d/%m/%Y")})
        to_pay = rules.amount_to_pay(account=account.state, charge_key=key)
        facts[charge.pk] = AccountFacts(state=state, total_due=account.state.total_due, rate=params.surcharge_rate,
                                        grace_days=params.grace_days, to_pay=to_pay, owed=_owed_lines(account, to_pay, key))
    return facts


def bill_office(acting_user: Any = None) -> Office | None:
    """¶13: the Collector's office a bill names: the issuing collector's own office, else the one
    marked to print on bills (``Office.on_bills``), else the first office."""
    assignment = getattr(acting_user, "collector_assignment", None) if acting_user is not None else None
    if assignment is not None:
        return assignment.office
    return Office.objects.filter(on_bills=True).first() or Office.objects.filter(kind=Office.Kind.COUNTER).order_by("code").first()


def office_snapshot(office: Office | None) -> BillOffice | None:
    if office is None:
        return None
    return BillOffice(code=office.code, name=office.name, address_block=office.return_block(), phone=office.phone,
                      hours_es=office.hours_es, hours_en=office.hours_en, ways_to_pay_es=office.ways_to_pay_es,
                      ways_to_pay_en=office.ways_to_pay_en)


def installment_dues(levy_id: int) -> dict[int, str]:
    """¶11, ¶12: the due dates (ISO) of a final roll's installments 1 and 2, as issued: July 1 and
    January 1, or the finalization date for a half a late roll made due later. Every line of a
    roll shares them (the earliest is read); a half no line owes is missing."""
    halves = (Charge.objects.filter(roll_line__levy_id=levy_id, kind=Charge.Kind.INSTALLMENT, number__in=(1, 2))
              .values("number").annotate(due=Min("due_date")).order_by("number"))
    return {half["number"]: half["due"].isoformat() for half in halves}


def bill_snapshot(*, charge: Charge, issued_on: date, facts: AccountFacts | None = None,
                  dues: dict[int, str] | None = None, office: BillOffice | None = None) -> dict[str, Any]:
    """¶9, ¶12, ¶13: what the bill prints, frozen as of its issue date. The parcel's figures are
    the roll's (what the charge was computed from); the owner is the parcel's owner when billed,
    with the mailing block for the envelope window and the language the bill is issued in.
    ``first_due``/``second_due`` are the installments' actual due dates (a late roll's differ
    from July 1 and January 1); ``dues`` is ``installment_dues`` of the roll, when known.
    ``amount_to_pay``/``pay_by``/``owed`` are the one amount the bill asks for, until when, and
    its breakdown (``rules.amount_to_pay``); ``office`` the Collector's office it names.
    ``payment_reference``/``transfer``: the charge's RF reference and the bank account a transfer
    goes to (issue 19, ¶13)."""
    parcel = charge.parcel
    line = charge.roll_line
    facts = facts or account_facts(charge=charge, parcel=parcel, issued_on=issued_on)
    dues = dues if dues is not None else installment_dues(line.levy_id)
    state = facts.state
    transfer = transfer_details(charge.pk)
    corrected = line_as_corrected(line)  # ¶9: the year's levy and credit with the corrections so far
    return BillSnapshot(
        parcel_id=parcel.parcel_id, owner_name=parcel.owner.name, owner_key=parcel.owner.owner_key,
        gravity_acres=line.gravity_acres, pumped_acres=line.pumped_acres, equivalent_acres=line.equivalent_acres,
        fiscal_year=charge.fiscal_year.label, number=charge.number, description=charge.description,
        om_charge=corrected.standing.charge, credit_percent=corrected.standing.credit_percent,
        credit=corrected.standing.credit, net=corrected.standing.net,
        first_installment=corrected.first_installment, second_installment=corrected.second_installment,
        corrections=corrected.corrections, principal=state.principal, due_date=state.due,
        last_day_to_pay=state.last_day, as_of=issued_on, surcharge=state.surcharge,
        surcharge_groups=tuple((months, unpaid) for months, unpaid in surcharge_groups(state)), surcharge_rate=facts.rate,
        grace_days=facts.grace_days, paid=state.paid, balance=state.balance, total_due=facts.total_due,
        first_due=date.fromisoformat(dues[1]) if dues.get(1) else None,
        second_due=date.fromisoformat(dues[2]) if dues.get(2) else None,
        roll_hash=chain.roll_hash(line.levy_id),  # the final roll's link in the chain (billing.chain)
        amount_to_pay=facts.to_pay.amount if facts.to_pay else None, pay_by=facts.to_pay.valid_through if facts.to_pay else None,
        owed=facts.owed, mailing_block=parcel.owner.mailing_block(), language=parcel.owner.preferred_language,
        office=office, later_due=facts.to_pay.later_due if facts.to_pay else None,
        # issue 19, ¶13: how to pay by bank transfer, frozen with the bill
        payment_reference=transfer.reference, transfer=transfer.to_json(),
        delivery=mailing.delivery_of(parcel.owner),  # issue 19: paper or e-mail, as chosen today
    ).to_json()


def offered_from(charge: Charge) -> date:
    """The first day the installment's bill is offered and issued: ``settings.BILL_OFFER_DAYS``
    before its due date (``rules.bill_offered_from``)."""
    return rules.bill_offered_from(due=charge.due_date, offer_days=settings.BILL_OFFER_DAYS)


def _check_offered(charge: Charge, on: date) -> None:
    """Refuse a bill issued before its installment is offered: the installments before it would
    still have to fall due, and the bill's total would be mostly theirs (``rules.amount_to_pay``)."""
    start = offered_from(charge)
    if on < start:
        raise BillingError(_("El aviso del plazo %(n)s del año fiscal %(y)s se emite desde el %(d)s, %(k)s días antes de "
                             "vencer el plazo.") % {"n": charge.number, "y": charge.fiscal_year.label,
                                                    "d": long_date(start, "en" if get_language() == "en" else "es"), "k": settings.BILL_OFFER_DAYS})


def _check_bill_user(acting_user: Any) -> None:
    if not has_role(acting_user, *BILL_USERS):
        raise BillingError(_("El usuario %(u)s no puede emitir avisos de contribución.") % {"u": getattr(acting_user, "username", None)})


def _series_and_charge_lock(charge: Charge, on: date) -> None:
    """Lock the bill series of ``on``'s year, then the installment's row, in that order (the
    batch locks its series first too), so an on-demand bill and a batch cannot both bill it."""
    DocumentSeries.objects.get_or_create(kind="bill", year=on.year)
    DocumentSeries.objects.select_for_update().get(kind="bill", year=on.year)
    Charge.objects.select_for_update(of=("self",)).filter(pk=charge.pk).first()


def bill_of(charge: Charge | int) -> Bill | None:
    """The installment's bill, if it has one: one per installment (constraint
    ``one_bill_per_installment``), issued on demand or by bulk printing, whichever came first."""
    pk = charge if isinstance(charge, int) else charge.pk
    return Bill.objects.filter(charge_id=pk).select_related("document").first()


@transaction.atomic
def bill_issue(*, acting_user: Any, charge: Charge | int, issued_on: date | None = None, lang: str | None = None) -> Bill:
    """¶12: the bill of one installment of a finalized roll, numbered (``AV-<year>-000001``),
    with its amounts as of ``issued_on``; its PDF is stored in the same transaction, in the
    owner's preferred language unless ``lang`` says otherwise. Issued once: an installment that
    has its bill (on demand or from bulk printing) is refused."""
    _check_bill_user(acting_user)
    charge = _billable(charge)
    on = issued_on or timezone.localdate()
    _series_and_charge_lock(charge, on)
    existing = bill_of(charge)
    if existing is not None:
        raise BillingError(_("El plazo ya tiene su aviso %(n)s: se reimprime como COPIA.") % {"n": existing.number})
    _check_offered(charge, on)
    return _bill_store(acting_user=acting_user, charge=charge, on=on, lang=lang)


def _bill_store(*, acting_user: Any, charge: Charge, on: date, lang: str | None) -> Bill:
    """Number, freeze, render, store and chain one installment's bill (its row locked by the caller)."""
    snapshot = bill_snapshot(charge=charge, issued_on=on, office=office_snapshot(bill_office(acting_user)))
    number = numbers_allocate("bill", BILL_PREFIX, on, 1)[0]
    bill = Bill(number=number, charge=charge, parcel_id=charge.parcel_id, issued_on=on, snapshot=snapshot, issued_by=acting_user)
    bill.full_clean()
    bill.save()
    documents.bill_document_store(bill, lang=lang)
    chain.link(chain.BILL, bill.pk)
    return bill


# --- Zero notices (¶9): a line whose credit covers its levy ---------------------------------------


# The roll line's figures a zero notice prints (¶9), read with its parcel's code and owner.
ZERO_NOTICE_FIGURES = ("gravity_acres", "pumped_acres", "equivalent_acres", "om_charge", "credit_percent", "credit", "net",
                       "first_installment", "second_installment")


def zero_notice_snapshot(*, line: dict[str, Any], owner: Owner, fiscal_year: str, issued_on: date, dues: dict[int, str],
                         roll_hash: str, office: BillOffice | None = None) -> dict[str, Any]:
    """¶9: what a zero notice prints: the roll line's levy imposed and credit, nothing to pay.
    ``line`` holds the line's ``ZERO_NOTICE_FIGURES`` and its parcel's cadastre number
    (``parcel__parcel_id``); ``owner`` is the parcel's owner."""
    return {
        "nothing_to_pay": True,
        "parcel_id": line["parcel__parcel_id"],
        "owner_name": owner.name,
        "owner_key": owner.owner_key,
        "fiscal_year": fiscal_year,
        "number": None,
        **{name: str(line[name]) for name in ZERO_NOTICE_FIGURES},
        "first_due": dues.get(1),
        "second_due": dues.get(2),
        "as_of": issued_on.isoformat(),
        "roll_hash": roll_hash,
        "mailing_block": list(owner.mailing_block()),
        "language": owner.preferred_language,
        "office": office.to_json() if office else None,
        "delivery": mailing.delivery_of(owner).to_json(),  # issue 19
    }


def zero_notice_lines(levy: Levy) -> QuerySet[RollLine]:
    """¶9: the lines of a final roll that pay a levy entirely covered by their credit (net 0.00
    on a positive charge) and have no zero notice yet, in cadastre order."""
    return (RollLine.objects.filter(levy=levy, levied=True, om_charge__gt=0, net=0)
            .exclude(zero_notices__isnull=False).order_by("parcel_code"))


@transaction.atomic
def zero_notices_issue(*, acting_user: Any, levy: Levy, issued_on: date | None = None, lang: str | None = None) -> int:
    """¶9: at finalization, a numbered notice (``AV-…``, the bill series) for each line at 100 %
    credit, showing the levy imposed and the credit with nothing to pay. Once a year: a line that
    has its notice is skipped, so running it again issues none.

    Issue 20: the notices are numbered, frozen and chained here in one set-based step, and their
    PDFs are rendered afterwards by the bulk-printing workers like bills: a ``BillBatch`` of
    number 0 whose job is deferred in this transaction (so it runs once it is committed). No PDF
    is rendered inside finalization, whatever the number of lines at 100 % credit. The lines are
    read as plain rows and their owners in one query each, and the notices written with one ``COPY``
    (some 16,600 of them in a district of 100,000 parcels)."""
    _check_bill_user(acting_user)
    if levy.status != Levy.Status.FINAL:
        raise BillingError(_("Un padrón en borrador no se factura: solo se emiten avisos de un padrón finalizado."))
    lines = list(zero_notice_lines(levy).values("pk", "parcel_id", "parcel__parcel_id", "parcel__owner_id", *ZERO_NOTICE_FIGURES))
    if not lines:
        return 0
    on = issued_on or timezone.localdate()
    dues = installment_dues(levy.pk)
    office = office_snapshot(bill_office(acting_user))
    roll_hash = chain.roll_hash(levy.pk)
    label = levy.fiscal_year.label
    owners = {owner.pk: owner for owner in Owner.objects.filter(pk__in=zero_notice_lines(levy).values("parcel__owner_id"))}
    batch = BillBatch.objects.create(fiscal_year=levy.fiscal_year, number=BillBatch.ZERO_NOTICES, created_by=acting_user)
    numbers = numbers_allocate("bill", BILL_PREFIX, on, len(lines))
    now = timezone.now()
    rows = (
        (number, line["pk"], line["parcel_id"], on, json.dumps(zero_notice_snapshot(
            line=line, owner=owners[line["parcel__owner_id"]], fiscal_year=label,
            issued_on=on, dues=dues, roll_hash=roll_hash, office=office)), batch.pk, acting_user.pk, now, True)
        for line, number in zip(lines, numbers, strict=True)
    )
    copy_insert(Bill, ("number", "roll_line_id", "parcel_id", "issued_on", "snapshot", "batch_id", "issued_by_id", "issued_at",
                       "printed_later"), rows)
    chain.link(chain.BILL, Bill.objects.filter(batch=batch).values_list("pk", flat=True))
    batch.job = _bill_batch_defer(acting_user, batch, None, lang=lang)
    batch.save(update_fields=["job"])
    return len(lines)


def bill_for_installment(*, parcel_code: str, fiscal_year: str, number: int) -> Charge:
    charge = (Charge.objects.filter(parcel__parcel_id=parcel_code, fiscal_year__label=fiscal_year, number=number,
                                    kind=Charge.Kind.INSTALLMENT).first())
    if charge is None:
        parcel_by_code(parcel_code)  # an unknown parcel says so
        raise BillingError(_("El predio %(p)s no tiene el plazo %(n)s del año fiscal %(y)s.") % {
            "p": parcel_code, "n": number, "y": fiscal_year})
    return charge


@transaction.atomic
def bill_get_or_issue(*, acting_user: Any | None, charge: Charge, lang: str | None = None) -> tuple[Bill, bool]:
    """The installment's bill (one per installment, whoever issued it first: the portal, the
    counter or bulk printing), or a new one issued now by ``acting_user``; ``True`` when new.
    A landowner may ask for the bill of their own parcel's installment (``issued_by`` is the
    landowner's user); staff need the roles of ``bill_issue``."""
    charge = _billable(charge)
    existing = bill_of(charge)
    if existing is not None:
        return existing, False
    if acting_user is None:
        raise BillingError(_("El plazo no tiene aviso todavía; indique el usuario que lo emite."))
    if has_role(acting_user, LANDOWNER) and not has_role(acting_user, *BILL_USERS):
        from parcels.access import owner_ids_for_user

        if charge.parcel.owner_id not in set(owner_ids_for_user(acting_user)):
            raise BillingError(_("El predio no es suyo."))
    else:
        _check_bill_user(acting_user)
    on = timezone.localdate()
    _check_offered(charge, on)
    _series_and_charge_lock(charge, on)
    existing = bill_of(charge)  # another request may have issued it meanwhile
    if existing is not None:
        return existing, False
    return _bill_store(acting_user=acting_user, charge=charge, on=on, lang=lang), True


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


def _bill_batch_defer(acting_user: Any, batch: BillBatch, processes: int | None, queue: str | None = None,
                      lang: str | None = None) -> Job:
    """The batch's job: one bill batch per semester at a time, whatever its filters (two batches
    of the same installments at once would number their bills twice)."""
    payload: dict[str, Any] = {"batch_id": batch.pk}
    if processes:
        payload["processes"] = processes
    if queue:
        payload["queue"] = queue  # its parts go on the same queue
    if lang:
        payload["lang"] = lang
    if batch.number == BillBatch.ZERO_NOTICES:
        what = _("los avisos sin importe a pagar de %(y)s") % {"y": batch.fiscal_year.label}
    else:
        what = _("los avisos de %(y)s, plazo %(n)s") % {"y": batch.fiscal_year.label, "n": batch.number}
    try:
        return job_defer(kind=BILL_BATCH, key=f"{batch.fiscal_year.label}/{batch.number}", payload=payload,
                         acting_user=acting_user, what=what, queue=queue)
    except JobBusy as exc:
        raise BillingError(str(exc)) from None


@transaction.atomic
def bill_batch_start(acting_user: Any, fiscal_year: str | FiscalYear, number: int, filters: dict[str, Any] | None = None,
                     processes: int | None = None, queue: str | None = None, part_pages: int | None = None) -> BillBatch:
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
    batch = BillBatch(fiscal_year=year, number=number, filters=_clean_filters(filters), created_by=acting_user,
                      part_pages=part_pages)  # bills per part (issue 20: a task each); empty: 250
    first = bill_batch_charges(batch).select_related("fiscal_year").order_by("due_date").first()
    if first is None:
        raise BillingError(_("Ningún plazo corresponde a esa selección."))
    _check_offered(first, timezone.localdate())
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
    payload = batch.job.payload if batch.job else {}
    batch.job = _bill_batch_defer(acting_user, batch, payload.get("processes"), payload.get("queue"), payload.get("lang"))
    batch.save(update_fields=["job"])
    return batch


def bill_batch_number(*, batch: BillBatch, issued_on: date, chunk: int = 500) -> int:
    """¶12, issue 20: number every installment of ``batch`` not billed yet, in ONE short
    transaction: the snapshots (what each bill prints, as of ``issued_on``; they do not depend on
    the number) are computed first, outside any lock; then the bill series is locked, the
    charges still unbilled are numbered in cadastre order, inserted and chained, and the lock is
    released. The PDFs are rendered afterwards (``bill_documents_render``), in parallel parts.
    A charge billed meanwhile (on demand) keeps its bill. Returns the bills numbered."""
    charges_qs = bill_batch_charges(batch)
    billed = set(Bill.objects.filter(charge__in=charges_qs).values_list("charge_id", flat=True))
    todo_ids = [pk for pk in charges_qs.values_list("pk", flat=True) if pk not in billed]
    if not todo_ids:
        return 0
    office = office_snapshot(bill_office(batch.created_by))
    snapshots: dict[int, dict[str, Any]] = {}
    parcels: dict[int, int] = {}
    for start in range(0, len(todo_ids), chunk):
        charges = list(Charge.objects.filter(pk__in=todo_ids[start:start + chunk])
                       .select_related("roll_line__levy", "fiscal_year", "parcel__owner"))
        for charge in charges:
            if charge.kind != Charge.Kind.INSTALLMENT or charge.roll_line.levy.status != Levy.Status.FINAL:
                raise BillingError(_("Un padrón en borrador no se factura: solo se emiten avisos de un padrón finalizado."))
        facts = accounts_facts(charges=charges, issued_on=issued_on)
        dues = {levy_id: installment_dues(levy_id) for levy_id in {charge.roll_line.levy_id for charge in charges}}
        for charge in charges:
            snapshots[charge.pk] = bill_snapshot(charge=charge, issued_on=issued_on, facts=facts[charge.pk],
                                                 dues=dues[charge.roll_line.levy_id], office=office)
            parcels[charge.pk] = charge.parcel_id
    return _bill_batch_insert(batch=batch, issued_on=issued_on, todo_ids=todo_ids, snapshots=snapshots, parcels=parcels)


@transaction.atomic
def _bill_batch_insert(*, batch: BillBatch, issued_on: date, todo_ids: list[int], snapshots: dict[int, dict[str, Any]],
                       parcels: dict[int, int]) -> int:
    """The one transaction of ``bill_batch_number``: series lock, then the charges' rows (the
    order an on-demand bill takes them too), then numbers, rows and links."""
    DocumentSeries.objects.get_or_create(kind="bill", year=issued_on.year)
    DocumentSeries.objects.select_for_update().get(kind="bill", year=issued_on.year)
    list(Charge.objects.select_for_update(of=("self",)).filter(pk__in=todo_ids).order_by("pk").values_list("pk", flat=True))
    done = set(Bill.objects.filter(charge_id__in=todo_ids).values_list("charge_id", flat=True))
    todo = [pk for pk in todo_ids if pk not in done]
    if not todo:
        return 0
    numbers = numbers_allocate("bill", BILL_PREFIX, issued_on, len(todo))
    bills = Bill.objects.bulk_create([
        Bill(number=number, charge_id=pk, parcel_id=parcels[pk], issued_on=issued_on, snapshot=snapshots[pk], batch=batch,
             issued_by_id=batch.created_by_id, printed_later=True)
        for pk, number in zip(todo, numbers, strict=True)
    ], batch_size=2000)
    chain.link(chain.BILL, [bill.pk for bill in bills])
    return len(bills)


def bill_document(bill: Bill) -> IssuedDocument:
    """The bill's stored document. A bill numbered by a printing batch or a finalize (``printed_later``)
    whose part is not rendered yet is rendered now from its frozen snapshot and stored, as its part
    would store it: whoever asks first (the portal, the counter) does not wait for the workers."""
    found = IssuedDocument.objects.filter(bill=bill).first()
    if found is None and bill.printed_later:
        bill_documents_render(bill_ids=[bill.pk], render_many=lambda htmls: [pdf.html_to_fitting_pdf(html) for html in htmls])
        found = IssuedDocument.objects.get(bill=bill)
    if found is None:
        raise BillingError(_("El aviso %(n)s no tiene documento guardado.") % {"n": bill.number})
    return found


def bill_documents_render(*, bill_ids: Sequence[int], render_many: Callable[[list[str]], list[bytes]],
                          lang: str | None = None) -> int:
    """Issue 20: render and store the PDFs of the bills among ``bill_ids`` that have none yet
    (numbered and frozen by ``bill_batch_number`` or ``zero_notices_issue``), from their frozen
    snapshots: the same bytes whoever renders them, whenever. Two runs at once store one
    document per bill (``IssuedDocument.bill`` is one-to-one): the later one's insert fails and
    is left out. Returns the documents stored by this call."""
    pending = list(Bill.objects.filter(pk__in=list(bill_ids), printed_later=True, document__isnull=True).order_by("number"))
    if not pending:
        return 0
    codes = [documents.verification_code(IssuedDocument.Kind.BILL, bill.number) for bill in pending]
    htmls = [documents.bill_html(number=bill.number, snapshot=bill.snapshot, issued_on=bill.issued_on, code=code, lang=lang)
             for bill, code in zip(pending, codes, strict=True)]
    pdfs = render_many(htmls)
    rows = [documents.document_new(kind=IssuedDocument.Kind.BILL, number=bill.number, parcel_id=bill.parcel_id, code=code,
                                   data=data, bill=bill) for bill, code, data in zip(pending, codes, pdfs, strict=True)]
    with transaction.atomic():
        stored = IssuedDocument.objects.bulk_create(rows, ignore_conflicts=True)
    return len(stored)
