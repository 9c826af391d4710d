"""Collection beyond the counter: office closures (¶12), debt certificates (¶11) and the
seizure procedure of an unpaid levy (¶14)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from levy.models import LegalParameterSet
from parcels.models import Parcel
from parcels.officers import OfficerSignatureMissing, officer_signature
from parcels.roles import COLLECTOR, HACIENDA, SUPERVISOR, has_role

from .. import chain, documents, rules
from ..accounts import statement
from ..errors import BillingError
from ..models import DebtCertificate, OfficeClosure, SeizureCase, SeizureStep
from ..snapshots import CertificateSnapshot
from .numbering import document_number


@transaction.atomic
def office_closure_add(*, acting_user: Any, day: date, reason: str) -> OfficeClosure:
    """¶12: a day the offices were closed (a storm, a holiday proclaimed late); see
    :func:`office_closure_record`."""
    return office_closure_record(acting_user=acting_user, day=day, reason=reason)[0]


@transaction.atomic
def office_closure_record(*, acting_user: Any, day: date, reason: str) -> tuple[OfficeClosure, int]:
    """¶12: a day the offices were closed, past days allowed (a hurricane). Every issued charge
    whose last day to pay falls on it gets a dated ``LastDayMove`` to the next day the offices
    open, whenever the closure is recorded; surcharge already paid that the moved day means was
    never owed is given back citing the closure, and goes to the oldest open charge (or stays as
    credit). Receipts and bills already issued keep what they printed. Returns (closure, moves)."""
    from ..accounts import closed_days, delinquency_parameters, parcel_records
    from ..models import Charge, CreditApplication, LastDayMove, PaymentAllocation
    from .corrections import freed_money, seizures_stop_when_nothing_delinquent

    if not has_role(acting_user, HACIENDA):
        raise BillingError(_("Solo Hacienda registra los cierres de oficina."))
    today = timezone.localdate()
    # A last day moves at most past a run of closed days: the charges whose stored day is near,
    # and those whose due date plus the grace days of some row is near (a row in force on the due
    # date that gives more days moves the last day later when the account is read).
    window = Q(last_day_to_pay__gte=day - timedelta(days=20))
    for grace in set(LegalParameterSet.objects.values_list("grace_days", flat=True)):
        window |= Q(due_date__range=(day - timedelta(days=20 + grace), day - timedelta(days=grace)))
    near = Charge.objects.filter(window, last_day_to_pay__lte=day).exclude(kind__in=[Charge.Kind.REFUND, Charge.Kind.VOID_REFUND])
    parcels = Parcel.objects.filter(pk__in=near.values("parcel_id"))
    before = parcel_records(parcels=parcels)
    closure = OfficeClosure(day=day, reason=reason.strip(), created_by=acting_user)
    closure.full_clean()
    closure.save()
    closed = closed_days([day.year, day.year + 1])
    name = f"Cierre de oficinas del {day.strftime('%d/%m/%Y')} (¶12)"
    moves, lowered = [], {}
    parameters: dict[date, rules.DelinquencyParameters] = {}  # by due date: a district's charges share a few
    for parcel_id, (records, charges) in before.items():
        for record in records.charges:
            charge = charges[record.key]
            if record.last_day_on(today) != day or charge.kind == Charge.Kind.VOID_REFUND:
                continue  # a refund a void made a charge keeps its stored last day (issue 17)
            if charge.due_date not in parameters:
                parameters[charge.due_date] = delinquency_parameters(charge.due_date)
            new_day = rules.next_open_day(day=day, closed_days=closed, params=parameters[charge.due_date])
            moves.append(LastDayMove(charge=charge, closure=closure, last_day=new_day, entry_date=today, created_by=acting_user))
            lowered.setdefault(parcel_id, []).append(charge.pk)
    LastDayMove.objects.bulk_create(moves, batch_size=5000)
    # A later last day lowers only surcharge, so money is freed only where surcharge was paid on a
    # moved charge, and a seizure can stop only where one is open: those accounts are replayed one
    # by one (a storm on the July half's last day moves every July charge of the district: 100,000
    # accounts replayed took hours), every other is left as it is.
    moved_charges = LastDayMove.objects.filter(closure=closure).values("charge_id")
    paid_surcharge = set(PaymentAllocation.objects.filter(charge_id__in=moved_charges, surcharge__gt=0)
                         .values_list("charge__parcel_id", flat=True))
    paid_surcharge |= set(CreditApplication.objects.filter(charge_id__in=moved_charges, surcharge__gt=0)
                          .values_list("parcel_id", flat=True))
    seized = set(SeizureCase.objects.filter(parcel_id__in=Charge.objects.filter(pk__in=moved_charges).values("parcel_id"),
                                            status=SeizureCase.Status.OPEN).values_list("parcel_id", flat=True))
    for parcel_id in sorted(paid_surcharge | seized):
        if parcel_id in paid_surcharge:  # what the moved days free, given back and applied; then the seizure check
            freed_money(acting_user=acting_user, parcel_id=parcel_id, charge_ids=lowered[parcel_id], on=today, source="closure",
                        closure=closure, name=name)
        else:
            seizures_stop_when_nothing_delinquent(parcel=Parcel.objects.get(pk=parcel_id), on=today)
    moved = len(moves)
    return closure, moved


def _signature(user: Any) -> tuple[str, str]:
    """The officer's full name and title, frozen in what is issued; without them nothing is
    issued (the refusal names what is missing and who completes it)."""
    try:
        return officer_signature(user)
    except OfficerSignatureMissing as exc:
        raise BillingError(exc.messages[0]) from exc


@transaction.atomic
def certificate_issue(*, acting_user: Any, parcel: Parcel, as_of: date) -> DebtCertificate:
    """¶11: a debt certificate (*certificación de deuda*) as of a date: numbered, never changed;
    a later certificate for the parcel supersedes the earlier one. Signed with the officer's full
    name and title, frozen in its snapshot; refused without them."""
    if not has_role(acting_user, HACIENDA, COLLECTOR, SUPERVISOR):
        raise BillingError(_("El usuario no puede emitir certificaciones de deuda."))
    officer_name, officer_title = _signature(acting_user)
    parcel = Parcel.objects.select_for_update().select_related("owner").get(pk=parcel.pk)
    previous = DebtCertificate.objects.filter(parcel=parcel, superseded_by__isnull=True).first()
    data = CertificateSnapshot(statement=statement(parcel=parcel, as_of=as_of), owner_name=parcel.owner.name,
                               owner_key=parcel.owner.owner_key, officer_name=officer_name, officer_title=officer_title,
                               language=parcel.owner.preferred_language).to_json()
    certificate = DebtCertificate.objects.create(
        number=document_number("certificate", "CD", timezone.localdate()), parcel=parcel, as_of=as_of, snapshot=data,
        supersedes=previous, issued_by=acting_user,
    )
    documents.certificate_document_store(certificate)  # the PDF, rendered once and stored in this transaction
    chain.link(chain.CERTIFICATE, certificate.pk)
    return certificate


SEIZURE_TERM_DAYS = 30  # ¶14: the notice's term to pay before the seizure is certified
SEIZURE_ORDER = (SeizureStep.Kind.NOTICE, SeizureStep.Kind.CERTIFICATE, SeizureStep.Kind.AUCTION)


@dataclass(frozen=True)
class SeizureNext:
    """¶14: the step a parcel's procedure takes next (``kind`` None: the open case has its three
    steps) and the first day it may be issued: a certificate waits for the day after the notice's
    30-day term (``available_on``), the other steps may be issued at once."""

    kind: str | None
    available_on: date | None
    case: SeizureCase | None
    notice: SeizureStep | None

    def available(self, on: date) -> bool:
        return self.kind is not None and (self.available_on is None or on >= self.available_on)


def seizure_step_next(*, parcel: Parcel) -> SeizureNext:
    """¶14: reads only; what ``seizure_step_issue`` would accept next for ``parcel``."""
    case = SeizureCase.objects.filter(parcel=parcel, status=SeizureCase.Status.OPEN).first()
    if case is None:
        return SeizureNext(kind=SeizureStep.Kind.NOTICE, available_on=None, case=None, notice=None)
    steps = list(case.steps.defer("pdf", "debt"))
    notice = next((step for step in steps if step.kind == SeizureStep.Kind.NOTICE), None)
    kind = SEIZURE_ORDER[len(steps)] if len(steps) < len(SEIZURE_ORDER) else None
    available_on = None
    if kind == SeizureStep.Kind.CERTIFICATE and notice is not None and notice.term_ends is not None:
        available_on = notice.term_ends + timedelta(days=1)
    return SeizureNext(kind=kind, available_on=available_on, case=case, notice=notice)


def _seizure_refusal(*, acting_user: Any, parcel: Parcel, kind: str, on: date, debt: Any) -> str:
    """Why ``kind`` cannot be issued for ``parcel`` on ``on`` (empty when it can)."""
    if not has_role(acting_user, HACIENDA):
        return _("Solo Hacienda lleva el procedimiento de embargo.")
    if debt.total_due <= 0:
        return _("La cuenta no tiene deuda: el procedimiento de embargo se detiene.")
    following = seizure_step_next(parcel=parcel)
    if following.case is None and kind != SeizureStep.Kind.NOTICE:
        return _("El procedimiento empieza con la notificación de embargo.")
    if kind != following.kind:
        return _("El próximo paso del procedimiento es otro.")
    if not following.available(on):
        notice = following.notice
        return _("El plazo de 30 días de la notificación vence el %(d)s.") % {"d": notice.term_ends.strftime("%d/%m/%Y")}
    return ""


@dataclass(frozen=True)
class SeizureStepPreview:
    """¶14: what issuing a step on ``on`` records, read before it is issued (nothing written): the
    debt it freezes, its term, the officer who signs it and the language it is written in."""

    parcel: Parcel
    kind: str
    on: date
    term_ends: date | None
    debt: Any  # accounts.Statement as of ``on``
    case: SeizureCase | None  # the open case; None: the notice opens one
    notice: SeizureStep | None
    officer_name: str
    officer_title: str
    language: str

    @property
    def kind_label(self) -> str:
        return str(SeizureStep.Kind(self.kind).label)

    def figures(self) -> tuple[Any, ...]:
        """What the review page shows and its confirmation carries (``parcels.review``)."""
        debt = self.debt
        return (self.parcel.pk, self.kind, self.on, self.term_ends, self.case.pk if self.case else None, debt.total_due,
                debt.total_balance, debt.credit_balance, self.officer_name, self.officer_title, self.language,
                tuple((line.fiscal_year, line.number, line.kind, line.principal, line.surcharge, line.paid, line.balance)
                      for line in debt.lines if line.balance > 0))


def seizure_step_preview(*, acting_user: Any, parcel: Parcel, kind: str, on: date | None = None) -> SeizureStepPreview:
    """¶14: every figure ``seizure_step_issue`` would freeze, nothing written (the review page).
    Raises ``BillingError`` when the step would be refused."""
    on = on or timezone.localdate()
    parcel = Parcel.objects.select_related("owner").get(pk=parcel.pk)
    debt = statement(parcel=parcel, as_of=on)
    refusal = _seizure_refusal(acting_user=acting_user, parcel=parcel, kind=kind, on=on, debt=debt)
    if refusal:
        raise BillingError(refusal)
    officer_name, officer_title = _signature(acting_user)
    following = seizure_step_next(parcel=parcel)
    return SeizureStepPreview(
        parcel=parcel, kind=kind, on=on, term_ends=on + timedelta(days=SEIZURE_TERM_DAYS) if kind == SeizureStep.Kind.NOTICE else None,
        debt=debt, case=following.case, notice=following.notice, officer_name=officer_name, officer_title=officer_title,
        language=parcel.owner.preferred_language,
    )


@transaction.atomic
def seizure_step_issue(*, acting_user: Any, parcel: Parcel, kind: str, on: date | None = None) -> SeizureStep:
    """¶14: the next step of the seizure (*embargo*) procedure of property taxes for an unpaid levy:
    notice of attachment (30-day term), certificate of attachment (after the term), auction notice.
    Each step is numbered, dated, stored as a PDF with its verification code and QR, and signed
    with the officer's full name and title (frozen in ``debt``; refused without them); a paid debt
    stops it. ``seizure_step_preview`` reads the same figures before (the review page)."""
    if not has_role(acting_user, HACIENDA):
        raise BillingError(_("Solo Hacienda lleva el procedimiento de embargo."))
    officer_name, officer_title = _signature(acting_user)
    on = on or timezone.localdate()
    parcel = Parcel.objects.select_for_update().select_related("owner").get(pk=parcel.pk)
    debt = statement(parcel=parcel, as_of=on)
    refusal = _seizure_refusal(acting_user=acting_user, parcel=parcel, kind=kind, on=on, debt=debt)
    if refusal:
        raise BillingError(refusal)
    case = SeizureCase.objects.filter(parcel=parcel, status=SeizureCase.Status.OPEN).first()
    if case is None:
        case = SeizureCase.objects.create(parcel=parcel, opened_by=acting_user)
    term_ends = on + timedelta(days=SEIZURE_TERM_DAYS) if kind == SeizureStep.Kind.NOTICE else None
    number = document_number(f"seizure_{kind}", {"notice": "NE", "certificate": "CE", "auction": "AS"}[kind], on)
    step = SeizureStep(case=case, kind=kind, number=number, issued_on=on, term_ends=term_ends, issued_by=acting_user,
                       debt={**debt.to_json(), "officer_name": officer_name, "officer_title": officer_title,
                             "language": parcel.owner.preferred_language})  # the notice is written in the owner's language
    step.verification_code, data = documents.seizure_notice_render(step, parcel=parcel)
    documents.seizure_step_store(step, data)  # the PDF to the document store, its hash on the step (issue 20)
    step.save()
    chain.link(chain.SEIZURE, step.pk)
    return step
