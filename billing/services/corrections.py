"""¶7, ¶9, ¶11, ¶12: corrections of a finalized roll line, posted as the ledger's own dated entries.

The arithmetic is ``billing.rules.correction_plan``: a rise of a half is a new correction charge
(``CorrectionCharge``) due on the latest of the day the correction is made, the first day of the
fiscal year and the half's own due date; a fall lowers the half's principal
(``PrincipalAdjustment``, effective from its own due date), gives back the surcharge paid beyond
what is owed on the lowered principal (``GiveBack``) and sends the money freed to the oldest open
charge (``CreditApplication``); only what is left is refundable credit. Receipts already issued
are never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from levy.models import RollCorrection, RollLine
from levy.services import LevyError, require_role
from parcels.models import Parcel
from parcels.money import money_text
from parcels.roles import HACIENDA

from .. import chain, rules
from ..accounts import charge_key, charge_last_days, due_and_last_day, earlier_corrections, parcel_records
from ..models import (
    Charge,
    CorrectionCharge,
    CreditApplication,
    GiveBack,
    LedgerEntry,
    PrincipalAdjustment,
    SeizureCase,
    Source,
    charge_names,
)
from ..wording import charge_label
from .journal import accrual_journal_for_correction

ZERO = Decimal("0.00")


def _percent(value: Decimal) -> str:
    """A sec. 372 percentage as the roll prints it: 12.5 for 12.50, 10 for 10.00."""
    text = f"{value:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def refusal_message(refused: rules.CorrectionRefused) -> str:
    """¶9, ¶11: why a correction is refused, in Spanish, with the line's figures and the limit."""
    figures = _("el renglón tiene ahora cargo de O&M %(c)s, crédito %(k)s y neto %(n)s") % {
        "c": money_text(refused.current_charge), "k": money_text(refused.current_credit), "n": money_text(refused.current_net),
    }
    limit = refused.limit
    reason = refused.reason
    if reason == rules.REFUSE_SUB_CENT:
        text = _("Los cambios se expresan en centavos enteros; no se redondean.")
    elif reason == rules.REFUSE_NOTHING:
        text = _("Una corrección debe cambiar el cargo, el crédito o el por ciento de la sec. 372 (el renglón ya "
                 "tiene %(p)s %%).") % {"p": _percent(limit)}
    elif reason == rules.REFUSE_CHARGE_NEGATIVE:
        text = _("El cargo de O&M quedaría bajo cero: el cambio no puede ser menor que %(l)s.") % {"l": money_text(limit)}
    elif reason == rules.REFUSE_CREDIT_NEGATIVE:
        text = _("El crédito quedaría bajo cero: el cambio no puede ser menor que %(l)s.") % {"l": money_text(limit)}
    elif reason == rules.REFUSE_CREDIT_ABOVE_CHARGE:
        text = _("El crédito quedaría sobre el cargo corregido (%(l)s); el crédito no puede exceder el cargo (¶7).") % {
            "l": money_text(limit)}
    elif reason == rules.REFUSE_NET_NEGATIVE:
        text = _("El neto quedaría bajo cero.")
    elif reason == rules.REFUSE_CREDIT_WITHOUT_PERCENT:
        text = _("El crédito sigue al cargo (¶7): un cambio del crédito se acepta solo con un por ciento de la "
                 "sec. 372 distinto del que el renglón ya tiene (%(p)s %%).") % {"p": _percent(limit)}
    elif reason == rules.REFUSE_PERCENT:
        text = _("El por ciento de la sec. 372 debe estar entre 0 y 100.")
    elif reason == rules.REFUSE_DUE_TOO_EARLY:
        text = _("La fecha de vencimiento no puede ser anterior al %(l)s (el día de la corrección, el comienzo del "
                 "año fiscal o el vencimiento del plazo).") % {"l": limit.strftime("%d/%m/%Y")}
    elif reason == rules.REFUSE_HALF_SHORT:
        text = _("El plazo bajaría más de lo que debe (%(l)s).") % {"l": money_text(limit)}
    else:
        text = str(refused)
    return f"{text} ({figures})"


def correction_number(correction: RollCorrection) -> int:
    """¶9: the correction's number in its roll (1, 2, … in the order they were made)."""
    return RollCorrection.objects.numbered().values_list("number", flat=True).get(pk=correction.pk)


def _halves(line: RollLine) -> tuple[rules.HalfStanding, rules.HalfStanding]:
    """¶12: the line's two halves as they stand: the installment and the correction charges, each
    less the lowerings already recorded."""
    levy = line.levy
    finalized_on = None
    from levy.models import LegalParameterSet

    if levy.finalized_on and LegalParameterSet.in_force(levy.finalized_on).late_roll_due_on_finalization:
        finalized_on = levy.finalized_on
    lowered: dict[int, Decimal] = {}
    for charge_id, amount in PrincipalAdjustment.objects.filter(charge__roll_line=line).values_list("charge_id", "amount"):
        lowered[charge_id] = lowered.get(charge_id, ZERO) + amount
    halves = []
    for number in (1, 2):
        due = rules.installment_due_date(fiscal_year_start=levy.fiscal_year.start, number=number, finalized_on=finalized_on)
        original = Charge.objects.filter(roll_line=line, kind=Charge.Kind.INSTALLMENT, number=number).first()
        if original is not None:
            key, principal, due = f"C{original.pk}", original.principal.amount - lowered.get(original.pk, ZERO), original.due_date
        else:
            key, principal = f"none-{number}", ZERO
        raised = [
            (f"C{link.charge_id}", link.charge.principal.amount - lowered.get(link.charge_id, ZERO), link.charge.due_date)
            for link in CorrectionCharge.objects.filter(correction__roll_line=line, number=number)
            .select_related("charge").order_by("charge_id")
        ]
        halves.append(rules.HalfStanding(number=number, due=due, original_key=key, original_principal=principal,
                                         corrections=tuple(raised)))
    return halves[0], halves[1]


def correction_plan_for(
    *, roll_line: RollLine, made_on: date, om_charge_delta: Decimal = ZERO, credit_delta: Decimal | None = None,
    credit_percent: Decimal | None = None, due_date: date | None = None,
) -> rules.CorrectionPlan:
    """¶7, ¶9, ¶11, ¶12: the plan of a correction of ``roll_line`` (raises ``CorrectionRefused``)."""
    earlier = earlier_corrections(RollCorrection.objects.filter(roll_line=roll_line).order_by("pk"))
    return rules.correction_plan(
        roll_charge=roll_line.om_charge, roll_credit=roll_line.credit, roll_credit_percent=roll_line.credit_percent,
        earlier=earlier, halves=_halves(roll_line), fiscal_year_start=roll_line.levy.fiscal_year.start, made_on=made_on,
        charge_delta=om_charge_delta, credit_delta=credit_delta, credit_percent=credit_percent, requested_due=due_date,
    )


def _decimal(value: Any, *, what: str) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        found = Decimal(str(value).strip())
    except InvalidOperation:
        raise LevyError(_("Cantidad inválida para %(w)s: «%(v)s».") % {"w": what, "v": value}) from None
    if not found.is_finite():
        raise LevyError(_("Cantidad inválida para %(w)s: «%(v)s».") % {"w": what, "v": value})
    return found


@dataclass(frozen=True)
class PreviewRow:
    """One charge's part in a correction's preview: its key, its name in the reader's language and
    the amounts (``surcharge``, ``principal``) of the entry that will name it."""

    key: str
    label: str
    surcharge: Decimal
    principal: Decimal
    due: date | None = None  # a new charge's due date

    @property
    def amount(self) -> Decimal:
        return self.surcharge + self.principal


@dataclass(frozen=True)
class CorrectionPreview:
    """¶7, ¶9, ¶11, ¶12, ¶13: what ``roll_correction_create`` records, read before it happens
    (nothing written): the plan (the line and each half before and after), the new charges and
    the lowerings, the surcharge and principal each lowered charge gives back (``GiveBack``), the
    *crédito aplicado* entries the freed money pays to the oldest open charges, what is left as
    refundable credit, and what the account owes today before and after."""

    roll_line: RollLine
    made_on: date
    reason: str
    plan: rules.CorrectionPlan
    number: int  # the correction's number in its roll once recorded
    rises: tuple[PreviewRow, ...]  # new correction charges (principal: the rise)
    lowerings: tuple[PreviewRow, ...]  # principal taken off existing charges
    give_backs: tuple[PreviewRow, ...]  # surcharge given back and principal freed, per lowered charge
    credit_applied: tuple[PreviewRow, ...]
    credit_before: Decimal
    credit_after: Decimal
    owed_before: Decimal
    owed_after: Decimal

    @property
    def freed(self) -> Decimal:
        return sum((row.amount for row in self.give_backs), ZERO)

    @property
    def applied(self) -> Decimal:
        return sum((row.amount for row in self.credit_applied), ZERO)

    def figures(self) -> tuple[Any, ...]:
        """What the review page shows and its confirmation carries (``parcels.review``)."""
        plan = self.plan
        rows = (self.rises, self.lowerings, self.give_backs, self.credit_applied)
        return (self.roll_line.pk, self.made_on, self.reason, self.number, plan.old_charge, plan.new_charge, plan.old_credit,
                plan.new_credit, plan.old_credit_percent, plan.new_credit_percent, plan.old_net, plan.new_net,
                tuple((h.number, h.old, h.new, h.actions) for h in plan.halves),
                tuple(tuple((r.key, r.surcharge, r.principal, r.due) for r in group) for group in rows),
                self.credit_before, self.credit_after, self.owed_before, self.owed_after)


def _owed(state: rules.LedgerState) -> Decimal:
    return sum((c.balance for c in state.charges if c.due <= state.as_of), ZERO)


def _checked_request(*, acting_user: Any, roll_line: RollLine, reason: str, made_on: date | None, om_charge_delta: Any,
                     credit_delta: Any, credit_percent: Any) -> tuple[date, Decimal, Decimal | None, Decimal | None]:
    """The checks a correction and its preview share (Hacienda's, a final roll, a reason) and
    the request's day and amounts parsed: ``(on, om_delta, credit, percent)``."""
    require_role(acting_user, HACIENDA)
    if not roll_line.levy.is_final:
        raise LevyError(_("Solo se corrige un padrón finalizado; un borrador se calcula de nuevo."))
    if not reason.strip():
        raise LevyError(_("Una corrección requiere una razón."))
    on = made_on or timezone.localdate()
    om_delta = _decimal(om_charge_delta, what=_("el cargo de O&M")) or ZERO
    credit = _decimal(credit_delta, what=_("el crédito"))
    percent = _decimal(credit_percent, what=_("el por ciento de crédito"))
    return on, om_delta, credit, percent


def roll_correction_preview(
    *, acting_user: Any, roll_line: RollLine, om_charge_delta: Decimal, credit_delta: Decimal | None = None, reason: str,
    due_date: date | None = None, credit_percent: Decimal | None = None, made_on: date | None = None,
) -> CorrectionPreview:
    """¶7, ¶9, ¶11, ¶12, ¶13: every entry ``roll_correction_create`` would post, with amounts,
    nothing written (the review page). The same checks and the same rules: the plan
    (``rules.correction_plan``), then on the stored records with the new charges and lowerings
    added in memory, ``rules.give_back_for`` for each lowered charge and ``rules.apply_freed_money``
    for the money freed, as ``freed_money`` posts them. Raises ``LevyError`` as the writer would."""
    from levy.models import LegalParameterSet

    on, om_delta, credit, percent = _checked_request(
        acting_user=acting_user, roll_line=roll_line, reason=reason, made_on=made_on, om_charge_delta=om_charge_delta,
        credit_delta=credit_delta, credit_percent=credit_percent)
    try:
        plan = correction_plan_for(roll_line=roll_line, made_on=on, om_charge_delta=om_delta, credit_delta=credit,
                                   credit_percent=percent, due_date=due_date)
    except rules.CorrectionRefused as refused:
        raise LevyError(refusal_message(refused)) from None
    except rules.BillingRuleError as error:
        raise LevyError(str(error)) from None

    parcel = Parcel.objects.get(pk=roll_line.parcel_id)
    records, charges = parcel_records(parcels=[parcel])[parcel.pk]
    schedule = LegalParameterSet.history().surcharge_schedule
    before = records.state(as_of=on, schedule=schedule)
    number = RollCorrection.objects.filter(roll_line__levy=roll_line.levy).count() + 1
    label = roll_line.levy.fiscal_year.label
    names = charge_names(charges.values())

    def name(key: str) -> str:
        charge = charges[key]
        return charge_label(kind=charge.kind, fiscal_year=charge.fiscal_year.label, number=charge.number,
                            description=charge.description, due_date=charge.due_date, **names[charge.pk])

    new_charges: list[rules.ChargeRecord] = []
    rises: list[PreviewRow] = []
    lowered: dict[str, Decimal] = {}
    labels: dict[str, str] = {}
    for half in plan.halves:
        for action in half.actions:
            if isinstance(action, rules.RaiseHalf):
                due, stored = due_and_last_day(due=action.due)
                last_day = charge_last_days([(due, stored)])[(due, stored)]
                key = f"C{10**12 - 3 + action.number:012d}"  # after every stored charge, as the new row's id will be
                labels[key] = charge_label(kind=Charge.Kind.CORRECTION, fiscal_year=label, number=action.number,
                                           correction=number)
                new_charges.append(rules.ChargeRecord(key=key, principal=action.amount, due=due, last_day=last_day))
                rises.append(PreviewRow(key=key, label=labels[key], surcharge=ZERO, principal=action.amount, due=due))
            else:  # the plan names a charge ``C<pk>``; the records ``charge_key(pk)``
                key = charge_key(int(action.charge_key[1:]))
                lowered[key] = lowered.get(key, ZERO) + action.amount
    lowerings = tuple(PreviewRow(key=key, label=name(key), surcharge=ZERO, principal=amount) for key, amount in lowered.items())
    changed = tuple(
        replace(charge, lowerings=(*charge.lowerings, rules.PrincipalLowering(entry_date=on, amount=lowered[charge.key])))
        if charge.key in lowered else charge for charge in records.charges
    )
    after = replace(records, charges=changed + tuple(new_charges))
    give_backs: list[PreviewRow] = []
    backs: list[rules.GivenBack] = []
    for key in lowered:
        charge = next(c for c in after.charges if c.key == key)
        back = rules.give_back_for(charge=charge, payments=after.payments, credit_applied=after.credit_applied,
                                   given_back=after.given_back, reversals=after.reversals, on=on, schedule=schedule)
        if back.freed <= 0:
            continue
        give_backs.append(PreviewRow(key=key, label=name(key), surcharge=back.surcharge_given_back, principal=back.principal_freed))
        backs.append(rules.GivenBack(charge_key=key, entry_date=on, surcharge=back.surcharge_given_back,
                                     principal=back.principal_freed, source=Source.CORRECTION, recorded=timezone.now()))
    after = replace(after, given_back=after.given_back + tuple(backs))
    applied: list[PreviewRow] = []
    freed = sum((row.amount for row in give_backs), ZERO)
    if freed > 0:
        state = after.state(as_of=on, schedule=schedule)
        entries, _left = rules.apply_freed_money(amount=min(freed, state.credit), open_charges=state.charges, on=on,
                                                 source=Source.CORRECTION)
        applied = [PreviewRow(key=e.charge_key, label=labels.get(e.charge_key) or name(e.charge_key), surcharge=e.surcharge,
                              principal=e.principal) for e in entries]
        after = replace(after, credit_applied=after.credit_applied + tuple(entries))
    final = after.state(as_of=on, schedule=schedule)
    return CorrectionPreview(
        roll_line=roll_line, made_on=on, reason=reason.strip(), plan=plan, number=number, rises=tuple(rises), lowerings=lowerings,
        give_backs=tuple(give_backs), credit_applied=tuple(applied), credit_before=before.credit, credit_after=final.credit,
        owed_before=_owed(before), owed_after=_owed(final),
    )


@transaction.atomic
def roll_correction_create(
    *, acting_user: Any, roll_line: RollLine, om_charge_delta: Decimal, credit_delta: Decimal | None = None, reason: str,
    due_date: date | None = None, credit_percent: Decimal | None = None, made_on: date | None = None,
) -> RollCorrection:
    """¶7, ¶9, ¶11, ¶12: a supplementary entry after finalization, referencing the line it corrects,
    posted on the parcel's account in the same transaction.

    ``credit_delta`` 0 (or None) means the credit follows the charge and the sec. 372 percentage
    (¶7): with a new ``credit_percent`` it becomes ``round(percent × corrected charge)``. A
    ``credit_percent`` equal to the line's records nothing (``rules.correction_plan``). ``due_date`` may set a later due date for the rises, never an earlier one. Refusals are
    ``LevyError`` with the line's figures in Spanish."""
    on, om_delta, credit, percent = _checked_request(
        acting_user=acting_user, roll_line=roll_line, reason=reason, made_on=made_on, om_charge_delta=om_charge_delta,
        credit_delta=credit_delta, credit_percent=credit_percent)
    Parcel.objects.select_for_update().get(pk=roll_line.parcel_id)
    try:
        plan = correction_plan_for(roll_line=roll_line, made_on=on, om_charge_delta=om_delta, credit_delta=credit,
                                   credit_percent=percent, due_date=due_date)
    except rules.CorrectionRefused as refused:
        raise LevyError(refusal_message(refused)) from None
    except rules.BillingRuleError as error:
        raise LevyError(str(error)) from None
    rises = [action for half in plan.halves for action in half.actions if isinstance(action, rules.RaiseHalf)]
    correction = RollCorrection(
        roll_line=roll_line, om_charge_delta=plan.charge_delta, credit_delta=plan.credit_delta, net_delta=plan.net_delta,
        credit_percent=plan.new_credit_percent if plan.percent_recorded else None, reason=reason.strip(), due_date=min((r.due for r in rises), default=on),
        created_by=acting_user,
    )
    correction.full_clean()
    correction.save()
    correction_post(acting_user=acting_user, correction=correction, plan=plan, made_on=on)
    return correction


def correction_post(*, acting_user: Any, correction: RollCorrection, plan: rules.CorrectionPlan, made_on: date) -> None:
    """¶9, ¶11, ¶12: the ledger entries of a planned correction, each naming it."""
    chain.link(chain.CORRECTION, correction.pk)
    line = correction.roll_line
    parcel_id = line.parcel_id
    number = correction_number(correction)
    label = line.levy.fiscal_year.label
    # Stored in Spanish whatever the session's language: it is the entry's legal name.
    name = f"Corrección n.º {number} del padrón {label} (¶9)"
    lowered: list[int] = []
    for half in plan.halves:
        for action in half.actions:
            if isinstance(action, rules.RaiseHalf):
                due, last_day = due_and_last_day(due=action.due)  # ¶12: the parameters in force on the due date
                semester = "julio" if action.number == 1 else "enero"
                description = f"{name}: plazo {action.number} ({semester})"
                charge = Charge.objects.create(
                    parcel_id=parcel_id, kind=Charge.Kind.CORRECTION, fiscal_year=line.levy.fiscal_year,
                    number=action.number, roll_line=line, description=description[:200], principal=action.amount,
                    due_date=due, last_day_to_pay=last_day, created_by=acting_user,
                )
                CorrectionCharge.objects.create(correction=correction, charge=charge, number=action.number)
                LedgerEntry.objects.create(parcel_id=parcel_id, entry_date=due, kind=LedgerEntry.Kind.CHARGE,
                                           debit=action.amount, charge=charge, description=description[:200],
                                           created_by=acting_user)
            else:
                charge_id = int(action.charge_key[1:])
                PrincipalAdjustment.objects.create(charge_id=charge_id, correction=correction, amount=action.amount,
                                                   entry_date=made_on, effective_from=action.effective_from,
                                                   created_by=acting_user)
                LedgerEntry.objects.create(parcel_id=parcel_id, entry_date=made_on, kind=LedgerEntry.Kind.CORRECTION,
                                           credit=action.amount, description=f"{name}: −{money_text(action.amount)}"[:200],
                                           created_by=acting_user)
                lowered.append(charge_id)
    if lowered:
        freed_money(acting_user=acting_user, parcel_id=parcel_id, charge_ids=lowered, on=made_on, source=Source.CORRECTION,
                    correction=correction, name=name)
    accrual_journal_for_correction(acting_user=acting_user, correction=correction, posted_on=made_on)  # issue 19


def freed_money(
    *, acting_user: Any, parcel_id: int, charge_ids: list[int], on: date, source: str, name: str,
    correction: RollCorrection | None = None, closure: Any = None,
) -> Decimal:
    """¶9, ¶12, ¶13: after a lowering or a moved last day, give back what the charges' payments paid
    beyond what is now owed (``GiveBack``) and send it to the oldest open charges (``CreditApplication``);
    what no charge takes is left as refundable credit. Returns the money freed."""
    parcel = Parcel.objects.get(pk=parcel_id)
    records, _charges = parcel_records(parcels=[parcel])[parcel_id]
    by_key = {record.key: record for record in records.charges}
    from levy.models import LegalParameterSet

    schedule = LegalParameterSet.history().surcharge_schedule
    freed = ZERO
    for charge_id in dict.fromkeys(charge_ids):
        record = by_key.get(f"C{charge_id:012d}")
        if record is None:
            continue
        back = rules.give_back_for(charge=record, payments=records.payments, credit_applied=records.credit_applied,
                                   given_back=records.given_back, reversals=records.reversals, on=on, schedule=schedule)
        if back.freed <= 0:
            continue
        GiveBack.objects.create(parcel_id=parcel_id, charge_id=charge_id, surcharge=back.surcharge_given_back,
                                principal=back.principal_freed, source=source, correction=correction, closure=closure,
                                entry_date=on, created_by=acting_user)
        if back.surcharge_given_back > 0:
            LedgerEntry.objects.create(
                parcel_id=parcel_id, entry_date=on, kind=LedgerEntry.Kind.GIVE_BACK, credit=back.surcharge_given_back,
                description=f"{name}: recargo recalculado: −{money_text(back.surcharge_given_back)}"[:200], created_by=acting_user,
            )
        freed += back.freed
    if freed > 0:
        records, _charges = parcel_records(parcels=[parcel])[parcel_id]
        state = records.state(as_of=on, schedule=schedule)
        entries, _left = rules.apply_freed_money(amount=min(freed, state.credit), open_charges=state.charges, on=on,
                                                 source=source)
        for entry in entries:
            CreditApplication.objects.create(
                parcel_id=parcel_id, charge_id=int(entry.charge_key[1:]), surcharge=entry.surcharge,
                principal=entry.principal, source=source, correction=correction, closure=closure, entry_date=on,
                created_by=acting_user,
            )
            if entry.surcharge > 0:
                LedgerEntry.objects.create(
                    parcel_id=parcel_id, entry_date=on, kind=LedgerEntry.Kind.CREDIT_APPLIED, debit=entry.surcharge,
                    description=f"{name}: crédito aplicado a recargo"[:200], created_by=acting_user,
                )
    seizures_stop_when_nothing_delinquent(parcel=parcel, on=on)
    return freed


def seizures_stop_when_nothing_delinquent(*, parcel: Parcel, on: date) -> None:
    """¶14: a correction or closure that leaves nothing delinquent stops an open seizure case."""
    from ..accounts import account_state

    state = account_state(parcel=parcel, as_of=on, known_by=None).state
    if not any(c.balance > 0 and c.last_day < on for c in state.charges):
        SeizureCase.objects.filter(parcel=parcel, status=SeizureCase.Status.OPEN).update(
            status=SeizureCase.Status.PAID, closed_on=on
        )
