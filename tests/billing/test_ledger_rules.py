"""Tests of the pure ledger rules (¶7, ¶9, ¶11, ¶12, ¶13): correction plans, give-backs after a
lowering or a closure, freed money, and the account from stored allocations. No database.

Hand-computed figures first, then Hypothesis properties: allocating payments one at a time and
storing the allocations gives exactly what migration 0012's frozen replay stored for the payments
made before allocations were stored (``billing/migrations/_replay_0012.py``), and the ledger
identity holds at every date.
"""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from billing.migrations import _replay_0012 as migration_replay
from billing.rules import (
    REFUSE_CHARGE_NEGATIVE,
    REFUSE_CREDIT_ABOVE_CHARGE,
    REFUSE_CREDIT_NEGATIVE,
    REFUSE_CREDIT_WITHOUT_PERCENT,
    REFUSE_DUE_TOO_EARLY,
    REFUSE_NOTHING,
    REFUSE_PERCENT,
    REFUSE_SUB_CENT,
    SOURCE_CLOSURE,
    SOURCE_CORRECTION,
    BillingRuleError,
    ChargeRecord,
    CorrectionRefused,
    CreditApplied,
    EarlierCorrection,
    GivenBack,
    HalfStanding,
    LastDayMove,
    LowerCharge,
    PaidOnCharge,
    PrincipalLowering,
    RaiseHalf,
    RefundRecord,
    StoredAllocation,
    StoredPayment,
    allocate,
    apply_freed_money,
    correction_plan,
    give_back,
    give_back_for,
    ledger_state,
    rate_on,
)
from levy.rules import installments
from tests.billing.ledger_counter import Paid

D = Decimal
ZERO = D("0.00")
FY = date(2026, 7, 1)
JAN = date(2027, 1, 1)
HALF_RATE = ((date(2000, 1, 1), D("0.005")),)


def halves(first: str, second: str, *, first_corrections=(), second_corrections=()) -> tuple[HalfStanding, HalfStanding]:
    return (
        HalfStanding(number=1, due=FY, original_key="K1", original_principal=D(first), corrections=tuple(first_corrections)),
        HalfStanding(number=2, due=JAN, original_key="K2", original_principal=D(second), corrections=tuple(second_corrections)),
    )


def plan(**overrides):
    """A line of 1,000.00 at 25 % credit (250.00), net 750.00: halves 375.00 and 375.00."""
    arguments = dict(
        roll_charge=D("1000.00"),
        roll_credit=D("250.00"),
        roll_credit_percent=D("25.00"),
        earlier=(),
        halves=halves("375.00", "375.00"),
        fiscal_year_start=FY,
        made_on=date(2026, 10, 15),
    )
    arguments.update(overrides)
    return correction_plan(**arguments)


# --- corrections: hand-computed ------------------------------------------------------------------


def test_charge_down_moves_the_credit_and_lowers_each_original_half():
    # 900.00 × 25 % = 225.00; net 675.00 = 337.50 + 337.50; each half falls 37.50.
    result = plan(charge_delta=D("-100.00"))
    assert (result.new_charge, result.new_credit, result.new_net) == (D("900.00"), D("225.00"), D("675.00"))
    assert result.credit_follows_charge and not result.percent_recorded
    assert (result.credit_delta, result.net_delta) == (D("-25.00"), D("-75.00"))
    first, second = result.halves
    assert (first.old, first.new, first.difference) == (D("375.00"), D("337.50"), D("-37.50"))
    assert first.actions == (
        LowerCharge(
            number=1, charge_key="K1", amount=D("37.50"), new_principal=D("337.50"), effective_from=FY, undoes_correction=False
        ),
    )
    assert second.actions == (
        LowerCharge(
            number=2, charge_key="K2", amount=D("37.50"), new_principal=D("337.50"), effective_from=JAN, undoes_correction=False
        ),
    )


def test_charge_up_is_a_new_charge_per_half_due_no_earlier_than_that_half():
    # 1,200.01 × 25 % = 300.0025 → 300.00; net 900.01 = 450.01 (July, the odd cent) + 450.00.
    result = plan(charge_delta=D("200.01"))
    assert (result.new_credit, result.new_net) == (D("300.00"), D("900.01"))
    first, second = result.halves
    assert first.actions == (RaiseHalf(number=1, amount=D("75.01"), due=date(2026, 10, 15)),)
    assert second.actions == (RaiseHalf(number=2, amount=D("75.00"), due=JAN),)


def test_a_rise_made_before_the_fiscal_year_is_due_on_july_first():
    result = plan(charge_delta=D("100.00"), made_on=date(2026, 6, 20))
    assert [half.actions[0].due for half in result.halves] == [FY, JAN]


def test_requested_due_may_be_later_never_earlier():
    later = plan(charge_delta=D("100.00"), requested_due=date(2026, 11, 30))
    assert [half.actions[0].due for half in later.halves] == [date(2026, 11, 30), JAN]
    with pytest.raises(CorrectionRefused) as refused:
        plan(charge_delta=D("100.00"), requested_due=date(2026, 10, 1))
    assert refused.value.reason == REFUSE_DUE_TOO_EARLY
    assert refused.value.limit == date(2026, 10, 15)
    assert "2026-10-01" in str(refused.value) and "2026-10-15" in str(refused.value)


# Two earlier rises of 66.67 each: 1,133.34 × 25 % = 283.335 → 283.34; net 850.00 = 425 + 425.
EARLIER = (
    EarlierCorrection(charge_delta=D("66.67"), credit_delta=D("16.67")),
    EarlierCorrection(charge_delta=D("66.67"), credit_delta=D("16.67")),
)
RAISED = halves(
    "375.00",
    "375.00",
    first_corrections=[("C10", D("25.00"), date(2026, 9, 1)), ("C11", D("25.00"), date(2026, 10, 1))],
    second_corrections=[("C20", D("25.00"), JAN), ("C21", D("25.00"), JAN)],
)


def test_a_fall_undoes_earlier_correction_charges_newest_first_then_the_original():
    # 933.34 × 25 % = 233.335 → 233.34; net 700.00 = 350 + 350: each half falls 75.00.
    result = plan(earlier=EARLIER, halves=RAISED, charge_delta=D("-200.00"))
    assert (result.old_charge, result.old_credit, result.old_net) == (D("1133.34"), D("283.34"), D("850.00"))
    assert (result.new_charge, result.new_credit, result.new_net) == (D("933.34"), D("233.34"), D("700.00"))
    assert result.halves[0].actions == (
        LowerCharge(1, "C11", D("25.00"), ZERO, date(2026, 10, 1), True),
        LowerCharge(1, "C10", D("25.00"), ZERO, date(2026, 9, 1), True),
        LowerCharge(1, "K1", D("25.00"), D("350.00"), FY, False),
    )


def test_a_small_fall_partly_undoes_only_the_newest_correction_charge():
    # 1,093.34 × 25 % = 273.335 → 273.34; net 820.00 = 410 + 410: each half falls 15.00.
    result = plan(earlier=EARLIER, halves=RAISED, charge_delta=D("-40.00"))
    assert result.halves[0].actions == (LowerCharge(1, "C11", D("15.00"), D("10.00"), date(2026, 10, 1), True),)
    assert result.halves[1].actions == (LowerCharge(2, "C21", D("15.00"), D("10.00"), JAN, True),)


def test_finding_1_a_charge_below_zero_is_refused_with_the_figures_and_the_limit():
    with pytest.raises(CorrectionRefused) as refused:
        correction_plan(
            roll_charge=D("17648.37"),
            roll_credit=ZERO,
            roll_credit_percent=ZERO,
            earlier=(),
            halves=halves("8824.19", "8824.18"),
            fiscal_year_start=FY,
            made_on=date(2026, 10, 15),
            charge_delta=D("-100000.00"),
        )
    error = refused.value
    assert error.reason == REFUSE_CHARGE_NEGATIVE
    assert (error.current_charge, error.current_credit, error.current_net) == (D("17648.37"), ZERO, D("17648.37"))
    assert error.limit == D("-17648.37")
    assert "-17648.37" in str(error) and "17648.37" in str(error)


def test_finding_1_a_credit_above_a_full_credit_is_refused():
    with pytest.raises(CorrectionRefused) as refused:
        correction_plan(
            roll_charge=D("1000.00"),
            roll_credit=D("1000.00"),
            roll_credit_percent=D("100.00"),
            earlier=(),
            halves=halves("0.00", "0.00"),
            fiscal_year_start=FY,
            made_on=date(2026, 10, 15),
            credit_delta=D("5000.00"),
            credit_percent=D("90.00"),  # a credit delta needs a percentage other than the line's
        )
    assert refused.value.reason == REFUSE_CREDIT_ABOVE_CHARGE
    assert refused.value.limit == D("1000.00")
    assert refused.value.current_net == ZERO


def test_a_credit_delta_needs_a_new_percentage_and_then_moves_the_credit_alone():
    with pytest.raises(CorrectionRefused) as refused:
        plan(credit_delta=D("-50.00"))
    assert refused.value.reason == REFUSE_CREDIT_WITHOUT_PERCENT
    result = plan(credit_delta=D("-50.00"), credit_percent=D("20.00"))
    # credit 200.00, net 800.00 = 400 + 400: each half rises 25.00
    assert (result.new_charge, result.new_credit, result.new_net) == (D("1000.00"), D("200.00"), D("800.00"))
    assert not result.credit_follows_charge and result.percent_recorded
    assert result.new_credit_percent == D("20.00")
    assert [half.actions for half in result.halves] == [
        (RaiseHalf(1, D("25.00"), date(2026, 10, 15)),),
        (RaiseHalf(2, D("25.00"), JAN),),
    ]


def test_a_new_percentage_alone_recomputes_the_credit():
    result = plan(credit_percent=D("10.00"))  # 1,000.00 × 10 % = 100.00; net 900.00
    assert (result.new_credit, result.new_net, result.credit_follows_charge) == (D("100.00"), D("900.00"), True)


def test_the_latest_recorded_percentage_is_the_one_the_credit_follows():
    earlier = (EarlierCorrection(charge_delta=ZERO, credit_delta=D("-150.00"), credit_percent=D("10.00")),)
    result = plan(earlier=earlier, halves=halves("450.00", "450.00"), charge_delta=D("100.00"))
    # 1,100.00 × 10 % = 110.00; net 990.00 = 495 + 495
    assert (result.old_credit_percent, result.new_credit, result.new_net) == (D("10.00"), D("110.00"), D("990.00"))


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"charge_delta": D("0.001")}, REFUSE_SUB_CENT),
        ({"charge_delta": D("-10.005")}, REFUSE_SUB_CENT),
        ({"credit_delta": D("0.5"), "credit_percent": D("26.00")}, None),  # 0.5 is 0.50: whole cents
        ({"credit_delta": D("0.505"), "credit_percent": D("26.00")}, REFUSE_SUB_CENT),
        ({"credit_delta": D("0.50"), "credit_percent": D("25")}, REFUSE_CREDIT_WITHOUT_PERCENT),  # the line's own
        ({"credit_percent": D("25")}, REFUSE_NOTHING),  # the line's own percentage again
        ({"credit_percent": D("100.01")}, REFUSE_PERCENT),
        ({"credit_delta": D("-250.01"), "credit_percent": D("0")}, REFUSE_CREDIT_NEGATIVE),
        ({}, REFUSE_NOTHING),
        ({"charge_delta": ZERO}, REFUSE_NOTHING),
        ({"charge_delta": D("0.01")}, None),  # 1,000.01 × 25 % = 250.0025 → 250.00: net +0.01
    ],
)
def test_refusals(overrides, reason):
    if reason is None:
        plan(**overrides)
        return
    with pytest.raises(CorrectionRefused) as refused:
        plan(**overrides)
    assert refused.value.reason == reason


# --- corrections: a random sequence keeps every figure within the law ---------------------------


@settings(max_examples=150, deadline=None)
@given(
    roll_charge=st.integers(min_value=0, max_value=200_000),
    percent=st.sampled_from([D("0"), D("25.00"), D("33.33"), D("50"), D("100")]),
    steps=st.lists(
        st.tuples(st.integers(min_value=-150_000, max_value=150_000), st.booleans(), st.integers(0, 100)),
        min_size=1,
        max_size=8,
    ),
)
def test_corrections_never_leave_a_line_outside_the_law(roll_charge, percent, steps):
    charge = D(roll_charge) / 100
    credit = (charge * percent / 100).quantize(D("0.01"), rounding="ROUND_HALF_UP")
    first, second = installments(net=charge - credit)
    standing = {1: [("K1", first, FY)], 2: [("K2", second, JAN)]}
    earlier: list[EarlierCorrection] = []
    made_on = date(2026, 9, 1)
    for number, (cents, with_credit, new_percent) in enumerate(steps):
        current = halves_from(standing)
        kwargs = {"charge_delta": D(cents) / 100}
        if with_credit:
            kwargs = {"credit_delta": D(cents) / 100, "credit_percent": D(new_percent)}
        try:
            result = correction_plan(
                roll_charge=charge,
                roll_credit=credit,
                roll_credit_percent=percent,
                earlier=tuple(earlier),
                halves=current,
                fiscal_year_start=FY,
                made_on=made_on,
                **kwargs,
            )
        except CorrectionRefused as refused:
            assert refused.reason in {REFUSE_CHARGE_NEGATIVE, REFUSE_CREDIT_ABOVE_CHARGE, REFUSE_NOTHING, REFUSE_CREDIT_NEGATIVE,
                                      REFUSE_CREDIT_WITHOUT_PERCENT}  # a credit delta at the line's own percentage
            continue
        assert result.new_charge >= 0 and 0 <= result.new_credit <= result.new_charge and result.new_net >= 0
        assert (result.halves[0].new, result.halves[1].new) == installments(net=result.new_net)
        for half in result.halves:
            for action in half.actions:
                apply_action(standing, action, key=f"C{number}-{half.number}")
            owed = sum((principal for _, principal, _ in standing[half.number]), ZERO)
            assert owed == half.new
            assert all(principal >= 0 for _, principal, _ in standing[half.number])
        earlier.append(
            EarlierCorrection(
                charge_delta=result.charge_delta,
                credit_delta=result.credit_delta,
                credit_percent=result.new_credit_percent if result.percent_recorded else None,
            )
        )
        made_on += timedelta(days=17)


def halves_from(standing) -> tuple[HalfStanding, HalfStanding]:
    out = []
    for number, due in ((1, FY), (2, JAN)):
        (key, principal, _), *corrections = standing[number]
        out.append(
            HalfStanding(number=number, due=due, original_key=key, original_principal=principal, corrections=tuple(corrections))
        )
    return out[0], out[1]


def apply_action(standing, action, *, key):
    rows = standing[action.number]
    if isinstance(action, RaiseHalf):
        rows.append((key, action.amount, action.due))
        return
    for index, (found, principal, due) in enumerate(rows):
        if found == action.charge_key:
            assert principal - action.amount == action.new_principal
            rows[index] = (found, action.new_principal, due)
            return
    raise AssertionError(action)


# --- rates, give-backs and freed money -----------------------------------------------------------


def test_each_period_uses_the_rate_in_force_on_its_first_day():
    schedule = ((date(2000, 1, 1), D("0.005")), (date(2027, 1, 1), D("0.01")))
    assert rate_on(schedule=schedule, day=date(2026, 12, 31)) == D("0.005")
    assert rate_on(schedule=schedule, day=JAN) == D("0.01")
    with pytest.raises(BillingRuleError):
        rate_on(schedule=schedule, day=date(1999, 12, 31))
    # 1,000.00 delinquent from 2026-12-01; as of 2027-02-15 three periods: 5.00 + 10.00 + 10.00
    charge = ChargeRecord(key="A", principal=D("1000.00"), due=date(2026, 9, 30), last_day=date(2026, 11, 30))
    state = ledger_state(charges=[charge], payments=[], as_of=date(2027, 2, 15), schedule=schedule)
    assert state.charge("A").surcharge == D("25.00")
    assert [rate for _, rate, _ in state.charge("A").surcharge_basis] == [D("0.005"), D("0.01"), D("0.01")]


def test_a_lowered_principal_gives_back_surcharge_and_frees_principal():
    # 6,930.90 delinquent from 2026-09-01, paid in full 2026-10-15: 2 × ½% × 6,930.90 = 69.309 → 69.31.
    # Lowered to 6,000.00: 2 × ½% × 6,000.00 = 60.00, so 9.31 is given back and 930.90 freed.
    paid = [PaidOnCharge(paid_on=date(2026, 10, 15), surcharge=D("69.31"), principal=D("6930.90"))]
    result = give_back(new_principal=D("6000.00"), last_day=date(2026, 8, 31), paid=paid, schedule=HALF_RATE)
    assert (result.surcharge_paid, result.surcharge_owed) == (D("69.31"), D("60.00"))
    assert (result.surcharge_given_back, result.principal_freed, result.freed) == (D("9.31"), D("930.90"), D("940.21"))


def test_a_partly_paid_charge_lowered_gives_back_only_surcharge():
    # 1,000.00 from D = 2026-09-01; 505.00 on 2026-09-15 (5.00 + 500.00). Lowered to 800.00:
    # period 1 on 800.00 = 4.00, so 1.00 given back; 500.00 paid is within 800.00, nothing freed.
    paid = [PaidOnCharge(paid_on=date(2026, 9, 15), surcharge=D("5.00"), principal=D("500.00"))]
    result = give_back(new_principal=D("800.00"), last_day=date(2026, 8, 31), paid=paid, schedule=HALF_RATE)
    assert (result.surcharge_given_back, result.principal_freed) == (D("1.00"), ZERO)


def test_finding_5_a_closure_moving_the_last_day_gives_back_the_surcharge_of_a_period_not_begun():
    # 1,000.00, last day 2026-08-31, paid 2026-10-01: two periods (2026-09-01, 2026-10-01), 10.00.
    # The office was closed 2026-08-31: last day 2026-09-01, D = 2026-09-02, one period: 5.00 back.
    paid = [PaidOnCharge(paid_on=date(2026, 10, 1), surcharge=D("10.00"), principal=D("1000.00"))]
    result = give_back(new_principal=D("1000.00"), last_day=date(2026, 9, 1), paid=paid, schedule=HALF_RATE)
    assert (result.surcharge_owed, result.surcharge_given_back, result.principal_freed) == (D("5.00"), D("5.00"), ZERO)


def test_a_second_give_back_frees_only_the_new_excess():
    paid = [PaidOnCharge(paid_on=date(2026, 10, 15), surcharge=D("69.31"), principal=D("6930.90"))]
    result = give_back(
        new_principal=D("5000.00"),
        last_day=date(2026, 8, 31),
        paid=paid,
        schedule=HALF_RATE,
        already_given_back=D("9.31"),
        already_freed=D("930.90"),
    )
    # 2 × ½% × 5,000.00 = 50.00: 60.00 − 50.00 = 10.00 more; 6,000.00 − 5,000.00 = 1,000.00 more
    assert (result.surcharge_given_back, result.principal_freed) == (D("10.00"), D("1000.00"))


def test_freed_money_goes_to_the_oldest_open_charge_surcharge_first_then_to_credit():
    charges = [
        ChargeRecord(key="A", principal=D("100.00"), due=date(2026, 1, 1), last_day=date(2026, 3, 2)),
        ChargeRecord(key="B", principal=D("6930.90"), due=JAN, last_day=date(2027, 3, 2)),
    ]
    # As of 2026-11-01, A is delinquent from 2026-03-03: periods 03-03 … 10-03 begun, 8 × 0.50 = 4.00.
    state = ledger_state(charges=charges, payments=[], as_of=date(2026, 11, 1), schedule=HALF_RATE)
    assert state.charge("A").surcharge == D("4.00")
    entries, left = apply_freed_money(
        amount=D("940.21"), open_charges=state.charges, on=date(2026, 11, 1), source=SOURCE_CORRECTION
    )
    assert entries == (
        CreditApplied("A", date(2026, 11, 1), D("4.00"), D("100.00"), SOURCE_CORRECTION),
        CreditApplied("B", date(2026, 11, 1), ZERO, D("836.21"), SOURCE_CORRECTION),
    )
    assert left == ZERO
    entries, left = apply_freed_money(
        amount=D("8000.00"), open_charges=state.charges, on=date(2026, 11, 1), source=SOURCE_CLOSURE
    )
    # everything open is 104.00 + 6,930.90 = 7,034.90; 965.10 is left as refundable credit
    assert sum(entry.amount for entry in entries) == D("7034.90") and left == D("965.10")


# --- the account from stored records -------------------------------------------------------------


CHARGE_A = ChargeRecord(key="A", principal=D("1000.00"), due=FY, last_day=date(2026, 8, 31))


def test_a_void_reverses_the_stored_allocation_as_of_the_payment_date():
    # P1 505.00 on 2026-09-15: 5.00 surcharge (period 1) + 500.00. P2 on 2026-10-15 owes
    # ½% × (1,000 + 500) = 7.50 less 5.00 paid: 2.50, then 500.00. P1 voided 2026-11-01.
    p1 = StoredPayment(
        key="P1",
        paid_on=date(2026, 9, 15),
        allocations=(StoredAllocation("A", D("5.00"), D("500.00")),),
        voided_on=date(2026, 11, 1),
    )
    before = ledger_state(charges=[CHARGE_A], payments=[p1], as_of=date(2026, 10, 15), schedule=HALF_RATE)
    assert before.charge("A").surcharge_due == D("2.50")
    assert allocate(state=before, amount=D("502.50")) == ((StoredAllocation("A", D("2.50"), D("500.00")),), ZERO)
    p2 = StoredPayment(key="P2", paid_on=date(2026, 10, 15), allocations=(StoredAllocation("A", D("2.50"), D("500.00")),))
    paid_up = ledger_state(charges=[CHARGE_A], payments=[p1, p2], as_of=date(2026, 10, 20), schedule=HALF_RATE)
    assert (paid_up.charge("A").balance, paid_up.ledger_balance) == (ZERO, ZERO)
    # After the void P1 never paid: periods 09-01 and 10-01 on 1,000.00, 11-01 on 500.00 = 12.50.
    after = ledger_state(charges=[CHARGE_A], payments=[p1, p2], as_of=date(2026, 11, 5), schedule=HALF_RATE)
    charge = after.charge("A")
    assert (charge.surcharge, charge.surcharge_paid, charge.principal_paid) == (D("12.50"), D("2.50"), D("500.00"))
    assert (charge.balance, after.ledger_balance) == (D("510.00"), D("500.00"))


def test_a_lowering_recomputes_unpaid_surcharge_and_the_give_back_reaches_the_credit():
    # 1,000.00 paid in full with 10.00 surcharge on 2026-10-01; lowered by 400.00 on 2026-11-02:
    # owed 2 × ½% × 600.00 = 6.00, so 4.00 given back and 400.00 freed, to credit (nothing open).
    lowered = ChargeRecord(
        key="A",
        principal=D("1000.00"),
        due=FY,
        last_day=date(2026, 8, 31),
        lowerings=(PrincipalLowering(entry_date=date(2026, 11, 2), amount=D("400.00")),),
    )
    p1 = StoredPayment(key="P1", paid_on=date(2026, 10, 1), allocations=(StoredAllocation("A", D("10.00"), D("1000.00")),))
    back = give_back(
        new_principal=D("600.00"),
        last_day=date(2026, 8, 31),
        paid=[PaidOnCharge(date(2026, 10, 1), D("10.00"), D("1000.00"))],
        schedule=HALF_RATE,
    )
    entry = GivenBack("A", date(2026, 11, 2), back.surcharge_given_back, back.principal_freed, SOURCE_CORRECTION)
    assert (entry.surcharge, entry.principal) == (D("4.00"), D("400.00"))
    day_before = ledger_state(charges=[lowered], payments=[p1], given_back=[entry], as_of=date(2026, 11, 1), schedule=HALF_RATE)
    assert (day_before.charge("A").principal, day_before.credit) == (D("1000.00"), ZERO)
    state = ledger_state(charges=[lowered], payments=[p1], given_back=[entry], as_of=date(2026, 12, 1), schedule=HALF_RATE)
    charge = state.charge("A")
    assert (charge.principal, charge.principal_paid, charge.surcharge, charge.surcharge_paid) == (
        D("600.00"),
        D("600.00"),
        D("6.00"),
        D("6.00"),
    )
    assert (charge.balance, state.credit, state.ledger_balance) == (ZERO, D("404.00"), D("-404.00"))
    refunded = ledger_state(
        charges=[lowered],
        payments=[p1],
        given_back=[entry],
        as_of=date(2026, 12, 2),
        refunds=[RefundRecord(date(2026, 12, 2), D("404.00"))],
        schedule=HALF_RATE,
    )
    assert refunded.credit == ZERO


def test_a_moved_last_day_counts_from_the_day_the_closure_was_recorded():
    # Last day 2026-08-31 moved to 2026-09-01 by a closure recorded 2026-09-20. As of 2026-10-01
    # the charge is delinquent from 2026-09-02: one period, 5.00 (unmoved: 09-01 and 10-01, 10.00).
    moved = ChargeRecord(
        key="A",
        principal=D("1000.00"),
        due=FY,
        last_day=date(2026, 8, 31),
        moves=(LastDayMove(entry_date=date(2026, 9, 20), last_day=date(2026, 9, 1)),),
    )
    on = date(2026, 10, 1)
    assert ledger_state(charges=[CHARGE_A], payments=[], as_of=on, schedule=HALF_RATE).charge("A").surcharge == D("10.00")
    assert ledger_state(charges=[moved], payments=[], as_of=on, schedule=HALF_RATE).charge("A").surcharge == D("5.00")
    before = ledger_state(charges=[moved], payments=[], as_of=date(2026, 9, 19), schedule=HALF_RATE).charge("A")
    assert (before.last_day, before.surcharge) == (date(2026, 8, 31), D("5.00"))


def test_a_charge_issued_later_is_not_in_an_earlier_state_and_entries_must_name_issued_charges():
    later = ChargeRecord(
        key="B", principal=D("50.00"), due=date(2026, 12, 1), last_day=date(2027, 1, 30), issued_on=date(2026, 12, 1)
    )
    assert [
        c.key for c in ledger_state(charges=[CHARGE_A, later], payments=[], as_of=date(2026, 11, 30), schedule=HALF_RATE).charges
    ] == ["A"]
    wrong = StoredPayment(key="P", paid_on=date(2026, 11, 1), allocations=(StoredAllocation("B", ZERO, D("1.00")),))
    with pytest.raises(BillingRuleError):
        ledger_state(charges=[CHARGE_A, later], payments=[wrong], as_of=date(2026, 11, 30), schedule=HALF_RATE)


# --- Hypothesis: stored allocations agree with migration 0012's replay; the ledger identity ----


DAY0 = date(2026, 7, 1)
charge_strategy = st.tuples(
    st.integers(min_value=0, max_value=400),  # due, days after DAY0
    st.integers(min_value=0, max_value=120),  # grace beyond the due date
    st.integers(min_value=0, max_value=2_000_000),  # principal in cents
    st.booleans(),  # accrues surcharge
)
payment_strategy = st.tuples(st.integers(min_value=0, max_value=800), st.integers(min_value=1, max_value=1_500_000))


def build_charges(specs) -> list[ChargeRecord]:
    out = []
    for index, (due_days, grace, cents, accrues) in enumerate(specs):
        due = DAY0 + timedelta(days=due_days)
        common = dict(
            key=f"C{index:03d}",
            principal=D(cents) / 100,
            due=due,
            last_day=due + timedelta(days=grace),
            accrues_surcharge=accrues,
        )
        out.append(ChargeRecord(**common))
    return out


def store_one_by_one(records, payments, schedule) -> list[StoredPayment]:
    stored: list[StoredPayment] = []
    for payment in sorted(payments, key=lambda p: (p.paid_on, p.key)):
        state = ledger_state(charges=records, payments=stored, as_of=payment.paid_on, schedule=schedule)
        allocations, left = allocate(state=state, amount=payment.amount)
        stored.append(StoredPayment(key=payment.key, paid_on=payment.paid_on, allocations=allocations, to_credit=left))
    return stored


@settings(max_examples=120, deadline=None)
@given(
    charge_specs=st.lists(charge_strategy, min_size=1, max_size=4),
    payment_specs=st.lists(payment_strategy, max_size=6),
    rate=st.sampled_from([D("0.005"), D("0.01"), D("0.0125")]),
    as_of_days=st.integers(min_value=0, max_value=900),
)
def test_storing_allocations_one_by_one_gives_what_migration_0012_stored(charge_specs, payment_specs, rate, as_of_days):
    """Migration 0012 stored the allocation of each payment made before the counter stored them,
    with the replay of that day (frozen in ``_replay_0012``); the counter now allocates each new
    payment on the ledger as of its date. Both give the same rows, so old and new payments read
    alike, and the ledger's charges carry exactly what they were paid."""
    records = build_charges(charge_specs)
    payments = [
        Paid(key=f"P{i:03d}", paid_on=DAY0 + timedelta(days=days), amount=D(cents) / 100)
        for i, (days, cents) in enumerate(payment_specs)
    ]
    as_of = DAY0 + timedelta(days=as_of_days)
    schedule = ((date(2000, 1, 1), rate),)
    stored = store_one_by_one(records, payments, schedule)
    replayed = migration_replay.replay_applications(
        charges=[migration_replay.ChargeInput(key=c.key, principal=c.principal, due=c.due, last_day=c.last_day,
                                              accrues_surcharge=c.accrues_surcharge) for c in records],
        payments=[migration_replay.PaymentInput(key=p.key, paid_on=p.paid_on, amount=p.amount) for p in payments],
        as_of=as_of, params=migration_replay.DelinquencyParameters(surcharge_rate=rate),
    )
    state = ledger_state(charges=records, payments=stored, as_of=as_of, schedule=schedule)
    counting = [payment for payment in stored if payment.paid_on <= as_of]
    stored_applications = [
        (payment.key, allocation.charge_key, allocation.surcharge, allocation.principal)
        for payment in counting
        for allocation in payment.allocations
    ]
    assert stored_applications == [(a.payment_key, a.charge_key, a.surcharge, a.principal) for a in replayed]
    received = sum((payment.amount for payment in counting), ZERO)
    assert state.credit == received - sum((a.surcharge + a.principal for a in replayed), ZERO)
    for charge in state.charges:
        mine = [a for a in replayed if a.charge_key == charge.key]
        assert (charge.principal_paid, charge.surcharge_paid) == (
            sum((a.principal for a in mine), ZERO), sum((a.surcharge for a in mine), ZERO))
        assert 0 <= charge.balance == charge.principal + charge.surcharge - charge.principal_paid - charge.surcharge_paid


@settings(max_examples=200, deadline=None)
@given(
    charge_specs=st.lists(charge_strategy, min_size=1, max_size=4),
    payment_specs=st.lists(st.tuples(st.integers(0, 400), st.integers(1, 1_500_000)), min_size=1, max_size=6),
    events=st.lists(
        st.tuples(
            st.sampled_from(["lower", "lower", "close", "close", "void", "refund"]),
            st.integers(0, 800),
            st.integers(0, 50),
            st.integers(1, 2_000_000),
        ),
        min_size=1,
        max_size=6,
    ),
    check_days=st.lists(st.integers(min_value=0, max_value=900), min_size=1, max_size=4),
)
def test_the_ledger_identity_holds_at_every_date(charge_specs, payment_specs, events, check_days):
    """Σ(principal − principal paid) − credit, summed from the raw entries the ledger posts, equals
    Σ balances − unpaid accrued surcharge − credit from the state, at every date, after voids,
    lowerings with give-backs and freed money applied, closures and refunds."""
    records = build_charges(charge_specs)
    schedule = ((date(2000, 1, 1), D("0.005")), (date(2027, 3, 1), D("0.01")))
    payments = [
        Paid(key=f"P{i:03d}", paid_on=DAY0 + timedelta(days=days), amount=D(cents) / 100)
        for i, (days, cents) in enumerate(payment_specs)
    ]
    stored: list[StoredPayment] = []
    applied: list[CreditApplied] = []
    backs: list[GivenBack] = []
    refunds: list[RefundRecord] = []
    timeline = [(p.paid_on, 0, p.key, p) for p in payments]
    timeline += [(DAY0 + timedelta(days=e[1]), 1, str(i), e) for i, e in enumerate(events)]
    for on, _order, _key, item in sorted(timeline):
        state = ledger_state(
            charges=records,
            payments=stored,
            credit_applied=applied,
            given_back=backs,
            refunds=refunds,
            as_of=on,
            schedule=schedule,
        )
        if isinstance(item, Paid):  # allocated when its receipt is issued, then stored
            allocations, left = allocate(state=state, amount=item.amount)
            stored.append(StoredPayment(key=item.key, paid_on=on, allocations=allocations, to_credit=left))
            continue
        kind, _days, pick, cents = item
        index = pick % len(records)
        record = records[index]
        if kind == "void":
            # A void after money was given back, applied or refunded needs the service to unwind
            # those entries first; the rules here see only voids before them.
            counting = [p for p in stored if p.counts_on(on)]
            if counting and not (backs or applied or refunds):
                victim = counting[pick % len(counting)]
                stored[stored.index(victim)] = StoredPayment(
                    victim.key, victim.paid_on, victim.allocations, victim.to_credit, voided_on=on
                )
            continue
        if kind == "refund":
            if state.credit > 0:
                refunds.append(RefundRecord(on, min(state.credit, D(cents) / 100)))
            continue
        current = state.charge(record.key)
        if kind == "lower":
            amount = min(current.principal, D(cents) / 100)
            if amount == 0:
                continue
            record = records[index] = ChargeRecord(
                key=record.key,
                principal=record.principal,
                due=record.due,
                last_day=record.last_day,
                accrues_surcharge=record.accrues_surcharge,
                lowerings=(*record.lowerings, PrincipalLowering(on, amount)),
                moves=record.moves,
            )
            source = SOURCE_CORRECTION
        else:
            record = records[index] = ChargeRecord(
                key=record.key,
                principal=record.principal,
                due=record.due,
                last_day=record.last_day,
                accrues_surcharge=record.accrues_surcharge,
                lowerings=record.lowerings,
                moves=(*record.moves, LastDayMove(on, current.last_day + timedelta(days=1 + pick % 3))),
            )
            source = SOURCE_CLOSURE
        if not record.accrues_surcharge and kind == "close":
            continue
        back = give_back_for(charge=record, payments=stored, credit_applied=applied, given_back=backs, on=on, schedule=schedule)
        if back.freed:
            backs.append(GivenBack(record.key, on, back.surcharge_given_back, back.principal_freed, source))
            after = ledger_state(
                charges=records,
                payments=stored,
                credit_applied=applied,
                given_back=backs,
                refunds=refunds,
                as_of=on,
                schedule=schedule,
            )
            entries, _left = apply_freed_money(amount=back.freed, open_charges=after.charges, on=on, source=source)
            applied.extend(entries)

    event(f"give-backs: {bool(backs)}, credit applied: {bool(applied)}, voids: {any(p.voided_on for p in stored)}")
    for days in check_days:
        on = DAY0 + timedelta(days=days)
        state = ledger_state(
            charges=records,
            payments=stored,
            credit_applied=applied,
            given_back=backs,
            refunds=refunds,
            as_of=on,
            schedule=schedule,
        )
        counting = [p for p in stored if p.counts_on(on)]
        raw = (
            sum((r.principal for r in records), ZERO)
            - sum((low.amount for r in records for low in r.lowerings if low.entry_date <= on), ZERO)
            + sum((a.surcharge for p in counting for a in p.allocations), ZERO)  # surcharge enters when paid
            + sum((c.surcharge for c in applied if c.entry_date <= on), ZERO)
            - sum((b.surcharge for b in backs if b.entry_date <= on), ZERO)  # ... or given back
            - sum((p.amount for p in counting), ZERO)
            + sum((r.amount for r in refunds if r.refunded_on <= on), ZERO)
        )
        assert raw == state.ledger_balance
        assert state.ledger_balance == state.total_balance - state.unpaid_surcharge - state.credit
        for charge in state.charges:
            assert 0 <= charge.principal_paid <= charge.principal
            assert 0 <= charge.surcharge_paid <= charge.surcharge  # surcharge beyond what is owed was given back


def test_a_charge_and_a_credit_delta_together_set_the_credit_explicitly():
    # 1,100.00 with the credit set to 250.00 + 30.00 = 280.00 (not 25 % × 1,100.00 = 275.00) under
    # a new percentage; net 820.00 = 410 + 410, each half rises 35.00.
    result = plan(charge_delta=D("100.00"), credit_delta=D("30.00"), credit_percent=D("25.45"))
    assert (result.new_charge, result.new_credit, result.new_net) == (D("1100.00"), D("280.00"), D("820.00"))
    assert not result.credit_follows_charge
    assert [half.difference for half in result.halves] == [D("35.00"), D("35.00")]


def test_a_credit_below_zero_names_its_limit():
    with pytest.raises(CorrectionRefused) as refused:
        plan(credit_delta=D("-250.01"), credit_percent=D("0"))
    assert (refused.value.reason, refused.value.limit, refused.value.current_credit) == (
        REFUSE_CREDIT_NEGATIVE,
        D("-250.00"),
        D("250.00"),
    )


def test_finding_2_a_fall_recomputes_unpaid_surcharge_instead_of_paying_it():
    # The July half 6,930.90, unpaid, delinquent from 2026-09-01: as of 2026-10-15 two periods,
    # ½% × 2 × 6,930.90 = 69.31. A correction that day lowers it by 500.00: nothing is "paid"
    # (no surcharge first); the surcharge is recomputed on 6,430.90: 64.309 → 64.31.
    july = ChargeRecord(key="K1", principal=D("6930.90"), due=FY, last_day=date(2026, 8, 31))
    on = date(2026, 10, 15)
    assert ledger_state(charges=[july], payments=[], as_of=on, schedule=HALF_RATE).charge("K1").surcharge == D("69.31")
    lowered = ChargeRecord(
        key="K1",
        principal=D("6930.90"),
        due=FY,
        last_day=date(2026, 8, 31),
        lowerings=(PrincipalLowering(entry_date=on, amount=D("500.00")),),
    )
    back = give_back_for(charge=lowered, payments=[], on=on, schedule=HALF_RATE)
    assert back.freed == ZERO  # nothing was paid, so nothing is given back or freed
    state = ledger_state(charges=[lowered], payments=[], as_of=on, schedule=HALF_RATE)
    charge = state.charge("K1")
    assert (charge.principal, charge.surcharge, charge.surcharge_paid, charge.balance) == (
        D("6430.90"),
        D("64.31"),
        ZERO,
        D("6495.21"),
    )
    # the ledger (surcharge only when paid) and the statement agree: 6,430.90 both ways
    assert state.ledger_balance == state.total_balance - state.unpaid_surcharge - state.credit == D("6430.90")


def test_finding_4_a_new_rate_row_changes_no_earlier_period_nor_a_stored_allocation():
    # 1,000.00 delinquent from 2027-09-01 (last day 2027-08-31), paid 505.00 on 2027-09-15: ½% of
    # period 1 = 5.00, then 500.00. A 1 % row from 2028-01-01 reaches only periods from that day.
    charge = ChargeRecord(key="A", principal=D("1000.00"), due=date(2027, 7, 1), last_day=date(2027, 8, 31))
    first = ledger_state(charges=[charge], payments=[], as_of=date(2027, 9, 15), schedule=HALF_RATE)
    allocations, left = allocate(state=first, amount=D("505.00"))
    assert (allocations, left) == ((StoredAllocation("A", D("5.00"), D("500.00")),), ZERO)
    paid = StoredPayment(key="P", paid_on=date(2027, 9, 15), allocations=allocations)
    with_reform = (*HALF_RATE, (date(2028, 1, 1), D("0.01")))
    # As of 2028-01-15: periods 09-01 (1,000.00), 10-01, 11-01, 12-01 (500.00 each) at ½% = 12.50,
    # and 2028-01-01 (500.00) at 1 % = 5.00: 17.50 (all ½% would be 15.00).
    assert ledger_state(charges=[charge], payments=[paid], as_of=date(2028, 1, 15), schedule=HALF_RATE).charge(
        "A"
    ).surcharge == D("15.00")
    state = ledger_state(charges=[charge], payments=[paid], as_of=date(2028, 1, 15), schedule=with_reform)
    assert (state.charge("A").surcharge, state.charge("A").surcharge_paid) == (D("17.50"), D("5.00"))
    before = ledger_state(charges=[charge], payments=[paid], as_of=date(2027, 12, 31), schedule=with_reform)
    assert before.charge("A").surcharge == D("12.50")
