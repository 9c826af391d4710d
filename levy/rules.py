"""Pure rules of the O&M irrigation levy (22 LPRA, the Lajas Valley levy section, ¶1–¶12).

Decimal in, Decimal or frozen dataclasses out. Nothing here imports Django, reads settings,
looks at the clock or does I/O, so every figure can be recomputed years later from the inputs
stored on the roll. Paragraph numbers refer to ``shared/statute/README.md``.

Arithmetic: money is carried internally as integer cents, acreage as integers in a common
decimal unit, and the one quotient the statute solves for (factor (3), the credits) as an exact
``Fraction``. Rounding is half-up and happens only where a rule names it: the credits factor,
the safety margin, each parcel's charge (largest remainder), each parcel's credit, the
installment split and the displayed rates. Floats are refused everywhere.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import date, datetime, timedelta
from decimal import (
    ROUND_HALF_UP,
    Context,
    Decimal,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
    localcontext,
)
from fractions import Fraction
from operator import attrgetter, itemgetter

CENT = Decimal("0.01")  # dollars; every amount on the roll is a whole number of cents
RATE_QUANTUM = Decimal("0.000001")  # ¶6: rates per acre are shown to a millionth of a dollar

# Exact arithmetic for acreage sums: any result that would need rounding raises instead of
# silently losing a digit, whatever the caller's thread-local decimal context says.
_EXACT = Context(
    prec=200,
    rounding=ROUND_HALF_UP,
    traps=[InvalidOperation, DivisionByZero, Overflow, Inexact],
)

MINUS = "\u2212"  # the minus sign printed on worksheet lines

INCLUSION_TRIAL = "trial"
INCLUSION_PERMANENT = "permanent"  # ¶4: only permanently included land bears the levy
INCLUSION_EXCLUDED = "excluded"
INCLUSIONS = (INCLUSION_TRIAL, INCLUSION_PERMANENT, INCLUSION_EXCLUDED)

REASON_LEVIED = "levied"
REASON_NO_WATER_DATE = "no_water_date"  # ¶8: no water received or offered yet
REASON_WATER_TOO_RECENT = "water_too_recent"  # ¶8, ¶10: twelve months not yet run by July 1

MONTH_CALENDAR = "calendar"  # ¶8, ¶10: twelve calendar months, clamped to month end
MONTH_THIRTY_DAY = "thirty_day"  # ¶8, ¶10: alternative reading, a month is 30 days
MONTH_CONVENTIONS = (MONTH_CALENDAR, MONTH_THIRTY_DAY)


def round_cents(amount: Decimal) -> Decimal:
    """Half-up to the cent, the only rounding mode the statute's amounts use (¶3, ¶9, ¶12)."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def add_months(start: date, months: int) -> date:
    """¶10, ¶12: ``start`` plus whole calendar months, clamped to the end of a shorter month.

    2025-08-31 + 1 month is 2025-09-30; 2024-02-29 + 12 months is 2025-02-28.
    """
    month_index = start.month - 1 + months
    year = start.year + month_index // 12
    month = month_index % 12 + 1
    day = min(start.day, calendar.monthrange(year, month)[1])
    return date(year, month, day)


class LevyRuleError(ValueError):
    """¶1–¶12: the inputs do not allow a levy under the statute; the message says why."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_plain_date(value: object) -> bool:
    # datetime is a date subclass but cannot be compared with a date.
    return isinstance(value, date) and not isinstance(value, datetime)


def _is_finite_decimal(value: object) -> bool:
    return isinstance(value, Decimal) and value.is_finite()


# ---------------------------------------------------------------------------------------------
# Legal parameters
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LegalParameters:
    """¶1–¶12: the statutory constants, dated so a later amendment can get its own instance."""

    effective_from: date = date(1953, 6, 10)  # date the levy section took effect
    reserve_cap_rate: Decimal = Decimal("0.02")  # ¶1(2): reserve may not exceed 2% of O&M
    safety_margin_rate: Decimal = Decimal("0.02")  # ¶3: margin against late collections
    pumped_weight: Decimal = Decimal("0.5")  # ¶5, ¶6: landowner-pumped acres count half
    water_months: int = 12  # ¶8, ¶10: months of water before the levy starts
    month_convention: str = MONTH_CALENDAR  # ¶8, ¶10: "calendar" or "thirty_day"
    grace_days: int = 60  # ¶12: days after the due date before a levy is delinquent
    surcharge_rate: Decimal = Decimal("0.005")  # ¶12: per month or fraction of delinquency

    def __post_init__(self) -> None:
        if not _is_plain_date(self.effective_from):
            raise LevyRuleError("effective_from must be a date.")
        for name in ("reserve_cap_rate", "safety_margin_rate", "surcharge_rate"):
            value = getattr(self, name)
            if not _is_finite_decimal(value) or value < 0 or value >= 1:
                raise LevyRuleError(f"{name} must be a Decimal from 0 up to (not including) 1.")
        if not _is_finite_decimal(self.pumped_weight) or not 0 < self.pumped_weight <= 1:
            raise LevyRuleError("pumped_weight must be a Decimal above 0 and at most 1.")
        for name in ("water_months", "grace_days"):
            value = getattr(self, name)
            if not _is_int(value) or value < 0:
                raise LevyRuleError(f"{name} must be a non-negative whole number.")
        if self.month_convention not in MONTH_CONVENTIONS:
            raise LevyRuleError(f"month_convention must be one of {', '.join(MONTH_CONVENTIONS)}, not {self.month_convention!r}.")


STATUTE = LegalParameters()


# ---------------------------------------------------------------------------------------------
# Fiscal years
# ---------------------------------------------------------------------------------------------

_FISCAL_YEAR_LABEL = re.compile(r"(\d{4})-(\d{4})", re.ASCII)


def fiscal_year_start(label: str) -> date:
    """¶1(1), ¶11: the July 1 that opens the fiscal year written ``"2026-2027"``."""
    if not isinstance(label, str):
        raise LevyRuleError(f"A fiscal year label must be text like 2026-2027, not {label!r}.")
    match = _FISCAL_YEAR_LABEL.fullmatch(label)
    if match is None:
        raise LevyRuleError(f"Fiscal year {label!r} is not written like 2026-2027.")
    first, second = int(match.group(1)), int(match.group(2))
    if first < 1 or second != first + 1:
        raise LevyRuleError(f"Fiscal year {label!r} must run from one year to the next, like 2026-2027.")
    return date(first, 7, 1)


def fiscal_year_label(start_year: int) -> str:
    """¶1(1), ¶11: the label ``"2026-2027"`` of the fiscal year opening July 1 of ``start_year``."""
    if not _is_int(start_year) or not 1 <= start_year <= 9998:
        raise LevyRuleError(f"A fiscal year must start in a year from 1 to 9998, not {start_year!r}.")
    return f"{start_year:04d}-{start_year + 1:04d}"


def _check_fiscal_year(fiscal_year: date, params: LegalParameters) -> None:
    if not _is_plain_date(fiscal_year) or (fiscal_year.month, fiscal_year.day) != (7, 1):
        raise LevyRuleError(f"A fiscal year starts on a July 1; {fiscal_year!r} is not one.")
    if fiscal_year < params.effective_from:
        raise LevyRuleError(
            f"These legal parameters take effect on {params.effective_from.isoformat()}, "
            f"after fiscal year {fiscal_year_label(fiscal_year.year)} begins."
        )


# ---------------------------------------------------------------------------------------------
# Who pays (¶4, ¶8, ¶10)
# ---------------------------------------------------------------------------------------------


def water_period_end(*, water_since: date, params: LegalParameters = STATUTE) -> date:
    """¶8, ¶10: the day the parcel completes its months of water under the month convention."""
    if not _is_plain_date(water_since):
        raise LevyRuleError(f"The water date must be a date, not {water_since!r}.")
    try:
        if params.month_convention == MONTH_THIRTY_DAY:
            return water_since + timedelta(days=30 * params.water_months)
        return add_months(water_since, params.water_months)
    except (OverflowError, ValueError) as exc:
        raise LevyRuleError(f"The water date {water_since.isoformat()} is out of range.") from exc


def levy_start(*, water_since: date, params: LegalParameters = STATUTE) -> date:
    """¶10: the first July 1 from which the parcel pays, on or after its months of water end.

    A parcel whose twelve months end exactly on a July 1 pays from that July 1: water from
    2025-07-01 pays in 2026-2027, water from 2025-07-02 first pays in 2027-2028.
    """
    end = water_period_end(water_since=water_since, params=params)
    july_first = date(end.year, 7, 1)
    if end <= july_first:
        return july_first
    if end.year >= 9999:
        raise LevyRuleError(f"The water date {water_since.isoformat()} is out of range.")
    return date(end.year + 1, 7, 1)


@dataclass(frozen=True, slots=True)
class ParcelInput:
    """¶4, ¶5, ¶7, ¶9: one parcel of the registry as the levy needs it.

    Acres are exact Decimals; ``credit_percent`` is 0–100 (25 means a quarter of the levy).
    """

    parcel_id: str
    inclusion: str  # "trial", "permanent" or "excluded"
    gravity_acres: Decimal
    pumped_acres: Decimal
    water_since: date | None
    credit_percent: Decimal = Decimal(0)

    def __post_init__(self) -> None:
        if not isinstance(self.parcel_id, str) or not self.parcel_id:
            raise LevyRuleError(f"A parcel id must be non-empty text, not {self.parcel_id!r}.")
        if self.inclusion not in INCLUSIONS:
            raise LevyRuleError(
                f"Parcel {self.parcel_id}: inclusion must be one of {', '.join(INCLUSIONS)}, not {self.inclusion!r}."
            )
        for name in ("gravity_acres", "pumped_acres"):
            value = getattr(self, name)
            if not _is_finite_decimal(value) or value < 0:
                raise LevyRuleError(f"Parcel {self.parcel_id}: {name} must be a non-negative Decimal, not {value!r}.")
        if not _is_finite_decimal(self.credit_percent) or not 0 <= self.credit_percent <= 100:
            raise LevyRuleError(
                f"Parcel {self.parcel_id}: credit_percent must be a Decimal from 0 to 100, not {self.credit_percent!r}."
            )
        if self.water_since is not None and not _is_plain_date(self.water_since):
            raise LevyRuleError(f"Parcel {self.parcel_id}: water_since must be a date or None, not {self.water_since!r}.")


@dataclass(frozen=True, slots=True)
class Eligibility:
    """¶8, ¶10: whether a permanent parcel pays this fiscal year, and the reason code."""

    levied: bool
    reason: str  # "levied", "no_water_date" or "water_too_recent"


_LEVIED = Eligibility(levied=True, reason=REASON_LEVIED)
_NO_WATER_DATE = Eligibility(levied=False, reason=REASON_NO_WATER_DATE)
_WATER_TOO_RECENT = Eligibility(levied=False, reason=REASON_WATER_TOO_RECENT)


def eligibility(*, parcel: ParcelInput, fiscal_year: date, params: LegalParameters = STATUTE) -> Eligibility | None:
    """¶4, ¶8, ¶10: whether ``parcel`` pays in the fiscal year opening ``fiscal_year``.

    ``None`` for trial and excluded parcels, which are not on the roll at all (¶4).
    """
    _check_fiscal_year(fiscal_year, params)
    if parcel.inclusion != INCLUSION_PERMANENT:
        return None
    return _permanent_eligibility(parcel, fiscal_year, params)


def _permanent_eligibility(parcel: ParcelInput, fiscal_year: date, params: LegalParameters) -> Eligibility:
    """¶8, ¶10 for a permanent parcel, the fiscal year already checked."""
    if parcel.water_since is None:
        return _NO_WATER_DATE
    start = levy_start(water_since=parcel.water_since, params=params)
    return _LEVIED if start <= fiscal_year else _WATER_TOO_RECENT


def equivalent_acres(*, gravity_acres: Decimal, pumped_acres: Decimal, params: LegalParameters = STATUTE) -> Decimal:
    """¶5: gravity acres plus the pumped weight (50%) of pumped acres, exact."""
    for name, value in (("gravity_acres", gravity_acres), ("pumped_acres", pumped_acres)):
        if not _is_finite_decimal(value) or value < 0:
            raise LevyRuleError(f"{name} must be a non-negative Decimal, not {value!r}.")
    return _EXACT.add(gravity_acres, _EXACT.multiply(pumped_acres, params.pumped_weight))


# ---------------------------------------------------------------------------------------------
# Worksheet (¶1–¶6)
# ---------------------------------------------------------------------------------------------


def reserve_cap(*, om_estimate: Decimal, params: LegalParameters = STATUTE) -> Decimal:
    """¶1(2): the largest reserve allowed, 2% of the O&M estimate half-up to the cent."""
    cents = _cents(om_estimate, "om_estimate")
    return _dollars(_half_up(Fraction(params.reserve_cap_rate) * cents))


@dataclass(frozen=True, slots=True)
class WorksheetLine:
    """¶1–¶4: one printed line of the worksheet, its legal basis and its direction."""

    paragraph: str  # e.g. "¶1(1)"
    key: str  # the Worksheet field it shows, e.g. "om_estimate"
    label: str  # English label for the worksheet and the receipts
    amount: Decimal  # dollars, whole cents, never negative
    sign: str  # "+" adds, "−" subtracts, "=" is a result


# (key, paragraph, label, sign) in the order of the worked examples.
_LINE_SPECS: tuple[tuple[str, str, str, str], ...] = (
    ("om_estimate", "¶1(1)", "O&M estimate", "+"),
    ("reserve", "¶1(2)", "reserve fund", "+"),
    ("credits", "¶1(3)", "credits for ceded water rights", "+"),
    ("deficit", "¶2", "deficit", "+"),
    ("surplus", "¶2", "surplus", MINUS),
    ("misc_income", "¶3", "miscellaneous income", MINUS),
    ("subtotal", "¶3", "subtotal", "="),
    ("safety_margin", "¶3", "safety margin against late collections", "+"),
    ("total_levy", "¶4", "total levy", "="),
)
WORKSHEET_LINE_KEYS = tuple(spec[0] for spec in _LINE_SPECS)


@dataclass(frozen=True)
class Worksheet:
    """¶1–¶6: the Secretary's computation of the total levy and the rates per acre.

    Amounts are dollars in whole cents. Acreage sums run over the parcels that pay this year
    and are exact. ``lines`` are the printed rows; ``verify()`` (run on construction) checks
    that the subtotal and the total recompute from them.
    """

    om_estimate: Decimal  # ¶1(1)
    reserve: Decimal  # ¶1(2)
    credits: Decimal  # ¶1(3), solved or certified
    deficit: Decimal  # ¶2
    surplus: Decimal  # ¶2
    misc_income: Decimal  # ¶3
    k0: Decimal  # ¶1–¶3 before credits: O&M + reserve + deficit − surplus − misc. income
    subtotal: Decimal  # ¶3: the amount the safety margin is taken on; never negative
    safety_margin: Decimal  # ¶3
    total_levy: Decimal  # ¶4
    credits_certified: bool  # ¶1(3): True when the Authority certified the credits amount
    gravity_acres: Decimal  # ¶5
    pumped_acres: Decimal  # ¶5
    equivalent_acres: Decimal  # ¶5
    rate_gravity: Decimal  # ¶6, per gravity acre, 6 decimals
    rate_pumped: Decimal  # ¶6, per pumped acre, 6 decimals
    lines: tuple[WorksheetLine, ...]

    def __post_init__(self) -> None:
        self.verify()

    def verify(self) -> None:
        """¶1–¶4: recompute the subtotal and the total from the lines; raise if they disagree."""
        keys = tuple(line.key for line in self.lines)
        if keys != WORKSHEET_LINE_KEYS:
            raise LevyRuleError(f"Worksheet lines are {keys}, expected {WORKSHEET_LINE_KEYS}.")
        for line, (_key, paragraph, _label, sign) in zip(self.lines, _LINE_SPECS, strict=True):
            if (line.paragraph, line.sign) != (paragraph, sign):
                raise LevyRuleError(f"Worksheet line {line.key} must be {sign} under {paragraph}.")
            if not _is_finite_decimal(line.amount) or line.amount < 0:
                raise LevyRuleError(f"Worksheet line {line.key} must be a non-negative amount.")
            if line.amount != round_cents(line.amount):
                raise LevyRuleError(f"Worksheet line {line.key} is not a whole number of cents.")
            if line.amount != getattr(self, line.key):
                raise LevyRuleError(
                    f"Worksheet line {line.key} shows {line.amount}, the worksheet holds {getattr(self, line.key)}."
                )
        expected_k0 = self.om_estimate + self.reserve + self.deficit - self.surplus - self.misc_income
        if self.k0 != expected_k0:
            raise LevyRuleError(f"Worksheet k0 is {self.k0}, the lines give {expected_k0}.")
        running = Decimal("0.00")
        for line in self.lines:
            if line.key == "subtotal":
                # ¶3, ¶4: a levy is never negative; a net surplus leaves nothing to levy.
                running = max(running, Decimal("0.00"))
                if running != self.subtotal:
                    raise LevyRuleError(f"Worksheet subtotal is {self.subtotal}, the lines add to {running}.")
            elif line.key == "total_levy":
                if running != self.total_levy:
                    raise LevyRuleError(f"Worksheet total is {self.total_levy}, the lines add to {running}.")
            elif line.sign == MINUS:
                running -= line.amount
            else:
                running += line.amount


# ---------------------------------------------------------------------------------------------
# The roll (¶7, ¶9, ¶12)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RollLine:
    """¶9: one permanent parcel's row on the tax roll; amounts in dollars, whole cents.

    Parcels that do not pay yet (¶8, ¶10) appear with ``levied`` False, a reason code and
    zero amounts; their acreage is shown as registered but is not in the worksheet's sums.
    """

    parcel_id: str
    levied: bool
    reason: str  # "levied", "no_water_date" or "water_too_recent"
    gravity_acres: Decimal
    pumped_acres: Decimal
    equivalent_acres: Decimal  # ¶5
    om_charge: Decimal  # ¶9: the parcel's share of the total levy
    credit_percent: Decimal  # ¶7: 0–100
    credit: Decimal  # ¶7, ¶9: credit_percent of om_charge, half-up to the cent
    net: Decimal  # om_charge − credit
    first_installment: Decimal  # ¶12: due July 1, carries the odd cent
    second_installment: Decimal  # ¶12: due January 1


_ROLL_LINE_FIELDS = frozenset(field.name for field in fields(RollLine))


def _roll_line(**values: object) -> RollLine:
    """A RollLine built for the per-parcel loop of ``compute_levy``; equal to ``RollLine(**values)``.

    A frozen dataclass's ``__init__`` sets each of the twelve fields through
    ``object.__setattr__``; filling the instance dict at once makes a 100,000-parcel roll
    about a quarter faster. Every field must be given.
    """
    if values.keys() != _ROLL_LINE_FIELDS:
        raise TypeError(f"A roll line needs exactly the fields {sorted(_ROLL_LINE_FIELDS)}.")
    line = object.__new__(RollLine)
    line.__dict__.update(values)
    return line


@dataclass(frozen=True)
class LevyComputation:
    """¶1–¶12: the worksheet and the roll of one fiscal year, with the roll's totals."""

    worksheet: Worksheet
    lines: tuple[RollLine, ...]  # permanent parcels only, sorted by parcel_id
    roll_total: Decimal  # Σ om_charge, equal to worksheet.total_levy
    roll_credits: Decimal  # Σ credit
    roll_net: Decimal  # Σ net
    credits_gap: Decimal  # worksheet.credits − roll_credits (rounding, or certified amount)
    parcels_levied: int

    def __post_init__(self) -> None:
        if self.roll_total != self.worksheet.total_levy:
            raise LevyRuleError(f"The roll adds to {self.roll_total}, the levy is {self.worksheet.total_levy}.")
        if self.roll_net + self.roll_credits != self.roll_total:
            raise LevyRuleError("The roll's net and credits do not add to its charges.")
        if self.credits_gap != self.worksheet.credits - self.roll_credits:
            raise LevyRuleError("The credits gap does not match the worksheet and the roll.")


def installments(*, net: Decimal) -> tuple[Decimal, Decimal]:
    """¶12: the July 1 and January 1 halves of ``net``; the July half carries the odd cent."""
    cents = _cents(net, "net")
    second = cents // 2
    return _dollars(cents - second), _dollars(second)


def largest_remainder_allocation(*, total: Decimal, weights: Sequence[tuple[str, Decimal | Fraction]]) -> dict[str, Decimal]:
    """¶9: split ``total`` in proportion to ``weights`` in whole cents that add up exactly.

    Every exact share is floored to the cent; the cents left over go one each to the largest
    remainders, ties to the ascending id. Returns the amounts in the order of ``weights``.
    """
    total_cents = _cents(total, "total")
    pairs = list(weights)
    for item in pairs:
        if not isinstance(item, tuple) or len(item) != 2 or not isinstance(item[0], str):
            raise LevyRuleError(f"Each weight must be an (id, amount) pair, not {item!r}.")
    ordered = sorted(pairs, key=itemgetter(0))
    if any(a[0] == b[0] for a, b in zip(ordered, ordered[1:], strict=False)):
        raise LevyRuleError("Allocation ids must be unique.")
    integer_weights, _unit = _integer_weights([weight for _id, weight in ordered])
    cents = dict(zip((key for key, _w in ordered), _allocate(total_cents, integer_weights), strict=True))
    return {key: _dollars(cents[key]) for key, _weight in pairs}


def compute_levy(
    *,
    fiscal_year: date,
    om_estimate: Decimal,
    reserve: Decimal,
    misc_income: Decimal,
    deficit: Decimal = Decimal(0),
    surplus: Decimal = Decimal(0),
    certified_credits: Decimal | None = None,
    parcels: Iterable[ParcelInput],
    params: LegalParameters = STATUTE,
) -> LevyComputation:
    """¶1–¶12: the worksheet and the roll for the fiscal year opening ``fiscal_year``.

    Factor (3) of ¶1 is either certified (``certified_credits``) or solved so that it equals
    the credits the roll grants: with k the credit-weighted share of equivalent acres and
    m = 1 + the safety margin rate, L = m·K0 / (1 − m·k) exactly and credits = round(k·L).
    """
    if not isinstance(params, LegalParameters):
        raise LevyRuleError("params must be LegalParameters.")
    _check_fiscal_year(fiscal_year, params)
    om_cents = _cents(om_estimate, "om_estimate")
    reserve_cents = _cents(reserve, "reserve")
    misc_cents = _cents(misc_income, "misc_income")
    deficit_cents = _cents(deficit, "deficit")
    surplus_cents = _cents(surplus, "surplus")
    if deficit_cents and surplus_cents:
        raise LevyRuleError("The Operating Fund has either a deficit or a surplus, not both (¶2).")
    cap_cents = _half_up(Fraction(params.reserve_cap_rate) * om_cents)
    if reserve_cents > cap_cents:
        raise LevyRuleError(
            f"The reserve {reserve} exceeds its cap of {_dollars(cap_cents)}, "
            f"{(params.reserve_cap_rate * 100).normalize()}% of the O&M estimate (¶1(2))."
        )
    certified_cents = None if certified_credits is None else _cents(certified_credits, "certified_credits")

    # ¶4, ¶8, ¶10: the permanent parcels are on the roll; those with a year of water pay.
    seen: set[str] = set()
    on_roll: list[ParcelInput] = []
    for parcel in parcels:
        if not isinstance(parcel, ParcelInput):
            raise LevyRuleError(f"Parcels must be ParcelInput, not {type(parcel).__name__}.")
        if parcel.parcel_id in seen:
            raise LevyRuleError(f"Parcel {parcel.parcel_id} appears twice.")
        seen.add(parcel.parcel_id)
        if parcel.inclusion == INCLUSION_PERMANENT:
            on_roll.append(parcel)
    on_roll.sort(key=attrgetter("parcel_id"))
    # ¶5: equivalent acres of the paying parcels only. Registries share few distinct water
    # dates, so each date's status is worked out once.
    by_water_date: dict[date | None, Eligibility] = {None: _NO_WATER_DATE}
    statuses: list[Eligibility] = []
    paying: list[ParcelInput] = []
    paying_acres: list[Decimal] = []
    pumped_weight = params.pumped_weight
    with localcontext(_EXACT):
        for parcel in on_roll:
            status = by_water_date.get(parcel.water_since)
            if status is None:
                status = by_water_date[parcel.water_since] = _permanent_eligibility(parcel, fiscal_year, params)
            statuses.append(status)
            if status.levied:
                paying.append(parcel)
                paying_acres.append(parcel.gravity_acres + parcel.pumped_acres * pumped_weight)
    integer_weights, unit = _integer_weights(paying_acres)
    total_weight = sum(integer_weights)
    if total_weight == 0:
        raise LevyRuleError(
            f"No parcel pays in {fiscal_year_label(fiscal_year.year)}: "
            "the paying acreage is zero, so no rate per acre exists (¶5, ¶6)."
        )

    # ¶1–¶3: the worksheet, in cents.
    k0_cents = om_cents + reserve_cents + deficit_cents - surplus_cents - misc_cents
    margin_rate = Fraction(params.safety_margin_rate)
    if certified_cents is not None:
        # ¶1(3), ¶3, ¶4: when the certified credits do not lift the subtotal above zero,
        # nothing is levied and so no credit is owed: factor (3) is shown as 0.00 with the
        # subtotal, the margin and the total (docs/interpretations.md).
        credits_cents = certified_cents if k0_cents + certified_cents > 0 else 0
        subtotal_cents = max(k0_cents + credits_cents, 0)
    elif k0_cents <= 0:
        # ¶3, ¶4: nothing is left to levy, so no credit is owed either.
        credits_cents = subtotal_cents = 0
    else:
        credits_cents = _solved_credits(
            k0_cents=k0_cents,
            margin_rate=margin_rate,
            paying=paying,
            integer_weights=integer_weights,
            total_weight=total_weight,
        )
        subtotal_cents = k0_cents + credits_cents
    margin_cents = _half_up(margin_rate * subtotal_cents)
    total_cents = subtotal_cents + margin_cents

    # ¶9: each paying parcel's share, by largest remainder, in parcel_id order.
    charges = iter(_allocate(total_cents, integer_weights))
    acres_by_parcel = iter(paying_acres)

    # ¶7, ¶9, ¶12: credit, net and halves per line. Cents become dollars as Decimal(cents) × CENT
    # under the exact context, inline, because this loop runs once per parcel.
    zero = _dollars(0)
    ratios: dict[Decimal, tuple[int, int]] = {}
    lines: list[RollLine] = []
    roll_credit_cents = 0
    with localcontext(_EXACT):
        for parcel, status in zip(on_roll, statuses, strict=True):
            percent = parcel.credit_percent
            if not status.levied:
                lines.append(
                    _roll_line(
                        parcel_id=parcel.parcel_id,
                        levied=False,
                        reason=status.reason,
                        gravity_acres=parcel.gravity_acres,
                        pumped_acres=parcel.pumped_acres,
                        equivalent_acres=parcel.gravity_acres + parcel.pumped_acres * pumped_weight,
                        om_charge=zero,
                        credit_percent=percent,
                        credit=zero,
                        net=zero,
                        first_installment=zero,
                        second_installment=zero,
                    )
                )
                continue
            charge = next(charges)
            if percent:
                ratio = ratios.get(percent)
                if ratio is None:
                    numerator, denominator = percent.as_integer_ratio()
                    ratio = ratios[percent] = (numerator, 100 * denominator)
                # ¶7: percent/100 × charge half-up, i.e. floor((2·charge·n + d) / 2d).
                credit = (2 * charge * ratio[0] + ratio[1]) // (2 * ratio[1])
                roll_credit_cents += credit
            else:
                credit = 0
            net = charge - credit
            second = net // 2  # ¶12: the July half carries the odd cent
            charge_dollars = Decimal(charge) * CENT
            second_dollars = Decimal(second) * CENT
            # Equal amounts share one Decimal object rather than building another.
            lines.append(
                _roll_line(
                    parcel_id=parcel.parcel_id,
                    levied=True,
                    reason=REASON_LEVIED,
                    gravity_acres=parcel.gravity_acres,
                    pumped_acres=parcel.pumped_acres,
                    equivalent_acres=next(acres_by_parcel),
                    om_charge=charge_dollars,
                    credit_percent=percent,
                    credit=Decimal(credit) * CENT if credit else zero,
                    net=Decimal(net) * CENT if credit else charge_dollars,
                    first_installment=Decimal(net - second) * CENT if net % 2 else second_dollars,
                    second_installment=second_dollars,
                )
            )

    # ¶6: rates from the exact quotient, shown to six decimals.
    rate_exact = Fraction(total_cents, 100) / (unit * total_weight)
    gravity_sum = _exact_sum(parcel.gravity_acres for parcel in paying)
    pumped_sum = _exact_sum(parcel.pumped_acres for parcel in paying)
    equivalent_sum = _exact_sum(paying_acres)
    amounts = {
        "om_estimate": _dollars(om_cents),
        "reserve": _dollars(reserve_cents),
        "credits": _dollars(credits_cents),
        "deficit": _dollars(deficit_cents),
        "surplus": _dollars(surplus_cents),
        "misc_income": _dollars(misc_cents),
        "subtotal": _dollars(subtotal_cents),
        "safety_margin": _dollars(margin_cents),
        "total_levy": _dollars(total_cents),
    }
    worksheet = Worksheet(
        **amounts,
        k0=_dollars(k0_cents),
        credits_certified=certified_cents is not None,
        gravity_acres=gravity_sum,
        pumped_acres=pumped_sum,
        equivalent_acres=equivalent_sum,
        rate_gravity=_quantize_fraction(rate_exact, RATE_QUANTUM),
        rate_pumped=_quantize_fraction(rate_exact * Fraction(params.pumped_weight), RATE_QUANTUM),
        lines=tuple(
            WorksheetLine(paragraph=paragraph, key=key, label=label, amount=amounts[key], sign=sign)
            for key, paragraph, label, sign in _LINE_SPECS
        ),
    )
    return LevyComputation(
        worksheet=worksheet,
        lines=tuple(lines),
        roll_total=_dollars(total_cents),
        roll_credits=_dollars(roll_credit_cents),
        roll_net=_dollars(total_cents - roll_credit_cents),
        credits_gap=_dollars(credits_cents - roll_credit_cents),
        parcels_levied=len(paying),
    )


def _solved_credits(
    *,
    k0_cents: int,
    margin_rate: Fraction,
    paying: list[ParcelInput],
    integer_weights: list[int],
    total_weight: int,
) -> int:
    """¶1(3), ¶7: factor (3) in cents, solved so it equals the credits the roll grants."""
    # Σ credit% × weight, grouped by percent so only a few Fractions are built.
    weight_by_percent: dict[Decimal, int] = {}
    for parcel, weight in zip(paying, integer_weights, strict=True):
        percent = parcel.credit_percent
        if percent:
            weight_by_percent[percent] = weight_by_percent.get(percent, 0) + weight
    if not weight_by_percent:
        return 0
    credited = sum((Fraction(percent) * weight for percent, weight in weight_by_percent.items()), Fraction(0))
    k = credited / (100 * total_weight)
    m = 1 + margin_rate
    if m * k >= 1:
        raise LevyRuleError(
            f"The credits are too large to solve for factor (3): {m} × k = "
            f"{_quantize_fraction(m * k, RATE_QUANTUM)} is 1 or more, so the credits would "
            "consume the whole levy (¶1(3), ¶7)."
        )
    levy_exact = m * k0_cents / (1 - m * k)
    return _half_up(k * levy_exact)


# ---------------------------------------------------------------------------------------------
# Warning: credits that multiply the levy (¶1(3), ¶3, ¶7)
# ---------------------------------------------------------------------------------------------

# Not statute: a review threshold. Without credits the levy is (1 + margin) × K0; factor (3)
# multiplies it by 1 / (1 − 1.02·k), which grows without bound as 1.02·k nears 1, so a small
# estimate can give an enormous levy. Past 1.5 times the levy without credits the worksheet says so.
CREDITS_WARNING_FACTOR = Decimal("1.5")


@dataclass(frozen=True, slots=True)
class CreditsMultiplier:
    """¶1(3), ¶3, ¶7: how many times the credits multiply the levy without credits."""

    k0: Decimal  # ¶1–¶3 before credits: O&M + reserve + deficit − surplus − misc income
    base: Decimal  # (1 + margin) × K0 half-up to the cent: the levy if there were no credits
    threshold: Decimal  # CREDITS_WARNING_FACTOR × (1 + margin) × K0, half-up to the cent
    total_levy: Decimal
    multiplier: Decimal | None  # total_levy ÷ base to two places; None when the base is not positive
    exceeds: bool  # total_levy > 1.5 × (1 + margin) × K0, compared exactly


def credits_multiplier(*, k0: Decimal, total_levy: Decimal, safety_margin_rate: Decimal) -> CreditsMultiplier:
    """¶1(3), ¶3, ¶7: whether the total levy exceeds 1.5 × (1.02 × K0).

    The comparison is exact (no rounding of the threshold). A positive levy over a K0 of zero
    or less is all credits, so it always exceeds.
    """
    for name, value in (("k0", k0), ("total_levy", total_levy), ("safety_margin_rate", safety_margin_rate)):
        if not _is_finite_decimal(value):
            raise LevyRuleError(f"{name} must be a Decimal, not {value!r}.")
    total_cents = _cents(total_levy, "total_levy")
    k0_exact = Fraction(k0) * 100  # cents; K0 may be negative (a surplus larger than the rest)
    base_exact = (1 + Fraction(safety_margin_rate)) * k0_exact
    threshold_exact = Fraction(CREDITS_WARNING_FACTOR) * base_exact
    multiplier = None
    if base_exact > 0:
        multiplier = _quantize_fraction(total_cents / base_exact, CENT)
    return CreditsMultiplier(
        k0=k0,
        base=_dollars(_half_up(base_exact)),
        threshold=_dollars(_half_up(threshold_exact)),
        total_levy=total_levy,
        multiplier=multiplier,
        exceeds=total_cents > 0 and total_cents > threshold_exact,
    )


# ---------------------------------------------------------------------------------------------
# Helpers: exact conversions and rounding
# ---------------------------------------------------------------------------------------------


def _cents(amount: Decimal, name: str) -> int:
    """A non-negative Decimal of whole cents, as an integer number of cents."""
    if not _is_finite_decimal(amount):
        raise LevyRuleError(f"{name} must be a Decimal amount, not {amount!r}.")
    if amount < 0:
        raise LevyRuleError(f"{name} must not be negative, got {amount}.")
    numerator, denominator = amount.as_integer_ratio()
    cents, remainder = divmod(numerator * 100, denominator)
    if remainder:
        raise LevyRuleError(f"{name} must be a whole number of cents, got {amount}.")
    return cents


def _dollars(cents: int) -> Decimal:
    """Integer cents as a Decimal with exactly two places (500 -> Decimal("5.00"))."""
    return _EXACT.multiply(Decimal(cents), CENT)


def _half_up(value: Fraction | int) -> int:
    """Half-up (away from zero on a tie) to the nearest integer, exact."""
    if value >= 0:
        return math.floor(value + Fraction(1, 2))
    return -math.floor(-value + Fraction(1, 2))


def _quantize_fraction(value: Fraction, quantum: Decimal) -> Decimal:
    """The exact ``value`` half-up to ``quantum`` (a power of ten), as a Decimal."""
    exponent = quantum.as_tuple().exponent
    assert isinstance(exponent, int)
    units = _half_up(value * Fraction(10) ** -exponent)
    return Decimal(units).scaleb(exponent, _EXACT)


def _exact_sum(values: Iterable[Decimal]) -> Decimal:
    with localcontext(_EXACT):
        return sum(values, Decimal(0))


def _integer_weights(values: Sequence[Decimal | Fraction]) -> tuple[list[int], Fraction]:
    """``values`` as integers in a common unit, and that unit (value = integer × unit)."""
    # Two flat lists of ints rather than a list of pairs: on a 100,000-parcel roll, retained
    # tuples would only feed the cyclic garbage collector.
    numerators: list[int] = []
    denominators: list[int] = []
    for value in values:
        if isinstance(value, Decimal):
            if not value.is_finite():
                raise LevyRuleError(f"A weight must be a finite amount, not {value!r}.")
        elif not isinstance(value, Fraction):
            raise LevyRuleError(f"A weight must be a Decimal or a Fraction, not {value!r}.")
        if value < 0:
            raise LevyRuleError(f"A weight must not be negative, got {value}.")
        numerator, denominator = value.as_integer_ratio()
        numerators.append(numerator)
        denominators.append(denominator)
    common = math.lcm(*set(denominators))
    weights = [numerator * (common // denominator) for numerator, denominator in zip(numerators, denominators, strict=True)]
    return weights, Fraction(1, common)


def _allocate(total_cents: int, weights: Sequence[int]) -> list[int]:
    """¶9: largest-remainder split of ``total_cents`` over integer ``weights``.

    ``weights`` must be in ascending id order: equal remainders then go to the earlier one.
    """
    weight_sum = sum(weights)
    if weight_sum <= 0:
        raise LevyRuleError("The weights add to zero, so there is nothing to share by.")
    products = [total_cents * weight for weight in weights]  # exact shares × weight_sum
    floors = [product // weight_sum for product in products]
    leftover = total_cents - sum(floors)  # fewer than len(weights): each floor loses < 1 cent
    if leftover:
        negative_remainders = [-(product % weight_sum) for product in products]
        # sorted() is stable, so equal remainders keep their ascending-id order.
        for index in sorted(range(len(floors)), key=negative_remainders.__getitem__)[:leftover]:
            floors[index] += 1
    return floors
