"""Tests of the pure billing and delinquency rules (¶1(2), ¶2, ¶8, ¶12); no database, no Django.

Every late-payment line of ``shared/statute/worked-examples.md`` is reproduced here, next to
hand-computed cases and Hypothesis properties of the account as the counter builds it: each
payment allocated when its receipt is issued and stored (``rules.allocate``), the account read from
the stored records (``rules.ledger_state``; ``tests/billing/ledger_counter.py`` sequences them).
"""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import holidays
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from billing.rules import (
    Application,
    BillingRuleError,
    ChargeRecord,
    DelinquencyParameters,
    StoredAllocation,
    StoredPayment,
    WaterSaleRates,
    allocate,
    collection_split,
    delinquency_periods,
    first_delinquent_day,
    installment_due_date,
    last_day_to_pay,
    ledger_state,
    pr_legal_holidays,
    surcharge_for,
    water_rate,
)
from levy.rules import add_months, round_cents
from tests.billing.ledger_counter import HALF_PERCENT, Paid, account, applications, by_key, unpaid_basis

PARAMS = DelinquencyParameters()
SATURDAYS = DelinquencyParameters(saturdays_move=True)
RATE = Decimal("0.005")
ZERO = Decimal("0.00")
PR_2026_2028 = pr_legal_holidays(years=[2026, 2027, 2028])
PROPERTY_SETTINGS = settings(max_examples=150, deadline=None, database=None)


def money(text: str) -> Decimal:
    return Decimal(text)


def charge(key: str, principal: str, due: date, *, accrues: bool = True) -> ChargeRecord:
    """A charge whose last day to pay follows ¶12 with the Puerto Rico holidays of 2026-2028."""
    return ChargeRecord(
        key=key,
        principal=money(principal),
        due=due,
        last_day=last_day_to_pay(due=due, closed_days=PR_2026_2028, params=PARAMS),
        accrues_surcharge=accrues,
    )


def pay(key: str, paid_on: date, amount: str) -> Paid:
    return Paid(key=key, paid_on=paid_on, amount=money(amount))


def due_by(state) -> Decimal:
    """¶12: what is due on the state's date: the balances of the charges already due."""
    return sum((c.balance for c in state.charges if c.due <= state.as_of), ZERO)


# --- due dates ---------------------------------------------------------------------------------


def test_installment_due_dates_are_july_1_and_january_1():
    start = date(2026, 7, 1)
    assert installment_due_date(fiscal_year_start=start, number=1, finalized_on=None) == start
    assert installment_due_date(fiscal_year_start=start, number=2, finalized_on=None) == date(2027, 1, 1)


def test_roll_finalized_on_time_keeps_the_due_dates():
    start = date(2026, 7, 1)
    for finalized in (date(2026, 6, 15), date(2026, 7, 1)):
        assert installment_due_date(fiscal_year_start=start, number=1, finalized_on=finalized) == start


def test_roll_finalized_late_moves_the_due_date_to_the_finalization_date():
    start = date(2026, 7, 1)
    finalized = date(2026, 7, 9)
    due = installment_due_date(fiscal_year_start=start, number=1, finalized_on=finalized)
    assert due == finalized
    # The January half was not yet due when the roll was finished: unchanged.
    assert installment_due_date(fiscal_year_start=start, number=2, finalized_on=finalized) == date(2027, 1, 1)
    # 2026-07-09 + 60 days is Labor Day, Monday 2026-09-07: the last day moves to Tuesday.
    assert last_day_to_pay(due=due, closed_days=PR_2026_2028, params=PARAMS) == date(2026, 9, 8)
    assert first_delinquent_day(due=due, closed_days=PR_2026_2028, params=PARAMS) == date(2026, 9, 9)


def test_roll_finalized_after_january_moves_both_installments():
    start = date(2026, 7, 1)
    finalized = date(2027, 2, 10)
    for number in (1, 2):
        assert installment_due_date(fiscal_year_start=start, number=number, finalized_on=finalized) == finalized


@pytest.mark.parametrize(
    ("start", "number"),
    [(date(2026, 1, 1), 1), (date(2026, 7, 2), 1), (date(2026, 7, 1), 0), (date(2026, 7, 1), 3)],
)
def test_installment_due_date_rejects_bad_input(start, number):
    with pytest.raises(BillingRuleError):
        installment_due_date(fiscal_year_start=start, number=number, finalized_on=None)


# --- last day to pay ---------------------------------------------------------------------------


def test_sunday_moves_the_last_day_to_monday():
    # 2026-07-01 + 60 days = Sunday 2026-08-30.
    assert date(2026, 8, 30).weekday() == 6
    assert last_day_to_pay(due=date(2026, 7, 1), closed_days=frozenset(), params=PARAMS) == date(2026, 8, 31)
    assert first_delinquent_day(due=date(2026, 7, 1), closed_days=frozenset(), params=PARAMS) == date(2026, 9, 1)


def test_puerto_rico_holiday_moves_the_last_day():
    # Emancipation Day (March 22) is a Puerto Rico holiday, not a federal one.
    emancipation = date(2027, 3, 22)
    assert emancipation in pr_legal_holidays(years=[2027])
    assert emancipation not in holidays.country_holidays("US", years=2027)
    due = date(2027, 1, 21)
    assert due + timedelta(days=60) == emancipation
    assert last_day_to_pay(due=due, closed_days=frozenset(), params=PARAMS) == emancipation
    assert last_day_to_pay(due=due, closed_days=PR_2026_2028, params=PARAMS) == date(2027, 3, 23)


def test_sunday_then_observed_holiday_moves_two_days():
    # 2026-03-22 is a Sunday and Emancipation Day; it is observed on Monday 2026-03-23.
    closed = pr_legal_holidays(years=[2026])
    assert date(2026, 3, 23) in closed
    assert last_day_to_pay(due=date(2026, 1, 21), closed_days=closed, params=PARAMS) == date(2026, 3, 24)


def test_office_closure_moves_the_last_day():
    closures = frozenset({date(2026, 8, 31), date(2026, 9, 1)})  # a hurricane closes the office
    closed = PR_2026_2028 | closures
    assert last_day_to_pay(due=date(2026, 7, 1), closed_days=closed, params=PARAMS) == date(2026, 9, 2)
    # A weekday closure moves a weekday last day as well.
    assert last_day_to_pay(due=date(2027, 7, 1), closed_days=frozenset({date(2027, 8, 30)}), params=PARAMS) == date(2027, 8, 31)


def test_saturday_moves_only_with_the_flag():
    due = date(2026, 6, 30)  # + 60 days = Saturday 2026-08-29
    assert date(2026, 8, 29).weekday() == 5
    assert last_day_to_pay(due=due, closed_days=PR_2026_2028, params=PARAMS) == date(2026, 8, 29)
    assert last_day_to_pay(due=due, closed_days=PR_2026_2028, params=SATURDAYS) == date(2026, 8, 31)
    # Saturday, Sunday, then Labor Day: Tuesday.
    due = date(2026, 7, 7)
    assert due + timedelta(days=60) == date(2026, 9, 5)
    assert last_day_to_pay(due=due, closed_days=PR_2026_2028, params=PARAMS) == date(2026, 9, 5)
    assert last_day_to_pay(due=due, closed_days=PR_2026_2028, params=SATURDAYS) == date(2026, 9, 8)


def test_leap_year_january_installment():
    due = installment_due_date(fiscal_year_start=date(2027, 7, 1), number=2, finalized_on=None)
    assert due == date(2028, 1, 1)
    assert last_day_to_pay(due=due, closed_days=PR_2026_2028, params=PARAMS) == date(2028, 3, 1)
    assert first_delinquent_day(due=due, closed_days=PR_2026_2028, params=PARAMS) == date(2028, 3, 2)


def test_pr_legal_holidays_keeps_only_the_years_asked():
    only_2026 = pr_legal_holidays(years=[2026])
    assert {day.year for day in only_2026} == {2026}
    assert date(2026, 11, 19) in only_2026  # Puerto Rican Identity Day
    assert pr_legal_holidays(years=[]) == frozenset()
    assert pr_legal_holidays(years=(year for year in [2027, 2027])) == pr_legal_holidays(years=[2027])


# --- periods -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first_delinquent", "on", "periods"),
    [
        (date(2026, 9, 1), date(2026, 8, 31), 0),
        (date(2026, 9, 1), date(2026, 9, 1), 1),
        (date(2026, 9, 1), date(2026, 9, 30), 1),
        (date(2026, 9, 1), date(2026, 10, 1), 2),
        (date(2026, 9, 1), date(2026, 10, 15), 2),
        (date(2026, 9, 1), date(2027, 9, 1), 13),
        (date(2027, 8, 31), date(2027, 9, 29), 1),
        (date(2027, 8, 31), date(2027, 9, 30), 2),  # 2027-08-31 + 1 month clamps to 09-30
        (date(2027, 8, 31), date(2027, 12, 30), 4),
        (date(2027, 8, 31), date(2027, 12, 31), 5),
        (date(2028, 3, 2), date(2028, 4, 1), 1),
        (date(2028, 1, 31), date(2028, 2, 28), 1),
        (date(2028, 1, 31), date(2028, 2, 29), 2),  # clamped to the leap day
        (date(2028, 1, 31), date(2028, 3, 30), 2),  # + 2 months is 03-31, not 02-29 + 1 month
        (date(2028, 1, 31), date(2028, 3, 31), 3),
    ],
)
def test_delinquency_periods(first_delinquent, on, periods):
    assert delinquency_periods(first_delinquent=first_delinquent, on=on) == periods


# --- the worked examples -----------------------------------------------------------------------

WORKED_EXAMPLES = [
    # (label, principal, fiscal year start, installment, paid on, last day, first delinquent,
    #  periods, surcharge, total)
    (
        "example 1, P4 July",
        "6930.90",
        date(2026, 7, 1),
        1,
        date(2026, 10, 15),
        date(2026, 8, 31),
        date(2026, 9, 1),
        2,
        "69.31",
        "7000.21",
    ),
    (
        "example 3, Q2 January",
        "8705.17",
        date(2027, 7, 1),
        2,
        date(2028, 4, 1),
        date(2028, 3, 1),
        date(2028, 3, 2),
        1,
        "43.53",
        "8748.70",
    ),
    (
        "example 3, Q5 July",
        "4836.21",
        date(2027, 7, 1),
        1,
        date(2027, 12, 31),
        date(2027, 8, 30),
        date(2027, 8, 31),
        5,
        "120.91",
        "4957.12",
    ),
]


@pytest.mark.parametrize(
    (
        "principal",
        "start",
        "number",
        "paid_on",
        "last_day",
        "delinquent",
        "periods",
        "surcharge",
        "total",
    ),
    [example[1:] for example in WORKED_EXAMPLES],
    ids=[example[0] for example in WORKED_EXAMPLES],
)
def test_worked_example_late_payment(principal, start, number, paid_on, last_day, delinquent, periods, surcharge, total):
    due = installment_due_date(fiscal_year_start=start, number=number, finalized_on=None)
    closed = pr_legal_holidays(years=[due.year, due.year + 1])
    assert last_day_to_pay(due=due, closed_days=closed, params=PARAMS) == last_day
    assert first_delinquent_day(due=due, closed_days=closed, params=PARAMS) == delinquent
    assert delinquency_periods(first_delinquent=delinquent, on=paid_on) == periods
    assert surcharge_for(principal=money(principal), first_delinquent=delinquent, on=paid_on, rate=RATE) == money(surcharge)

    installment = ChargeRecord(key="half", principal=money(principal), due=due, last_day=last_day)
    unpaid, _ = account(charges=[installment], payments=[], as_of=paid_on)
    (state,) = unpaid.charges
    assert (len(state.surcharge_basis), state.surcharge, state.balance) == (
        periods,
        money(surcharge),
        money(total),
    )
    assert state.surcharge_basis == tuple((add_months(delinquent, n), RATE, money(principal)) for n in range(periods))
    assert due_by(unpaid) == money(total)

    paid, stored = account(charges=[installment], payments=[pay("receipt", paid_on, total)], as_of=paid_on)
    assert applications(stored, as_of=paid_on) == (
        Application(
            payment_key="receipt",
            charge_key="half",
            surcharge=money(surcharge),
            principal=money(principal),
        ),
    )
    (state,) = paid.charges
    assert (state.balance, paid.credit, paid.total_balance) == (
        money("0.00"),
        money("0.00"),
        money("0.00"),
    )
    # Paid in full: nothing more accrues, years later.
    later, _ = account(charges=[installment], payments=[pay("receipt", paid_on, total)], as_of=date(2035, 1, 1))
    assert (later.charges[0].surcharge, len(later.charges[0].surcharge_basis)) == (money(surcharge), periods)
    assert later.total_balance == money("0.00")


def test_surcharge_is_not_compounded():
    # Q5: five periods simple = 120.91; compounded monthly it would be 122.12.
    compounded = round_cents(money("4836.21") * (Decimal("1.005") ** 5 - 1))
    assert compounded == money("122.12")
    assert surcharge_for(
        principal=money("4836.21"),
        first_delinquent=date(2027, 8, 31),
        on=date(2027, 12, 31),
        rate=RATE,
    ) == money("120.91")


def test_surcharge_is_rounded_once_not_per_period():
    # ½% of 1.00 is 0.005 a period: 0.01 each if rounded per period (0.03), 0.015 → 0.02 once.
    one = ChargeRecord(key="one", principal=money("1.00"), due=date(2026, 7, 1), last_day=date(2026, 8, 31))
    state = account(charges=[one], payments=[], as_of=date(2026, 11, 1))[0].charges[0]
    assert len(state.surcharge_basis) == 3
    assert state.surcharge == money("0.02")
    assert surcharge_for(principal=money("1.00"), first_delinquent=date(2026, 9, 1), on=date(2026, 11, 1), rate=RATE) == money(
        "0.02"
    )


def test_payment_on_a_period_start_counts_that_period():
    half = charge("half", "6930.90", date(2026, 7, 1))
    day_before, _ = account(charges=[half], payments=[], as_of=date(2026, 9, 30))
    on_start, _ = account(charges=[half], payments=[], as_of=date(2026, 10, 1))
    assert due_by(day_before) == money("6965.55")  # 6930.90 + 34.6545 → 34.65
    assert due_by(on_start) == money("7000.21")
    paid, _ = account(charges=[half], payments=[pay("r", date(2026, 10, 1), "7000.21")], as_of=date(2027, 6, 30))
    assert len(paid.charges[0].surcharge_basis) == 2
    assert paid.total_balance == money("0.00")


def test_paying_on_the_last_day_owes_no_surcharge():
    half = charge("half", "6930.90", date(2026, 7, 1))
    state, _ = account(charges=[half], payments=[pay("r", date(2026, 8, 31), "6930.90")], as_of=date(2027, 6, 30))
    assert state.charges[0].surcharge == money("0.00")
    assert state.charges[0].surcharge_basis == ()
    assert state.total_balance == money("0.00")


# --- partial payments, order, credit -----------------------------------------------------------


def test_partial_payments_across_periods():
    # 1,000.00 due 2026-07-01, delinquent from 2026-09-01.
    levy = charge("levy", "1000.00", date(2026, 7, 1))
    first = pay("p1", date(2026, 9, 15), "505.00")
    second = pay("p2", date(2026, 11, 10), "505.00")

    # On 09-15 one period has begun on 1,000.00: 5.00 surcharge, then 500.00 principal.
    state, stored = account(charges=[levy], payments=[first], as_of=date(2026, 9, 15))
    assert applications(stored, as_of=state.as_of) == (
        Application(payment_key="p1", charge_key="levy", surcharge=money("5.00"), principal=money("500.00")),
    )
    assert state.total_balance == money("500.00")

    # Periods 2 (10-01) and 3 (11-01) accrue on the 500.00 still unpaid: 5.00 + 2.50 + 2.50.
    state, _ = account(charges=[levy], payments=[first], as_of=date(2026, 11, 10))
    (levy_state,) = state.charges
    assert unpaid_basis(levy_state) == (
        (date(2026, 9, 1), money("1000.00")),
        (date(2026, 10, 1), money("500.00")),
        (date(2026, 11, 1), money("500.00")),
    )
    assert levy_state.surcharge == money("10.00")
    assert levy_state.surcharge_paid == money("5.00")
    assert levy_state.balance == money("505.00")

    state, stored = account(charges=[levy], payments=[first, second], as_of=date(2027, 6, 30))
    (levy_state,) = state.charges
    assert applications(stored, as_of=state.as_of)[1] == Application(
        payment_key="p2", charge_key="levy", surcharge=money("5.00"), principal=money("500.00")
    )
    assert (len(levy_state.surcharge_basis), levy_state.surcharge, levy_state.balance) == (
        3,
        money("10.00"),
        money("0.00"),
    )
    assert (levy_state.principal_paid, levy_state.surcharge_paid, levy_state.principal_paid + levy_state.surcharge_paid) == (
        money("1000.00"),
        money("10.00"),
        money("1010.00"),
    )


def test_payment_smaller_than_the_surcharge_goes_to_surcharge_only():
    levy = charge("levy", "1000.00", date(2026, 7, 1))
    state, stored = account(charges=[levy], payments=[pay("p", date(2026, 9, 10), "3.00")], as_of=date(2026, 10, 5))
    assert applications(stored, as_of=state.as_of) == (
        Application(payment_key="p", charge_key="levy", surcharge=money("3.00"), principal=money("0.00")),
    )
    (levy_state,) = state.charges
    # The unpaid 2.00 of surcharge earns nothing: two periods on 1,000.00 principal.
    assert levy_state.surcharge == money("10.00")
    assert levy_state.balance == money("1007.00")


def test_payment_goes_to_the_oldest_charge_first_surcharge_before_principal():
    water = charge("water", "100.00", date(2026, 6, 1), accrues=False)
    july = charge("2026-27/1", "6930.90", date(2026, 7, 1))
    january = charge("2026-27/2", "6930.90", date(2027, 1, 1))
    assert january.last_day == date(2027, 3, 2)
    payments = [pay("r", date(2027, 4, 15), "8100.00")]
    state, stored = account(charges=[january, july, water], payments=payments, as_of=date(2027, 4, 15))
    # July: 8 periods from 2026-09-01 → 277.236 → 277.24. January: 2 periods from 2027-03-03.
    assert applications(stored, as_of=state.as_of) == (
        Application(payment_key="r", charge_key="water", surcharge=money("0.00"), principal=money("100.00")),
        Application(
            payment_key="r",
            charge_key="2026-27/1",
            surcharge=money("277.24"),
            principal=money("6930.90"),
        ),
        Application(
            payment_key="r",
            charge_key="2026-27/2",
            surcharge=money("69.31"),
            principal=money("722.55"),
        ),
    )
    states = by_key(state)
    assert [charge_state.key for charge_state in state.charges] == [
        "water",
        "2026-27/1",
        "2026-27/2",
    ]
    assert states["water"].surcharge_basis == ()
    assert states["water"].surcharge == money("0.00")
    assert states["2026-27/2"].balance == money("6208.35")
    assert due_by(state) == money("6208.35")


def test_charges_due_the_same_day_are_ordered_by_key():
    b = charge("b", "100.00", date(2026, 7, 1))
    a = charge("a", "100.00", date(2026, 7, 1))
    state, stored = account(charges=[b, a], payments=[pay("p", date(2026, 7, 1), "150.00")], as_of=date(2026, 7, 1))
    assert [(x.charge_key, x.principal) for x in applications(stored, as_of=state.as_of)] == [
        ("a", money("100.00")),
        ("b", money("50.00")),
    ]


def test_charge_without_surcharge_never_accrues():
    water = charge("water", "250.00", date(2026, 7, 1), accrues=False)
    state, _ = account(charges=[water], payments=[], as_of=date(2030, 1, 1))
    assert (state.charges[0].surcharge, state.charges[0].surcharge_basis) == (money("0.00"), ())
    assert due_by(state) == money("250.00")


def test_january_half_may_be_paid_early_and_overpayment_is_credit():
    july = charge("july", "2249.10", date(2026, 7, 1))
    january = charge("january", "2249.10", date(2027, 1, 1))
    state, stored = account(
        charges=[july, january],
        payments=[pay("p", date(2026, 6, 20), "5000.00")],
        as_of=date(2027, 6, 30),
    )
    assert [(x.charge_key, x.surcharge, x.principal) for x in applications(stored, as_of=state.as_of)] == [
        ("july", money("0.00"), money("2249.10")),
        ("january", money("0.00"), money("2249.10")),
    ]
    assert stored[0].to_credit == state.credit == money("501.80")
    assert state.total_balance == money("0.00")
    assert due_by(state) == money("0.00")


def test_charges_not_yet_due_are_outside_total_due():
    july = charge("july", "100.00", date(2026, 7, 1))
    january = charge("january", "100.00", date(2027, 1, 1))
    state, _ = account(charges=[july, january], payments=[], as_of=date(2026, 9, 15))
    assert [c.balance for c in state.charges] == [money("100.50"), money("100.00")]
    assert due_by(state) == money("100.50")
    assert state.total_balance == money("200.50")


def test_payments_after_as_of_are_ignored():
    levy = charge("levy", "1000.00", date(2026, 7, 1))
    state, stored = account(
        charges=[levy],
        payments=[pay("later", date(2026, 12, 1), "100.00")],
        as_of=date(2026, 11, 30),
    )
    assert applications(stored, as_of=state.as_of) == ()
    assert state.total_balance == money("1015.00")


def test_a_payment_is_never_negative_nor_zero_a_void_is_its_own_date():
    state, _ = account(charges=[charge("levy", "10.00", date(2026, 7, 1))], payments=[], as_of=date(2026, 9, 1))
    for amount in ("-10.00", "0.00"):
        with pytest.raises(BillingRuleError):
            allocate(state=state, amount=money(amount))
    with pytest.raises(BillingRuleError):
        StoredAllocation(charge_key="levy", surcharge=ZERO, principal=money("-10.00"))
    # ¶13: a bounced check counts until its void is recorded, then never paid (not a negative payment)
    paid = StoredPayment(key="p", paid_on=date(2026, 8, 1), allocations=(StoredAllocation("levy", ZERO, money("10.00")),),
                         voided_on=date(2026, 9, 15))
    levy = charge("levy", "10.00", date(2026, 7, 1))
    before = ledger_state(charges=[levy], payments=[paid], as_of=date(2026, 9, 14), schedule=HALF_PERCENT)
    after = ledger_state(charges=[levy], payments=[paid], as_of=date(2026, 9, 15), schedule=HALF_PERCENT)
    assert (before.charges[0].balance, after.charges[0].balance) == (ZERO, money("10.05"))  # one period on 10.00


@pytest.mark.parametrize("amount", [1000.0, Decimal("10.001"), Decimal("NaN"), Decimal("Infinity")])
def test_payment_amount_must_be_whole_cents(amount):
    state, _ = account(charges=[charge("levy", "10.00", date(2026, 7, 1))], payments=[], as_of=date(2026, 9, 1))
    with pytest.raises(BillingRuleError):
        allocate(state=state, amount=amount)


def test_charge_record_is_checked():
    with pytest.raises(BillingRuleError):
        ChargeRecord(key="c", principal=money("-1.00"), due=date(2026, 7, 1), last_day=date(2026, 8, 31))
    with pytest.raises(BillingRuleError):
        ChargeRecord(key="c", principal=money("1.00"), due=date(2026, 7, 1), last_day=date(2026, 6, 30))
    with pytest.raises(BillingRuleError):
        ChargeRecord(key="", principal=money("1.00"), due=date(2026, 7, 1), last_day=date(2026, 8, 31))


def test_duplicate_keys_are_rejected():
    levy = charge("levy", "1.00", date(2026, 7, 1))
    with pytest.raises(BillingRuleError):
        ledger_state(charges=[levy, levy], payments=[], as_of=date(2026, 7, 1), schedule=HALF_PERCENT)
    payment = StoredPayment(key="p", paid_on=date(2026, 7, 1), allocations=(StoredAllocation("levy", ZERO, money("1.00")),))
    with pytest.raises(BillingRuleError):
        ledger_state(charges=[levy], payments=[payment, payment], as_of=date(2026, 7, 1), schedule=HALF_PERCENT)


def test_delinquency_parameters_are_checked():
    with pytest.raises(BillingRuleError):
        DelinquencyParameters(grace_days=-1)
    with pytest.raises(BillingRuleError):
        DelinquencyParameters(surcharge_rate=0.005)
    assert DelinquencyParameters().grace_days == 60
    assert DelinquencyParameters().surcharge_rate == Decimal("0.005")
    assert DelinquencyParameters().saturdays_move is False


# --- sec. 374a water sales (¶8) ----------------------------------------------------------------


def test_water_rate_first_twelve_months_then_authority_rate():
    # Example 3, Q4: water from 2026-11-20, buys water by the acre-foot until its levy starts.
    first = date(2026, 11, 20)
    rate = money("5.50")
    assert water_rate(first_water=first, delivery_date=first, pumped=False, authority_rate=rate) == money("2.00")
    assert water_rate(first_water=first, delivery_date=date(2027, 11, 19), pumped=False, authority_rate=rate) == money("2.00")
    assert water_rate(first_water=first, delivery_date=date(2027, 11, 20), pumped=False, authority_rate=rate) == money("5.50")
    assert water_rate(first_water=first, delivery_date=date(2027, 11, 19), pumped=True, authority_rate=rate) == money("2.00")
    assert water_rate(first_water=first, delivery_date=date(2027, 11, 20), pumped=True, authority_rate=rate) == money("3.00")


def test_water_rate_cap_and_dated_figures():
    first = date(2026, 11, 20)
    later = date(2028, 1, 1)
    assert water_rate(first_water=first, delivery_date=later, pumped=False, authority_rate=money("6.00")) == money("6.00")
    with pytest.raises(BillingRuleError):
        water_rate(first_water=first, delivery_date=later, pumped=False, authority_rate=money("6.01"))
    with pytest.raises(BillingRuleError):
        water_rate(
            first_water=first,
            delivery_date=date(2026, 11, 19),
            pumped=False,
            authority_rate=money("4.00"),
        )
    reformed = WaterSaleRates(first_year_rate=money("2.50"), max_authority_rate=money("8.00"), pumped_rate=money("3.75"))
    assert water_rate(
        first_water=first,
        delivery_date=later,
        pumped=False,
        authority_rate=money("7.00"),
        rates=reformed,
    ) == money("7.00")
    assert water_rate(
        first_water=first,
        delivery_date=later,
        pumped=True,
        authority_rate=money("7.00"),
        rates=reformed,
    ) == money("3.75")
    assert WaterSaleRates() == WaterSaleRates(
        first_year_rate=money("2.00"), max_authority_rate=money("6.00"), pumped_rate=money("3.00")
    )


def test_water_rate_clamps_the_leap_day():
    leap = date(2028, 2, 29)  # + 12 months is 2029-02-28
    assert water_rate(first_water=leap, delivery_date=date(2029, 2, 27), pumped=False, authority_rate=money("5")) == money("2.00")
    assert water_rate(first_water=leap, delivery_date=date(2029, 2, 28), pumped=False, authority_rate=money("5")) == money("5")


# --- collection split (¶1(2), ¶2) ---------------------------------------------------------------


def test_collection_split_example_1():
    # Example 1: reserve 1,500.00 of a 91,800.00 levy. P4's July half: 6930.90 × 1500 / 91800.
    assert collection_split(amount=money("6930.90"), reserve=money("1500.00"), total_levy=money("91800.00")) == (
        money("113.25"),
        money("6817.65"),
    )


def test_collection_split_rounds_half_up():
    # 1.00 × 1 / 8 = 0.125 → 0.13 half-up (half-even would give 0.12).
    assert collection_split(amount=money("1.00"), reserve=money("1.00"), total_levy=money("8.00")) == (
        money("0.13"),
        money("0.87"),
    )


def test_collection_split_rejects_bad_input():
    with pytest.raises(BillingRuleError):
        collection_split(amount=money("1.00"), reserve=money("1.00"), total_levy=money("0.00"))
    with pytest.raises(BillingRuleError):
        collection_split(amount=money("1.00"), reserve=money("2.00"), total_levy=money("1.00"))


# --- properties --------------------------------------------------------------------------------

BASE = date(2026, 6, 1)


def cents(low: int, high: int) -> st.SearchStrategy[Decimal]:
    return st.integers(min_value=low, max_value=high).map(lambda number: Decimal(f"{number // 100}.{number % 100:02d}"))


days = st.integers(min_value=0, max_value=1200).map(lambda offset: BASE + timedelta(days=offset))


@st.composite
def accounts(draw):
    charge_rows = draw(
        st.lists(
            st.tuples(cents(0, 1_000_000), days, st.integers(min_value=0, max_value=90), st.booleans()),
            min_size=1,
            max_size=4,
        )
    )
    payment_rows = draw(st.lists(st.tuples(days, cents(1, 1_200_000)), max_size=6))
    charge_inputs = [
        ChargeRecord(
            key=f"c{index}",
            principal=principal,
            due=due,
            last_day=due + timedelta(days=grace),
            accrues_surcharge=accrues,
        )
        for index, (principal, due, grace, accrues) in enumerate(charge_rows)
    ]
    payment_inputs = [Paid(key=f"p{index}", paid_on=paid_on, amount=amount) for index, (paid_on, amount) in enumerate(payment_rows)]
    return charge_inputs, payment_inputs


@PROPERTY_SETTINGS
@given(drawn=accounts(), as_of=days)
def test_the_stored_account_neither_loses_nor_doubles_money(drawn, as_of):
    charges, payments = drawn
    state, stored = account(charges=charges, payments=payments, as_of=as_of)
    received = sum((p.amount for p in payments if p.paid_on <= as_of), ZERO)
    applied = applications(stored, as_of=as_of)
    assert sum((a.amount for a in applied), ZERO) + state.credit == received
    assert state.credit >= 0

    by_payment: dict[str, Decimal] = {}
    for application in applied:
        assert application.surcharge >= 0 and application.principal >= 0
        assert application.surcharge + application.principal > 0
        by_payment[application.payment_key] = by_payment.get(application.payment_key, ZERO) + application.amount
    for payment in payments:
        assert by_payment.get(payment.key, ZERO) <= (payment.amount if payment.paid_on <= as_of else ZERO)

    for charge_state in state.charges:
        mine = [a for a in applied if a.charge_key == charge_state.key]
        paid = charge_state.principal_paid + charge_state.surcharge_paid
        assert sum((a.surcharge for a in mine), ZERO) == charge_state.surcharge_paid
        assert sum((a.principal for a in mine), ZERO) == charge_state.principal_paid
        assert charge_state.principal_paid <= charge_state.principal
        assert charge_state.surcharge_paid <= charge_state.surcharge
        assert charge_state.balance >= 0
        assert charge_state.balance == charge_state.principal + charge_state.surcharge - paid
        if state.credit > 0:
            assert charge_state.balance == 0

    total_principal = sum((c.principal for c in state.charges), ZERO)
    total_surcharge = sum((c.surcharge for c in state.charges), ZERO)
    assert state.total_balance == total_principal + total_surcharge - received + state.credit
    # ¶12, ¶13: the ledger's identity (surcharge enters the ledger only when paid)
    assert state.ledger_balance == state.total_balance - state.unpaid_surcharge - state.credit


@PROPERTY_SETTINGS
@given(drawn=accounts(), as_of=days)
def test_surcharge_matches_its_basis_and_the_dated_applications(drawn, as_of):
    charges, payments = drawn
    state, stored = account(charges=charges, payments=payments, as_of=as_of)
    applied = applications(stored, as_of=as_of)
    paid_on = {p.key: p.paid_on for p in payments}
    inputs = {c.key: c for c in charges}
    for charge_state in state.charges:
        source = inputs[charge_state.key]
        if not source.accrues_surcharge:
            assert (charge_state.surcharge, charge_state.surcharge_basis) == (ZERO, ())
            continue
        delinquent = source.last_day + timedelta(days=1)
        periods = delinquency_periods(first_delinquent=delinquent, on=as_of)
        expected = []
        for number in range(periods):
            start = add_months(delinquent, number)
            paid_before = sum(
                (a.principal for a in applied if a.charge_key == charge_state.key and paid_on[a.payment_key] < start),
                ZERO,
            )
            if source.principal - paid_before > 0:
                expected.append((start, source.principal - paid_before))
        assert unpaid_basis(charge_state) == tuple(expected)
        assert all(rate == RATE for _start, rate, _unpaid in charge_state.surcharge_basis)
        assert charge_state.surcharge == round_cents(RATE * sum((unpaid for _, unpaid in expected), ZERO))
        if not any(a.charge_key == charge_state.key for a in applied):
            assert charge_state.surcharge == surcharge_for(
                principal=source.principal, first_delinquent=delinquent, on=as_of, rate=RATE
            )


@PROPERTY_SETTINGS
@given(drawn=accounts(), earlier=days, later=days)
def test_surcharge_and_payments_never_go_backwards(drawn, earlier, later):
    charges, payments = drawn
    earlier, later = min(earlier, later), max(earlier, later)
    before = by_key(account(charges=charges, payments=payments, as_of=earlier)[0])
    after = by_key(account(charges=charges, payments=payments, as_of=later)[0])
    for key, old in before.items():
        new = after[key]
        assert new.surcharge >= old.surcharge
        assert new.principal_paid >= old.principal_paid
        assert new.surcharge_paid >= old.surcharge_paid
        assert new.surcharge_basis[: len(old.surcharge_basis)] == old.surcharge_basis


@PROPERTY_SETTINGS
@given(drawn=accounts(), as_of=days)
def test_the_account_is_the_same_whatever_the_input_order(drawn, as_of):
    charges, payments = drawn
    state, stored = account(charges=charges, payments=payments, as_of=as_of)
    assert (state, stored) == account(charges=list(reversed(charges)), payments=list(reversed(payments)), as_of=as_of)
    # and reading the stored records again in any order gives the same account: nothing is allocated twice
    again = ledger_state(charges=list(reversed(charges)), payments=list(reversed(stored)), as_of=as_of, schedule=HALF_PERCENT)
    assert again == state


@PROPERTY_SETTINGS
@given(drawn=accounts(), as_of=days)
def test_each_payment_settles_older_charges_first(drawn, as_of):
    charges, payments = drawn
    order = [c.key for c in sorted(charges, key=lambda c: (c.due, c.key))]
    replayed = sorted((p for p in payments if p.paid_on <= as_of), key=lambda p: (p.paid_on, p.key))
    for index, payment in enumerate(replayed):
        # The account right after this payment: every charge before the last one it reached is
        # settled, and any money it left as credit means every charge is settled.
        state, stored = account(charges=charges, payments=replayed[: index + 1], as_of=payment.paid_on)
        mine = [a for a in applications(stored, as_of=payment.paid_on) if a.payment_key == payment.key]
        reached = [order.index(a.charge_key) for a in mine]
        assert reached == sorted(reached)
        balances = by_key(state)
        if mine:
            for key in order[: reached[-1]]:
                assert balances[key].balance == 0
        if sum((a.amount for a in mine), ZERO) < payment.amount:
            assert all(b.balance == 0 for b in balances.values())


@PROPERTY_SETTINGS
@given(
    first=st.integers(min_value=0, max_value=3000).map(lambda n: date(2026, 1, 1) + timedelta(n)),
    offset=st.integers(min_value=-40, max_value=800),
)
def test_periods_bracket_the_date(first, offset):
    on = first + timedelta(days=offset)
    periods = delinquency_periods(first_delinquent=first, on=on)
    if on < first:
        assert periods == 0
    else:
        assert periods >= 1
        assert add_months(first, periods - 1) <= on < add_months(first, periods)
        assert delinquency_periods(first_delinquent=first, on=on + timedelta(days=1)) >= periods


@PROPERTY_SETTINGS
@given(
    due=st.integers(min_value=0, max_value=1000).map(lambda n: date(2026, 1, 1) + timedelta(n)),
    closed=st.frozensets(
        st.integers(min_value=0, max_value=1200).map(lambda n: date(2026, 1, 1) + timedelta(n)),
        max_size=60,
    ),
    saturdays=st.booleans(),
)
def test_last_day_is_the_first_open_day_from_sixty_days(due, closed, saturdays):
    params = DelinquencyParameters(saturdays_move=saturdays)
    result = last_day_to_pay(due=due, closed_days=closed, params=params)
    weekend = {5, 6} if saturdays else {6}
    assert result >= due + timedelta(days=60)
    assert result not in closed and result.weekday() not in weekend
    day = due + timedelta(days=60)
    while day < result:
        assert day in closed or day.weekday() in weekend
        day += timedelta(days=1)


@PROPERTY_SETTINGS
@given(amount=cents(0, 10_000_000), reserve=cents(0, 5_000_000), extra=cents(1, 50_000_000))
def test_collection_split_adds_up(amount, reserve, extra):
    total_levy = reserve + extra
    to_reserve, to_operating = collection_split(amount=amount, reserve=reserve, total_levy=total_levy)
    assert to_reserve + to_operating == amount
    assert ZERO <= to_reserve <= amount
    assert to_reserve == round_cents(amount * reserve / total_levy)
