"""Issue 17, section 3: a new sec. 372 percentage in a correction moves the credit (¶7, ¶9, ¶12).

``docs/interpretations.md`` (¶7): the credit follows the charge, and a new sec. 372 percentage
moves it to ``round(percent × corrected charge)`` half-up; the net is split into halves again
(``levy.rules.installments``: January floor(net/2), July the odd cent). Before this, a
``--credit-percent`` given with the command's default ``--credit-delta 0`` was read as "credit
explicitly unchanged": it printed +0.00, +0.00, +0.00 and moved nothing, and the next charge
correction then moved the credit by the whole −59.80.

The line of the reproductions: O&M charge 2,391.92 at 12.5 %: credit round(0.125 × 2,391.92) =
round(298.99) = 298.99, net 2,092.93 = 1,046.47 (July) + 1,046.46 (January).
"""

from __future__ import annotations

from datetime import date
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from billing.models import CorrectionCharge, PrincipalAdjustment
from billing.rules import (
    REFUSE_CHARGE_NEGATIVE,
    REFUSE_CREDIT_ABOVE_CHARGE,
    REFUSE_CREDIT_WITHOUT_PERCENT,
    REFUSE_NOTHING,
    CorrectionRefused,
    EarlierCorrection,
    HalfStanding,
    LowerCharge,
    RaiseHalf,
    correction_plan,
)
from billing.services import corrections
from levy.models import RollCorrection, RollLine
from levy.rules import installments
from levy.services import LevyError
from parcels import review
from tests.clock import on_day
from tests.commands import run_command

D = Decimal
ZERO = D("0.00")
FY = date(2026, 7, 1)
JAN = date(2027, 1, 1)
MADE_ON = date(2026, 7, 15)


def half_up(value: Decimal) -> Decimal:
    return value.quantize(D("0.01"), rounding=ROUND_HALF_UP)


def line_halves(first: str, second: str, *, first_corrections=(), second_corrections=()):
    return (
        HalfStanding(number=1, due=FY, original_key="K1", original_principal=D(first), corrections=tuple(first_corrections)),
        HalfStanding(number=2, due=JAN, original_key="K2", original_principal=D(second), corrections=tuple(second_corrections)),
    )


def plan(**overrides):
    """The line of the reproductions: 2,391.92 at 12.5 %, credit 298.99, halves 1,046.47 + 1,046.46."""
    arguments = dict(
        roll_charge=D("2391.92"), roll_credit=D("298.99"), roll_credit_percent=D("12.50"), earlier=(),
        halves=line_halves("1046.47", "1046.46"), fiscal_year_start=FY, made_on=MADE_ON,
    )
    arguments.update(overrides)
    return correction_plan(**arguments)


# --- the rules, hand-computed ---------------------------------------------------------------------


@pytest.mark.parametrize("credit_delta", [None, ZERO, D("0")])
def test_a_new_percentage_moves_the_credit_to_the_percent_of_the_charge_and_splits_the_halves_again(credit_delta):
    # 10 % × 2,391.92 = 239.192 → 239.19: credit −59.80; net 2,152.73 = 1,076.37 + 1,076.36, each half +29.90
    result = plan(credit_percent=D("10"), credit_delta=credit_delta)
    assert (result.new_charge, result.new_credit, result.new_net) == (D("2391.92"), D("239.19"), D("2152.73"))
    assert (result.charge_delta, result.credit_delta, result.net_delta) == (ZERO, D("-59.80"), D("59.80"))
    assert result.percent_recorded and result.credit_follows_charge and result.new_credit_percent == D("10")
    first, second = result.halves
    assert (first.old, first.new, second.old, second.new) == (D("1046.47"), D("1076.37"), D("1046.46"), D("1076.36"))
    assert first.actions == (RaiseHalf(number=1, amount=D("29.90"), due=MADE_ON),)
    assert second.actions == (RaiseHalf(number=2, amount=D("29.90"), due=JAN),)


# After the 10 % correction: credit 239.19, halves 1,046.47 + 29.90 and 1,046.46 + 29.90.
AT_TEN = (EarlierCorrection(charge_delta=ZERO, credit_delta=D("-59.80"), credit_percent=D("10")),)
AT_TEN_HALVES = line_halves("1046.47", "1046.46", first_corrections=[("C1", D("29.90"), MADE_ON)],
                            second_corrections=[("C2", D("29.90"), JAN)])


def test_a_later_charge_delta_keeps_the_new_percentage():
    # 10 % × 2,391.94 = 239.194 → 239.19: the credit does not move; net 2,152.75 = 1,076.38 + 1,076.37
    result = plan(earlier=AT_TEN, halves=AT_TEN_HALVES, charge_delta=D("0.02"))
    assert (result.old_credit_percent, result.new_credit_percent, result.percent_recorded) == (D("10"), D("10"), False)
    assert (result.new_charge, result.new_credit, result.new_net) == (D("2391.94"), D("239.19"), D("2152.75"))
    assert result.credit_delta == ZERO
    assert [half.actions for half in result.halves] == [
        (RaiseHalf(number=1, amount=D("0.01"), due=MADE_ON),), (RaiseHalf(number=2, amount=D("0.01"), due=JAN),),
    ]


def test_a_charge_fall_with_zero_percent_leaves_no_credit():
    # After +0.02 as well: charge 2,391.94, credit 239.19, halves 1,076.38 + 1,076.37.
    earlier = (*AT_TEN, EarlierCorrection(charge_delta=D("0.02"), credit_delta=ZERO))
    halves = line_halves("1046.47", "1046.46", first_corrections=[("C1", D("29.90"), MADE_ON), ("C3", D("0.01"), MADE_ON)],
                         second_corrections=[("C2", D("29.90"), JAN), ("C4", D("0.01"), JAN)])
    # −536.02 at 0 %: charge 1,855.92, credit 0.00, net 1,855.92 = 927.96 + 927.96: July falls 148.42,
    # January 148.41, each undoing its correction charges newest first, then its installment
    result = plan(earlier=earlier, halves=halves, charge_delta=D("-536.02"), credit_percent=D("0"))
    assert (result.new_charge, result.new_credit, result.new_net) == (D("1855.92"), ZERO, D("1855.92"))
    assert (result.credit_delta, result.net_delta, result.new_credit_percent) == (D("-239.19"), D("-296.83"), D("0"))
    assert result.halves[0].actions == (
        LowerCharge(1, "C3", D("0.01"), ZERO, MADE_ON, True),
        LowerCharge(1, "C1", D("29.90"), ZERO, MADE_ON, True),
        LowerCharge(1, "K1", D("118.51"), D("927.96"), FY, False),
    )
    assert result.halves[1].actions == (
        LowerCharge(2, "C4", D("0.01"), ZERO, JAN, True),
        LowerCharge(2, "C2", D("29.90"), ZERO, JAN, True),
        LowerCharge(2, "K2", D("118.50"), D("927.96"), JAN, False),
    )


@pytest.mark.parametrize("same", [D("12.5"), D("12.50"), D("12.500")])
def test_the_lines_own_percentage_again_changes_nothing_and_is_refused(same):
    with pytest.raises(CorrectionRefused) as refused:
        plan(credit_percent=same)
    assert (refused.value.reason, refused.value.limit) == (REFUSE_NOTHING, D("12.50"))
    with pytest.raises(CorrectionRefused) as refused:
        plan(credit_percent=same, credit_delta=ZERO)
    assert refused.value.reason == REFUSE_NOTHING


def test_a_credit_delta_needs_a_percentage_that_differs_from_the_lines():
    for percent in (None, D("12.50")):
        with pytest.raises(CorrectionRefused) as refused:
            plan(credit_delta=D("-10.00"), credit_percent=percent)
        assert (refused.value.reason, refused.value.limit) == (REFUSE_CREDIT_WITHOUT_PERCENT, D("12.50"))
        assert "differs from the line's (12.50 %)" in str(refused.value)
    # with a different one the credit is set explicitly: 298.99 − 10.00 = 288.99, net 2,102.93
    result = plan(credit_delta=D("-10.00"), credit_percent=D("12"))
    assert (result.new_credit, result.new_net, result.credit_follows_charge) == (D("288.99"), D("2102.93"), False)


def test_the_lines_own_percentage_with_a_charge_delta_records_no_percentage():
    # 12.5 % × 2,291.92 = 286.49: the charge moves, the credit follows, nothing new is recorded
    result = plan(charge_delta=D("-100.00"), credit_percent=D("12.5"))
    assert (result.new_credit, result.percent_recorded, result.new_credit_percent) == (D("286.49"), False, D("12.50"))


# --- the rules: every correction that follows the percentage keeps credit = round(% × charge) ------


@settings(max_examples=150, deadline=None)
@given(
    roll_cents=st.integers(min_value=0, max_value=500_000),
    roll_percent=st.sampled_from([D("0"), D("12.5"), D("25.00"), D("33.33"), D("100")]),
    steps=st.lists(
        st.tuples(st.integers(min_value=-300_000, max_value=300_000),
                  st.none() | st.integers(min_value=0, max_value=10_000).map(lambda n: D(n).scaleb(-2))),
        min_size=1, max_size=8,
    ),
)
def test_after_any_correction_the_credit_is_the_percent_of_the_charge_and_the_halves_add_up(roll_cents, roll_percent, steps):
    charge = D(roll_cents).scaleb(-2)
    credit = half_up(charge * roll_percent / 100)
    first, second = installments(net=charge - credit)
    standing = {1: [("K1", first, FY)], 2: [("K2", second, JAN)]}
    earlier: list[EarlierCorrection] = []
    percent = roll_percent
    for number, (cents, new_percent) in enumerate(steps):
        halves = tuple(
            HalfStanding(number=n, due=due, original_key=standing[n][0][0], original_principal=standing[n][0][1],
                         corrections=tuple(standing[n][1:]))
            for n, due in ((1, FY), (2, JAN))
        )
        try:
            result = correction_plan(
                roll_charge=charge, roll_credit=credit, roll_credit_percent=roll_percent, earlier=tuple(earlier),
                halves=halves, fiscal_year_start=FY, made_on=MADE_ON, charge_delta=D(cents).scaleb(-2),
                credit_delta=ZERO, credit_percent=new_percent,
            )
        except CorrectionRefused as refused:
            assert refused.reason in {REFUSE_CHARGE_NEGATIVE, REFUSE_CREDIT_ABOVE_CHARGE, REFUSE_NOTHING}
            if refused.reason == REFUSE_NOTHING:
                assert cents == 0 and (new_percent is None or new_percent == percent)
            continue
        if new_percent is not None:
            percent = new_percent
        assert result.new_credit_percent == percent
        assert result.percent_recorded == (new_percent is not None and new_percent != result.old_credit_percent)
        assert result.new_credit == half_up(percent * result.new_charge / 100)
        assert (result.halves[0].new, result.halves[1].new) == installments(net=result.new_net)
        for half in result.halves:
            for action in half.actions:
                if isinstance(action, RaiseHalf):
                    standing[half.number].append((f"C{number}-{half.number}", action.amount, action.due))
                else:
                    standing[half.number] = [
                        (key, action.new_principal if key == action.charge_key else principal, due)
                        for key, principal, due in standing[half.number]
                    ]
            owed = [principal for _key, principal, _due in standing[half.number]]
            assert sum(owed, ZERO) == half.new and all(principal >= 0 for principal in owed)
        earlier.append(EarlierCorrection(charge_delta=result.charge_delta, credit_delta=result.credit_delta,
                                         credit_percent=result.new_credit_percent if result.percent_recorded else None))


# --- through the service and the command: parcel P5 of worked example 1 ---------------------------
# P5, 24.5 acres: charge 4,498.20, no credit, halves 2,249.10 each. A first correction brings it to
# the line of the reproductions: −2,106.28 at 12.5 % gives charge 2,391.92, credit 298.99, net
# 2,092.93 = 1,046.47 + 1,046.46.


def p5() -> RollLine:
    return RollLine.objects.get(parcel__parcel_id="P5", levy__status="final")


def to_the_reproduction_line(staff) -> None:
    corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=p5(), om_charge_delta=D("-2106.28"),
                                       credit_percent=D("12.5"), reason="Línea de la reproducción", made_on=MADE_ON)
    standing = corrections.correction_plan_for(roll_line=p5(), made_on=MADE_ON, om_charge_delta=D("0.01"))
    assert (standing.old_charge, standing.old_credit, standing.old_credit_percent) == (D("2391.92"), D("298.99"), D("12.50"))
    assert (standing.halves[0].old, standing.halves[1].old) == (D("1046.47"), D("1046.46"))


def last() -> RollCorrection:
    return RollCorrection.objects.order_by("-pk").first()


def deltas(correction: RollCorrection) -> tuple[Decimal, Decimal, Decimal]:
    return correction.om_charge_delta.amount, correction.credit_delta.amount, correction.net_delta.amount


@pytest.mark.django_db
def test_the_reproductions_through_the_service(district_1, staff):
    to_the_reproduction_line(staff)
    hacienda = staff["hacienda"]
    # the command and the page send a credit delta of 0 when none is given
    corrections.roll_correction_create(acting_user=hacienda, roll_line=p5(), om_charge_delta=ZERO, credit_delta=ZERO,
                                       credit_percent=D("10"), reason="Nuevo por ciento", made_on=MADE_ON)
    ten = last()
    assert deltas(ten) == (ZERO, D("-59.80"), D("59.80")) and ten.credit_percent == D("10")
    assert sorted((link.number, link.charge.principal.amount) for link in CorrectionCharge.objects.filter(correction=ten)) == [
        (1, D("29.90")), (2, D("29.90")),
    ]
    corrections.roll_correction_create(acting_user=hacienda, roll_line=p5(), om_charge_delta=D("0.02"), credit_delta=ZERO,
                                       reason="Dos centavos", made_on=MADE_ON)
    assert deltas(last()) == (D("0.02"), ZERO, D("0.02")) and last().credit_percent is None
    corrections.roll_correction_create(acting_user=hacienda, roll_line=p5(), om_charge_delta=D("-536.02"),
                                       credit_delta=ZERO, credit_percent=D("0"), reason="Sin crédito", made_on=MADE_ON)
    zero = last()
    assert deltas(zero) == (D("-536.02"), D("-239.19"), D("-296.83")) and zero.credit_percent == D("0")
    # July falls 148.42 (0.01 + 29.90 of its correction charges, then 118.51), January 148.41
    assert sum((a.amount.amount for a in PrincipalAdjustment.objects.filter(correction=zero)), ZERO) == D("296.83")
    standing = corrections.correction_plan_for(roll_line=p5(), made_on=MADE_ON, om_charge_delta=D("0.01"))
    assert (standing.old_charge, standing.old_credit, standing.old_credit_percent) == (D("1855.92"), ZERO, D("0"))
    assert (standing.halves[0].old, standing.halves[1].old) == (D("927.96"), D("927.96"))


@pytest.mark.django_db
def test_the_same_percentage_again_is_refused_in_spanish_with_the_lines_percentage(district_1, staff):
    to_the_reproduction_line(staff)
    before = RollCorrection.objects.count()
    with pytest.raises(LevyError) as refused:
        corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=p5(), om_charge_delta=ZERO,
                                           credit_delta=ZERO, credit_percent=D("12.50"), reason="x", made_on=MADE_ON)
    assert "Una corrección debe cambiar el cargo, el crédito o el por ciento de la sec. 372 (el renglón ya tiene 12.5 %)" in str(
        refused.value)
    with pytest.raises(LevyError) as refused:
        corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=p5(), om_charge_delta=ZERO,
                                           credit_delta=D("-10.00"), credit_percent=D("12.5"), reason="x", made_on=MADE_ON)
    assert "distinto del que el renglón ya tiene (12.5 %)" in str(refused.value)
    assert "crédito $298.99" in str(refused.value)
    assert RollCorrection.objects.count() == before


def levy_correct(*args: str) -> tuple[int, str, str]:
    with on_day(MADE_ON):
        return run_command("levy", "correct", "--fiscal-year", "2026-2027", "--parcel", "P5", "--user", "hac",
                           "--reason", "Reproducción", *args)


@pytest.mark.django_db
def test_the_reproductions_through_the_command(district_1, staff):
    to_the_reproduction_line(staff)
    code, out, err = levy_correct("--credit-percent", "10")
    assert code == 0, err
    assert out.strip().endswith("on P5: O&M charge +0.00, credit -59.80, net +59.80")
    code, out, err = levy_correct("--om-charge-delta", "0.02")
    assert code == 0, err
    assert out.strip().endswith("on P5: O&M charge +0.02, credit +0.00, net +0.02")
    code, out, err = levy_correct("--om-charge-delta", "-536.02", "--credit-percent", "0")
    assert code == 0, err
    assert out.strip().endswith("on P5: O&M charge -536.02, credit -239.19, net -296.83")
    # the line at 0 % again, and a credit delta at the line's own percentage: refused, nothing posted
    count = RollCorrection.objects.count()
    code, _out, err = levy_correct("--credit-percent", "0")
    assert code == 1 and "el renglón ya tiene 0 %" in err
    code, _out, err = levy_correct("--credit-percent", "0", "--credit-delta", "5.00")
    assert code == 1 and "distinto del que el renglón ya tiene (0 %)" in err
    assert RollCorrection.objects.count() == count


@pytest.mark.django_db
def test_the_correction_page_moves_the_credit_with_a_new_percentage(client, district_1, staff):
    from django.urls import reverse

    to_the_reproduction_line(staff)
    url = reverse("levy:corrections", args=["2026-2027"])
    client.force_login(staff["hacienda"])
    with on_day(MADE_ON):
        form = {"parcel_id": "P5", "om_charge_delta": "0", "credit_delta": "0", "reason": "Nuevo por ciento"}
        review_page = client.post(url, {**form, "credit_percent": "10"})  # issue 18: reviewed first
        assert review_page.status_code == 200 and "$59.80" in review_page.content.decode()
        assert client.post(url, {**form, "credit_percent": "10", review.FIELD: review_page.context["fingerprint"]}).status_code == 302
        assert deltas(last()) == (ZERO, D("-59.80"), D("59.80"))
        again = client.post(url, {**form, "credit_percent": "10.00"})
    assert again.status_code == 200
    assert "el renglón ya tiene 10 %" in again.content.decode()
    assert RollCorrection.objects.count() == 2  # the reproduction line's and the 10 % one
