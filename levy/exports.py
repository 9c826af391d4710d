"""The roll as CSV/XLSX rows and the levy as a JSON-ready summary (pages and commands share these)."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from .models import Levy, RollLine
from .rules import CENT

ROLL_COLUMNS = (
    "parcel_id", "owner_name", "gravity_acres", "pumped_acres", "equivalent_acres", "levied", "reason",
    "om_charge", "credit_percent", "credit", "net", "first_installment", "second_installment",
)
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\n")


def safe_cell(value: str) -> str:
    r"""Neutralize spreadsheet formulas in text cells (CSV injection): ``=HYPERLINK(…)`` → ``'=HYPERLINK(…)``.

    A carriage return inside the text becomes a line feed: with ``lineterminator="\n"`` Python's
    csv writer quotes a field holding ``\n`` but not one holding a lone ``\r``, and a spreadsheet
    starts a new row at that ``\r``, so ``x\r=1+1`` would put a live ``=1+1`` at the start of a row."""
    if value.startswith(FORMULA_PREFIXES):
        value = "'" + value
    return value.replace("\r\n", "\n").replace("\r", "\n")


def roll_rows(levy: Levy) -> Iterator[list[str]]:
    lines = RollLine.objects.filter(levy=levy).order_by("parcel_code").values_list(
        "parcel_code", "owner_name", "gravity_acres", "pumped_acres", "equivalent_acres", "levied", "reason",
        "om_charge", "credit_percent", "credit", "net", "first_installment", "second_installment",
    )
    for code, owner, gravity, pumped, equivalent, levied, reason, charge, pct, credit, net, first, second in lines.iterator(chunk_size=10000):
        yield [safe_cell(code), safe_cell(owner), str(gravity), str(pumped), str(equivalent), "yes" if levied else "no",
               reason, str(charge), str(pct), str(credit), str(net), str(first), str(second)]


def acres_text(value: Decimal) -> str:
    """Acres without trailing zeros but with at least one decimal, as the worked examples write
    them (``500.0``, ``473.3``, ``127464.47635``): no precision is hidden, none is invented."""
    text = format(value.normalize(), "f")
    if "." not in text:
        text += ".0"
    return text


def levy_summary(levy: Levy) -> dict[str, Any]:
    """The levy as ``levy show --format json`` prints it: amounts as strings like ``"1234.56"``."""

    def money(field: str) -> str:
        return str(getattr(levy, field).amount.quantize(CENT))

    return {
        "fiscal_year": levy.fiscal_year.label,
        "status": levy.status,
        "om_estimate": money("om_estimate"),
        "reserve": money("reserve"),
        "credits": money("credits"),
        "credits_certified": levy.credits_certified,
        "deficit": money("deficit"),
        "surplus": money("surplus"),
        "misc_income": money("misc_income"),
        "subtotal": money("subtotal"),
        "safety_margin": money("safety_margin"),
        "total_levy": money("total_levy"),
        "gravity_acres": acres_text(levy.gravity_acres),
        "pumped_acres": acres_text(levy.pumped_acres),
        "equivalent_acres": acres_text(levy.equivalent_acres),
        "rate_gravity": str(levy.rate_gravity),
        "rate_pumped": str(levy.rate_pumped),
        "parcels_levied": levy.parcels_levied,
        "roll_total": money("roll_total"),
        "roll_credits": money("roll_credits"),
        "roll_net": money("roll_net"),
        "finalized_on": levy.finalized_on.isoformat() if levy.finalized_on else None,
        "finalized_late": levy.finalized_late,
    }
