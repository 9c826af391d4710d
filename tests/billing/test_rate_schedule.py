"""¶12 with dated legal parameters: each surcharge period is charged the rate in force on its first
day (``docs/interpretations.md``, "Dated legal parameters"). Pure rules, no database: accounts
are built the counter's way (``tests/billing/ledger_counter.py``: ``rules.allocate`` when a
payment is made, ``rules.ledger_state`` over the stored records)."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from billing.accounts import _account_state_of
from billing.rules import (
    BillingRuleError,
    ChargeRecord,
    rate_on,
    rate_schedule,
    surcharge_for,
    surcharge_runs,
)
from levy.rules import add_months
from tests.billing.ledger_counter import Paid, account, applications

STATUTE_FROM = date(1953, 6, 10)
HALF = Decimal("0.005")
ONE = Decimal("0.01")
REFORM = ((STATUTE_FROM, HALF), (date(2028, 1, 1), ONE))  # finding 4: 1 % from 2028-01-01


def test_a_single_rate_is_a_one_row_schedule():
    assert rate_schedule(HALF) == ((date.min, HALF),)
    assert rate_on(schedule=rate_schedule(HALF), day=date(2026, 9, 1)) == HALF
    # The old call with one rate gives the same figure as before: ½% × 2 × 6,930.90 = 69.309.
    assert surcharge_for(
        principal=Decimal("6930.90"), first_delinquent=date(2026, 9, 1), on=date(2026, 10, 15), rate=HALF
    ) == Decimal("69.31")


def test_schedule_rows_are_sorted_and_checked():
    assert rate_schedule([(date(2028, 1, 1), ONE), (STATUTE_FROM, HALF)]) == REFORM
    with pytest.raises(BillingRuleError, match="two rates take effect on 2028-01-01"):
        rate_schedule([(date(2028, 1, 1), ONE), (date(2028, 1, 1), HALF)])
    with pytest.raises(BillingRuleError, match="at least one row"):
        rate_schedule([])
    with pytest.raises(BillingRuleError):
        rate_schedule([(date(2028, 1, 1), 0.01)])
    with pytest.raises(BillingRuleError):
        rate_schedule(0.005)
    with pytest.raises(BillingRuleError, match="no surcharge rate in force on 1950-01-01"):
        rate_on(schedule=REFORM, day=date(1950, 1, 1))


def test_each_period_uses_the_rate_in_force_on_its_first_day():
    # Delinquent from 2027-11-01; on 2028-01-15 three periods have begun: 2027-11-01 and
    # 2027-12-01 at ½ %, 2028-01-01 at 1 %: 34.6545 + 34.6545 + 69.309 = 138.618 -> 138.62.
    assert surcharge_for(
        principal=Decimal("6930.90"), first_delinquent=date(2027, 11, 1), on=date(2028, 1, 15), rate=REFORM
    ) == Decimal("138.62")
    # Before the period of 2028-01-01 begins, nothing changes: 2 × 34.6545 = 69.309 -> 69.31.
    assert surcharge_for(
        principal=Decimal("6930.90"), first_delinquent=date(2027, 11, 1), on=date(2027, 12, 31), rate=REFORM
    ) == Decimal("69.31")
    # A period that began on 2027-12-02 is still at ½ % in January (rate fixed at its first day).
    assert surcharge_for(
        principal=Decimal("6930.90"), first_delinquent=date(2027, 12, 2), on=date(2028, 1, 1), rate=REFORM
    ) == Decimal("34.65")


def test_the_sum_is_rounded_once_per_charge_not_per_period():
    # 1.00 at ½ % + ½ % + 1 % = 0.005 + 0.005 + 0.01 = 0.02 (rounded once); per period it would be
    # 0.01 + 0.01 + 0.01 = 0.03.
    assert surcharge_for(
        principal=Decimal("1.00"), first_delinquent=date(2027, 11, 1), on=date(2028, 1, 1), rate=REFORM
    ) == Decimal("0.02")


def test_the_account_applies_each_period_its_own_rate():
    charge = ChargeRecord(key="C1", principal=Decimal("6930.90"), due=date(2027, 9, 1), last_day=date(2027, 10, 31))
    state, stored = account(charges=[charge], payments=[], as_of=date(2028, 2, 1), schedule=REFORM)
    (only,) = state.charges
    # Periods 2027-11-01, 2027-12-01 at ½ %, 2028-01-01, 2028-02-01 at 1 %:
    # 2 × 34.6545 + 2 × 69.309 = 207.927 -> 207.93.
    assert only.surcharge == Decimal("207.93")
    assert tuple(rate for _start, rate, _unpaid in only.surcharge_basis) == (HALF, HALF, ONE, ONE)
    # the runs the statement words ("½% × 2 meses …"), read from the account as pages read it
    (shown,) = _account_state_of(state, stored).charges
    assert surcharge_runs(shown) == ((2, HALF, Decimal("6930.90")), (2, ONE, Decimal("6930.90")))
    # With the one statutory rate every period is at ½ %.
    old, _ = account(charges=[charge], payments=[], as_of=date(2028, 2, 1), schedule=rate_schedule(HALF))
    assert old.charges[0].surcharge == Decimal("138.62")  # 4 × 34.6545 = 138.618
    assert tuple(rate for _start, rate, _unpaid in old.charges[0].surcharge_basis) == (HALF,) * 4


def test_a_payment_before_the_new_row_is_allocated_as_before():
    charge = ChargeRecord(key="C1", principal=Decimal("1000.00"), due=date(2027, 7, 1), last_day=date(2027, 8, 30))
    payment = Paid(key="P1", paid_on=date(2027, 12, 15), amount=Decimal("400.00"))
    before, stored_before = account(charges=[charge], payments=[payment], as_of=date(2028, 3, 1), schedule=REFORM[:1])
    after, stored_after = account(charges=[charge], payments=[payment], as_of=date(2028, 3, 1), schedule=REFORM)
    # Four periods (08-31, 09-30, 10-31, 11-30) at ½ % of 1,000.00 = 20.00 by 2027-12-15.
    assert stored_before == stored_after
    assert stored_after[0].allocations[0].surcharge == Decimal("20.00")
    # Unpaid 620.00 from 2027-12-31 on; 2027-12-31 at ½ % = 3.10, 2028-01-31 and 2028-02-29 at
    # 1 % = 6.20 each: 20.00 + 3.10 + 12.40 = 35.50 (½ % throughout: 20.00 + 3 × 3.10 = 29.30).
    assert after.charges[0].surcharge == Decimal("35.50")
    assert before.charges[0].surcharge == Decimal("29.30")


RATES = st.decimals(min_value=Decimal("0"), max_value=Decimal("0.05"), places=4)
CENTS = st.integers(min_value=1, max_value=10_000_000).map(lambda cents: Decimal(cents).scaleb(-2))
DAYS = st.dates(min_value=date(2000, 1, 1), max_value=date(2040, 12, 31))


@st.composite
def schedules(draw):
    starts = draw(st.lists(DAYS, min_size=0, max_size=4, unique=True))
    return rate_schedule([(STATUTE_FROM, draw(RATES))] + [(start, draw(RATES)) for start in starts])


@settings(max_examples=300, deadline=None)
@given(
    principal=CENTS,
    first_delinquent=DAYS,
    schedule=schedules(),
    k=st.integers(min_value=1, max_value=30),
    into=st.integers(min_value=0, max_value=30),
    later=st.integers(min_value=1, max_value=400),
    new_rate=RATES,
)
def test_a_row_dated_after_period_k_never_changes_periods_up_to_k(
    principal, first_delinquent, schedule, k, into, later, new_rate
):
    start_k = add_months(first_delinquent, k - 1)
    on = min(start_k + timedelta(days=into), add_months(first_delinquent, k) - timedelta(days=1))  # inside period k
    effective = start_k + timedelta(days=later)
    if any(start == effective for start, _ in schedule):
        return
    extended = rate_schedule(schedule + ((effective, new_rate),))
    assert surcharge_for(principal=principal, first_delinquent=first_delinquent, on=on, rate=extended) == surcharge_for(
        principal=principal, first_delinquent=first_delinquent, on=on, rate=schedule
    )


@settings(max_examples=150, deadline=None)
@given(
    principal=CENTS,
    schedule=schedules(),
    new_rate=RATES,
    effective=DAYS,
    payments=st.lists(st.tuples(DAYS, CENTS), max_size=5),
    as_of=DAYS,
)
def test_a_new_row_never_changes_a_payment_before_it_nor_any_period_that_began_before_it(
    principal, schedule, new_rate, effective, payments, as_of
):
    if any(start == effective for start, _ in schedule):
        return
    extended = rate_schedule(schedule + ((effective, new_rate),))
    charge = ChargeRecord(key="C1", principal=principal, due=date(2010, 7, 1), last_day=date(2010, 8, 30))
    paid = [Paid(key=f"P{n}", paid_on=on, amount=amount) for n, (on, amount) in enumerate(payments)]
    old, stored_old = account(charges=[charge], payments=paid, as_of=as_of, schedule=schedule)
    new, stored_new = account(charges=[charge], payments=paid, as_of=as_of, schedule=extended)
    early = {f"P{n}" for n, (on, _) in enumerate(payments) if on < effective}
    # Payments are allocated in date order, so every payment dated before the row is allocated
    # exactly as before (same charge, same surcharge, same principal).
    assert [a for a in applications(stored_old, as_of=as_of) if a.payment_key in early] == [
        a for a in applications(stored_new, as_of=as_of) if a.payment_key in early]
    (was,), (now,) = old.charges, new.charges
    kept = [n for n, (start, _rate, _unpaid) in enumerate(was.surcharge_basis) if start < effective]
    assert [was.surcharge_basis[n] for n in kept] == [now.surcharge_basis[n] for n in kept]
    if as_of < effective:
        assert old == new
