"""Pure billing and delinquency rules of the O&M irrigation levy (¶1(2), ¶2, ¶8, ¶12).

Decimal in, Decimal or frozen dataclasses out. Nothing here imports Django, reads settings,
looks at the clock or does I/O: an account is a deterministic replay of its charges and dated
payments up to an as-of date, so a statement or receipt can be recomputed years later from the
stored rows. Paragraph numbers refer to ``shared/statute/README.md``; sec. 374a is paraphrased in
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
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

import holidays

from levy.rules import CENT, add_months, round_cents

ZERO = Decimal("0.00")  # dollars

FISCAL_YEAR_START_MONTH = 7  # ¶11, ¶12: the fiscal year and the first installment start July 1
INSTALLMENT_COUNT = 2  # ¶12: "pagaderas semestralmente", July 1 and January 1
SUNDAY = 6  # date.weekday()
SATURDAY = 5  # date.weekday()


class BillingRuleError(ValueError):
    """¶12: an input the billing rules cannot accept (bad amount, date or parameter)."""


def _check_money(value: object, *, name: str, allow_zero: bool = True) -> Decimal:
    """A finite Decimal in whole cents, not negative (zero only when ``allow_zero``)."""
    if not isinstance(value, Decimal) or not value.is_finite():
        raise BillingRuleError(f"{name} must be a finite Decimal, got {value!r}")
    if value != value.quantize(CENT):
        raise BillingRuleError(f"{name} must be a whole number of cents, got {value}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = "zero or more" if allow_zero else "more than zero"
        raise BillingRuleError(f"{name} must be {bound}, got {value}")
    return value


def _check_rate(value: object, *, name: str) -> Decimal:
    """A finite, non-negative Decimal (rates may carry more places than cents)."""
    if not isinstance(value, Decimal) or not value.is_finite() or value < 0:
        raise BillingRuleError(f"{name} must be a finite Decimal of zero or more, got {value!r}")
    return value


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


def surcharge_for(*, principal: Decimal, first_delinquent: date, on: date, rate: Decimal) -> Decimal:
    """¶12: surcharge as of ``on`` when nothing has been paid: ``rate × periods × principal``.

    Rounded half-up to the cent once. 6,930.90 delinquent from 2026-09-01 and paid 2026-10-15
    (two periods begun) owes 69.31.
    """
    _check_money(principal, name="principal")
    _check_rate(rate, name="rate")
    periods = delinquency_periods(first_delinquent=first_delinquent, on=on)
    return round_cents(rate * periods * principal)


# --- the account replay (¶12, ¶13) -------------------------------------------------------------


@dataclass(frozen=True)
class ChargeInput:
    """¶12: one installment (or other charge) on an account, as stored on the bill.

    ``last_day`` is the last day to pay (:func:`last_day_to_pay`), stored with the charge so a
    later change of the holiday calendar cannot move an issued bill. ``accrues_surcharge`` is off
    for sec. 374a water sales and any other charge the ¶12 surcharge does not reach; such charges
    still take payments in due-date order.
    """

    key: str
    principal: Decimal
    due: date
    last_day: date
    accrues_surcharge: bool = True

    def __post_init__(self) -> None:
        if not self.key:
            raise BillingRuleError("a charge needs a key")
        _check_money(self.principal, name=f"principal of charge {self.key!r}")
        if self.last_day < self.due:
            raise BillingRuleError(f"charge {self.key!r}: last day to pay {self.last_day} is before due {self.due}")


@dataclass(frozen=True)
class PaymentInput:
    """¶13: money received on ``paid_on``. Always more than zero.

    A voided payment is not reversed with a negative amount: it is simply left out of the replay.
    """

    key: str
    paid_on: date
    amount: Decimal

    def __post_init__(self) -> None:
        if not self.key:
            raise BillingRuleError("a payment needs a key")
        _check_money(self.amount, name=f"amount of payment {self.key!r}", allow_zero=False)


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
    sobre $6,930.90"); ``periods`` is its length and ``surcharge`` is ``rate × Σ basis`` rounded
    half-up once. A charge paid in full stops accruing, so its ``periods`` stays where it was.
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
    """¶12, ¶13: an account replayed up to ``as_of``.

    ``charges`` are in application order (due date, then key). ``credit_balance`` is money beyond
    every charge on the account. ``total_due`` sums the balances of charges already due
    (``due <= as_of``); ``total_balance`` sums the balances of all charges, so
    ``total_balance = Σ principal + Σ surcharge − Σ payments + credit_balance``.
    """

    as_of: date
    charges: tuple[ChargeState, ...]
    applications: tuple[Application, ...]
    credit_balance: Decimal
    total_due: Decimal
    total_balance: Decimal


@dataclass
class _Ledger:
    """Mutable running totals of one charge during the replay; never leaves this module."""

    charge: ChargeInput
    first_delinquent: date
    principal_paid: Decimal = ZERO
    surcharge_paid: Decimal = ZERO
    principal_payments: list[tuple[date, Decimal]] = field(default_factory=list)

    def basis(self, *, on: date) -> tuple[tuple[date, Decimal], ...]:
        """Period starts up to ``on`` with the principal unpaid at each (payments strictly before).

        Unpaid principal never grows, so the periods with something unpaid are a prefix.
        """
        if not self.charge.accrues_surcharge:
            return ()
        rows: list[tuple[date, Decimal]] = []
        periods = delinquency_periods(first_delinquent=self.first_delinquent, on=on)
        for number in range(1, periods + 1):
            start = add_months(self.first_delinquent, number - 1)
            paid_before = sum((amount for paid_on, amount in self.principal_payments if paid_on < start), ZERO)
            unpaid = self.charge.principal - paid_before
            if unpaid <= 0:
                break
            rows.append((start, unpaid))
        return tuple(rows)

    def surcharge(self, *, on: date, rate: Decimal) -> Decimal:
        """Surcharge accrued as of ``on``: ``rate × Σ basis``, half-up to the cent once."""
        return _surcharge_on(self.basis(on=on), rate=rate)


def _surcharge_on(basis: tuple[tuple[date, Decimal], ...], *, rate: Decimal) -> Decimal:
    """¶12: ``rate × Σ`` unpaid principal over the periods begun, half-up to the cent once."""
    return round_cents(rate * sum((unpaid for _, unpaid in basis), ZERO))


def _unique(keys: Iterable[str], *, what: str) -> None:
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise BillingRuleError(f"two {what} share the key {key!r}")
        seen.add(key)


def account_state(
    *,
    charges: Sequence[ChargeInput],
    payments: Sequence[PaymentInput],
    as_of: date,
    params: DelinquencyParameters = DelinquencyParameters(),
) -> AccountState:
    """¶12, ¶13: replay an account's charges and dated payments up to ``as_of``.

    Payments dated after ``as_of`` are ignored; the rest are applied in date order (then by key).
    Each goes to the oldest charge with anything owing (due date, then key; paying the January
    half early is allowed), and within a charge first to the surcharge accrued as of the payment
    date and not yet paid, then to principal. Money beyond every charge is ``credit_balance``.

    The surcharge of a charge as of a date is ``rate × Σ`` over the periods begun by that date of
    the principal unpaid at the period's start (principal paid by payments dated strictly before
    that start), rounded half-up to the cent once; never compounded, never on surcharge. A period's
    basis depends only on payments dated before it starts, so the result is idempotent and the
    surcharge of every charge never decreases as ``as_of`` moves forward; a charge whose principal
    is paid stops accruing, so credit never has to be re-applied.
    """
    _unique((charge.key for charge in charges), what="charges")
    _unique((payment.key for payment in payments), what="payments")
    rate = params.surcharge_rate
    ledgers = [
        _Ledger(charge=charge, first_delinquent=charge.last_day + timedelta(days=1))
        for charge in sorted(charges, key=lambda charge: (charge.due, charge.key))
    ]
    applications: list[Application] = []
    credit = ZERO
    received = ZERO
    replayed = sorted(
        (payment for payment in payments if payment.paid_on <= as_of),
        key=lambda payment: (payment.paid_on, payment.key),
    )
    for payment in replayed:
        received += payment.amount
        left = payment.amount
        for ledger in ledgers:
            if left == 0:
                break
            accrued = ledger.surcharge(on=payment.paid_on, rate=rate)
            to_surcharge = min(left, accrued - ledger.surcharge_paid)
            to_principal = min(left - to_surcharge, ledger.charge.principal - ledger.principal_paid)
            if to_surcharge == 0 and to_principal == 0:
                continue
            ledger.surcharge_paid += to_surcharge
            ledger.principal_paid += to_principal
            if to_principal:
                ledger.principal_payments.append((payment.paid_on, to_principal))
            left -= to_surcharge + to_principal
            applications.append(
                Application(
                    payment_key=payment.key,
                    charge_key=ledger.charge.key,
                    surcharge=to_surcharge,
                    principal=to_principal,
                )
            )
        credit += left

    states = tuple(_charge_state(ledger, as_of=as_of, rate=rate) for ledger in ledgers)
    applied = sum((state.paid for state in states), ZERO)
    if applied + credit != received:  # money is neither lost nor applied twice
        raise AssertionError(f"replay lost money: {applied} + {credit} != {received}")
    return AccountState(
        as_of=as_of,
        charges=states,
        applications=tuple(applications),
        credit_balance=credit,
        total_due=sum((state.balance for state in states if state.due <= as_of), ZERO),
        total_balance=sum((state.balance for state in states), ZERO),
    )


def _charge_state(ledger: _Ledger, *, as_of: date, rate: Decimal) -> ChargeState:
    charge = ledger.charge
    basis = ledger.basis(on=as_of)
    surcharge = _surcharge_on(basis, rate=rate)
    paid = ledger.principal_paid + ledger.surcharge_paid
    return ChargeState(
        key=charge.key,
        principal=charge.principal,
        due=charge.due,
        last_day=charge.last_day,
        periods=len(basis),
        surcharge=surcharge,
        surcharge_basis=basis,
        principal_paid=ledger.principal_paid,
        surcharge_paid=ledger.surcharge_paid,
        paid=paid,
        balance=charge.principal + surcharge - paid,
        accrues_surcharge=charge.accrues_surcharge,
        first_delinquent=ledger.first_delinquent if charge.accrues_surcharge else None,
    )


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
