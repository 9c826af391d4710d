"""Write paths of the yearly levy: one atomic service per action, each checking the acting
user's role and recording who acted (``estimate_enter``, ``estimate_certify``, ``levy_compute``,
``legal_parameters_add``). The arithmetic lives in ``levy.rules``. Finalizing the roll and
correcting a final roll line create charges, so they are billing's
(``billing.services.installments.roll_finalize``, ``billing.services.corrections.roll_correction_create``):
levy imports nothing of billing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from parcels.bulk import copy_insert
from parcels.models import Owner, Parcel
from parcels.money import money_text
from parcels.roles import AUTHORITY, HACIENDA, has_role

from . import rules
from .models import Estimate, FiscalYear, LegalParameterSet, Levy, RollLine

ZERO = Decimal("0.00")
ROLL_LINE_COLUMNS = (
    "levy_id", "parcel_id", "parcel_code", "owner_id", "owner_key", "owner_name", "inclusion", "water_since",
    "gravity_acres", "pumped_acres", "equivalent_acres", "credit_percent", "levied", "reason", "om_charge", "credit",
    "net", "first_installment", "second_installment",
)


LEVY_COMPUTE = "levy_compute"  # the procrastinate task (levy/tasks.py)


class LevyError(Exception):
    """A refusal with a one-line reason for the page or the command line."""


class LevyComputeBusy(LevyError):
    """A compute of the same fiscal year is queued or running: ``job`` is its record."""

    def __init__(self, busy: Any) -> None:
        super().__init__(str(busy))
        self.job = busy.job


def require_role(user: Any, role: str) -> None:
    if user is None or not has_role(user, role):
        raise LevyError(_("El usuario %(u)s no tiene el rol %(r)s.") % {"u": getattr(user, "username", None), "r": role})


def fiscal_year_get(label: str, *, create: bool = False) -> FiscalYear:
    try:
        start = rules.fiscal_year_start(label)
    except rules.LevyRuleError as exc:
        raise LevyError(_("Año fiscal inválido «%(y)s»: escriba 2026-2027.") % {"y": label}) from exc
    if create:
        year, _created = FiscalYear.objects.get_or_create(label=label, defaults={"start": start})
        return year
    year = FiscalYear.objects.filter(label=label).first()
    if year is None:
        raise LevyError(_("No hay estimados para el año fiscal %(y)s.") % {"y": label})
    return year


def current_estimate(year: FiscalYear) -> Estimate | None:
    return year.estimates.exclude(status=Estimate.Status.WITHDRAWN).select_related("entered_by", "certified_by").first()


def final_levy(year: FiscalYear) -> Levy | None:
    return year.levies.filter(status=Levy.Status.FINAL).first()


def draft_levy(year: FiscalYear) -> Levy | None:
    return year.levies.filter(status=Levy.Status.DRAFT).first()


def _amount(value: Decimal | str | None, name: str) -> Decimal:
    amount = Decimal(str(value if value is not None else "0"))
    if not amount.is_finite() or amount < 0:
        raise LevyError(_("%(n)s no puede ser negativo.") % {"n": name})
    if amount != amount.quantize(rules.CENT):
        raise LevyError(_("%(n)s debe estar en centavos (dos decimales).") % {"n": name})
    return amount.quantize(rules.CENT)


@transaction.atomic
def estimate_enter(
    *, acting_user: Any, fiscal_year: str, om_estimate: Decimal, reserve: Decimal, misc_income: Decimal,
    deficit: Decimal = ZERO, surplus: Decimal = ZERO, certified_credits: Decimal | None = None, reason: str = "",
) -> Estimate:
    """¶1(1), ¶1(2), ¶2, ¶3: the Authority enters a year's estimates (uncertified).

    Replacing certified estimates needs a reason and withdraws the certification; a year whose
    roll is finalized refuses."""
    require_role(acting_user, AUTHORITY)
    year = fiscal_year_get(fiscal_year, create=True)
    year = FiscalYear.objects.select_for_update().get(pk=year.pk)
    if final_levy(year):
        raise LevyError(_("El padrón de %(y)s ya está finalizado: los estimados no se pueden cambiar.") % {"y": year.label})
    values = {
        "om_estimate": _amount(om_estimate, "om_estimate"), "reserve": _amount(reserve, "reserve"),
        "misc_income": _amount(misc_income, "misc_income"), "deficit": _amount(deficit, "deficit"),
        "surplus": _amount(surplus, "surplus"),
    }
    credits = _amount(certified_credits, "credits") if certified_credits is not None else None
    if values["deficit"] and values["surplus"]:
        raise LevyError(_("Indique un déficit o un superávit, no ambos (¶2)."))
    params = LegalParameterSet.in_force(year.start)
    cap = rules.reserve_cap(om_estimate=values["om_estimate"], params=params.as_rules())
    if values["reserve"] > cap:
        raise LevyError(
            _("El fondo de reserva (%(r)s) excede el 2%% del estimado de O&M (tope %(c)s) (¶1(2)).")
            % {"r": money_text(values['reserve']), "c": money_text(cap)}
        )
    previous = current_estimate(year)
    if previous is not None:
        if previous.status == Estimate.Status.CERTIFIED and not reason.strip():
            raise LevyError(_("Los estimados de %(y)s están certificados: reemplazarlos requiere una razón.") % {"y": year.label})
        previous.status = Estimate.Status.WITHDRAWN
        previous.save(update_fields=["status"])
        _draft_discard(year)  # computed from the old estimate
    estimate = Estimate(
        fiscal_year=year, entered_by=acting_user, reason=reason.strip(), supersedes=previous,
        certified_credits=credits, **values,
    )
    estimate.full_clean()
    estimate.save()
    return estimate


@transaction.atomic
def estimate_certify(*, acting_user: Any, fiscal_year: str) -> Estimate:
    """¶1(1), ¶3: the Authority certifies the year's estimates to the Secretary, exactly as entered."""
    require_role(acting_user, AUTHORITY)
    year = fiscal_year_get(fiscal_year)
    estimate = year.estimates.select_for_update().exclude(status=Estimate.Status.WITHDRAWN).first()
    if estimate is None:
        raise LevyError(_("No hay estimados para certificar en %(y)s.") % {"y": year.label})
    if estimate.status == Estimate.Status.CERTIFIED:
        raise LevyError(_("Los estimados de %(y)s ya están certificados.") % {"y": year.label})
    estimate.status = Estimate.Status.CERTIFIED
    estimate.certified_by = acting_user
    estimate.certified_at = timezone.now()
    estimate.save(update_fields=["status", "certified_by", "certified_at"])
    return estimate


@transaction.atomic
def legal_parameters_add(
    *, acting_user: Any, effective_from: date, changes: dict[str, Any], reason: str, today: date | None = None,
) -> LegalParameterSet:
    """¶1–¶12: a Hacienda officer records a change in the law as a new dated row of legal parameters.

    The row copies the one in force on ``effective_from`` and changes the fields in ``changes``;
    its ``source`` is the reason unless ``changes`` gives one.
    Refused: a date before today (the past is never re-read under a new row), a date that already
    has a row (rows never change), no reason, a change that changes nothing, and a date on or
    before the July 1 of a fiscal year whose roll is already final (that levy was computed with
    the row in force on its July 1 and keeps it). Records who added it and why."""
    require_role(acting_user, HACIENDA)
    today = today or timezone.localdate()
    if effective_from < today:
        raise LevyError(
            _("La fecha de vigencia %(d)s ya pasó (hoy es %(t)s): una ley nueva rige desde hoy o después; "
              "el pasado no se recalcula.") % {"d": effective_from.isoformat(), "t": today.isoformat()}
        )
    if not reason.strip():
        raise LevyError(_("Un cambio de parámetros legales requiere una razón."))
    unknown = sorted(set(changes) - set(LegalParameterSet.VALUE_FIELDS))
    if unknown:
        raise LevyError(_("Parámetros desconocidos: %(f)s.") % {"f": ", ".join(unknown)})
    # One writer at a time, so two officers cannot both add the same date or copy a stale row.
    rows = list(LegalParameterSet.objects.select_for_update().order_by("effective_from"))
    if any(row.effective_from == effective_from for row in rows):
        raise LevyError(
            _("Ya hay parámetros legales vigentes desde el %(d)s; una fila no se cambia: elija otra fecha.")
            % {"d": effective_from.isoformat()}
        )
    earlier = [row for row in rows if row.effective_from < effective_from]
    if not earlier:
        raise LevyError(_("No hay parámetros legales vigentes el %(d)s que copiar.") % {"d": effective_from.isoformat()})
    base = earlier[-1]
    final = Levy.objects.filter(status=Levy.Status.FINAL, fiscal_year__start__gte=effective_from).select_related("fiscal_year")
    final = final.order_by("fiscal_year__start").first()
    if final is not None:
        raise LevyError(
            _("El padrón de %(y)s ya está finalizado con los parámetros vigentes el %(s)s: una fila desde el %(d)s "
              "lo contradiría. Elija una fecha posterior al %(s)s.")
            % {"y": final.fiscal_year.label, "s": final.fiscal_year.start.isoformat(), "d": effective_from.isoformat()}
        )
    values = {name: getattr(base, name) for name in LegalParameterSet.VALUE_FIELDS}
    if all(values[name] == value for name, value in changes.items()):
        raise LevyError(
            _("Los valores dados son los vigentes el %(d)s: la fila nueva no cambiaría nada.") % {"d": effective_from.isoformat()}
        )
    values.update(changes)
    if "source" not in changes:  # the copied row's source is the old law, not this change
        values["source"] = reason.strip()[: LegalParameterSet._meta.get_field("source").max_length]
    row = LegalParameterSet(effective_from=effective_from, reason=reason.strip(), created_by=acting_user, **values)
    try:
        row.full_clean()
        row.as_rules()  # the pure rules' own bounds (rates below 1, whole months and days)
    except ValidationError as exc:
        raise LevyError("; ".join(f"{name}: {' '.join(errors)}" for name, errors in exc.message_dict.items())) from exc
    except rules.LevyRuleError as exc:
        raise LevyError(str(exc)) from exc
    row.save()
    row.refresh_from_db()  # the stored figures (0.0100), not the ones given
    return row


def _draft_discard(year: FiscalYear) -> None:
    """Drop the year's draft levy and its lines in two statements (not one query per line)."""
    draft = draft_levy(year)
    if draft is not None:
        RollLine.objects.filter(levy=draft)._raw_delete(RollLine.objects.db)
        draft.delete()


def registry_fingerprint() -> str:
    """A hash of every registry fact a roll is computed from; finalize refuses if it moved."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT md5(COALESCE(string_agg(concat_ws('|', p.parcel_id, o.id, o.owner_key, o.name, p.gravity_acres,
                   p.pumped_acres, p.inclusion, p.water_since, p.credit_percent), ',' ORDER BY p.parcel_id), ''))
              FROM parcels_parcel p JOIN parcels_owner o ON o.id = p.owner_id
            """
        )
        return cursor.fetchone()[0]


def parcel_inputs() -> tuple[list[rules.ParcelInput], dict[str, tuple]]:
    """The registry as the rules see it, and each parcel's (pk, owner pk, owner key, owner name)."""
    inputs: list[rules.ParcelInput] = []
    refs: dict[str, tuple] = {}
    # One plain query read whole (issue 20: at 100,000 parcels the ORM's per-row conversions and
    # server-side cursor chunks cost more than the rules); trial and excluded parcels stay out.
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT p.id, p.parcel_id, p.inclusion, p.gravity_acres, p.pumped_acres, p.water_since, p.credit_percent,
                   p.owner_id, o.owner_key, o.name
              FROM {Parcel._meta.db_table} p JOIN {Owner._meta.db_table} o ON o.id = p.owner_id
             WHERE p.inclusion <> ALL(%s)
             ORDER BY p.parcel_id
            """,
            [[Parcel.Inclusion.TRIAL, Parcel.Inclusion.EXCLUDED]],
        )
        rows = cursor.fetchall()
    for pk, parcel_id, inclusion, gravity, pumped, water, credit, owner_id, owner_key, owner_name in rows:
        inputs.append(rules.ParcelInput(parcel_id=parcel_id, inclusion=inclusion, gravity_acres=gravity, pumped_acres=pumped,
                                        water_since=water, credit_percent=credit))
        refs[parcel_id] = (pk, owner_id, owner_key, owner_name, inclusion, water)
    return inputs, refs


def compute(*, year: FiscalYear, estimate: Estimate, parcels: list[rules.ParcelInput] | None = None,
            params: LegalParameterSet | None = None) -> rules.LevyComputation:
    """Run the pure rules on an estimate and the registry (or given parcels); no writes."""
    params = params or LegalParameterSet.in_force(year.start)
    if parcels is None:
        parcels, _refs = parcel_inputs()
    amounts = estimate.amounts()
    try:
        return rules.compute_levy(
            fiscal_year=year.start, om_estimate=amounts["om_estimate"], reserve=amounts["reserve"],
            misc_income=amounts["misc_income"], deficit=amounts["deficit"], surplus=amounts["surplus"],
            certified_credits=amounts["certified_credits"], parcels=parcels, params=params.as_rules(),
        )
    except rules.LevyRuleError as exc:
        raise LevyError(str(exc)) from exc


@transaction.atomic
def levy_compute_start(*, acting_user: Any, fiscal_year: str) -> Any:
    """Queue ``levy_compute`` for a worker (the page follows its progress). One compute per fiscal
    year at a time: while one is queued or running a second is refused, saying who asked for the
    running one, since when and how far it is (``LevyComputeBusy``)."""
    from parcels.jobs import JobBusy, job_defer

    require_role(acting_user, HACIENDA)
    try:
        return job_defer(kind=LEVY_COMPUTE, key=fiscal_year, payload={"fiscal_year": fiscal_year}, acting_user=acting_user,
                         what=_("el cálculo del padrón de %(y)s") % {"y": fiscal_year})
    except JobBusy as exc:
        raise LevyComputeBusy(exc) from None


@transaction.atomic
def levy_compute(*, acting_user: Any, fiscal_year: str, progress: Callable[[int, int], None] | None = None) -> Levy:
    """¶1–¶10: a Hacienda officer computes the draft levy and roll from the certified estimates and
    the registry as it is now. Replaces any earlier draft; refuses a finalized year."""
    require_role(acting_user, HACIENDA)
    year = fiscal_year_get(fiscal_year)
    year = FiscalYear.objects.select_for_update().get(pk=year.pk)
    if final_levy(year):
        raise LevyError(_("El padrón de %(y)s ya está finalizado.") % {"y": year.label})
    estimate = current_estimate(year)
    if estimate is None or estimate.status != Estimate.Status.CERTIFIED:
        raise LevyError(_("Los estimados de %(y)s no están certificados por la Autoridad.") % {"y": year.label})
    params = LegalParameterSet.in_force(year.start)
    fingerprint = registry_fingerprint()
    parcels, refs = parcel_inputs()
    result = compute(year=year, estimate=estimate, parcels=parcels, params=params)
    _draft_discard(year)
    sheet = result.worksheet
    levy = Levy.objects.create(
        fiscal_year=year, estimate=estimate, parameter_set=params, parameters=params.snapshot(),
        registry_fingerprint=fingerprint,
        om_estimate=sheet.om_estimate, reserve=sheet.reserve, credits=sheet.credits,
        credits_certified=sheet.credits_certified, deficit=sheet.deficit, surplus=sheet.surplus,
        misc_income=sheet.misc_income, k0=sheet.k0, subtotal=sheet.subtotal, safety_margin=sheet.safety_margin,
        total_levy=sheet.total_levy, gravity_acres=sheet.gravity_acres, pumped_acres=sheet.pumped_acres,
        equivalent_acres=sheet.equivalent_acres, rate_gravity=sheet.rate_gravity, rate_pumped=sheet.rate_pumped,
        parcels_levied=result.parcels_levied, parcels_in_roll=len(result.lines), roll_total=result.roll_total,
        roll_credits=result.roll_credits, roll_net=result.roll_net, computed_by=acting_user, computed_at=timezone.now(),
    )
    total = len(result.lines)

    def rows():
        for done, line in enumerate(result.lines, start=1):
            pk, owner_id, owner_key, owner_name, inclusion, water = refs[line.parcel_id]
            yield (levy.pk, pk, line.parcel_id, owner_id, owner_key, owner_name, inclusion, water, line.gravity_acres,
                   line.pumped_acres, line.equivalent_acres, line.credit_percent, line.levied, line.reason, line.om_charge,
                   line.credit, line.net, line.first_installment, line.second_installment)
            if progress and (done % 5000 == 0 or done == total):
                progress(done, total)

    copy_insert(RollLine, ROLL_LINE_COLUMNS, rows())
    return levy
