"""Pure billing and delinquency rules of the O&M irrigation levy (¶1(2), ¶2, ¶8, ¶12).

Decimal in, Decimal or frozen dataclasses out. Nothing here imports Django, reads settings,
looks at the clock or does I/O: an account as of a date is read from its stored records
(:func:`ledger_state`: charges, the allocation each receipt stored, the dated entries later events
posted), so a statement or receipt can be recomputed years later from the stored rows. Paragraph numbers refer to ``shared/statute/README.md``; sec. 374a is paraphrased in
``shared/statute/related-sections.md``.

Vocabulary:

* *due date*: July 1 / January 1 of the fiscal year (¶12), or the roll's finalization date if
  the roll was finished later (nobody is late for a bill that did not exist yet).
* *last day to pay*: due date + 60 days, moved forward past Sundays and closed days (¶12).
* *first delinquent day* ``D``: the day after the last day to pay.
* *period n*: the n-th month or fraction of a month of delinquency; period ``n`` starts on
  ``add_months(D, n - 1)`` (¶12 "por cada mes o fracción de mes").
* *surcharge* (*recargo*): ½% of the installment's principal still unpaid at the start of each
  period begun, summed and rounded half-up to the cent once; simple, never compounded (¶12).
* *rate schedule*: the dated surcharge rates of the legal parameters, ``((effective_from, rate),
  …)``; each period is charged the rate in force on its first day, so a later row never changes a
  period that began before it (``docs/interpretations.md``, "Dated legal parameters").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

import holidays

from levy.rules import CENT, add_months, largest_remainder_allocation, round_cents

ZERO = Decimal("0.00")  # dollars

FISCAL_YEAR_START_MONTH = 7  # ¶11, ¶12: the fiscal year and the first installment start July 1
INSTALLMENT_COUNT = 2  # ¶12: "pagaderas semestralmente", July 1 and January 1
SUNDAY = 6  # date.weekday()
SATURDAY = 5  # date.weekday()


class BillingRuleError(ValueError):
    """¶12: an input the billing rules cannot accept (bad amount, date or parameter)."""


def _cents_only(value: object, *, name: str) -> Decimal:
    """¶9: a signed amount in whole cents; sub-cent amounts are refused, never rounded."""
    if not isinstance(value, Decimal) or not value.is_finite():
        raise BillingRuleError(f"{name} must be a finite Decimal, got {value!r}")
    if value != value.quantize(CENT):
        raise BillingRuleError(f"{name} must be a whole number of cents, got {value}")
    return value


def _check_money(value: object, *, name: str, allow_zero: bool = True) -> Decimal:
    """A finite Decimal in whole cents, not negative (zero only when ``allow_zero``)."""
    _cents_only(value, name=name)
    if value < 0 or (value == 0 and not allow_zero):
        bound = "zero or more" if allow_zero else "more than zero"
        raise BillingRuleError(f"{name} must be {bound}, got {value}")
    return value


def _check_rate(value: object, *, name: str) -> Decimal:
    """A finite, non-negative Decimal (rates may carry more places than cents)."""
    if not isinstance(value, Decimal) or not value.is_finite() or value < 0:
        raise BillingRuleError(f"{name} must be a finite Decimal of zero or more, got {value!r}")
    return value


# --- the dated surcharge rate (¶12) ------------------------------------------------------------

RateSchedule = tuple[tuple[date, Decimal], ...]  # ((effective_from, rate per period), …), oldest first


def rate_schedule(rate: Decimal | Sequence[tuple[date, Decimal]]) -> RateSchedule:
    """¶12: the surcharge rate as a dated schedule, oldest row first.

    A single ``Decimal`` is a one-row schedule in force since ``date.min`` (the rate of every
    period). A sequence of ``(effective_from, rate)`` rows is checked (dates, finite rates of zero
    or more, no date twice) and returned sorted as a tuple.
    """
    if isinstance(rate, Decimal):
        return ((date.min, _check_rate(rate, name="rate")),)
    if isinstance(rate, (str, bytes, float, int)) or not isinstance(rate, Iterable):
        raise BillingRuleError(f"rate must be a Decimal or a schedule of (date, rate) rows, got {rate!r}")
    rows: list[tuple[date, Decimal]] = []
    for row in rate:
        if not isinstance(row, tuple) or len(row) != 2:
            raise BillingRuleError(f"a rate schedule row is (effective_from, rate), got {row!r}")
        start, value = row
        if not isinstance(start, date) or isinstance(start, datetime):
            raise BillingRuleError(f"a rate schedule row starts on a date, got {start!r}")
        rows.append((start, _check_rate(value, name=f"rate from {start}")))
    if not rows:
        raise BillingRuleError("a rate schedule needs at least one row")
    rows.sort(key=lambda row: row[0])
    for (earlier, _), (later, _) in zip(rows, rows[1:], strict=False):
        if earlier == later:
            raise BillingRuleError(f"two rates take effect on {later}")
    return tuple(rows)


def rate_on(*, schedule: RateSchedule, day: date) -> Decimal:
    """¶12: the rate of the latest schedule row in force on ``day`` (``effective_from <= day``).

    A period is charged the rate in force on its first day. No row in force yet is an error, not
    a zero rate: the schedule must reach back to the first period it is asked about.
    """
    found = None
    for start, value in schedule:
        if start > day:
            break
        found = value
    if found is None:
        raise BillingRuleError(f"no surcharge rate in force on {day} (the schedule starts {schedule[0][0]})")
    return found


# --- due dates and the last day to pay (¶12) ---------------------------------------------------


@dataclass(frozen=True)
class DelinquencyParameters:
    """¶12: the dated legal parameters of delinquency, kept as data so a reform is a new row."""

    grace_days: int = 60  # ¶12: "dentro de los sesenta (60) días después de ... se vencieron"
    surcharge_rate: Decimal = Decimal("0.005")  # ¶12: "medio (½) por ciento ... por cada mes"
    saturdays_move: bool = False  # ¶12 reading: a Saturday last day moves only if this is set

    def __post_init__(self) -> None:
        if isinstance(self.grace_days, bool) or not isinstance(self.grace_days, int):
            raise BillingRuleError(f"grace_days must be an int, got {self.grace_days!r}")
        if self.grace_days < 0:
            raise BillingRuleError(f"grace_days must be zero or more, got {self.grace_days}")
        _check_rate(self.surcharge_rate, name="surcharge_rate")
        if not isinstance(self.saturdays_move, bool):
            raise BillingRuleError(f"saturdays_move must be a bool, got {self.saturdays_move!r}")


def installment_due_date(*, fiscal_year_start: date, number: int, finalized_on: date | None) -> date:
    """¶12: installment 1 is due July 1 and installment 2 January 1 of the fiscal year.

    ``fiscal_year_start`` is the July 1 that opens the fiscal year (2026-07-01 for 2026-2027, whose
    second installment is due 2027-01-01). If the roll was finalized (¶11) after an installment's
    due date, that installment counts as due on ``finalized_on``: nobody is late for a bill that
    did not exist yet. A roll finalized on or before the due date changes nothing.
    """
    if (fiscal_year_start.month, fiscal_year_start.day) != (FISCAL_YEAR_START_MONTH, 1):
        raise BillingRuleError(f"a fiscal year starts on July 1, got {fiscal_year_start}")
    if isinstance(number, bool) or number not in range(1, INSTALLMENT_COUNT + 1):
        raise BillingRuleError(f"installment number must be 1 or 2, got {number!r}")
    due = fiscal_year_start if number == 1 else date(fiscal_year_start.year + 1, 1, 1)
    if finalized_on is not None and finalized_on > due:
        return finalized_on
    return due


def pr_legal_holidays(*, years: Iterable[int]) -> frozenset[date]:
    """¶12: Puerto Rico legal holidays of ``years``, from the ``holidays`` package (US, subdiv PR).

    Observed days (a Friday or Monday standing in for a weekend holiday) are included, because the
    Collector's Office is closed on them. Pass every year a last day to pay may fall in (the due
    date's year and the next one). Union the result with office-closure days (hurricanes) before
    handing it to :func:`last_day_to_pay`.
    """
    wanted = sorted(set(years))
    if not wanted:
        return frozenset()
    calendar = holidays.country_holidays("US", subdiv="PR", years=wanted)
    return frozenset(day for day in calendar if day.year in wanted)


def last_day_to_pay(*, due: date, closed_days: frozenset[date], params: DelinquencyParameters) -> date:
    """¶12: due date + 60 days, moved to the next day that is not a Sunday nor a closed day.

    ``closed_days`` holds the Puerto Rico legal holidays (:func:`pr_legal_holidays`) and any
    office-closure days; the rule does not look them up itself. Saturdays move the day too only
    when ``params.saturdays_move`` is set. 2026-07-01 + 60 days is Sunday 2026-08-30, so the last
    day to pay is Monday 2026-08-31.
    """
    return next_open_day(day=due + timedelta(days=params.grace_days), closed_days=closed_days, params=params)


def next_open_day(*, day: date, closed_days: frozenset[date], params: DelinquencyParameters) -> date:
    """¶12: ``day`` itself, or the first later day that is not a Sunday nor a closed day (nor a
    Saturday when ``params.saturdays_move``). Moving an issued last day to pay through this when
    an office closure is recorded later only ever moves it forward."""
    while day.weekday() == SUNDAY or day in closed_days or (params.saturdays_move and day.weekday() == SATURDAY):
        day += timedelta(days=1)
    return day


def first_delinquent_day(*, due: date, closed_days: frozenset[date], params: DelinquencyParameters) -> date:
    """¶12: the day after the last day to pay, from which the installment is delinquent."""
    return last_day_to_pay(due=due, closed_days=closed_days, params=params) + timedelta(days=1)


def delinquency_periods(*, first_delinquent: date, on: date) -> int:
    """¶12: months or fractions of a month of delinquency begun by ``on`` (0 before ``D``).

    The smallest ``n >= 1`` with ``on < add_months(first_delinquent, n)``; calendar months counted
    from ``D`` itself and clamped to month end, never by stepping month to month. With
    ``D = 2026-09-01``: 2026-09-30 is period 1, 2026-10-01 and 2026-10-15 are period 2. With
    ``D = 2027-08-31``: 2027-12-31 is period 5 (``add_months(D, 4)`` is 2027-12-31 itself).
    """
    if on < first_delinquent:
        return 0
    months = (on.year - first_delinquent.year) * 12 + on.month - first_delinquent.month
    periods = max(1, months)
    while add_months(first_delinquent, periods) <= on:
        periods += 1
    while periods > 1 and add_months(first_delinquent, periods - 1) > on:
        periods -= 1
    return periods


def surcharge_for(
    *, principal: Decimal, first_delinquent: date, on: date, rate: Decimal | Sequence[tuple[date, Decimal]]
) -> Decimal:
    """¶12: surcharge as of ``on`` when nothing has been paid: ``Σ rate_n × principal`` over the
    periods begun, ``rate_n`` being the rate in force on period ``n``'s first day.

    ``rate`` is one rate (every period) or a dated schedule (:func:`rate_schedule`). The sum is
    rounded half-up to the cent once. 6,930.90 delinquent from 2026-09-01 and paid 2026-10-15 (two
    periods begun) owes 69.31 at ½%.
    """
    _check_money(principal, name="principal")
    schedule = rate_schedule(rate)
    periods = delinquency_periods(first_delinquent=first_delinquent, on=on)
    starts = (add_months(first_delinquent, number - 1) for number in range(1, periods + 1))
    return round_cents(sum((rate_on(schedule=schedule, day=start) * principal for start in starts), ZERO))


# --- an account in the shape pages, receipts and bills read (¶12, ¶13) -------------------------
# ``billing.accounts`` builds these from ``ledger_state``: the one account model is the stored ledger.


@dataclass(frozen=True)
class Application:
    """¶12: the part of one payment applied to one charge: its surcharge first, then principal."""

    payment_key: str
    charge_key: str
    surcharge: Decimal
    principal: Decimal

    @property
    def amount(self) -> Decimal:
        """¶12: surcharge plus principal of this application."""
        return self.surcharge + self.principal


@dataclass(frozen=True)
class ChargeState:
    """¶12: one charge as of the account's as-of date.

    ``surcharge_basis`` lists, for each period begun while principal was still unpaid, the
    period's start and the principal unpaid at that start (so a statement can print "½% × 2 meses
    sobre $6,930.90"); ``periods`` is its length and ``surcharge`` is ``Σ rate × unpaid`` over the
    basis, rounded half-up once. ``surcharge_rates`` gives, row for row with the basis, the rate in
    force on each period's first day. A charge paid in full stops accruing, so its ``periods``
    stays where it was.
    """

    key: str
    principal: Decimal
    due: date
    last_day: date
    periods: int
    surcharge: Decimal
    surcharge_basis: tuple[tuple[date, Decimal], ...]
    principal_paid: Decimal
    surcharge_paid: Decimal
    paid: Decimal
    balance: Decimal
    accrues_surcharge: bool = True
    first_delinquent: date | None = None
    surcharge_rates: tuple[Decimal, ...] = ()

    @property
    def surcharge_due(self) -> Decimal:
        """¶12: surcharge accrued and not yet paid."""
        return self.surcharge - self.surcharge_paid

    @property
    def principal_due(self) -> Decimal:
        """¶12: principal not yet paid."""
        return self.principal - self.principal_paid


@dataclass(frozen=True)
class AccountState:
    """¶12, ¶13: an account as of ``as_of``, read from :func:`ledger_state` (``billing.accounts``).

    ``charges`` are in payment order (due date, then key); ``applications`` are the stored
    allocations of the payments that count on ``as_of``. ``credit_balance`` is money beyond every
    charge on the account. ``total_due`` sums the balances of charges already due
    (``due <= as_of``); ``total_balance`` sums the balances of all charges.
    """

    as_of: date
    charges: tuple[ChargeState, ...]
    applications: tuple[Application, ...]
    credit_balance: Decimal
    total_due: Decimal
    total_balance: Decimal


def _unique(keys: Iterable[str], *, what: str) -> None:
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise BillingRuleError(f"two {what} share the key {key!r}")
        seen.add(key)


def surcharge_runs(state: ChargeState) -> tuple[tuple[int, Decimal, Decimal], ...]:
    """¶12: a charge's surcharge basis as runs of consecutive periods with the same rate and the
    same unpaid principal, ``((months, rate, unpaid), …)``, for "½% × 2 meses sobre $6,930.90".

    The rates must be row for row with the basis (as ``billing.accounts`` builds them from ``ledger_state``).
    """
    if len(state.surcharge_rates) != len(state.surcharge_basis):
        raise BillingRuleError(
            f"charge {state.key!r}: {len(state.surcharge_rates)} rates for {len(state.surcharge_basis)} periods"
        )
    runs: list[tuple[int, Decimal, Decimal]] = []
    for (_start, unpaid), rate in zip(state.surcharge_basis, state.surcharge_rates, strict=True):
        if runs and runs[-1][1] == rate and runs[-1][2] == unpaid:
            runs[-1] = (runs[-1][0] + 1, rate, unpaid)
        else:
            runs.append((1, rate, unpaid))
    return tuple(runs)


# --- what a bill asks to pay (¶12, ¶13) ----------------------------------------------------------


def next_surcharge_start(state: ChargeState, *, on: date) -> date | None:
    """¶12: the first day on which the charge's surcharge grows again after ``on``: its first
    delinquent day ``D`` while it is not yet delinquent, else the start of the next period,
    ``add_months(D, periods)``. ``None`` when nothing more accrues (principal paid, or a charge
    the surcharge does not reach)."""
    if not state.accrues_surcharge or state.principal_due <= 0:
        return None
    first = state.last_day + timedelta(days=1)
    if on < first:
        return first
    return add_months(first, delinquency_periods(first_delinquent=first, on=on))


@dataclass(frozen=True)
class AmountToPay:
    """¶12, ¶13: the one amount a bill asks for and the last day it holds.

    ``amount`` is the balance of every charge that comes, in payment order (due date, then key:
    :func:`account_state`, :func:`allocate`), up to and including the billed installment, as of
    the bill's date: paid on or before ``valid_through``, it pays that installment in full.
    ``valid_through`` is the earliest of the day before each owed charge's next surcharge period
    (for a charge not yet delinquent, its last day to pay); ``owed_keys`` are the charges it
    pays, in payment order (the billed one last). ``later_due`` is what charges after the billed
    one in payment order already owe on the bill's date (their own bills ask for it)."""

    amount: Decimal
    valid_through: date
    owed_keys: tuple[str, ...]
    later_due: Decimal = ZERO


def amount_to_pay(*, account: AccountState, charge_key: str) -> AmountToPay:
    """¶12, ¶13: what a bill of ``charge_key`` asks to pay (*total a pagar*) and until when.

    Payments go to the oldest charge first, so a bill pays its installment only once every
    charge before it is paid: it asks for all of them, the installments not yet due included
    (``docs/interpretations.md``, "What a bill's total to pay means"). Paying it on or before
    ``valid_through`` leaves the billed installment and everything before it paid. After that
    day a new surcharge period has begun on some owed charge (or one turned delinquent), so the
    amount no longer suffices. A July bill of 100.00 due 2026-07-01 (last day 2026-08-31) with
    nothing else owed: 100.00 through 2026-08-31. Its January bill of 100.00 issued on 2027-01-01
    while July is unpaid: July owes 100.00 + ½% × 5 = 102.50, total 202.50, valid through
    2027-01-31 (July's sixth period begins 2027-02-01, before January's last day). A bill of a
    later year's installment issued while this year's January is not yet due asks for January
    too, since the payment would go there first."""
    position = next((index for index, state in enumerate(account.charges) if state.key == charge_key), None)
    if position is None:
        raise BillingRuleError(f"no charge {charge_key!r} on the account")
    on = account.as_of
    this = account.charges[position]
    owed = [state for state in account.charges[: position + 1] if state.balance > 0]
    limits = [this.last_day] if on <= this.last_day else []
    for state in owed:
        start = next_surcharge_start(state, on=on)
        if start is not None:
            limits.append(start - timedelta(days=1))
    later = sum((state.balance for state in account.charges[position + 1:] if state.due <= on and state.balance > 0), ZERO)
    return AmountToPay(amount=sum((state.balance for state in owed), ZERO),
                       valid_through=min(limits) if limits else this.last_day,
                       owed_keys=tuple(state.key for state in owed), later_due=later)


def owed_today_holds_through(*, account: AccountState) -> date | None:
    """¶12, ¶13: the last day the account's *adeudado hoy* (``total_due``) stays what it is: the
    day before the earliest of the next surcharge period of a charge already due and the due
    date of the next charge with something unpaid. ``None`` when nothing owed will change (every
    charge paid, or none that accrues surcharge and none still to fall due)."""
    on = account.as_of
    changes = []
    for state in account.charges:
        if state.balance <= 0:
            continue
        if state.due > on:
            changes.append(state.due)
            continue
        start = next_surcharge_start(state, on=on)
        if start is not None:
            changes.append(start)
    return min(changes) - timedelta(days=1) if changes else None


def bill_offered_from(*, due: date, offer_days: int) -> date:
    """The first day an installment's bill is offered (portal, counter, bulk printing):
    ``offer_days`` before its due date (``settings.BILL_OFFER_DAYS``), so a bill is never issued
    so early that the installments before it still have to fall due (¶12)."""
    if offer_days < 0:
        raise BillingRuleError(f"offer_days {offer_days} is negative")
    return due - timedelta(days=offer_days)


# --- sec. 374a water sales before the levy starts (¶8) -----------------------------------------


@dataclass(frozen=True)
class WaterSaleRates:
    """¶8 (sec. 374a): per-acre-foot water prices before a parcel's levy starts, as dated data.

    The figures come from a paraphrase of sec. 374a; keep them as a dated parameter row so the
    official text can correct them without a code change.
    """

    first_year_rate: Decimal = Decimal("2.00")  # ¶8, sec. 374a: first 12 months of water
    max_authority_rate: Decimal = Decimal("6.00")  # ¶8, sec. 374a: Authority's rate cap after
    pumped_rate: Decimal = Decimal("3.00")  # ¶8, sec. 374a: after 12 months, owner-pumped land

    def __post_init__(self) -> None:
        _check_money(self.first_year_rate, name="first_year_rate")
        _check_money(self.max_authority_rate, name="max_authority_rate")
        _check_money(self.pumped_rate, name="pumped_rate")


class WaterRateMissing(BillingRuleError):
    """¶8 (sec. 374a): gravity water after the first 12 months needs the Authority's rate, and
    none is on file for the delivery date; the cap is a limit, not a price."""


def water_rate(
    *,
    first_water: date,
    delivery_date: date,
    pumped: bool,
    authority_rate: Decimal | None,
    rates: WaterSaleRates = WaterSaleRates(),
) -> Decimal:
    """¶8 (sec. 374a): dollars per acre-foot for water delivered before the levy starts.

    ``first_year_rate`` while ``delivery_date < add_months(first_water, 12)`` (pumped or not);
    afterwards ``pumped_rate`` for land the owner waters with his own pumps and otherwise
    ``authority_rate``, which must not exceed ``max_authority_rate`` (checked on every call, so a
    bad rate is caught even while no parcel is billed at it). ``pumped`` says which land the
    water went to, not what the parcel holds. With no Authority rate (``None``) gravity water
    after the first 12 months raises ``WaterRateMissing`` instead of being priced at the cap.
    Whether the levy has started (¶8, ¶10) is for the caller to decide.
    """
    if authority_rate is not None:
        _check_money(authority_rate, name="authority_rate")
        if authority_rate > rates.max_authority_rate:
            raise BillingRuleError(f"authority_rate {authority_rate} exceeds the sec. 374a cap {rates.max_authority_rate}")
    if delivery_date < first_water:
        raise BillingRuleError(f"delivery on {delivery_date} is before the parcel's first water on {first_water}")
    if delivery_date < add_months(first_water, 12):
        return rates.first_year_rate
    if pumped:
        return rates.pumped_rate
    if authority_rate is None:
        raise WaterRateMissing(f"no Authority rate per acre-foot is on file for {delivery_date.isoformat()} (sec. 374a)")
    return authority_rate


# --- where collected money goes (¶1(2), ¶2) ----------------------------------------------------


def collection_split(*, amount: Decimal, reserve: Decimal, total_levy: Decimal) -> tuple[Decimal, Decimal]:
    """¶1(2), ¶2: split a collected amount into (reserve fund, Operating Fund).

    The reserve fund gets ``amount × reserve / total_levy`` half-up to the cent, the levy's own
    proportion of the ¶1(2) reserve; the Operating Fund (¶2) gets the rest, so the two always add
    up to ``amount``.
    """
    _check_money(amount, name="amount")
    _check_money(reserve, name="reserve")
    _check_money(total_levy, name="total_levy", allow_zero=False)
    if reserve > total_levy:
        raise BillingRuleError(f"reserve {reserve} exceeds the total levy {total_levy}")
    to_reserve = round_cents(amount * reserve / total_levy)
    return to_reserve, amount - to_reserve


FUND_RESERVE = "reserve"  # ¶1(2): the reserve fund for extraordinary repairs, replacements, improvements
FUND_OPERATING = "operating"  # ¶2: the Operating Fund (Fondo de Explotación — Sistema de Riego del Valle de Lajas)


@dataclass(frozen=True)
class FundSplit:
    """¶1(2), ¶2: an amount split between the reserve fund and the Operating Fund; the parts add
    up to ``amount`` exactly."""

    amount: Decimal
    reserve: Decimal
    operating: Decimal

    def __post_init__(self) -> None:
        if self.reserve + self.operating != self.amount:
            raise BillingRuleError(f"fund split {self.reserve} + {self.operating} is not {self.amount}")


def fund_split(*, amount: Decimal, reserve: Decimal, total_levy: Decimal) -> FundSplit:
    """¶1(2), ¶2: split a signed ``amount`` (a journal line of the levy: receivable or income)
    between the reserve fund, in the levy's proportion ``reserve / total_levy``, and the Operating
    Fund (the rest), by largest remainder to the cent (``levy.rules.largest_remainder_allocation``:
    each exact share floored, the cent left over to the larger remainder, a tie to the Operating
    Fund).
    Each part is within a cent of its exact share and the two add up to ``amount``. A negative
    amount is split as its opposite, negated, so a lowering mirrors the rise it undoes."""
    _cents_only(amount, name="amount")
    _check_money(reserve, name="reserve")
    _check_money(total_levy, name="total_levy", allow_zero=False)
    if reserve > total_levy:
        raise BillingRuleError(f"reserve {reserve} exceeds the total levy {total_levy}")
    sign = -1 if amount < 0 else 1
    parts = largest_remainder_allocation(
        total=abs(amount), weights=[(FUND_OPERATING, total_levy - reserve), (FUND_RESERVE, reserve)],
    )
    return FundSplit(amount=amount, reserve=sign * parts[FUND_RESERVE], operating=sign * parts[FUND_OPERATING])


# --- the ledger: corrections, give-backs and stored allocations (¶7, ¶9, ¶11, ¶12) ---------------
#
# The ledger is the one truth: each payment's allocation is stored when its receipt is issued and
# never derived again; a later event (a correction, a closure, a void) posts its own dated entry.
# The functions below are the pure arithmetic of those entries. ``RateSchedule`` (above) is the dated
# ¶12 surcharge rate: each surcharge period uses the rate in force on its first day (``rate_on``).

HUNDRED = Decimal(100)


# --- corrections of a roll line (¶7, ¶9, ¶11, ¶12) ----------------------------------------------


class CorrectionRefused(BillingRuleError):
    """¶9, ¶11: a correction the rules refuse, with the figures the message is made of.

    ``reason`` is one of ``REFUSALS``; ``current_charge``, ``current_credit`` and ``current_net``
    are the line's figures counting every earlier correction; ``limit`` is the bound the correction
    would cross (an amount, for ``due_too_early`` the earliest due date allowed, for
    ``nothing_changes`` and ``credit_without_percent`` the line's sec. 372 percentage). The English
    ``str()`` is for logs; the service words it in Spanish from the fields.
    """

    def __init__(
        self, *, reason: str, current_charge: Decimal, current_credit: Decimal, current_net: Decimal,
        limit: Decimal | date | None, message: str,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.current_charge = current_charge
        self.current_credit = current_credit
        self.current_net = current_net
        self.limit = limit


REFUSE_SUB_CENT = "sub_cent"
REFUSE_NOTHING = "nothing_changes"
REFUSE_CHARGE_NEGATIVE = "charge_negative"
REFUSE_CREDIT_NEGATIVE = "credit_negative"
REFUSE_CREDIT_ABOVE_CHARGE = "credit_above_charge"
REFUSE_NET_NEGATIVE = "net_negative"
REFUSE_CREDIT_WITHOUT_PERCENT = "credit_without_percent"
REFUSE_PERCENT = "percent_out_of_range"
REFUSE_DUE_TOO_EARLY = "due_too_early"
REFUSE_HALF_SHORT = "half_short"
REFUSALS = (
    REFUSE_SUB_CENT, REFUSE_NOTHING, REFUSE_CHARGE_NEGATIVE, REFUSE_CREDIT_NEGATIVE, REFUSE_CREDIT_ABOVE_CHARGE,
    REFUSE_NET_NEGATIVE, REFUSE_CREDIT_WITHOUT_PERCENT, REFUSE_PERCENT, REFUSE_DUE_TOO_EARLY, REFUSE_HALF_SHORT,
)


@dataclass(frozen=True)
class EarlierCorrection:
    """¶9: one earlier correction of the line: its deltas and the sec. 372 percentage it recorded."""

    charge_delta: Decimal
    credit_delta: Decimal
    credit_percent: Decimal | None = None


@dataclass(frozen=True)
class LineStanding:
    """¶7, ¶9: a final roll line's figures counting its corrections (the roll itself never changes)."""

    charge: Decimal
    credit: Decimal
    credit_percent: Decimal
    net: Decimal


def line_standing(*, roll_charge: Decimal, roll_credit: Decimal, roll_credit_percent: Decimal,
                  earlier: Sequence[EarlierCorrection]) -> LineStanding:
    """¶7, ¶9, ¶11: the line as it stands: the roll's charge and credit plus every correction's
    deltas, with the sec. 372 percentage the newest correction that recorded one set."""
    charge = roll_charge + sum((c.charge_delta for c in earlier), ZERO)
    credit = roll_credit + sum((c.credit_delta for c in earlier), ZERO)
    percent = next((c.credit_percent for c in reversed(earlier) if c.credit_percent is not None), roll_credit_percent)
    return LineStanding(charge=charge, credit=credit, credit_percent=percent, net=charge - credit)


@dataclass(frozen=True)
class HalfStanding:
    """¶12: one half of the line as it stands before the correction.

    ``original_key``/``original_principal``: the installment charge and its principal after every
    earlier lowering; ``corrections``: the half's earlier correction charges, oldest first, as
    ``(charge key, principal after earlier lowerings, its due date)``; ``due``: the half's own due
    date (the installment's).
    """

    number: int
    due: date
    original_key: str
    original_principal: Decimal
    corrections: tuple[tuple[str, Decimal, date], ...] = ()

    @property
    def total(self) -> Decimal:
        """¶12: what the half owes now, original plus corrections."""
        return self.original_principal + sum((principal for _, principal, _ in self.corrections), ZERO)


@dataclass(frozen=True)
class RaiseHalf:
    """¶9, ¶12: a rise of a half: a new correction charge of ``amount`` due on ``due``."""

    number: int
    amount: Decimal
    due: date


@dataclass(frozen=True)
class LowerCharge:
    """¶9, ¶12: a fall of a half: lower ``charge_key`` by ``amount`` to ``new_principal``, effective
    from ``effective_from`` (that charge's own due date). ``undoes_correction`` tells an earlier
    correction charge (undone first, newest first) from the half's original installment."""

    number: int
    charge_key: str
    amount: Decimal
    new_principal: Decimal
    effective_from: date
    undoes_correction: bool


@dataclass(frozen=True)
class HalfPlan:
    """¶12: one half before and after, the difference, and what is posted for it."""

    number: int
    old: Decimal
    new: Decimal
    actions: tuple[RaiseHalf | LowerCharge, ...]

    @property
    def difference(self) -> Decimal:
        """¶12: how much the half changes (negative for a fall)."""
        return self.new - self.old


@dataclass(frozen=True)
class CorrectionPlan:
    """¶7, ¶9, ¶11, ¶12: every figure of a correction, before and after.

    ``credit_follows_charge`` is set when the credit was moved to ``credit% × corrected charge``
    (¶7) rather than by an explicit credit delta; ``new_credit_percent`` is the sec. 372
    percentage in force after it (a new one when ``percent_recorded``).
    """

    old_charge: Decimal
    new_charge: Decimal
    old_credit: Decimal
    new_credit: Decimal
    old_credit_percent: Decimal
    new_credit_percent: Decimal
    percent_recorded: bool
    credit_follows_charge: bool
    old_net: Decimal
    new_net: Decimal
    halves: tuple[HalfPlan, HalfPlan]

    @property
    def charge_delta(self) -> Decimal:
        return self.new_charge - self.old_charge

    @property
    def credit_delta(self) -> Decimal:
        return self.new_credit - self.old_credit

    @property
    def net_delta(self) -> Decimal:
        return self.new_net - self.old_net


def credit_for(*, charge: Decimal, percent: Decimal) -> Decimal:
    """¶7: the sec. 372 credit, ``percent``/100 of the O&M charge, half-up to the cent."""
    return round_cents(charge * percent / HUNDRED)


def correction_plan(
    *,
    roll_charge: Decimal,
    roll_credit: Decimal,
    roll_credit_percent: Decimal,
    earlier: Sequence[EarlierCorrection],
    halves: tuple[HalfStanding, HalfStanding],
    fiscal_year_start: date,
    made_on: date,
    charge_delta: Decimal = ZERO,
    credit_delta: Decimal | None = None,
    credit_percent: Decimal | None = None,
    requested_due: date | None = None,
) -> CorrectionPlan:
    """¶7, ¶9, ¶11, ¶12: plan a correction of a roll line's O&M charge and/or credit.

    The line's figures are the roll's plus every earlier correction. Deltas are whole cents
    (sub-cent refused, never rounded). The credit follows the charge (¶7): a charge delta alone
    moves the credit to ``credit% × corrected charge`` half-up; a new sec. 372 ``credit_percent``
    without a credit delta (or with a credit delta of 0) moves it to ``round(new percent ×
    corrected charge)`` and the halves are split again; ``credit_delta`` moves the credit on its
    own only with a ``credit_percent`` that differs from the line's. A ``credit_percent`` equal to
    the line's records nothing, so alone it is refused like a correction with nothing in it
    (``nothing_changes``; ``limit`` is then the line's percentage, as for
    ``credit_without_percent``). Refused (:class:`CorrectionRefused`) when the corrected charge
    is below 0, the credit below 0 or above the charge, or the net below 0.

    The corrected net is split again (``levy.rules.installments``: second = floor(net/2), July the
    odd cent) and each half changes by the difference. A rise is a new correction charge due on
    the latest of ``made_on``, ``fiscal_year_start`` and the half's own due date; ``requested_due``
    may set a later day, never an earlier one: it is refused before the earliest rising half's
    day, and a half whose own day is later than it keeps that day (nobody pays the January half
    before January 1). A fall first lowers the
    half's earlier correction charges, newest first (the last one partly if that is enough), then
    the half's original installment, each effective from its own due date.
    """
    from levy.rules import installments

    standing = line_standing(roll_charge=roll_charge, roll_credit=roll_credit, roll_credit_percent=roll_credit_percent,
                             earlier=earlier)
    old_charge, old_credit, old_percent, old_net = standing.charge, standing.credit, standing.credit_percent, standing.net

    def refuse(reason: str, limit: Decimal | date | None, message: str) -> CorrectionRefused:
        return CorrectionRefused(
            reason=reason, current_charge=old_charge, current_credit=old_credit, current_net=old_net, limit=limit,
            message=f"{message} (the line now has O&M charge {old_charge}, credit {old_credit}, net {old_net})",
        )

    for name, value in (("charge delta", charge_delta), ("credit delta", credit_delta)):
        if value is None:
            continue
        try:
            _cents_only(value, name=name)
        except BillingRuleError as error:
            raise refuse(REFUSE_SUB_CENT, None, str(error)) from None
    if credit_percent is not None and (not _is_decimal(credit_percent) or not 0 <= credit_percent <= HUNDRED):
        raise refuse(REFUSE_PERCENT, HUNDRED, f"the sec. 372 percentage must be from 0 to 100, got {credit_percent!r}")
    # A zero credit delta is no credit delta (the command and the page send 0 when none is given):
    # the credit follows the charge and the percentage. The line's own percentage again is no new
    # percentage: it records nothing.
    if credit_delta is not None and credit_delta == 0:
        credit_delta = None
    if credit_percent is not None and credit_percent == old_percent:
        credit_percent = None
    if credit_delta is not None and credit_percent is None:
        raise refuse(
            REFUSE_CREDIT_WITHOUT_PERCENT, old_percent,
            "a credit delta is accepted only with a sec. 372 percentage that differs from the line's "
            f"({old_percent} %)",
        )

    new_charge = old_charge + charge_delta
    new_percent = old_percent if credit_percent is None else credit_percent
    follows = credit_delta is None
    new_credit = credit_for(charge=new_charge, percent=new_percent) if follows else old_credit + credit_delta
    new_net = new_charge - new_credit
    if charge_delta == 0 and credit_delta is None and credit_percent is None:
        raise refuse(REFUSE_NOTHING, old_percent,
                     f"the correction changes nothing (the line's sec. 372 percentage is {old_percent} %)")
    if new_charge < 0:
        raise refuse(REFUSE_CHARGE_NEGATIVE, -old_charge,
                     f"the O&M charge would be {new_charge}; the charge delta may not be below {-old_charge}")
    if new_credit < 0:
        raise refuse(REFUSE_CREDIT_NEGATIVE, -old_credit,
                     f"the credit would be {new_credit}; the credit delta may not be below {-old_credit}")
    if new_credit > new_charge:
        raise refuse(REFUSE_CREDIT_ABOVE_CHARGE, new_charge,
                     f"the credit would be {new_credit}, above the corrected charge {new_charge}")
    if new_net < 0:  # unreachable once credit <= charge; kept as the rule says it
        raise refuse(REFUSE_NET_NEGATIVE, ZERO, f"the net would be {new_net}")

    old_split = installments(net=old_net)
    new_split = installments(net=new_net)
    ordered = tuple(sorted(halves, key=lambda half: half.number))
    if tuple(half.number for half in ordered) != (1, 2):
        raise BillingRuleError("a correction needs the line's two halves, numbered 1 and 2")
    earliest: dict[int, date] = {
        half.number: max(made_on, fiscal_year_start, half.due)
        for half, old, new in zip(ordered, old_split, new_split, strict=True) if new > old
    }
    if requested_due is not None and earliest:
        floor = min(earliest.values())
        if requested_due < floor:
            raise refuse(REFUSE_DUE_TOO_EARLY, floor, f"the due date {requested_due} is before the earliest allowed, {floor}")

    plans = []
    for half, old, new in zip(ordered, old_split, new_split, strict=True):
        actions: list[RaiseHalf | LowerCharge] = []
        if new > old:
            due = earliest[half.number] if requested_due is None else max(requested_due, earliest[half.number])
            actions.append(RaiseHalf(number=half.number, amount=new - old, due=due))
        elif new < old:
            fall = old - new
            if fall > half.total:
                raise refuse(REFUSE_HALF_SHORT, half.total,
                             f"half {half.number} would fall by {fall} but owes only {half.total}")
            for key, principal, due in reversed(half.corrections):
                if fall == 0:
                    break
                step = min(fall, principal)
                if step:
                    actions.append(LowerCharge(number=half.number, charge_key=key, amount=step,
                                               new_principal=principal - step, effective_from=due,
                                               undoes_correction=True))
                fall -= step
            if fall:
                actions.append(LowerCharge(number=half.number, charge_key=half.original_key, amount=fall,
                                           new_principal=half.original_principal - fall, effective_from=half.due,
                                           undoes_correction=False))
        plans.append(HalfPlan(number=half.number, old=old, new=new, actions=tuple(actions)))
    return CorrectionPlan(
        old_charge=old_charge, new_charge=new_charge, old_credit=old_credit, new_credit=new_credit,
        old_credit_percent=old_percent, new_credit_percent=new_percent, percent_recorded=credit_percent is not None,
        credit_follows_charge=follows, old_net=old_net, new_net=new_net, halves=(plans[0], plans[1]),
    )


def _is_decimal(value: object) -> bool:
    """A finite Decimal (a percentage may carry any number of places)."""
    return isinstance(value, Decimal) and value.is_finite()


# --- the account from stored records (¶12, ¶13) -------------------------------------------------


SOURCE_CORRECTION = "correction"  # ¶9, ¶11: a roll correction lowered a charge
SOURCE_CLOSURE = "closure"  # ¶12: an office closure moved a last day to pay
SOURCE_PAYMENT = "payment"  # ¶13: money a payment left beyond every charge
SOURCES = (SOURCE_CORRECTION, SOURCE_CLOSURE, SOURCE_PAYMENT)


@dataclass(frozen=True)
class PrincipalLowering:
    """¶9, ¶11: a charge's principal lowered by ``amount``, recorded on ``entry_date``.

    It counts in a state as of ``entry_date`` or later, and then for every surcharge period (it is
    effective from the charge's own due date: that part was never owed).
    """

    entry_date: date
    amount: Decimal

    def __post_init__(self) -> None:
        _check_money(self.amount, name="lowering", allow_zero=False)


@dataclass(frozen=True)
class LastDayMove:
    """¶12: a charge's last day to pay moved to ``last_day`` by a closure recorded on ``entry_date``."""

    entry_date: date
    last_day: date


@dataclass(frozen=True)
class ChargeRecord:
    """¶12: an issued charge as stored: its principal and last day when issued, and their dated changes.

    ``issued_on`` is the day it was posted (None: before every date asked about); a state as of
    an earlier date does not have it.
    """

    key: str
    principal: Decimal
    due: date
    last_day: date
    accrues_surcharge: bool = True
    issued_on: date | None = None
    lowerings: tuple[PrincipalLowering, ...] = ()
    moves: tuple[LastDayMove, ...] = ()

    def __post_init__(self) -> None:
        if not self.key:
            raise BillingRuleError("a charge needs a key")
        _check_money(self.principal, name=f"principal of charge {self.key!r}")
        if self.last_day < self.due:
            raise BillingRuleError(f"charge {self.key!r}: last day to pay {self.last_day} is before due {self.due}")
        if sum((lowering.amount for lowering in self.lowerings), ZERO) > self.principal:
            raise BillingRuleError(f"charge {self.key!r} is lowered below zero")

    def principal_on(self, on: date) -> Decimal:
        """¶9: the principal as of ``on``: issued less the lowerings recorded by then."""
        return self.principal - sum((low.amount for low in self.lowerings if low.entry_date <= on), ZERO)

    def last_day_on(self, on: date) -> date:
        """¶12: the last day to pay as of ``on``: the latest move recorded by then (closures only move it forward)."""
        day = self.last_day
        for move in sorted(self.moves, key=lambda move: move.entry_date):
            if move.entry_date <= on:
                day = max(day, move.last_day)
        return day


@dataclass(frozen=True)
class StoredAllocation:
    """¶12, ¶13: the part of one payment (or credit application) stored against one charge."""

    charge_key: str
    surcharge: Decimal
    principal: Decimal

    def __post_init__(self) -> None:
        _check_money(self.surcharge, name="allocated surcharge")
        _check_money(self.principal, name="allocated principal")

    @property
    def amount(self) -> Decimal:
        return self.surcharge + self.principal


@dataclass(frozen=True)
class StoredPayment:
    """¶13: a payment with the allocation stored when its receipt was issued (never re-derived).

    ``voided_on``: the day a void was recorded. From that day on the payment never paid: its
    allocation is reversed as of its own date (a bounced check).
    """

    key: str
    paid_on: date
    allocations: tuple[StoredAllocation, ...]
    to_credit: Decimal = ZERO
    voided_on: date | None = None
    recorded: datetime | None = None  # when it was recorded (orders entries of one day)

    def __post_init__(self) -> None:
        _check_money(self.to_credit, name="payment to credit")

    @property
    def amount(self) -> Decimal:
        return sum((a.amount for a in self.allocations), ZERO) + self.to_credit

    def counts_on(self, on: date) -> bool:
        return self.paid_on <= on and (self.voided_on is None or self.voided_on > on)


@dataclass(frozen=True)
class GivenBack:
    """¶9, ¶12: money released from a charge to the account's credit on ``entry_date``: surcharge
    paid beyond what is owed after a lowering or closure (*recargo devuelto*) and principal paid
    beyond the lowered principal."""

    charge_key: str
    entry_date: date
    surcharge: Decimal
    principal: Decimal
    source: str
    ref: str = ""  # the stored row it is (a void's reversal names it)
    recorded: datetime | None = None

    def __post_init__(self) -> None:
        _check_money(self.surcharge, name="surcharge given back")
        _check_money(self.principal, name="principal freed")
        if self.source not in SOURCES:
            raise BillingRuleError(f"unknown source {self.source!r}")


@dataclass(frozen=True)
class CreditApplied:
    """¶12, ¶13: a dated *crédito aplicado*: credit on the account paid to one charge's
    surcharge and principal on ``entry_date``."""

    charge_key: str
    entry_date: date
    surcharge: Decimal
    principal: Decimal
    source: str
    ref: str = ""  # the stored row it is (a void's reversal names it)
    recorded: datetime | None = None

    def __post_init__(self) -> None:
        _check_money(self.surcharge, name="credit applied to surcharge")
        _check_money(self.principal, name="credit applied to principal")
        if self.source not in SOURCES:
            raise BillingRuleError(f"unknown source {self.source!r}")

    @property
    def amount(self) -> Decimal:
        return self.surcharge + self.principal


@dataclass(frozen=True)
class RefundRecord:
    """¶13: credit paid back to the landowner on ``refunded_on``."""

    refunded_on: date
    amount: Decimal
    ref: str = ""  # the stored row it is (a void's reversal names it)
    recorded: datetime | None = None

    def __post_init__(self) -> None:
        _check_money(self.amount, name="refund", allow_zero=False)


REVERSE_GIVE_BACK = "give_back"  # ¶12, ¶13: a give-back of surcharge or principal a voided payment had paid
REVERSE_CREDIT_APPLIED = "credit_applied"  # ¶13: a crédito aplicado paid with a voided payment's money
REVERSE_REFUND = "refund"  # ¶13: a refund paid out of a voided payment's money: now a charge due at once
REVERSALS = (REVERSE_GIVE_BACK, REVERSE_CREDIT_APPLIED, REVERSE_REFUND)


@dataclass(frozen=True)
class Reversal:
    """¶13: part of a later entry that moved a voided payment's money, reversed by the void on
    ``entry_date`` (the void's date); it counts from that date on.

    - ``give_back``: ``surcharge``/``principal`` of the give-back ``target`` of ``charge_key``
      return to that charge as paid, and leave the credit;
    - ``credit_applied``: ``surcharge``/``principal`` of the *crédito aplicado* ``target`` leave
      ``charge_key`` and return to the credit; its principal counts as never paid from the entry's
      own date ``effective_from`` (the money was never received, as the voided payment's own);
    - ``refund``: ``principal`` of the refund ``target`` no longer comes out of the credit: it is
      owed as the charge ``charge_key`` (due on the void's date, no ¶12 surcharge).
    """

    kind: str
    target: str
    charge_key: str
    entry_date: date
    effective_from: date
    surcharge: Decimal = ZERO
    principal: Decimal = ZERO

    def __post_init__(self) -> None:
        if self.kind not in REVERSALS:
            raise BillingRuleError(f"unknown reversal {self.kind!r}")
        _check_money(self.surcharge, name="surcharge reversed")
        _check_money(self.principal, name="principal reversed")
        if self.surcharge + self.principal <= 0:
            raise BillingRuleError("a reversal reverses something")
        if self.kind == REVERSE_REFUND and self.surcharge:
            raise BillingRuleError("a refund has no surcharge")

    @property
    def amount(self) -> Decimal:
        return self.surcharge + self.principal


@dataclass(frozen=True)
class LedgerCharge:
    """¶12: one charge as of a date, from the stored records.

    ``surcharge_basis``: per period begun with principal unpaid, its start, the rate in force that
    day and the unpaid principal; ``surcharge`` is Σ rate × unpaid half-up once.
    """

    key: str
    principal: Decimal
    due: date
    last_day: date
    principal_paid: Decimal
    surcharge: Decimal
    surcharge_paid: Decimal
    surcharge_basis: tuple[tuple[date, Decimal, Decimal], ...]
    accrues_surcharge: bool = True

    @property
    def balance(self) -> Decimal:
        return self.principal + self.surcharge - self.principal_paid - self.surcharge_paid

    @property
    def surcharge_due(self) -> Decimal:
        return self.surcharge - self.surcharge_paid

    @property
    def principal_due(self) -> Decimal:
        return self.principal - self.principal_paid


@dataclass(frozen=True)
class LedgerState:
    """¶12, ¶13: an account as of ``as_of`` from its stored records; charges in payment order."""

    as_of: date
    charges: tuple[LedgerCharge, ...]
    credit: Decimal

    @property
    def ledger_balance(self) -> Decimal:
        """¶12, ¶13: Σ (principal − principal paid) over every issued charge, due or not, less credit."""
        return sum((c.principal - c.principal_paid for c in self.charges), ZERO) - self.credit

    @property
    def total_balance(self) -> Decimal:
        return sum((c.balance for c in self.charges), ZERO)

    @property
    def unpaid_surcharge(self) -> Decimal:
        return sum((c.surcharge_due for c in self.charges), ZERO)

    def charge(self, key: str) -> LedgerCharge:
        for found in self.charges:
            if found.key == key:
                return found
        raise KeyError(key)


def surcharge_basis(
    *, principal: Decimal, first_delinquent: date, on: date, principal_payments: Iterable[tuple[date, Decimal]],
    schedule: RateSchedule,
) -> tuple[tuple[date, Decimal, Decimal], ...]:
    """¶12: for each period begun by ``on``, its start, the rate in force that day and the principal
    unpaid at its start (``principal`` less principal paid strictly before it, never below zero).

    Unpaid principal never grows, so the periods with something unpaid are a prefix.
    """
    payments = sorted(principal_payments)
    rows: list[tuple[date, Decimal, Decimal]] = []
    for number in range(1, delinquency_periods(first_delinquent=first_delinquent, on=on) + 1):
        start = add_months(first_delinquent, number - 1)
        paid_before = sum((amount for paid_on, amount in payments if paid_on < start), ZERO)
        unpaid = principal - paid_before
        if unpaid <= 0:
            break
        rows.append((start, rate_on(schedule=schedule, day=start), unpaid))
    return tuple(rows)


def _basis_surcharge(basis: Sequence[tuple[date, Decimal, Decimal]]) -> Decimal:
    """¶12: Σ rate × unpaid over a dated basis, half-up to the cent once."""
    return round_cents(sum((rate * unpaid for _, rate, unpaid in basis), ZERO))


def ledger_state(
    *,
    charges: Sequence[ChargeRecord],
    payments: Sequence[StoredPayment],
    credit_applied: Sequence[CreditApplied] = (),
    given_back: Sequence[GivenBack] = (),
    refunds: Sequence[RefundRecord] = (),
    reversals: Sequence[Reversal] = (),
    as_of: date,
    schedule: RateSchedule,
) -> LedgerState:
    """¶12, ¶13: each charge and the account's credit as of ``as_of``, from stored records only.

    Nothing is allocated here: a payment counts with the allocation stored for it (from its date,
    until a void is recorded; then it never paid). A charge's principal is the issued one less the
    lowerings recorded by ``as_of``; its surcharge is accrued period by period on the principal
    unpaid at each period's start (payments and credit applied strictly before it), each period at
    the rate in force on its first day, half-up once. Principal and surcharge paid are what the
    stored payments and *crédito aplicado* entries paid, less what was given back. The credit is
    what payments left beyond every charge plus what was given back, less what was applied and
    refunded. A void's ``reversals`` (:class:`Reversal`) undo, from their date, the parts of later
    entries that moved the voided payment's money.
    """
    _unique((charge.key for charge in charges), what="charges")
    _unique((payment.key for payment in payments), what="payments")
    present = [c for c in charges if c.issued_on is None or c.issued_on <= as_of]
    keys = {c.key for c in present}
    principal_paid: dict[str, list[tuple[date, Decimal]]] = {key: [] for key in keys}
    surcharge_paid: dict[str, Decimal] = dict.fromkeys(keys, ZERO)
    returned: dict[str, Decimal] = dict.fromkeys(keys, ZERO)

    def post(key: str, on: date, surcharge: Decimal, principal: Decimal) -> None:
        if key not in keys:
            raise BillingRuleError(f"an entry dated {on} names charge {key!r}, not issued by {as_of}")
        surcharge_paid[key] += surcharge
        if principal:
            principal_paid[key].append((on, principal))

    credit = ZERO
    for payment in payments:
        if not payment.counts_on(as_of):
            continue
        for allocation in payment.allocations:
            post(allocation.charge_key, payment.paid_on, allocation.surcharge, allocation.principal)
        credit += payment.to_credit
    for applied in credit_applied:
        if applied.entry_date <= as_of:
            post(applied.charge_key, applied.entry_date, applied.surcharge, applied.principal)
            credit -= applied.amount
    for back in given_back:
        if back.entry_date <= as_of:
            if back.charge_key not in keys:
                raise BillingRuleError(f"a give-back names charge {back.charge_key!r}, not issued by {as_of}")
            surcharge_paid[back.charge_key] -= back.surcharge
            returned[back.charge_key] += back.principal
            credit += back.surcharge + back.principal
    for refund in refunds:
        if refund.refunded_on <= as_of:
            credit -= refund.amount
    for reversal in reversals:
        if reversal.entry_date > as_of:
            continue
        if reversal.kind == REVERSE_REFUND:
            credit += reversal.principal
            continue
        if reversal.charge_key not in keys:
            raise BillingRuleError(f"a reversal names charge {reversal.charge_key!r}, not issued by {as_of}")
        if reversal.kind == REVERSE_GIVE_BACK:
            surcharge_paid[reversal.charge_key] += reversal.surcharge
            returned[reversal.charge_key] -= reversal.principal
            credit -= reversal.amount
        else:
            surcharge_paid[reversal.charge_key] -= reversal.surcharge
            if reversal.principal:
                principal_paid[reversal.charge_key].append((reversal.effective_from, -reversal.principal))
            credit += reversal.amount

    states = []
    for charge in sorted(present, key=lambda charge: (charge.due, charge.key)):
        principal = charge.principal_on(as_of)
        last_day = charge.last_day_on(as_of)
        basis: tuple[tuple[date, Decimal, Decimal], ...] = ()
        if charge.accrues_surcharge:
            basis = surcharge_basis(
                principal=principal, first_delinquent=last_day + timedelta(days=1), on=as_of,
                principal_payments=principal_paid[charge.key], schedule=schedule,
            )
        paid = sum((amount for _, amount in principal_paid[charge.key]), ZERO) - returned[charge.key]
        states.append(LedgerCharge(
            key=charge.key, principal=principal, due=charge.due, last_day=last_day, principal_paid=paid,
            surcharge=_basis_surcharge(basis), surcharge_paid=surcharge_paid[charge.key], surcharge_basis=basis,
            accrues_surcharge=charge.accrues_surcharge,
        ))
    return LedgerState(as_of=as_of, charges=tuple(states), credit=credit)


def allocate(*, state: LedgerState, amount: Decimal) -> tuple[tuple[StoredAllocation, ...], Decimal]:
    """¶12, ¶13: where one new amount paid on ``state.as_of`` goes: the allocation to store and the rest to credit.

    Oldest charge first (due date, then key; paying the January half early is allowed), and within
    a charge first the surcharge accrued and unpaid, then principal, as the replay always did.
    ``state`` is the account as of the payment's date, with every earlier payment of that day.
    """
    _check_money(amount, name="amount", allow_zero=False)
    left = amount
    allocations = []
    for charge in state.charges:
        if left == 0:
            break
        to_surcharge = min(left, max(ZERO, charge.surcharge_due))
        to_principal = min(left - to_surcharge, max(ZERO, charge.principal_due))
        if to_surcharge == 0 and to_principal == 0:
            continue
        allocations.append(StoredAllocation(charge_key=charge.key, surcharge=to_surcharge, principal=to_principal))
        left -= to_surcharge + to_principal
    return tuple(allocations), left


def apply_freed_money(
    *, amount: Decimal, open_charges: Sequence[LedgerCharge], on: date, source: str,
) -> tuple[tuple[CreditApplied, ...], Decimal]:
    """¶9, ¶12, ¶13: money freed by a correction or closure (or left by a payment) goes by dated
    *crédito aplicado* entries to the oldest open charges, surcharge first then principal, in
    the order payments use; what is left is refundable credit. Returns (entries, remainder).
    ``open_charges`` are the account's charges as of ``on`` (``ledger_state``), in payment order.
    """
    _check_money(amount, name="amount")
    state = LedgerState(as_of=on, charges=tuple(open_charges), credit=ZERO)
    if amount == 0:
        return (), ZERO
    allocations, left = allocate(state=state, amount=amount)
    entries = tuple(
        CreditApplied(charge_key=a.charge_key, entry_date=on, surcharge=a.surcharge, principal=a.principal, source=source)
        for a in allocations
    )
    return entries, left


# --- give-back after a lowering or a moved last day (¶9, ¶12) -----------------------------------


@dataclass(frozen=True)
class PaidOnCharge:
    """¶12: what one payment (or credit application) paid to a charge on ``paid_on``."""

    paid_on: date
    surcharge: Decimal
    principal: Decimal


@dataclass(frozen=True)
class GiveBack:
    """¶9, ¶12: what a lowered principal or a moved last day frees on one charge.

    ``surcharge_paid``: surcharge the stored payments paid; ``surcharge_owed``: the surcharge
    recomputed for the same periods (those begun by the last payment's date) on the new principal
    and last day; ``surcharge_given_back`` the excess; ``principal_freed``: principal paid beyond
    the new principal. ``freed`` is their sum, the money to hand to :func:`apply_freed_money`.
    """

    new_principal: Decimal
    new_last_day: date
    principal_paid: Decimal
    surcharge_paid: Decimal
    surcharge_owed: Decimal
    surcharge_given_back: Decimal
    principal_freed: Decimal
    basis: tuple[tuple[date, Decimal, Decimal], ...]

    @property
    def freed(self) -> Decimal:
        return self.surcharge_given_back + self.principal_freed


def give_back(
    *, new_principal: Decimal, last_day: date, paid: Sequence[PaidOnCharge], schedule: RateSchedule,
    already_given_back: Decimal = ZERO, already_freed: Decimal = ZERO,
) -> GiveBack:
    """¶9, ¶12: recompute a charge's paid surcharge on its lowered principal (or moved last day).

    The periods are those begun by the date of the last payment that paid the charge (what was
    paid covered them); in each, the surcharge is owed on the new principal less principal paid
    before the period's start, never below zero, at the rate in force on its first day. Surcharge
    given back is the surcharge paid beyond that; principal freed is the principal paid beyond the
    new principal. ``already_given_back``/``already_freed``: what earlier give-backs of this
    charge returned (so a second lowering frees only the new excess).
    """
    _check_money(new_principal, name="new principal")
    for entry in paid:
        _check_money(entry.surcharge, name="surcharge paid")
        _check_money(entry.principal, name="principal paid")
    surcharge_paid = sum((entry.surcharge for entry in paid), ZERO) - already_given_back
    principal_paid = sum((entry.principal for entry in paid), ZERO) - already_freed
    basis: tuple[tuple[date, Decimal, Decimal], ...] = ()
    if paid:
        basis = surcharge_basis(
            principal=new_principal, first_delinquent=last_day + timedelta(days=1),
            on=max(entry.paid_on for entry in paid),
            principal_payments=[(entry.paid_on, entry.principal) for entry in paid if entry.principal],
            schedule=schedule,
        )
    owed = _basis_surcharge(basis)
    return GiveBack(
        new_principal=new_principal, new_last_day=last_day, principal_paid=principal_paid,
        surcharge_paid=surcharge_paid, surcharge_owed=owed, surcharge_given_back=max(ZERO, surcharge_paid - owed),
        principal_freed=max(ZERO, principal_paid - new_principal), basis=basis,
    )


def give_back_for(
    *,
    charge: ChargeRecord,
    payments: Sequence[StoredPayment],
    credit_applied: Sequence[CreditApplied] = (),
    given_back: Sequence[GivenBack] = (),
    reversals: Sequence[Reversal] = (),
    on: date,
    schedule: RateSchedule,
) -> GiveBack:
    """¶9, ¶12: :func:`give_back` for one stored charge on ``on``, after its lowering or last-day
    move was recorded (``charge`` already carries it): what the stored payments (not voided by
    then) and *crédito aplicado* entries paid it, less what earlier give-backs returned, against
    its principal and last day as of ``on``.
    """
    paid = [
        PaidOnCharge(paid_on=payment.paid_on, surcharge=allocation.surcharge, principal=allocation.principal)
        for payment in payments
        if payment.counts_on(on)
        for allocation in payment.allocations
        if allocation.charge_key == charge.key
    ]
    # What a void reversed (by ``on``) of a crédito aplicado or a give-back of this charge.
    undone: dict[tuple[str, str], tuple[Decimal, Decimal]] = {}
    for reversal in reversals:
        if reversal.charge_key == charge.key and reversal.entry_date <= on and reversal.kind != REVERSE_REFUND:
            s, p = undone.get((reversal.kind, reversal.target), (ZERO, ZERO))
            undone[(reversal.kind, reversal.target)] = (s + reversal.surcharge, p + reversal.principal)
    for entry in credit_applied:
        if entry.charge_key == charge.key and entry.entry_date <= on:
            s, p = undone.get((REVERSE_CREDIT_APPLIED, entry.ref), (ZERO, ZERO))
            if entry.surcharge - s or entry.principal - p:
                paid.append(PaidOnCharge(paid_on=entry.entry_date, surcharge=entry.surcharge - s,
                                         principal=entry.principal - p))
    earlier = [entry for entry in given_back if entry.charge_key == charge.key and entry.entry_date <= on]
    taken_back = [undone.get((REVERSE_GIVE_BACK, entry.ref), (ZERO, ZERO)) for entry in earlier]
    return give_back(
        new_principal=charge.principal_on(on),
        last_day=charge.last_day_on(on),
        paid=paid,
        schedule=schedule,
        already_given_back=sum((entry.surcharge for entry in earlier), ZERO) - sum((s for s, _p in taken_back), ZERO),
        already_freed=sum((entry.principal for entry in earlier), ZERO) - sum((p for _s, p in taken_back), ZERO),
    )


# --- the void of a payment (¶13): a bounced check can always be voided ---------------------------


@dataclass(frozen=True)
class VoidPlan:
    """¶13: what the void of one payment posts, in order: ``reversals`` (newest reversed entry
    first; a refund's is a new charge due at once, keyed ``refund_charge_key(target)``), then the
    payment's own stored allocation (``allocations``, ``to_credit``) reversed as of its date."""

    payment_key: str
    on: date
    reversals: tuple[Reversal, ...]
    allocations: tuple[StoredAllocation, ...]
    to_credit: Decimal

    @property
    def refund_charges(self) -> tuple[Reversal, ...]:
        return tuple(r for r in self.reversals if r.kind == REVERSE_REFUND)


def refund_charge_key(target: str) -> str:
    """¶13: the key :func:`void_plan` gives the charge a refund becomes (before it is stored)."""
    return f"refund-charge:{target}"


def _position(day: date, recorded: datetime | None) -> tuple[date, datetime | None]:
    return (day, recorded)


def _order(day: date, recorded: datetime | None, ref: str) -> tuple[date, int, datetime | str, str]:
    """An entry's place in recording order: its date, then when it was recorded (an entry not yet
    recorded, planned, before every recorded one of its day), then its row."""
    if recorded is None:
        return (day, 0, ref, ref)
    return (day, 1, recorded, ref)


def _after(entry: tuple[date, datetime | None], payment: tuple[date, datetime | None]) -> bool:
    """An entry dated after the payment, or the same day and recorded after it (a day's entries
    with no recording moment are taken as after it: the void may have to reverse them)."""
    if entry[0] != payment[0]:
        return entry[0] > payment[0]
    if entry[1] is None or payment[1] is None:
        return True
    return entry[1] > payment[1]


def void_plan(
    *,
    charges: Sequence[ChargeRecord],
    payments: Sequence[StoredPayment],
    credit_applied: Sequence[CreditApplied] = (),
    given_back: Sequence[GivenBack] = (),
    refunds: Sequence[RefundRecord] = (),
    reversals: Sequence[Reversal] = (),
    payment_key: str,
    on: date,
    schedule: RateSchedule,
) -> VoidPlan:
    """¶13: the void of payment ``payment_key`` on ``on`` (a bounced check is money never received):
    the entries it must post so that, with the payment's allocation reversed as of its own date,
    no charge is paid below zero and the credit is not negative.

    Starting from the account as of ``on`` without the payment, it reverses, newest first, the
    later entries (dated after the payment, or the same day and recorded after it) that moved its
    money, each only as far as needed: a give-back of a charge whose surcharge or principal paid
    would fall below zero (surcharge, principal), then while the credit is negative a *crédito
    aplicado* (principal first, then surcharge: the reverse of the order it paid), and last a
    refund already paid out, which becomes a charge for that part, due on ``on``, with no ¶12
    surcharge (it is not an installment). Raises ``BillingRuleError`` if the payment is unknown,
    already voided, dated after ``on``, or if a reversed entry is dated after ``on``.
    """
    found = [payment for payment in payments if payment.key == payment_key]
    if not found:
        raise BillingRuleError(f"unknown payment {payment_key!r}")
    payment = found[0]
    if payment.voided_on is not None:
        raise BillingRuleError(f"payment {payment_key!r} is already voided")
    if on < payment.paid_on:
        raise BillingRuleError(f"a void on {on} is before the payment of {payment.paid_on}")
    where = _position(payment.paid_on, payment.recorded)
    voided = tuple(
        StoredPayment(key=p.key, paid_on=p.paid_on, allocations=p.allocations, to_credit=p.to_credit,
                      voided_on=on if p.key == payment_key else p.voided_on, recorded=p.recorded)
        for p in payments
    )

    def left(kind: str, ref: str, surcharge: Decimal, principal: Decimal, planned: Sequence[Reversal]) -> tuple[Decimal, Decimal]:
        for reversal in (*reversals, *planned):
            if reversal.kind == kind and reversal.target == ref:
                surcharge -= reversal.surcharge
                principal -= reversal.principal
        return surcharge, principal

    newest_first = {
        REVERSE_GIVE_BACK: sorted((g for g in given_back if _after(_position(g.entry_date, g.recorded), where)),
                                  key=lambda g: _order(g.entry_date, g.recorded, g.ref), reverse=True),
        REVERSE_CREDIT_APPLIED: sorted((a for a in credit_applied if _after(_position(a.entry_date, a.recorded), where)),
                                       key=lambda a: _order(a.entry_date, a.recorded, a.ref), reverse=True),
    }
    later_refunds = sorted((r for r in refunds if _after(_position(r.refunded_on, r.recorded), where)),
                           key=lambda r: _order(r.refunded_on, r.recorded, r.ref), reverse=True)
    # The reversals are planned on the account as of ``on``: an entry after ``on`` would not be seen.
    for entry_date in [*(e.entry_date for kind in newest_first.values() for e in kind),
                       *(r.refunded_on for r in later_refunds)]:
        _dated_by(entry_date, on)
    planned: list[Reversal] = []
    new_charges: list[ChargeRecord] = []
    for _step in range(10_000):  # each step reverses a whole remainder or a whole deficit: few steps
        state = ledger_state(charges=(*charges, *new_charges), payments=voided, credit_applied=credit_applied,
                             given_back=given_back, refunds=refunds, reversals=(*reversals, *planned), as_of=on,
                             schedule=schedule)
        short = next((c for c in state.charges if c.surcharge_paid < 0 or c.principal_paid < 0), None)
        if short is not None:
            need_s, need_p = max(ZERO, -short.surcharge_paid), max(ZERO, -short.principal_paid)
            for back in newest_first[REVERSE_GIVE_BACK]:
                if back.charge_key != short.key:
                    continue
                rest_s, rest_p = left(REVERSE_GIVE_BACK, back.ref, back.surcharge, back.principal, planned)
                take_s, take_p = min(rest_s, need_s), min(rest_p, need_p)
                if take_s + take_p > 0:
                    break
            else:
                raise BillingRuleError(f"charge {short.key!r} would be paid below zero and no later give-back is left to reverse")
            _dated_by(back.entry_date, on)
            planned.append(Reversal(kind=REVERSE_GIVE_BACK, target=back.ref, charge_key=back.charge_key, entry_date=on,
                                    effective_from=back.entry_date, surcharge=take_s, principal=take_p))
            continue
        if state.credit < 0:
            need = -state.credit
            for applied in newest_first[REVERSE_CREDIT_APPLIED]:
                rest_s, rest_p = left(REVERSE_CREDIT_APPLIED, applied.ref, applied.surcharge, applied.principal, planned)
                if rest_s + rest_p > 0:
                    _dated_by(applied.entry_date, on)
                    take_p = min(rest_p, need)
                    take_s = min(rest_s, need - take_p)
                    planned.append(Reversal(kind=REVERSE_CREDIT_APPLIED, target=applied.ref, charge_key=applied.charge_key,
                                            entry_date=on, effective_from=applied.entry_date, surcharge=take_s,
                                            principal=take_p))
                    break
            else:
                for refund in later_refunds:
                    _rest_s, rest = left(REVERSE_REFUND, refund.ref, ZERO, refund.amount, planned)
                    if rest > 0:
                        _dated_by(refund.refunded_on, on)
                        key = refund_charge_key(refund.ref)
                        take = min(rest, need)
                        planned.append(Reversal(kind=REVERSE_REFUND, target=refund.ref, charge_key=key, entry_date=on,
                                                effective_from=refund.refunded_on, principal=take))
                        new_charges.append(ChargeRecord(key=key, principal=take, due=on, last_day=on,
                                                        accrues_surcharge=False, issued_on=on))
                        break
                else:
                    raise BillingRuleError("the credit would be negative and no later entry is left to reverse")
            continue
        break
    else:  # pragma: no cover - every step reverses a remainder or a deficit in full
        raise BillingRuleError("the void's reversals do not settle")
    # Posted newest reversed entry first, the order they are undone in.
    newest = [*newest_first[REVERSE_GIVE_BACK], *newest_first[REVERSE_CREDIT_APPLIED], *later_refunds]
    rank = {entry.ref: _order(entry.refunded_on if isinstance(entry, RefundRecord) else entry.entry_date,
                              entry.recorded, entry.ref) for entry in newest}
    ordered = sorted(_merged(planned), key=lambda reversal: rank[reversal.target], reverse=True)
    return VoidPlan(payment_key=payment_key, on=on, reversals=tuple(ordered), allocations=payment.allocations,
                    to_credit=payment.to_credit)


def _dated_by(day: date, on: date) -> None:
    if day > on:
        raise BillingRuleError(f"an entry of {day} moved the payment's money: a void must be dated on or after it, not {on}")


def _merged(planned: Sequence[Reversal]) -> tuple[Reversal, ...]:
    """One reversal per reversed entry (a deficit met in steps may reverse one entry twice), in
    the order first planned."""
    merged: dict[tuple[str, str], Reversal] = {}
    for reversal in planned:
        key = (reversal.kind, reversal.target)
        if key in merged:
            was = merged[key]
            merged[key] = Reversal(kind=was.kind, target=was.target, charge_key=was.charge_key, entry_date=was.entry_date,
                                   effective_from=was.effective_from, surcharge=was.surcharge + reversal.surcharge,
                                   principal=was.principal + reversal.principal)
        else:
            merged[key] = reversal
    return tuple(merged.values())
