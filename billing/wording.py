"""How billing explains its figures, in the active language (Spanish first, English through
gettext): the ¶12 surcharge rate (``½%``), how a surcharge was counted ("½% × 2 meses sobre
$6,930.90") and long dates ("1 de julio de 2026" / "July 1, 2026"). Pure wording: no queries,
no writes; it reads ``billing.rules`` results only."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date
from decimal import Decimal

from django.utils.dateformat import format as date_format
from django.utils.translation import ngettext

from . import rules

# The long date of documents and pages, per language key (``es`` / ``en``).
LONG_DATE = {"es": r"j \d\e F \d\e Y", "en": "F j, Y"}


def rate_label(rate: Decimal) -> str:
    """¶12: ``½%`` for the statutory rate, else the percentage."""
    return "½%" if rate == Decimal("0.005") else f"{(rate * 100).normalize():f}%"


def surcharge_groups(charge_state: rules.ChargeState) -> list[list]:
    """¶12: runs of months with the same unpaid principal, ``[[months, "unpaid"], …]`` (JSON-ready)."""
    groups: list[list] = []
    for _start, unpaid in charge_state.surcharge_basis:
        if groups and groups[-1][1] == unpaid:
            groups[-1][0] += 1
        else:
            groups.append([1, unpaid])
    return [[months, str(unpaid)] for months, unpaid in groups]


def surcharge_text(groups: Iterable[Sequence], rate: Decimal) -> str:
    """¶12: how a surcharge was counted, in the active language, e.g. "½% × 2 meses sobre $6,930.90"."""
    return " + ".join(
        ngettext("%(rate)s × %(n)s mes sobre %(amount)s", "%(rate)s × %(n)s meses sobre %(amount)s", months)
        % {"rate": rate_label(rate), "n": months, "amount": f"${Decimal(unpaid):,.2f}"}
        for months, unpaid in groups
    )


def surcharge_explanation(charge_state: rules.ChargeState, rate: Decimal) -> str:
    """¶12: how a charge's surcharge was counted (empty when none accrued), each run of months at
    the rate in force on their first days (``rate`` only for a state without per-period rates)."""
    if len(charge_state.surcharge_rates) != len(charge_state.surcharge_basis):
        return surcharge_text(surcharge_groups(charge_state), rate)
    return " + ".join(
        surcharge_text([[months, str(unpaid)]], run_rate) for months, run_rate, unpaid in rules.surcharge_runs(charge_state)
    )


def long_date(day: date | None, lang_key: str) -> str:
    """A date written out in the document's language (``lang_key`` ``es`` or ``en``)."""
    return date_format(day, LONG_DATE[lang_key]) if day else ""
