"""Water sold before the levy starts (¶8, sec. 374a): deliveries, their monthly charges and the
import of a CSV of deliveries."""

from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Sum
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from levy.models import LegalParameterSet
from levy.rules import levy_start, round_cents
from parcels.models import Parcel
from parcels.roles import AUTHORITY, HACIENDA, has_role

from .. import rules
from ..accounts import due_and_last_day, parcel_by_code
from ..errors import BillingError
from ..models import Charge, LedgerEntry, WaterDelivery, WaterRate
from .numbering import fiscal_year_for


def water_rates_on(day: date) -> tuple[rules.WaterSaleRates, Decimal | None]:
    """The sec. 374a rates in force on a day and the Authority's rate on file for it (``None``
    when there is none: the $6.00 cap is a limit, not a price)."""
    params = LegalParameterSet.in_force(day)
    rates = rules.WaterSaleRates(first_year_rate=params.water_first_year_rate, max_authority_rate=params.water_max_authority_rate,
                                 pumped_rate=params.water_pumped_rate)
    authority = WaterRate.objects.filter(effective_from__lte=day).order_by("-effective_from").values_list("rate", flat=True).first()
    return rates, authority


@transaction.atomic
def water_authority_rate_set(*, acting_user: Any, effective_from: date, rate: Decimal) -> WaterRate:
    """Sec. 374a: the Authority records its rate per acre-foot (at most the cap in force that
    day) from a date; a date already on file is refused, a row is never changed."""
    if not has_role(acting_user, AUTHORITY):
        raise BillingError(_("Solo la Autoridad fija la tarifa del agua."))
    cap = LegalParameterSet.in_force(effective_from).water_max_authority_rate
    if rate is None or rate < 0 or rate > cap:
        raise BillingError(_("La tarifa de la Autoridad va de $0.00 a $%(c)s por acre-pie (sec. 374a).") % {"c": cap})
    if WaterRate.objects.filter(effective_from=effective_from).exists():
        raise BillingError(_("Ya hay una tarifa de la Autoridad desde el %(d)s.") % {"d": effective_from.strftime("%d/%m/%Y")})
    row = WaterRate(effective_from=effective_from, rate=rate, set_by=acting_user)
    row.full_clean()
    row.save()
    return row


def parcel_pays_levy_on(parcel: Parcel, day: date) -> bool:
    """¶8, ¶10: whether the parcel's levy has started by ``day`` (then water is not sold to it)."""
    if parcel.inclusion != Parcel.Inclusion.PERMANENT or parcel.water_since is None:
        return False
    params = LegalParameterSet.in_force(day).as_rules()
    return levy_start(water_since=parcel.water_since, params=params) <= day


def water_delivery_land(parcel: Parcel, land: str | None) -> str:
    """Sec. 374a: which land a delivery went to. A parcel with one kind of land needs no answer
    (and may not name the other kind); a parcel with both must say."""
    kinds = [kind for kind, acres in ((WaterDelivery.Land.GRAVITY, parcel.gravity_acres), (WaterDelivery.Land.PUMPED, parcel.pumped_acres))
             if acres > 0]
    if land in (None, ""):
        if len(kinds) > 1:
            raise BillingError(_("El predio %(p)s tiene tierra por gravedad y tierra por bombeo del dueño: indique a cuál fue el agua "
                                 "(sec. 374a).") % {"p": parcel.parcel_id})
        return kinds[0] if kinds else WaterDelivery.Land.GRAVITY
    if land not in WaterDelivery.Land.values:
        raise BillingError(_("Tierra «%(t)s» desconocida: use gravity o pumped.") % {"t": land})
    if land not in kinds:
        raise BillingError(_("El predio %(p)s no tiene tierra %(t)s.") % {"p": parcel.parcel_id, "t": WaterDelivery.Land(land).label})
    return land


@transaction.atomic
def water_delivery_record(*, acting_user: Any, parcel: Parcel, delivered_on: date, acre_feet: Decimal,
                          land: str | None = None) -> WaterDelivery:
    """Staff record water delivered to a parcel that does not pay the levy yet, priced at the
    sec. 374a rate for that day ($2.00 in the first 12 months, then the Authority's rate or $3.00
    for land the owner waters with his own pumps). ``land`` ("gravity" or "pumped") is required
    when the parcel has both. Refused for excluded land, and for gravity water after the first 12
    months when no Authority rate is on file for the day (never priced at the cap)."""
    if not has_role(acting_user, AUTHORITY):
        raise BillingError(_("Solo la Autoridad registra entregas de agua."))
    if acre_feet is None or acre_feet <= 0:
        raise BillingError(_("Los acres-pie deben ser más que cero."))
    if parcel.inclusion == Parcel.Inclusion.EXCLUDED:
        raise BillingError(_("El predio %(p)s está excluido del Distrito: no compra agua del Sistema de Riego (¶8, sec. 374a).")
                           % {"p": parcel.parcel_id})
    if parcel.water_since is None or delivered_on < parcel.water_since:
        raise BillingError(_("El predio no tiene agua registrada para esa fecha (fecha de agua: %(d)s).") % {"d": parcel.water_since or "—"})
    if parcel_pays_levy_on(parcel, delivered_on):
        raise BillingError(_("El predio %(p)s ya paga la contribución: no se le vende agua por acre-pie (¶8).") % {"p": parcel.parcel_id})
    land = water_delivery_land(parcel, land)
    rates, authority_rate = water_rates_on(delivered_on)
    try:
        rate = rules.water_rate(first_water=parcel.water_since, delivery_date=delivered_on, pumped=land == WaterDelivery.Land.PUMPED,
                                authority_rate=authority_rate, rates=rates)
    except rules.WaterRateMissing:
        raise BillingError(_("Falta la tarifa de la Autoridad por acre-pie vigente el %(d)s (sec. 374a: tierra por gravedad "
                             "después de los primeros 12 meses de agua). No se factura al tope de $%(c)s: registre primero la "
                             "tarifa de la Autoridad.")
                           % {"d": delivered_on.strftime("%d/%m/%Y"), "c": rates.max_authority_rate}) from None
    delivery = WaterDelivery(parcel=parcel, delivered_on=delivered_on, land=land, acre_feet=acre_feet, rate=rate,
                             amount=round_cents(acre_feet * rate), recorded_by=acting_user)
    delivery.full_clean()
    delivery.save()
    return delivery


@transaction.atomic
def water_charges_issue(*, acting_user: Any, year: int, month: int) -> int:
    """Each month's deliveries become one charge per parcel (due the first of the next month; no
    ¶12 surcharge: this is a sale of water, not the levy). Idempotent: billed deliveries are skipped."""
    if not has_role(acting_user, AUTHORITY, HACIENDA):
        raise BillingError(_("Solo la Autoridad o Hacienda facturan el agua."))
    first = date(year, month, 1)
    due = date(year + (month == 12), month % 12 + 1, 1)
    locked = list(WaterDelivery.objects.select_for_update().filter(
        delivered_on__year=year, delivered_on__month=month, charge__isnull=True
    ).values_list("pk", flat=True))
    deliveries = WaterDelivery.objects.filter(pk__in=locked)
    count = 0
    for row in deliveries.values("parcel_id").annotate(total=Sum("amount"), feet=Sum("acre_feet")):
        charge = Charge.objects.create(
            parcel_id=row["parcel_id"], kind=Charge.Kind.WATER, fiscal_year=fiscal_year_for(first),
            # stored in Spanish whatever the session's language; shown through wording.charge_label
            description=gettext_noop("Agua %(m)02d/%(y)s: %(f)s acres-pie (sec. 374a)") % {"m": month, "y": year, "f": row["feet"]},
            principal=row["total"], due_date=due, last_day_to_pay=due_and_last_day(due=due)[1], accrues_surcharge=False,
            created_by=acting_user,
        )
        LedgerEntry.objects.create(parcel_id=row["parcel_id"], entry_date=due, kind=LedgerEntry.Kind.CHARGE, debit=row["total"],
                                   charge=charge, description=charge.description, created_by=acting_user)
        deliveries.filter(parcel_id=row["parcel_id"]).update(charge=charge)
        count += 1
    return count


def water_deliveries_import(*, acting_user: Any, data: bytes) -> tuple[int, list[str]]:
    """A CSV of deliveries (``parcel_id, delivered_on, acre_feet``, and ``land`` — gravity or
    pumped — which may be blank except for a parcel with both kinds), all or nothing."""
    errors: list[str] = []
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return 0, [_("el archivo no es UTF-8")]
    reader = csv.DictReader(io.StringIO(text))
    missing = {"parcel_id", "delivered_on", "acre_feet"} - set(reader.fieldnames or [])
    if missing:
        return 0, [_("línea 1: faltan columnas %(c)s") % {"c": ", ".join(sorted(missing))}]
    rows = list(reader)
    with transaction.atomic():
        for index, row in enumerate(rows, start=2):
            try:
                cells = {name: (row.get(name) or "").strip() for name in ("parcel_id", "delivered_on", "acre_feet")}
                parcel = parcel_by_code(cells["parcel_id"])
                day = date.fromisoformat(cells["delivered_on"])
                feet = Decimal(cells["acre_feet"])
                if not feet.is_finite() or feet != feet.quantize(Decimal("0.001")):
                    raise BillingError(_("acres-pie inválidos «%(v)s» (a lo sumo 3 decimales)") % {"v": cells["acre_feet"]})
                with transaction.atomic():
                    water_delivery_record(acting_user=acting_user, parcel=parcel, delivered_on=day, acre_feet=feet,
                                          land=(row.get("land") or "").strip() or None)
            except ValidationError as exc:
                errors.append(_("línea %(l)s: %(e)s") % {"l": index, "e": " ".join(exc.messages)})
            except (BillingError, ValueError, InvalidOperation, rules.BillingRuleError) as exc:
                errors.append(_("línea %(l)s: %(e)s") % {"l": index, "e": exc})
        if errors:
            transaction.set_rollback(True)
            return 0, errors
    return len(rows), []
