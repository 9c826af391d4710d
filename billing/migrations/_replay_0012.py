"""The account replay of migration 0012, frozen: what ``billing.rules`` did when that migration was
written (``account_state`` with ``ChargeInput``/``PaymentInput``, issue 11), copied here so the
migration gives the same allocations whatever the rules become. The rules keep one account model
(``rules.ledger_state`` over stored records); no app code imports this module (the tests compare
it with the ledger: ``tests/billing/test_ledger_rules.py``).

Only what 0012 uses is kept: the ¶12 delinquency parameters and last day to pay, and the replay's
allocation of each payment (oldest charge first, by due date then key; within a charge the
surcharge accrued as of the payment's date first, then principal; the rest to credit). Every
period uses ``params.surcharge_rate`` (0012 passes no dated schedule). The leading underscore
keeps Django's migration loader from taking it for a migration.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

import holidays

ZERO = Decimal("0.00")
CENT = Decimal("0.01")
SUNDAY = 6  # date.weekday()
SATURDAY = 5  # date.weekday()


class ReplayError(ValueError):
    """An input the replay cannot accept."""


def round_cents(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def add_months(start: date, months: int) -> date:
    """``start`` plus whole calendar months, clamped to the end of a shorter month."""
    month_index = start.month - 1 + months
    year = start.year + month_index // 12
    month = month_index % 12 + 1
    day = min(start.day, calendar.monthrange(year, month)[1])
    return date(year, month, day)


def _check_money(value: object, *, name: str, allow_zero: bool = True) -> Decimal:
    if not isinstance(value, Decimal) or not value.is_finite():
        raise ReplayError(f"{name} must be a finite Decimal, got {value!r}")
    if value != value.quantize(CENT):
        raise ReplayError(f"{name} must be a whole number of cents, got {value}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ReplayError(f"{name} must be {'zero or more' if allow_zero else 'more than zero'}, got {value}")
    return value


@dataclass(frozen=True)
class DelinquencyParameters:
    """¶12: grace days, the surcharge rate per period and whether a Saturday moves the last day."""

    grace_days: int = 60
    surcharge_rate: Decimal = Decimal("0.005")
    saturdays_move: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.grace_days, bool) or not isinstance(self.grace_days, int) or self.grace_days < 0:
            raise ReplayError(f"grace_days must be an int of zero or more, got {self.grace_days!r}")
        rate = self.surcharge_rate
        if not isinstance(rate, Decimal) or not rate.is_finite() or rate < 0:
            raise ReplayError(f"surcharge_rate must be a finite Decimal of zero or more, got {rate!r}")
        if not isinstance(self.saturdays_move, bool):
            raise ReplayError(f"saturdays_move must be a bool, got {self.saturdays_move!r}")


def pr_legal_holidays(*, years: Iterable[int]) -> frozenset[date]:
    """¶12: Puerto Rico legal holidays of ``years`` (observed days included)."""
    wanted = sorted(set(years))
    if not wanted:
        return frozenset()
    found = holidays.country_holidays("US", subdiv="PR", years=wanted)
    return frozenset(day for day in found if day.year in wanted)


def next_open_day(*, day: date, closed_days: frozenset[date], params: DelinquencyParameters) -> date:
    """¶12: ``day`` or the first later day that is not a Sunday nor closed (nor a Saturday when
    ``params.saturdays_move``)."""
    while day.weekday() == SUNDAY or day in closed_days or (params.saturdays_move and day.weekday() == SATURDAY):
        day += timedelta(days=1)
    return day


def delinquency_periods(*, first_delinquent: date, on: date) -> int:
    """¶12: months or fractions of a month of delinquency begun by ``on`` (0 before it starts)."""
    if on < first_delinquent:
        return 0
    months = (on.year - first_delinquent.year) * 12 + on.month - first_delinquent.month
    periods = max(1, months)
    while add_months(first_delinquent, periods) <= on:
        periods += 1
    while periods > 1 and add_months(first_delinquent, periods - 1) > on:
        periods -= 1
    return periods


@dataclass(frozen=True)
class ChargeInput:
    """One charge of the account as the replay saw it."""

    key: str
    principal: Decimal
    due: date
    last_day: date
    accrues_surcharge: bool = True

    def __post_init__(self) -> None:
        if not self.key:
            raise ReplayError("a charge needs a key")
        _check_money(self.principal, name=f"principal of charge {self.key!r}")
        if self.last_day < self.due:
            raise ReplayError(f"charge {self.key!r}: last day to pay {self.last_day} is before due {self.due}")


@dataclass(frozen=True)
class PaymentInput:
    """Money received on ``paid_on`` (more than zero)."""

    key: str
    paid_on: date
    amount: Decimal

    def __post_init__(self) -> None:
        if not self.key:
            raise ReplayError("a payment needs a key")
        _check_money(self.amount, name=f"amount of payment {self.key!r}", allow_zero=False)


@dataclass(frozen=True)
class Application:
    """The part of one payment applied to one charge: surcharge first, then principal."""

    payment_key: str
    charge_key: str
    surcharge: Decimal
    principal: Decimal


@dataclass
class _Ledger:
    charge: ChargeInput
    first_delinquent: date
    principal_paid: Decimal = ZERO
    surcharge_paid: Decimal = ZERO
    principal_payments: list[tuple[date, Decimal]] = field(default_factory=list)

    def surcharge(self, *, on: date, rate: Decimal) -> Decimal:
        """``Σ rate × principal unpaid at each period's start`` (payments strictly before), half-up once."""
        if not self.charge.accrues_surcharge:
            return ZERO
        total = ZERO
        for number in range(1, delinquency_periods(first_delinquent=self.first_delinquent, on=on) + 1):
            start = add_months(self.first_delinquent, number - 1)
            unpaid = self.charge.principal - sum((amount for paid_on, amount in self.principal_payments if paid_on < start), ZERO)
            if unpaid <= 0:
                break
            total += rate * unpaid
        return round_cents(total)


def _unique(keys: Iterable[str], *, what: str) -> None:
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise ReplayError(f"two {what} share the key {key!r}")
        seen.add(key)


def replay_applications(
    *, charges: Sequence[ChargeInput], payments: Sequence[PaymentInput], as_of: date, params: DelinquencyParameters,
) -> tuple[Application, ...]:
    """The applications of the payments dated by ``as_of``, in date order (then key)."""
    _unique((charge.key for charge in charges), what="charges")
    _unique((payment.key for payment in payments), what="payments")
    ledgers = [
        _Ledger(charge=charge, first_delinquent=charge.last_day + timedelta(days=1))
        for charge in sorted(charges, key=lambda charge: (charge.due, charge.key))
    ]
    applications: list[Application] = []
    received = credit = ZERO
    for payment in sorted((p for p in payments if p.paid_on <= as_of), key=lambda p: (p.paid_on, p.key)):
        received += payment.amount
        left = payment.amount
        for ledger in ledgers:
            if left == 0:
                break
            accrued = ledger.surcharge(on=payment.paid_on, rate=params.surcharge_rate)
            to_surcharge = min(left, accrued - ledger.surcharge_paid)
            to_principal = min(left - to_surcharge, ledger.charge.principal - ledger.principal_paid)
            if to_surcharge == 0 and to_principal == 0:
                continue
            ledger.surcharge_paid += to_surcharge
            ledger.principal_paid += to_principal
            if to_principal:
                ledger.principal_payments.append((payment.paid_on, to_principal))
            left -= to_surcharge + to_principal
            applications.append(Application(payment_key=payment.key, charge_key=ledger.charge.key,
                                            surcharge=to_surcharge, principal=to_principal))
        credit += left
    applied = sum((ledger.principal_paid + ledger.surcharge_paid for ledger in ledgers), ZERO)
    if applied + credit != received:  # money is neither lost nor applied twice
        raise AssertionError(f"replay lost money: {applied} + {credit} != {received}")
    return tuple(applications)
