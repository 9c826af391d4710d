"""Write paths of the yearly levy: one atomic service per action, each checking the acting
user's role and recording who acted (``estimate_enter``, ``estimate_certify``, ``levy_compute``,
``roll_finalize``, ``roll_correction_create``). The arithmetic lives in ``levy.rules``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from parcels.bulk import copy_insert
from parcels.models import Parcel
from parcels.roles import AUTHORITY, HACIENDA, has_role

from . import rules
from .models import Estimate, FiscalYear, LegalParameterSet, Levy, RollCorrection, RollLine

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


def _require_role(user: Any, role: str) -> None:
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
    _require_role(acting_user, AUTHORITY)
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
            % {"r": f"{values['reserve']:,.2f}", "c": f"{cap:,.2f}"}
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
    _require_role(acting_user, AUTHORITY)
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
    rows = (
        Parcel.objects.exclude(inclusion__in=[Parcel.Inclusion.TRIAL, Parcel.Inclusion.EXCLUDED])
        .values_list("pk", "parcel_id", "inclusion", "gravity_acres", "pumped_acres", "water_since", "credit_percent",
                     "owner_id", "owner__owner_key", "owner__name")
        .order_by("parcel_id")
    )
    for pk, parcel_id, inclusion, gravity, pumped, water, credit, owner_id, owner_key, owner_name in rows.iterator(chunk_size=10000):
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

    _require_role(acting_user, HACIENDA)
    try:
        return job_defer(kind=LEVY_COMPUTE, key=fiscal_year, payload={"fiscal_year": fiscal_year}, acting_user=acting_user,
                         what=_("el cálculo del padrón de %(y)s") % {"y": fiscal_year})
    except JobBusy as exc:
        raise LevyComputeBusy(exc) from None


@transaction.atomic
def levy_compute(*, acting_user: Any, fiscal_year: str, progress: Callable[[int, int], None] | None = None) -> Levy:
    """¶1–¶10: a Hacienda officer computes the draft levy and roll from the certified estimates and
    the registry as it is now. Replaces any earlier draft; refuses a finalized year."""
    _require_role(acting_user, HACIENDA)
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
        fiscal_year=year, estimate=estimate, parameters=params.snapshot(), registry_fingerprint=fingerprint,
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


@transaction.atomic
def roll_finalize(*, acting_user: Any, fiscal_year: str, today: date | None = None) -> Levy:
    """¶11: a Hacienda officer who did not certify the estimates finalizes the roll. Due by July 1;
    a late finalization is allowed and recorded as late. Refuses when the registry changed since
    the roll was computed, or when the estimates were replaced."""
    _require_role(acting_user, HACIENDA)
    year = fiscal_year_get(fiscal_year)
    year = FiscalYear.objects.select_for_update().get(pk=year.pk)
    if final_levy(year):
        raise LevyError(_("El padrón de %(y)s ya está finalizado.") % {"y": year.label})
    levy = draft_levy(year)
    if levy is None:
        raise LevyError(_("No hay un padrón calculado para %(y)s: calcule primero.") % {"y": year.label})
    estimate = levy.estimate
    if estimate.status != Estimate.Status.CERTIFIED:
        raise LevyError(_("Los estimados cambiaron desde el cálculo: calcule de nuevo."))
    if estimate.certified_by_id == acting_user.pk:
        raise LevyError(_("Quien certificó los estimados no puede finalizar el padrón."))
    if registry_fingerprint() != levy.registry_fingerprint:
        raise LevyError(_("El registro de predios cambió desde el cálculo del padrón: calcule de nuevo."))
    on = today or timezone.localdate()
    levy.status = Levy.Status.FINAL
    levy.finalized_by = acting_user
    levy.finalized_at = timezone.now()
    levy.finalized_on = on
    levy.finalized_late = on > year.roll_deadline
    levy.save(update_fields=["status", "finalized_by", "finalized_at", "finalized_on", "finalized_late"])
    from billing.documents import zero_notices_issue  # ¶9: a line at 100 % credit still gets its notice
    from billing.services import installments_issue  # billing builds on the finalized roll

    installments_issue(acting_user=acting_user, levy=levy)
    zero_notices_issue(acting_user=acting_user, levy=levy, issued_on=on)
    return levy


@transaction.atomic
def roll_correction_create(
    *, acting_user: Any, roll_line: RollLine, om_charge_delta: Decimal, credit_delta: Decimal, reason: str, due_date: date,
) -> RollCorrection:
    """¶9, ¶11: a supplementary entry after finalization, referencing the line it corrects."""
    _require_role(acting_user, HACIENDA)
    if not roll_line.levy.is_final:
        raise LevyError(_("Solo se corrige un padrón finalizado; un borrador se calcula de nuevo."))
    if not reason.strip():
        raise LevyError(_("Una corrección requiere una razón."))
    om_delta = Decimal(str(om_charge_delta)).quantize(rules.CENT)
    credit = Decimal(str(credit_delta)).quantize(rules.CENT)
    if om_delta == 0 and credit == 0:
        raise LevyError(_("Una corrección debe cambiar el cargo o el crédito."))
    correction = RollCorrection(
        roll_line=roll_line, om_charge_delta=om_delta, credit_delta=credit, net_delta=om_delta - credit,
        reason=reason.strip(), due_date=due_date, created_by=acting_user,
    )
    correction.full_clean()
    correction.save()
    from billing.services import correction_post  # billed and reconciled as its own charge

    correction_post(acting_user=acting_user, correction=correction)
    return correction
