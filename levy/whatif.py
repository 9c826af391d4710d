"""The what-if (a simulation: writes no estimate, levy or roll) as a job (issue 20).

At 100,000 parcels (a million lines for a larger district) the rules and the comparison with
last year's final roll take seconds to a minute: too long for a web request under gunicorn's
60 s timeout. The page queues ``levy_whatif`` (``parcels.jobs``), shows its progress, and renders
what the job stored: ``simulate`` keeps the worksheet figures, the roll's totals and the
comparison as JSON (amounts as strings); ``shown`` turns them back into Decimals for the page."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

from . import rules, selectors, services
from .models import Estimate, FiscalYear

LEVY_WHATIF = "levy_whatif"  # the procrastinate task (levy/tasks.py)
SHOWN = 100  # the parcels with the largest change listed on the page
AMOUNT_FIELDS = ("om_estimate", "reserve", "misc_income", "deficit", "surplus", "certified_credits")
SHEET_MONEY = ("om_estimate", "reserve", "credits", "deficit", "surplus", "misc_income", "k0", "subtotal", "safety_margin",
               "total_levy", "gravity_acres", "pumped_acres", "equivalent_acres", "rate_gravity", "rate_pumped")


def whatif_start(*, acting_user: Any, fiscal_year: str, amounts: dict[str, Decimal | None]) -> Any:
    """Queue a simulation of ``fiscal_year`` with ``amounts`` (the form's cleaned figures) for a
    worker; the job record (``parcels.models.Job``) is what the page follows."""
    from parcels.jobs import job_defer

    payload = {"fiscal_year": fiscal_year,
               "amounts": {name: (None if amounts.get(name) is None else str(amounts[name])) for name in AMOUNT_FIELDS}}
    return job_defer(kind=LEVY_WHATIF, payload=payload, acting_user=acting_user)


def simulate(*, fiscal_year: str, amounts: dict[str, str | None],
             progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """¶1–¶12 on the given figures and the registry as it is now, compared with last year's final
    roll; nothing is written. A refusal of the rules is ``{"refused": reason}``."""
    start = rules.fiscal_year_start(fiscal_year)
    year = FiscalYear.objects.filter(label=fiscal_year).first() or FiscalYear(label=fiscal_year, start=start)
    params = selectors.parameter_set_in_force(start)
    if params is None:
        return {"refused": "no legal parameters"}
    figures = {name: (Decimal(value) if value is not None else None) for name, value in amounts.items()}
    estimate = Estimate(  # never saved: only its amounts are read
        fiscal_year=year, om_estimate=figures["om_estimate"], reserve=figures["reserve"], misc_income=figures["misc_income"],
        deficit=figures["deficit"] or Decimal("0.00"), surplus=figures["surplus"] or Decimal("0.00"),
        certified_credits=figures.get("certified_credits"),
    )
    if progress:
        progress(0, 3)
    parcels, refs = services.parcel_inputs()
    if progress:
        progress(1, 3)
    try:
        result = services.compute(year=year, estimate=estimate, parcels=parcels, params=params)
    except services.LevyError as exc:
        return {"refused": str(exc)}
    if progress:
        progress(2, 3)
    sheet = result.worksheet
    stored: dict[str, Any] = {
        "worksheet": {**{name: str(getattr(sheet, name)) for name in SHEET_MONEY}, "credits_certified": sheet.credits_certified},
        "parcels_levied": result.parcels_levied, "line_count": len(result.lines),
        "roll_credits": str(result.roll_credits), "roll_net": str(result.roll_net),
        "safety_margin_rate": str(params.safety_margin_rate),
        **comparison(result, refs, start),
    }
    if progress:
        progress(3, 3)
    return stored


def comparison(result: rules.LevyComputation, refs: dict[str, tuple], start: date) -> dict[str, Any]:
    """Each parcel's net against last year's final roll: the counts, the totals and the ``SHOWN``
    parcels with the largest change (amounts as strings)."""
    previous = selectors.final_roll_nets(start=date(start.year - 1, 7, 1))
    stored: dict[str, Any] = {"previous_label": rules.fiscal_year_label(start.year - 1), "has_previous": previous is not None}
    if previous is None:
        return stored
    zero = Decimal("0.00")
    changes = []
    counts = {"up": 0, "down": 0, "same": 0, "new": 0, "gone": 0}
    before_total = sum((net for _charge, net in previous.values()), zero)
    for line in result.lines:
        old = previous.get(line.parcel_id)
        before = old[1] if old is not None else None
        delta = line.net - (before or zero)
        if before is None:
            counts["new"] += 1
        elif delta > 0:
            counts["up"] += 1
        elif delta < 0:
            counts["down"] += 1
        else:
            counts["same"] += 1
        if delta or before is None:
            changes.append((line, before, delta))
    on_roll = {line.parcel_id for line in result.lines}
    counts["gone"] = sum(1 for code in previous if code not in on_roll)
    changes.sort(key=lambda change: (-abs(change[2]), change[0].parcel_id))
    stored.update(
        changes=[{"parcel_id": line.parcel_id, "parcel_pk": refs[line.parcel_id][0], "owner_name": refs[line.parcel_id][3],
                  "levied": line.levied, "before": None if before is None else str(before), "after": str(line.net),
                  "delta": str(delta)} for line, before, delta in changes[:SHOWN]],
        changed=len(changes), counts=counts, before_total=str(before_total), after_total=str(result.roll_net),
        total_delta=str(result.roll_net - before_total), shown=SHOWN,
    )
    return stored


def shown(stored: dict[str, Any]) -> dict[str, Any]:
    """What the page renders from a finished job's result: the amounts as Decimals again."""
    sheet = SimpleNamespace(**{name: Decimal(stored["worksheet"][name]) for name in SHEET_MONEY},
                            credits_certified=stored["worksheet"]["credits_certified"])
    context: dict[str, Any] = {
        "result": {"worksheet": sheet, "parcels_levied": stored["parcels_levied"], "line_count": stored["line_count"],
                   "roll_credits": Decimal(stored["roll_credits"]), "roll_net": Decimal(stored["roll_net"])},
        "sheet": sheet, "safety_margin_rate": Decimal(stored["safety_margin_rate"]),
        "previous_label": stored["previous_label"], "has_previous": stored["has_previous"],
    }
    if stored["has_previous"]:
        context.update(
            changes=[SimpleNamespace(**{**change, "before": None if change["before"] is None else Decimal(change["before"]),
                                        "after": Decimal(change["after"]), "delta": Decimal(change["delta"])})
                     for change in stored["changes"]],
            changed=stored["changed"], counts=stored["counts"], before_total=Decimal(stored["before_total"]),
            after_total=Decimal(stored["after_total"]), total_delta=Decimal(stored["total_delta"]), shown=stored["shown"],
        )
    return context
