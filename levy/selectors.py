"""Reads of the levy pages: QuerySets with their joins, filters applied inside, totals in SQL."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db.models import Count, DecimalField, F, Prefetch, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from parcels.kept import kept

from .filters import RollFilter
from .models import Estimate, FiscalYear, LegalParameterSet, Levy, RollLine

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


def estimate_certified_last(label: str) -> Estimate | None:
    """The figures last certified to the Secretary for the year ``label`` (the current estimate
    when certified, else the newest certified one it replaced), or ``None``: what the estimates
    page shows beside each field of the next year (issue 18, point 17)."""
    return (
        Estimate.objects.filter(fiscal_year__label=label, certified_at__isnull=False)
        .order_by("-certified_at", "-id").first()
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


ROLL_TOTALS_KEPT_SECONDS = 7 * 24 * 3600


def roll_totals_kept(levy: Levy, queryset: QuerySet[RollLine], *, pumped_weight: Decimal | None = None) -> dict[str, Any]:
    """``roll_totals`` of ``queryset`` (lines of ``levy``), kept in the shared cache: a levy's
    lines never change once stored (the database refuses any change to a final roll's; a draft is
    discarded whole, with its levy), so the sums of one filter of one levy hold as long as the levy
    (issue 20: the roll page summed 91,932 lines once or twice a view, 70 ms each). Inside a
    transaction, which may still roll the levy back, nothing is read or kept (``parcels.kept``)."""
    def compute() -> dict[str, Any]:
        return roll_totals(queryset, pumped_weight=pumped_weight)

    try:
        sql = str(queryset.order_by().query)
    except EmptyResultSet:
        return compute()
    return kept("levy:roll-totals", lambda: (levy.pk, levy.computed_at.isoformat(), sql, str(pumped_weight)), compute,
                timeout=ROLL_TOTALS_KEPT_SECONDS)


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
