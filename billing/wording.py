"""How billing explains its figures, in the active language (Spanish first, English through
gettext): the ¶12 surcharge rate (``½%``), how a surcharge was counted ("½% × 2 meses sobre
$6,930.90") and long dates ("1 de julio de 2026" / "1 July 2026"). Pure wording: no queries,
no writes; it reads ``billing.rules`` results only.

Charge labels: a charge's stored ``description`` is Spanish text (append-only rows keep it as the
fallback); pages, documents and the CLI show ``charge_label`` instead, rendered in the reader's
language from the charge's structured fields (kind, fiscal year, number, due date) and the stored
facts of the records that made it (its correction's number, its water deliveries), never parsed
back out of the description. ``event_text`` words the dated entries (a correction's lowering, a
give-back, *crédito aplicado*, a moved last day) the statement shows under a charge."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date
from decimal import Decimal
from typing import Any

from django.utils import formats
from django.utils.dateformat import format as date_format
from django.utils.dates import MONTHS
from django.utils.translation import get_language, ngettext
from django.utils.translation import gettext as _

from parcels.money import money_text

from . import rules

# The long date of documents and pages, per language key (``es`` / ``en``): "2 de marzo de 2027" /
# "2 March 2027", day first in both, as pages write it (``lajas_portal.formats.en.DATE_FORMAT``).
LONG_DATE = {"es": r"j \d\e F \d\e Y", "en": "j F Y"}

# Set while an English document is rendered (``billing.pdf.document_language``): its dates are
# all in one form, the long one ("2 March 2027"), also those inside worded entries that pages
# write d/m/Y (``short_date``). Spanish documents keep the forms the pages use.
_LONG_DATES_ONLY: ContextVar[bool] = ContextVar("lajas_long_dates_only", default=False)


@contextmanager
def long_dates_only(on: bool = True) -> Iterator[None]:
    """Within this block ``short_date`` writes the long form (an English document's dates)."""
    token = _LONG_DATES_ONLY.set(on)
    try:
        yield
    finally:
        _LONG_DATES_ONLY.reset(token)


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
        % {"rate": rate_label(rate), "n": months, "amount": money_text(unpaid)}
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
VOID_REFUND = "void_refund"  # issue 17: a refund paid out of a payment later voided, owed at once


def installment_month(number: int | None) -> str:
    """¶12: the month an installment falls due in (1 July, 2 January), in the active language
    (Django's month names: "julio" / "July")."""
    return str(MONTHS[7 if number == 1 else 1]) if number in (1, 2) else ""


def _frozen_name(description: str, named: str) -> str:
    """The name of a line frozen before the facts of its name were (older snapshots): in Spanish,
    the language it was stored in, its stored name as it was issued; in another language
    ``named``, the name its fields give."""
    return description if description and (get_language() or "es").startswith("es") else named


def charge_label(*, kind: str, fiscal_year: str, number: int | None = None, description: str = "",
                 due_date: date | str | None = None, correction: int | None = None, reason: str = "",
                 water_month: str = "", acre_feet: Decimal | str | None = None) -> str:
    """The name of a charge in the active language, from stored fields only: "2026-2027 plazo 1
    (julio)" / "2026-2027 installment 1 (July)"; a half raised by a correction, "Corrección n.º 1
    del padrón 2026-2027 (¶9): plazo 1 (julio)" (``correction``: its number in its roll); an
    older one-charge correction, "Corrección 2026-2027: <reason as typed>" (``reason``); a water
    sale, "Agua 10/2026: 4.000 acres-pie (sec. 374a)" (``water_month`` ``YYYY-MM`` and
    ``acre_feet`` of its deliveries); "Reembolso de crédito". The facts come from the records
    (``billing.models.charge_names``), never from ``description``, the stored Spanish text: that
    is what a kind this does not know shows, and what a Spanish reader reads of a line frozen
    before its facts were."""
    if kind == INSTALLMENT and number in (1, 2):
        month = installment_month(number)
        return _("%(fy)s plazo %(n)s (%(m)s)") % {"fy": fiscal_year, "n": number, "m": month}
    if kind == CORRECTION:
        if correction is not None and number in (1, 2):  # a half raised by a correction (billing.services.corrections)
            return _("Corrección n.º %(c)s del padrón %(fy)s (¶9): plazo %(n)s (%(m)s)") % {
                "c": correction, "fy": fiscal_year, "n": number, "m": installment_month(number)}
        if reason:
            return _("Corrección %(fy)s: %(r)s") % {"fy": fiscal_year, "r": reason}
        if number in (1, 2):
            return _frozen_name(description, _("Corrección suplementaria %(fy)s: plazo %(n)s (%(m)s)") % {
                "fy": fiscal_year, "n": number, "m": installment_month(number)})
        return _frozen_name(description, _("Corrección suplementaria %(fy)s") % {"fy": fiscal_year})
    if kind == WATER:
        if water_month and acre_feet is not None:
            year, month = water_month.split("-")
            return _("Agua %(m)02d/%(y)s: %(f)s acres-pie (sec. 374a)") % {"m": int(month), "y": year, "f": acre_feet}
        if due_date:  # billed the month before its due date (billing.services.water)
            due = date.fromisoformat(due_date) if isinstance(due_date, str) else due_date
            month, year = (due.month - 1, due.year) if due.month > 1 else (12, due.year - 1)
            return _frozen_name(description, _("Agua %(m)02d/%(y)s (sec. 374a)") % {"m": month, "y": year})
    if kind == REFUND:
        return _("Reembolso de crédito")
    if kind == VOID_REFUND and due_date:
        due = date.fromisoformat(due_date) if isinstance(due_date, str) else due_date
        return _("Reembolso pagado con un pago anulado (cargo del %(d)s)") % {"d": short_date(due)}
    return description


def _getter(item: object):
    return item.get if isinstance(item, dict) else lambda name, default=None: getattr(item, name, default)


def name_to_json(item: object) -> dict[str, Any]:
    """The stored facts of a line's name (``charge_label``'s ``correction``, ``reason``,
    ``water_month``, ``acre_feet``) as a snapshot stores them."""
    get = _getter(item)
    feet = get("acre_feet")
    return {"correction": get("correction"), "reason": get("reason", "") or "", "water_month": get("water_month", "") or "",
            "acre_feet": None if feet is None else str(feet)}


def name_from_json(item: dict[str, Any]) -> dict[str, Any]:
    """``name_to_json`` read back (a line stored before them has none)."""
    feet = item.get("acre_feet")
    return {"correction": item.get("correction"), "reason": item.get("reason", "") or "",
            "water_month": item.get("water_month", "") or "", "acre_feet": None if feet is None else Decimal(feet)}


def line_label(item: object) -> str:
    """``charge_label`` of a statement, receipt or snapshot line (an object with the fields, or
    the stored JSON dict of one)."""
    get = _getter(item)
    return charge_label(kind=get("kind", "") or "", fiscal_year=get("fiscal_year", "") or "", number=get("number"),
                        description=get("description", "") or "", due_date=get("due_date"), correction=get("correction"),
                        reason=get("reason", "") or "", water_month=get("water_month", "") or "", acre_feet=get("acre_feet"))


# --- The dated entries under a statement line (issue 11) -----------------------------------------

# ``accounts.StatementEvent.kind``: what a dated entry did to its charge.
LOWERED = "lowered"  # ¶9, ¶11: a correction lowered its principal (billing.models.PrincipalAdjustment)
GIVEN_BACK = "given_back"  # ¶9, ¶12: surcharge (and principal) it had been paid, released to the credit (GiveBack)
CREDIT_APPLIED = "credit_applied"  # ¶12, ¶13: credit paid to it (CreditApplication)
LAST_DAY_MOVED = "last_day_moved"  # ¶12: a closure moved its last day to pay (LastDayMove)
# Issue 17: a void's reversals (VoidReversal) of a give-back and of a crédito aplicado of the
# charge; ``paid_on`` is then the voided payment's date.
GIVE_BACK_VOIDED = "give_back_voided"
CREDIT_APPLIED_VOIDED = "credit_applied_voided"
EVENT_KINDS = (LOWERED, LAST_DAY_MOVED, GIVEN_BACK, CREDIT_APPLIED, CREDIT_APPLIED_VOIDED, GIVE_BACK_VOIDED)  # order on one day
# ``billing.rules.SOURCES``: what caused it.
SOURCE_CORRECTION, SOURCE_CLOSURE, SOURCE_PAYMENT = "correction", "closure", "payment"


def short_date(day: date | None) -> str:
    """A date as pages write it in the active language (d/m/Y in both); inside an English
    document (``long_dates_only``) the long form, "2 March 2027"."""
    if day and _LONG_DATES_ONLY.get() and (get_language() or "").startswith("en"):
        return long_date(day, "en")
    return formats.date_format(day, "SHORT_DATE_FORMAT") if day else ""


def _cause(*, by: bool, source: str, correction: int | None, roll: str, closure_day: date | None,
           paid_on: date | None) -> str:
    """What caused an entry, to follow "devuelto" (``by``: "por la corrección n.º 3 …") or
    "aplicado" ("de la corrección n.º 3 …", "del cierre …", "de un pago …")."""
    if source == SOURCE_CORRECTION:
        if by:
            return _("por la corrección n.º %(c)s del padrón %(fy)s") % {"c": correction, "fy": roll}
        return _("de la corrección n.º %(c)s del padrón %(fy)s") % {"c": correction, "fy": roll}
    if source == SOURCE_CLOSURE:
        if by:
            return _("por el cierre de oficinas del %(day)s") % {"day": short_date(closure_day)}
        return _("del cierre de oficinas del %(day)s") % {"day": short_date(closure_day)}
    return _("de un pago del %(day)s") % {"day": short_date(paid_on)}


def event_text(*, kind: str, entry_date: date, source: str, principal: Decimal, surcharge: Decimal,
               correction: int | None = None, roll: str = "", closure_day: date | None = None,
               paid_on: date | None = None, last_day: date | None = None) -> str:
    """A dated entry under the statement line of the charge it changed, in the active language,
    with the figures of its stored record:

    - lowered: "Corrección n.º 3 del padrón 2026-2027 (¶9), 15/10/2026: −$500.00; recargo
      recalculado: −$5.00" (``principal`` lowered; ``surcharge`` the line's surcharge it took
      away, omitted when none);
    - given back: "Recargo devuelto por la corrección n.º 3 del padrón 2026-2027, 15/10/2026:
      $5.00" (or "por el cierre de oficinas del 10/09/2026"), with the principal paid beyond the
      lowered principal ("; principal liberado al crédito: $500.00");
    - credit applied: "Crédito aplicado de la corrección n.º 3 del padrón 2026-2027, 15/10/2026:
      $120.00" (with the part that went to surcharge);
    - last day moved: "Cierre de oficinas del 10/09/2026 (¶12), 12/09/2026: último día para pagar
      movido al 11/09/2026"."""
    on = short_date(entry_date)
    cause = {"source": source, "correction": correction, "roll": roll, "closure_day": closure_day, "paid_on": paid_on}
    if kind == LOWERED:
        text = _("Corrección n.º %(c)s del padrón %(fy)s (¶9), %(d)s: −%(a)s") % {
            "c": correction, "fy": roll, "d": on, "a": money_text(principal)}
        if surcharge:
            text = _("%(entry)s; recargo recalculado: −%(s)s") % {"entry": text, "s": money_text(surcharge)}
        return text
    if kind == GIVEN_BACK:
        figures = {"cause": _cause(by=True, **cause), "d": on, "s": money_text(surcharge), "p": money_text(principal)}
        if surcharge and principal:
            return _("Recargo devuelto %(cause)s, %(d)s: %(s)s; principal liberado al crédito: %(p)s") % figures
        if principal:
            return _("Principal liberado al crédito %(cause)s, %(d)s: %(p)s") % figures
        return _("Recargo devuelto %(cause)s, %(d)s: %(s)s") % figures
    if kind == CREDIT_APPLIED:
        text = _("Crédito aplicado %(cause)s, %(d)s: %(a)s") % {
            "cause": _cause(by=False, **cause), "d": on, "a": money_text(principal + surcharge)}
        if surcharge:
            text = _("%(entry)s (%(s)s a recargo)") % {"entry": text, "s": money_text(surcharge)}
        return text
    if kind == LAST_DAY_MOVED:
        return _("Cierre de oficinas del %(day)s (¶12), %(d)s: último día para pagar movido al %(new)s") % {
            "day": short_date(closure_day), "d": on, "new": short_date(last_day)}
    if kind == GIVE_BACK_VOIDED:
        return _("Devolución revertida por la anulación del pago del %(paid)s, %(d)s: recargo %(s)s, principal %(p)s "
                 "vuelven a contar como pagados") % {
            "paid": short_date(paid_on), "d": on, "s": money_text(surcharge), "p": money_text(principal)}
    if kind == CREDIT_APPLIED_VOIDED:
        return _("Crédito aplicado revertido por la anulación del pago del %(paid)s, %(d)s: −%(a)s (%(s)s de recargo)") % {
            "paid": short_date(paid_on), "d": on, "a": money_text(principal + surcharge), "s": money_text(surcharge)}
    return ""
