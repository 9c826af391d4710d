"""An account built the way the counter builds it, for the pure rule tests (¶12, ¶13).

Each payment, in date order then key, is allocated by ``rules.allocate`` on the account as of its
date (``rules.ledger_state`` with every earlier payment stored), and that allocation is stored
(``StoredPayment``); the account as of any date is then ``rules.ledger_state`` over the stored
records. Nothing is allocated twice. These helpers only sequence the rules; every figure comes
from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from decimal import Decimal
from typing import NamedTuple

from billing.rules import (
    Application,
    ChargeRecord,
    LedgerCharge,
    LedgerState,
    RateSchedule,
    StoredPayment,
    allocate,
    ledger_state,
    rate_schedule,
)

HALF_PERCENT = rate_schedule(Decimal("0.005"))  # ¶12: ½ % a month, in force since date.min
ZERO = Decimal("0.00")


class Paid(NamedTuple):
    """Money received at the counter on ``paid_on`` (before its allocation is stored)."""

    key: str
    paid_on: date
    amount: Decimal


def stored_payments(
    *, charges: Sequence[ChargeRecord], payments: Sequence[Paid], schedule: RateSchedule = HALF_PERCENT,
) -> tuple[StoredPayment, ...]:
    """Each payment allocated on the account as of its date with the earlier ones stored, then stored."""
    stored: list[StoredPayment] = []
    for payment in sorted(payments, key=lambda p: (p.paid_on, p.key)):
        state = ledger_state(charges=charges, payments=stored, as_of=payment.paid_on, schedule=schedule)
        allocations, left = allocate(state=state, amount=payment.amount)
        stored.append(StoredPayment(key=payment.key, paid_on=payment.paid_on, allocations=allocations, to_credit=left))
    return tuple(stored)


def account(
    *, charges: Sequence[ChargeRecord], payments: Sequence[Paid], as_of: date, schedule: RateSchedule = HALF_PERCENT,
) -> tuple[LedgerState, tuple[StoredPayment, ...]]:
    """The account as of ``as_of`` and the payments as the counter stored them."""
    stored = stored_payments(charges=charges, payments=payments, schedule=schedule)
    return ledger_state(charges=charges, payments=stored, as_of=as_of, schedule=schedule), stored


def applications(stored: Sequence[StoredPayment], *, as_of: date) -> tuple[Application, ...]:
    """The stored allocations of the payments dated by ``as_of``, in date order then key."""
    return tuple(
        Application(payment_key=p.key, charge_key=a.charge_key, surcharge=a.surcharge, principal=a.principal)
        for p in sorted(stored, key=lambda p: (p.paid_on, p.key)) if p.counts_on(as_of) for a in p.allocations
    )


def by_key(state: LedgerState) -> dict[str, LedgerCharge]:
    return {charge.key: charge for charge in state.charges}


def unpaid_basis(charge: LedgerCharge) -> tuple[tuple[date, Decimal], ...]:
    """The basis without its rates: ``((period start, principal unpaid then), …)``."""
    return tuple((start, unpaid) for start, _rate, unpaid in charge.surcharge_basis)
