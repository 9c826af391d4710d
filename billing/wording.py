"""How billing explains its figures, in the active language (Spanish first, English through
gettext): the ¶12 surcharge rate (``½%``), how a surcharge was counted ("½% × 2 meses sobre
$6,930.90") and long dates ("1 de julio de 2026" / "July 1, 2026"). Pure wording: no queries,
no writes; it reads ``billing.rules`` results only.

Charge labels: a charge's stored ``description`` is Spanish text (append-only rows keep it as the
fallback); pages, documents and the CLI show ``charge_label`` instead, rendered in the reader's
language from the charge's structured fields (kind, fiscal year, number, due date)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date
from decimal import Decimal

from django.utils.dateformat import format as date_format
from django.utils.dates import MONTHS
from django.utils.translation import gettext as _
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


def surcharge_runs(charge_state: rules.ChargeState, rate: Decimal) -> list[list]:
    """¶12: how a charge's surcharge was counted, as structured runs ``[[months, "rate", "unpaid"], …]``
    (JSON-ready: what snapshots freeze, so a document is worded in any language later), each run
    of months at the rate in force on their first days (``rate`` only for a state without
    per-period rates)."""
    if len(charge_state.surcharge_rates) != len(charge_state.surcharge_basis):
        return [[months, str(rate), unpaid] for months, unpaid in surcharge_groups(charge_state)]
    return [[months, str(run_rate), str(unpaid)] for months, run_rate, unpaid in rules.surcharge_runs(charge_state)]


def surcharge_runs_text(runs: Iterable[Sequence]) -> str:
    """¶12: ``surcharge_runs`` worded in the active language ("½% × 2 meses sobre $6,930.90")."""
    return " + ".join(surcharge_text([[months, unpaid]], Decimal(run_rate)) for months, run_rate, unpaid in runs)


def surcharge_explanation(charge_state: rules.ChargeState, rate: Decimal) -> str:
    """¶12: how a charge's surcharge was counted (empty when none accrued), in the active language."""
    return surcharge_runs_text(surcharge_runs(charge_state, rate))


def basis_text(item: object) -> str:
    """How a stored line's surcharge was counted, in the active language: worded from its
    ``surcharge_runs`` when the snapshot froze them, else the text it froze (``surcharge_basis``)."""
    get = item.get if isinstance(item, dict) else lambda name, default=None: getattr(item, name, default)
    runs = get("surcharge_runs")
    return surcharge_runs_text(runs) if runs else (get("surcharge_basis", "") or "")


def long_date(day: date | None, lang_key: str) -> str:
    """A date written out in the document's language (``lang_key`` ``es`` or ``en``)."""
    return date_format(day, LONG_DATE[lang_key]) if day else ""


# ``Charge.Kind`` values (billing.models), named here so wording stays below the models.
INSTALLMENT, CORRECTION, WATER, REFUND = "installment", "correction", "water", "refund"
# The Spanish descriptions the services store (billing.services.water, .corrections): the facts
# a label needs that no structured field carries (acre-feet; the reason typed by staff).
_WATER = re.compile(r"^(?:Agua|Water) (?P<month>\d{2})/(?P<year>\d{4}): (?P<feet>[\d.,]+) ")
_NUMBERED_CORRECTION = re.compile(r"^Corrección n\.º (?P<correction>\d+) del padrón ")
_CORRECTION_REASON = re.compile(r"^(?:Corrección|Correction) [^:]*: (?P<reason>.*)$", re.DOTALL)


def installment_month(number: int | None) -> str:
    """¶12: the month an installment falls due in (1 July, 2 January), in the active language
    (Django's month names: "julio" / "July")."""
    return str(MONTHS[7 if number == 1 else 1]) if number in (1, 2) else ""


def charge_label(*, kind: str, fiscal_year: str, number: int | None = None, description: str = "",
                 due_date: date | str | None = None) -> str:
    """The name of a charge in the active language: "2026-2027 plazo 1 (julio)" / "2026-2027
    installment 1 (July)", "Corrección 2026-2027: <reason as typed>", "Agua 10/2026: 4 acres-pie
    (sec. 374a)", "Reembolso de crédito". ``description`` (the stored Spanish text) is the
    fallback for a kind this does not know."""
    if kind == INSTALLMENT and number in (1, 2):
        month = installment_month(number)
        return _("%(fy)s plazo %(n)s (%(m)s)") % {"fy": fiscal_year, "n": number, "m": month}
    if kind == CORRECTION:
        numbered = _NUMBERED_CORRECTION.match(description or "")
        if numbered and number in (1, 2):  # a half raised by a correction (billing.services.corrections)
            return _("Corrección n.º %(c)s del padrón %(fy)s (¶9): plazo %(n)s (%(m)s)") % {
                "c": numbered["correction"], "fy": fiscal_year, "n": number, "m": installment_month(number)}
        found = _CORRECTION_REASON.match(description or "")
        reason = found["reason"] if found else ""
        if reason:
            return _("Corrección %(fy)s: %(r)s") % {"fy": fiscal_year, "r": reason}
        return _("Corrección suplementaria %(fy)s") % {"fy": fiscal_year}
    if kind == WATER:
        found = _WATER.match(description or "")
        if found:
            return _("Agua %(m)02d/%(y)s: %(f)s acres-pie (sec. 374a)") % {"m": int(found["month"]), "y": found["year"], "f": found["feet"]}
        if due_date:  # billed the month before its due date (billing.services.water)
            due = date.fromisoformat(due_date) if isinstance(due_date, str) else due_date
            month, year = (due.month - 1, due.year) if due.month > 1 else (12, due.year - 1)
            return _("Agua %(m)02d/%(y)s (sec. 374a)") % {"m": month, "y": year}
    if kind == REFUND:
        return _("Reembolso de crédito")
    return description


def line_label(item: object) -> str:
    """``charge_label`` of a statement, receipt or snapshot line (an object with the fields, or
    the stored JSON dict of one)."""
    get = item.get if isinstance(item, dict) else lambda name, default=None: getattr(item, name, default)
    return charge_label(kind=get("kind", "") or "", fiscal_year=get("fiscal_year", "") or "", number=get("number"),
                        description=get("description", "") or "", due_date=get("due_date"))
