"""Reads of the levy pages: QuerySets with their joins, filters applied inside, totals in SQL."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from django.db.models import Count, DecimalField, F, Prefetch, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from . import rules
from .filters import RollFilter
from .models import Estimate, FiscalYear, LegalParameterSet, Levy, RollCorrection, RollLine

ZERO = Decimal("0")
# The sums shown under the roll and checked by the reconciliation panel (¶9, ¶12).
ROLL_SUMS = ("gravity_acres", "pumped_acres", "equivalent_acres", "om_charge", "credit", "net",
             "first_installment", "second_installment")


def fiscal_year_list() -> QuerySet[FiscalYear]:
    """Every fiscal year, newest first, with its current estimate and its levies (3 queries)."""
    current = Estimate.objects.exclude(status=Estimate.Status.WITHDRAWN).select_related("entered_by", "certified_by")
    levies = Levy.objects.select_related("finalized_by", "computed_by")
    return FiscalYear.objects.order_by("-start").prefetch_related(
        Prefetch("estimates", queryset=current, to_attr="current_estimates"),
        Prefetch("levies", queryset=levies, to_attr="levy_list"),
    )


def estimate_history(year: FiscalYear) -> QuerySet[Estimate]:
    """Every estimate of ``year``, newest first, with who entered and certified it and what replaced it."""
    return (
        year.estimates.select_related("entered_by", "certified_by", "superseded_by", "superseded_by__entered_by")
        .order_by("-entered_at", "-id")
    )


def roll_levy(label: str) -> Levy | None:
    """The year's roll in one query: the final one when it exists, else the draft."""
    return (
        Levy.objects.select_related("fiscal_year", "computed_by", "finalized_by")
        .filter(fiscal_year__label=label)
        .order_by("-status")  # "final" sorts after "draft"
        .first()
    )


def roll_list(*, levy: Levy, params: Any) -> RollFilter:
    queryset = RollLine.objects.filter(levy=levy).only(
        "id", "parcel_id", "parcel_code", "owner_name", "owner_key", "gravity_acres", "pumped_acres", "equivalent_acres",
        "levied", "reason", "om_charge", "credit_percent", "credit", "net", "first_installment", "second_installment",
    )
    return RollFilter(params, queryset=queryset)


def roll_totals(queryset: QuerySet[RollLine], *, pumped_weight: Decimal | None = None) -> dict[str, Any]:
    """Sums of a (filtered) roll in one SQL query, with the line count and the paying count.

    With ``pumped_weight`` also the exact ¶5 acreage of the paying lines, recomputed from their
    gravity and pumped acres (each line's stored equivalent acres is rounded to 4 places)."""
    # Aliases must not shadow the field names the expressions refer to, hence the prefix.
    sums = {f"sum_{name}": Coalesce(Sum(name), ZERO) for name in ROLL_SUMS}
    if pumped_weight is not None:
        exact = F("gravity_acres") + F("pumped_acres") * Value(pumped_weight, output_field=DecimalField())
        sums["sum_levied_exact_acres"] = Coalesce(Sum(exact, filter=Q(levied=True), output_field=DecimalField()), ZERO)
    result = queryset.order_by().aggregate(
        sum_lines=Count("id"), sum_levied_lines=Count("id", filter=Q(levied=True)), **sums,
    )
    return {key.removeprefix("sum_"): value for key, value in result.items()}


def parameter_sets() -> QuerySet[LegalParameterSet]:
    return LegalParameterSet.objects.select_related("created_by").order_by("-effective_from")


def parameter_set_in_force(on: date) -> LegalParameterSet | None:
    return LegalParameterSet.objects.filter(effective_from__lte=on).order_by("-effective_from").first()


def final_roll_nets(*, start: date) -> dict[str, tuple[Decimal, Decimal]] | None:
    """The finalized roll of the fiscal year opening on ``start``: parcel code → (charge, net), or None."""
    levy = Levy.objects.filter(fiscal_year__start=start, status=Levy.Status.FINAL).only("id").first()
    if levy is None:
        return None
    rows = RollLine.objects.filter(levy=levy).values_list("parcel_code", "om_charge", "net")
    return {code: (charge, net) for code, charge, net in rows.iterator(chunk_size=10000)}


# --- A roll line as corrected ----------------------------------------------------------------


@dataclass(frozen=True)
class CorrectedLine:
    """¶9, ¶11: a final roll line's figures with every correction recorded so far (the roll itself
    never changes); ``corrections`` are their numbers in the roll, none for a line as finalized."""

    om_charge: Decimal
    credit_percent: Decimal
    credit: Decimal
    net: Decimal
    corrections: tuple[int, ...]
    first_installment: Decimal  # ¶12: the net split again, July carrying the odd cent
    second_installment: Decimal


def line_as_corrected(line: RollLine) -> CorrectedLine:
    """¶9: what a receipt or bill states as the year's levy and credit: the line plus its corrections'
    deltas, the credit percentage the newest one recorded (sec. 372), and the net split again by ¶12."""
    mine = list(RollCorrection.objects.numbered().filter(roll_line=line).order_by("pk"))
    om_charge = line.om_charge + sum((c.om_charge_delta.amount for c in mine), ZERO)
    credit = line.credit + sum((c.credit_delta.amount for c in mine), ZERO)
    net = line.net + sum((c.net_delta.amount for c in mine), ZERO)
    percent = next((c.credit_percent for c in reversed(mine) if c.credit_percent is not None), line.credit_percent)
    first, second = rules.installments(net=net) if mine else (line.first_installment, line.second_installment)
    return CorrectedLine(om_charge=om_charge, credit_percent=percent, credit=credit, net=net, first_installment=first,
                         second_installment=second, corrections=tuple(c.number for c in mine))
