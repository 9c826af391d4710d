"""Tests of the pure levy rules (levy/rules.py): worked examples, hand-built cases, properties.

No database and no Django: every test builds ``ParcelInput`` values and calls the rules.
The three worked examples are those of ``shared/statute/worked-examples.md``, line by line.
"""

from __future__ import annotations

import dataclasses
import math
import pickle
import random
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from levy.rules import (
    STATUTE,
    Eligibility,
    LegalParameters,
    LevyComputation,
    LevyRuleError,
    ParcelInput,
    RollLine,
    Worksheet,
    compute_levy,
    credits_multiplier,
    eligibility,
    equivalent_acres,
    fiscal_year_label,
    fiscal_year_start,
    installments,
    largest_remainder_allocation,
    levy_start,
    reserve_cap,
)

D = Decimal
LONG_AGO = date(2000, 1, 1)
MINUS = "\u2212"


def parcel(
    parcel_id: str,
    *,
    gravity: str = "0",
    pumped: str = "0",
    credit: str = "0",
    water: date | None = LONG_AGO,
    inclusion: str = "permanent",
) -> ParcelInput:
    return ParcelInput(
        parcel_id=parcel_id,
        inclusion=inclusion,
        gravity_acres=D(gravity),
        pumped_acres=D(pumped),
        water_since=water,
        credit_percent=D(credit),
    )


# ---------------------------------------------------------------------------------------------
# The worked examples (shared/statute/worked-examples.md)
# ---------------------------------------------------------------------------------------------

EXAMPLE_INPUTS: dict[str, dict[str, object]] = {
    "example1": {
        "fiscal_year": fiscal_year_start("2026-2027"),
        "om_estimate": D("100000.00"),
        "reserve": D("1500.00"),
        "surplus": D("4000.00"),
        "misc_income": D("7500.00"),
        "parcels": [
            parcel("P1", gravity="100"),
            parcel("P2", gravity="250"),
            parcel("P3", gravity="50"),
            parcel("P4", gravity="75.5"),
            parcel("P5", gravity="24.5"),
        ],
    },
    "example2": {
        "fiscal_year": fiscal_year_start("2027-2028"),
        "om_estimate": D("250000.00"),
        "reserve": D("5000.00"),
        "deficit": D("12345.67"),
        "misc_income": D("20000.00"),
        "parcels": [
            parcel("A", gravity="120", credit="25"),
            parcel("B", pumped="80"),
            parcel("C", gravity="60", pumped="40", credit="10"),
            parcel("D", gravity="200"),
            parcel("E", gravity="33.3", credit="50"),
        ],
    },
    "example3": {
        "fiscal_year": fiscal_year_start("2027-2028"),
        "om_estimate": D("60000.00"),
        "reserve": D("600.00"),
        "surplus": D("2500.00"),
        "misc_income": D("3100.00"),
        "parcels": [
            parcel("Q1", gravity="150", water=date(2025, 3, 10)),
            parcel("Q2", gravity="90", water=date(2026, 6, 15)),
            parcel("Q3", gravity="60", water=date(2026, 7, 3)),
            parcel("Q4", gravity="40", water=date(2026, 11, 20)),
            parcel("Q5", pumped="100", water=date(2024, 1, 5)),
            parcel("Q6", gravity="35", water=date(2020, 1, 1), inclusion="trial"),
        ],
    },
}

# Worksheet rows as printed: om, reserve, credits, deficit, surplus, misc, subtotal, margin,
# total, equivalent acres, rate per gravity acre, rate per pumped acre.
EXAMPLE_WORKSHEETS: dict[str, dict[str, str]] = {
    "example1": {
        "om_estimate": "100000.00",
        "reserve": "1500.00",
        "credits": "0.00",
        "deficit": "0.00",
        "surplus": "4000.00",
        "misc_income": "7500.00",
        "subtotal": "90000.00",
        "safety_margin": "1800.00",
        "total_levy": "91800.00",
        "equivalent_acres": "500.0",
        "rate_gravity": "183.600000",
        "rate_pumped": "91.800000",
    },
    "example2": {
        "om_estimate": "250000.00",
        "reserve": "5000.00",
        "credits": "33020.14",
        "deficit": "12345.67",
        "surplus": "0.00",
        "misc_income": "20000.00",
        "subtotal": "280365.81",
        "safety_margin": "5607.32",
        "total_levy": "285973.13",
        "equivalent_acres": "473.3",
        "rate_gravity": "604.211135",
        "rate_pumped": "302.105567",
    },
    "example3": {
        "om_estimate": "60000.00",
        "reserve": "600.00",
        "credits": "0.00",
        "deficit": "0.00",
        "surplus": "2500.00",
        "misc_income": "3100.00",
        "subtotal": "55000.00",
        "safety_margin": "1100.00",
        "total_levy": "56100.00",
        "equivalent_acres": "290.0",
        "rate_gravity": "193.448276",
        "rate_pumped": "96.724138",
    },
}

# parcel, pays?, O&M charge, credit, net, July 1, January 1
EXAMPLE_ROLLS: dict[str, list[tuple[str, bool, str, str, str, str, str]]] = {
    "example1": [
        ("P1", True, "18360.00", "0.00", "18360.00", "9180.00", "9180.00"),
        ("P2", True, "45900.00", "0.00", "45900.00", "22950.00", "22950.00"),
        ("P3", True, "9180.00", "0.00", "9180.00", "4590.00", "4590.00"),
        ("P4", True, "13861.80", "0.00", "13861.80", "6930.90", "6930.90"),
        ("P5", True, "4498.20", "0.00", "4498.20", "2249.10", "2249.10"),
    ],
    "example2": [
        ("A", True, "72505.34", "18126.34", "54379.00", "27189.50", "27189.50"),
        ("B", True, "24168.44", "0.00", "24168.44", "12084.22", "12084.22"),
        ("C", True, "48336.89", "4833.69", "43503.20", "21751.60", "21751.60"),
        ("D", True, "120842.23", "0.00", "120842.23", "60421.12", "60421.11"),
        ("E", True, "20120.23", "10060.12", "10060.11", "5030.06", "5030.05"),
    ],
    "example3": [
        ("Q1", True, "29017.24", "0.00", "29017.24", "14508.62", "14508.62"),
        ("Q2", True, "17410.35", "0.00", "17410.35", "8705.18", "8705.17"),
        ("Q3", False, "0.00", "0.00", "0.00", "0.00", "0.00"),
        ("Q4", False, "0.00", "0.00", "0.00", "0.00", "0.00"),
        ("Q5", True, "9672.41", "0.00", "9672.41", "4836.21", "4836.20"),
    ],
}

# Σ row: O&M charge, credit, net
EXAMPLE_SUMS: dict[str, tuple[str, str, str]] = {
    "example1": ("91800.00", "0.00", "91800.00"),
    "example2": ("285973.13", "33020.15", "252952.98"),
    "example3": ("56100.00", "0.00", "56100.00"),
}


def compute_example(name: str) -> LevyComputation:
    return compute_levy(**EXAMPLE_INPUTS[name])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("example", "field", "expected"),
    [(example, field, expected) for example, rows in EXAMPLE_WORKSHEETS.items() for field, expected in rows.items()],
)
def test_worked_example_worksheet_line(example: str, field: str, expected: str) -> None:
    worksheet = compute_example(example).worksheet
    assert getattr(worksheet, field) == D(expected)


@pytest.mark.parametrize("example", sorted(EXAMPLE_WORKSHEETS))
def test_worked_example_printed_lines(example: str) -> None:
    worksheet = compute_example(example).worksheet
    expected = EXAMPLE_WORKSHEETS[example]
    printed = [(line.paragraph, line.sign, str(line.amount)) for line in worksheet.lines]
    assert printed == [
        ("¶1(1)", "+", expected["om_estimate"]),
        ("¶1(2)", "+", expected["reserve"]),
        ("¶1(3)", "+", expected["credits"]),
        ("¶2", "+", expected["deficit"]),
        ("¶2", MINUS, expected["surplus"]),
        ("¶3", MINUS, expected["misc_income"]),
        ("¶3", "=", expected["subtotal"]),
        ("¶3", "+", expected["safety_margin"]),
        ("¶4", "=", expected["total_levy"]),
    ]
    # Rates print with exactly six decimals, as on the worksheet.
    assert str(worksheet.rate_gravity) == expected["rate_gravity"]
    assert str(worksheet.rate_pumped) == expected["rate_pumped"]


@pytest.mark.parametrize(
    ("example", "row"),
    [(example, row) for example, rows in EXAMPLE_ROLLS.items() for row in rows],
    ids=lambda value: value if isinstance(value, str) else value[0],
)
def test_worked_example_roll_row(example: str, row: tuple[str, bool, str, str, str, str, str]) -> None:
    parcel_id, pays, charge, credit, net, july, january = row
    lines = {line.parcel_id: line for line in compute_example(example).lines}
    line = lines[parcel_id]
    assert line.levied is pays
    # str() pins the scale too: every amount on the roll has exactly two decimals.
    assert str(line.om_charge) == charge
    assert str(line.credit) == credit
    assert str(line.net) == net
    assert str(line.first_installment) == july
    assert str(line.second_installment) == january


@pytest.mark.parametrize("example", sorted(EXAMPLE_SUMS))
def test_worked_example_sums(example: str) -> None:
    result = compute_example(example)
    total, credits, net = (D(value) for value in EXAMPLE_SUMS[example])
    assert result.roll_total == total
    assert result.roll_credits == credits
    assert result.roll_net == net
    assert sum(line.om_charge for line in result.lines) == total
    assert sum(line.credit for line in result.lines) == credits
    assert sum(line.net for line in result.lines) == net
    assert [line.parcel_id for line in result.lines] == [row[0] for row in EXAMPLE_ROLLS[example]]


def test_example2_credits_gap_is_the_rounding_cent() -> None:
    result = compute_example("example2")
    assert result.worksheet.credits == D("33020.14")
    assert result.roll_credits == D("33020.15")
    assert result.credits_gap == D("-0.01")
    assert result.worksheet.credits_certified is False
    assert result.worksheet.k0 == D("247345.67")
    assert result.worksheet.gravity_acres == D("413.3")
    assert result.worksheet.pumped_acres == D("120")
    assert result.parcels_levied == 5


def test_example3_who_pays_and_why() -> None:
    result = compute_example("example3")
    reasons = {line.parcel_id: (line.levied, line.reason) for line in result.lines}
    assert reasons == {
        "Q1": (True, "levied"),
        "Q2": (True, "levied"),
        "Q3": (False, "water_too_recent"),
        "Q4": (False, "water_too_recent"),
        "Q5": (True, "levied"),
    }  # Q6 is on trial: not on the roll at all
    assert result.parcels_levied == 3
    assert result.worksheet.gravity_acres == D("240")
    assert result.worksheet.pumped_acres == D("100")
    # Q3 (water from 2026-07-03) first pays in 2028-2029.
    assert levy_start(water_since=date(2026, 7, 3), params=STATUTE) == date(2028, 7, 1)


# ---------------------------------------------------------------------------------------------
# Fiscal years
# ---------------------------------------------------------------------------------------------


def test_fiscal_year_label_round_trip() -> None:
    assert fiscal_year_start("2026-2027") == date(2026, 7, 1)
    assert fiscal_year_label(2026) == "2026-2027"
    assert fiscal_year_start(fiscal_year_label(1999)) == date(1999, 7, 1)


@pytest.mark.parametrize(
    "label",
    [
        "2026-2028",
        "2027-2026",
        "2026-2026",
        "2026/2027",
        "2026 - 2027",
        " 2026-2027",
        "2026-2027\n",
        "26-27",
        "2026",
        "",
        "\uff12\uff10\uff12\uff16-\uff12\uff10\uff12\uff17",  # full-width digits
        "0000-0001",
    ],
)
def test_bad_fiscal_year_labels_are_refused(label: str) -> None:
    with pytest.raises(LevyRuleError):
        fiscal_year_start(label)


def test_fiscal_year_label_must_be_text_and_in_range() -> None:
    with pytest.raises(LevyRuleError):
        fiscal_year_start(2026)  # type: ignore[arg-type]
    with pytest.raises(LevyRuleError):
        fiscal_year_label(0)
    with pytest.raises(LevyRuleError):
        fiscal_year_label(True)  # type: ignore[arg-type]


def test_fiscal_year_must_be_a_july_first() -> None:
    with pytest.raises(LevyRuleError, match="July 1"):
        compute_levy(
            fiscal_year=date(2026, 7, 2),
            om_estimate=D("100.00"),
            reserve=D("0"),
            misc_income=D("0"),
            parcels=[parcel("P1", gravity="1")],
        )


def test_fiscal_year_before_the_statute_is_refused() -> None:
    with pytest.raises(LevyRuleError, match="take effect"):
        eligibility(parcel=parcel("P1", gravity="1"), fiscal_year=date(1952, 7, 1), params=STATUTE)


# ---------------------------------------------------------------------------------------------
# Who pays (¶4, ¶8, ¶10)
# ---------------------------------------------------------------------------------------------

FY_2026 = date(2026, 7, 1)
THIRTY_DAY = LegalParameters(month_convention="thirty_day")


@pytest.mark.parametrize(
    ("water_since", "params", "first_fiscal_year"),
    [
        (date(2025, 7, 1), STATUTE, date(2026, 7, 1)),  # twelve months end on July 1 itself
        (date(2025, 7, 2), STATUTE, date(2027, 7, 1)),  # one day late: a whole year later
        (date(2025, 6, 30), STATUTE, date(2026, 7, 1)),
        (date(2024, 2, 29), STATUTE, date(2025, 7, 1)),  # ends 2025-02-28 (clamped)
        (date(2025, 1, 1), STATUTE, date(2026, 7, 1)),
        (date(2025, 7, 1), THIRTY_DAY, date(2026, 7, 1)),  # 360 days end 2026-06-26
        (date(2025, 7, 6), THIRTY_DAY, date(2026, 7, 1)),  # 360 days end 2026-07-01
        (date(2025, 7, 7), THIRTY_DAY, date(2027, 7, 1)),  # 360 days end 2026-07-02
        (date(2025, 7, 6), STATUTE, date(2027, 7, 1)),  # the calendar reading disagrees
    ],
)
def test_levy_start(water_since: date, params: LegalParameters, first_fiscal_year: date) -> None:
    assert levy_start(water_since=water_since, params=params) == first_fiscal_year


def test_month_end_clamp_with_other_month_counts() -> None:
    # 2025-05-31 + 13 calendar months is 2026-06-30 (June has no 31st): pays in 2026-2027.
    thirteen = LegalParameters(water_months=13)
    assert levy_start(water_since=date(2025, 5, 31), params=thirteen) == date(2026, 7, 1)
    # 2025-06-01 + 13 months is 2026-07-01: still in time.
    assert levy_start(water_since=date(2025, 6, 1), params=thirteen) == date(2026, 7, 1)
    assert levy_start(water_since=date(2025, 6, 2), params=thirteen) == date(2027, 7, 1)


@pytest.mark.parametrize(
    ("water_since", "params", "expected"),
    [
        (date(2025, 7, 1), STATUTE, Eligibility(levied=True, reason="levied")),
        (date(2025, 7, 2), STATUTE, Eligibility(levied=False, reason="water_too_recent")),
        (date(2026, 6, 30), STATUTE, Eligibility(levied=False, reason="water_too_recent")),
        (date(2025, 7, 6), THIRTY_DAY, Eligibility(levied=True, reason="levied")),
        (date(2025, 7, 7), THIRTY_DAY, Eligibility(levied=False, reason="water_too_recent")),
        (None, STATUTE, Eligibility(levied=False, reason="no_water_date")),
    ],
)
def test_eligibility_of_permanent_parcels(water_since: date | None, params: LegalParameters, expected: Eligibility) -> None:
    subject = parcel("P1", gravity="10", water=water_since)
    assert eligibility(parcel=subject, fiscal_year=FY_2026, params=params) == expected


@pytest.mark.parametrize("inclusion", ["trial", "excluded"])
def test_trial_and_excluded_parcels_are_not_on_the_roll(inclusion: str) -> None:
    outsider = parcel("X1", gravity="500", inclusion=inclusion)
    assert eligibility(parcel=outsider, fiscal_year=FY_2026, params=STATUTE) is None
    result = compute_levy(
        fiscal_year=FY_2026,
        om_estimate=D("1000.00"),
        reserve=D("0"),
        misc_income=D("0"),
        parcels=[outsider, parcel("P1", gravity="10")],
    )
    assert [line.parcel_id for line in result.lines] == ["P1"]
    assert result.lines[0].om_charge == D("1020.00")


def test_the_convention_changes_the_roll() -> None:
    parcels = [
        parcel("P1", gravity="10"),
        parcel("P2", gravity="10", water=date(2025, 7, 6)),
        parcel("P3", gravity="10", water=None),
    ]
    common = {
        "fiscal_year": FY_2026,
        "om_estimate": D("1000.00"),
        "reserve": D("0"),
        "misc_income": D("0"),
        "parcels": parcels,
    }
    calendar_roll = compute_levy(**common)  # type: ignore[arg-type]
    thirty_day_roll = compute_levy(**common, params=THIRTY_DAY)  # type: ignore[arg-type]
    assert [(line.om_charge, line.reason) for line in calendar_roll.lines] == [
        (D("1020.00"), "levied"),
        (D("0.00"), "water_too_recent"),
        (D("0.00"), "no_water_date"),
    ]
    assert [(line.om_charge, line.reason) for line in thirty_day_roll.lines] == [
        (D("510.00"), "levied"),
        (D("510.00"), "levied"),
        (D("0.00"), "no_water_date"),
    ]
    assert calendar_roll.worksheet.equivalent_acres == D("10")
    assert thirty_day_roll.worksheet.equivalent_acres == D("20")


def test_unknown_month_convention_is_refused() -> None:
    with pytest.raises(LevyRuleError, match="month_convention"):
        LegalParameters(month_convention="lunar")


# ---------------------------------------------------------------------------------------------
# Acres, reserve cap, installments, allocation
# ---------------------------------------------------------------------------------------------


def test_equivalent_acres_is_exact() -> None:
    assert equivalent_acres(gravity_acres=D("60"), pumped_acres=D("40"), params=STATUTE) == D(80)
    assert equivalent_acres(gravity_acres=D("0.0001"), pumped_acres=D("33.3333"), params=STATUTE) == D("16.66675")
    with pytest.raises(LevyRuleError):
        equivalent_acres(gravity_acres=D("-1"), pumped_acres=D("0"), params=STATUTE)


@pytest.mark.parametrize(
    ("om_estimate", "cap"),
    [
        ("100000.00", "2000.00"),
        ("100000.25", "2000.01"),  # 2000.005 rounds half up
        ("100000.24", "2000.00"),  # 2000.0048
        ("0.00", "0.00"),
    ],
)
def test_reserve_cap(om_estimate: str, cap: str) -> None:
    assert reserve_cap(om_estimate=D(om_estimate), params=STATUTE) == D(cap)


def levy_with_reserve(reserve: str, om_estimate: str = "100000.00") -> LevyComputation:
    return compute_levy(
        fiscal_year=FY_2026,
        om_estimate=D(om_estimate),
        reserve=D(reserve),
        misc_income=D("0"),
        parcels=[parcel("P1", gravity="1")],
    )


def test_reserve_of_exactly_two_percent_is_allowed() -> None:
    assert levy_with_reserve("2000.00").worksheet.reserve == D("2000.00")
    assert levy_with_reserve("2000.01", om_estimate="100000.25").worksheet.reserve == D("2000.01")


@pytest.mark.parametrize(("reserve", "om_estimate"), [("2000.01", "100000.00"), ("2000.02", "100000.25")])
def test_reserve_one_cent_over_the_cap_is_refused(reserve: str, om_estimate: str) -> None:
    with pytest.raises(LevyRuleError, match="cap"):
        levy_with_reserve(reserve, om_estimate=om_estimate)


@pytest.mark.parametrize(
    ("net", "first", "second"),
    [
        ("0.00", "0.00", "0.00"),
        ("0.01", "0.01", "0.00"),
        ("0.02", "0.01", "0.01"),
        ("17410.35", "8705.18", "8705.17"),
        ("54379.00", "27189.50", "27189.50"),
    ],
)
def test_installments(net: str, first: str, second: str) -> None:
    halves = installments(net=D(net))
    assert tuple(str(half) for half in halves) == (first, second)


@pytest.mark.parametrize("net", ["-0.01", "1.005", "NaN"])
def test_installments_refuse_bad_amounts(net: str) -> None:
    with pytest.raises(LevyRuleError):
        installments(net=D(net))


def test_largest_remainder_ties_go_to_the_smallest_id() -> None:
    # Three equal shares of 1.00: the odd cent goes to "a" whatever the input order.
    shares = largest_remainder_allocation(total=D("1.00"), weights=[("c", D(1)), ("a", D(1)), ("b", D(1))])
    assert shares == {"c": D("0.33"), "a": D("0.34"), "b": D("0.33")}
    assert list(shares) == ["c", "a", "b"]  # the caller's order is kept
    # Ids compare as text: "P10" sorts before "P9".
    shares = largest_remainder_allocation(total=D("0.02"), weights=[("P9", D(1)), ("P10", D(1)), ("P11", D(1))])
    assert shares == {"P9": D("0.00"), "P10": D("0.01"), "P11": D("0.01")}


def test_largest_remainder_prefers_the_larger_remainder_over_the_id() -> None:
    # Exact shares 0.333…, 0.666… cents of 0.01: the larger remainder ("z") wins the cent.
    shares = largest_remainder_allocation(total=D("0.01"), weights=[("a", Fraction(1, 3)), ("z", Fraction(2, 3))])
    assert shares == {"a": D("0.00"), "z": D("0.01")}


def test_largest_remainder_example2_gives_b_the_floor() -> None:
    shares = largest_remainder_allocation(
        total=D("285973.13"),
        weights=[("A", D("120")), ("B", D("40")), ("C", D("80")), ("D", D("200")), ("E", D("33.3"))],
    )
    assert shares["B"] == D("24168.44")  # plain rounding would give 24168.45
    assert sum(shares.values()) == D("285973.13")


def test_largest_remainder_refuses_bad_input() -> None:
    with pytest.raises(LevyRuleError, match="unique"):
        largest_remainder_allocation(total=D("1.00"), weights=[("a", D(1)), ("a", D(2))])
    with pytest.raises(LevyRuleError):
        largest_remainder_allocation(total=D("1.00"), weights=[("a", D(0))])
    with pytest.raises(LevyRuleError):
        largest_remainder_allocation(total=D("1.00"), weights=[("a", D(-1)), ("b", D(2))])
    with pytest.raises(LevyRuleError):
        largest_remainder_allocation(total=D("1.00"), weights=[("a", 0.5)])  # type: ignore[list-item]


def test_ties_in_a_levy_go_to_the_smallest_parcel_id() -> None:
    # 100.01 over three equal parcels: 33.33 each and two cents left, equal remainders.
    result = compute_levy(
        fiscal_year=FY_2026,
        om_estimate=D("98.05"),  # subtotal 98.05, margin 1.96, total 100.01
        reserve=D("0"),
        misc_income=D("0"),
        parcels=[parcel(pid, gravity="5") for pid in ("P3", "P1", "P2")],
    )
    assert result.worksheet.total_levy == D("100.01")
    assert [(line.parcel_id, line.om_charge) for line in result.lines] == [
        ("P1", D("33.34")),
        ("P2", D("33.34")),
        ("P3", D("33.33")),
    ]


# ---------------------------------------------------------------------------------------------
# Zero levy, credits, validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("surplus", "k0"), [("5000.00", "0.00"), ("5000.01", "-0.01")])
def test_zero_levy_when_nothing_is_left_to_levy(surplus: str, k0: str) -> None:
    result = compute_levy(
        fiscal_year=FY_2026,
        om_estimate=D("5000.00"),
        reserve=D("0"),
        surplus=D(surplus),
        misc_income=D("0"),
        parcels=[parcel("P1", gravity="10", credit="50"), parcel("P2", gravity="5")],
    )
    worksheet = result.worksheet
    assert worksheet.k0 == D(k0)
    assert (worksheet.credits, worksheet.subtotal, worksheet.safety_margin) == (0, 0, 0)
    assert worksheet.total_levy == D("0.00")
    assert worksheet.rate_gravity == D("0") and worksheet.rate_pumped == D("0")
    for line in result.lines:
        assert line.levied
        assert (line.om_charge, line.credit, line.net) == (0, 0, 0)
        assert (line.first_installment, line.second_installment) == (0, 0)
    assert (result.roll_total, result.roll_credits, result.credits_gap) == (0, 0, 0)


def test_zero_levy_even_when_credits_would_not_solve() -> None:
    result = compute_levy(
        fiscal_year=FY_2026,
        om_estimate=D("100.00"),
        reserve=D("0"),
        misc_income=D("100.00"),
        parcels=[parcel("P1", gravity="10", credit="100")],
    )
    assert result.worksheet.total_levy == 0


def test_credits_that_consume_the_levy_are_refused() -> None:
    # k = 50/51 makes 1.02 × k exactly 1.
    with pytest.raises(LevyRuleError, match="factor \\(3\\)"):
        compute_levy(
            fiscal_year=FY_2026,
            om_estimate=D("1000.00"),
            reserve=D("0"),
            misc_income=D("0"),
            parcels=[parcel("P1", gravity="50", credit="100"), parcel("P2", gravity="1")],
        )
    with pytest.raises(LevyRuleError, match="factor \\(3\\)"):
        compute_levy(
            fiscal_year=FY_2026,
            om_estimate=D("1000.00"),
            reserve=D("0"),
            misc_income=D("0"),
            parcels=[parcel("P1", gravity="1", credit="98.04")],  # 1.02 × 0.9804 > 1
        )


def test_credits_just_below_the_limit_still_solve() -> None:
    result = compute_levy(
        fiscal_year=FY_2026,
        om_estimate=D("1000.00"),
        reserve=D("0"),
        misc_income=D("0"),
        parcels=[parcel("P1", gravity="1", credit="98.03")],
    )
    # L = 1.02 × 1000 / (1 − 1.02 × 0.9803) = 1020 / 0.000094 = 10,851,063.829…
    # credits = round(0.9803 × L) = 10,637,297.87; margin = round(2% × 10,638,297.87).
    assert result.worksheet.credits == D("10637297.87")
    assert result.worksheet.safety_margin == D("212765.96")
    assert result.worksheet.total_levy == D("10851063.83")
    assert result.roll_credits == D("10637297.87")
    assert result.lines[0].net == D("213765.96")
    assert result.credits_gap == D("0.00")


def test_certified_credits_with_a_gap() -> None:
    inputs = dict(EXAMPLE_INPUTS["example2"], certified_credits=D("33000.00"))
    result = compute_levy(**inputs)  # type: ignore[arg-type]
    worksheet = result.worksheet
    assert worksheet.credits_certified is True
    assert worksheet.credits == D("33000.00")
    assert worksheet.subtotal == D("280345.67")
    assert worksheet.safety_margin == D("5606.91")
    assert worksheet.total_levy == D("285952.58")
    rows = [(line.parcel_id, line.om_charge, line.credit, line.net) for line in result.lines]
    assert rows == [
        ("A", D("72500.13"), D("18125.03"), D("54375.10")),
        ("B", D("24166.71"), D("0.00"), D("24166.71")),
        ("C", D("48333.42"), D("4833.34"), D("43500.08")),
        ("D", D("120833.54"), D("0.00"), D("120833.54")),
        ("E", D("20118.78"), D("10059.39"), D("10059.39")),
    ]
    assert result.roll_credits == D("33017.76")
    assert result.credits_gap == D("-17.76")


def test_certified_credits_even_when_the_solve_would_fail() -> None:
    result = compute_levy(
        fiscal_year=FY_2026,
        om_estimate=D("1000.00"),
        reserve=D("0"),
        misc_income=D("0"),
        certified_credits=D("500.00"),
        parcels=[parcel("P1", gravity="1", credit="100")],
    )
    assert result.worksheet.total_levy == D("1530.00")
    assert result.roll_credits == D("1530.00")
    assert result.credits_gap == D("-1030.00")
    assert result.lines[0].net == D("0.00")


def test_certified_credits_cannot_make_a_negative_levy() -> None:
    result = compute_levy(
        fiscal_year=FY_2026,
        om_estimate=D("1000.00"),
        reserve=D("0"),
        misc_income=D("1500.00"),
        certified_credits=D("400.00"),
        parcels=[parcel("P1", gravity="1", credit="10")],
    )
    worksheet = result.worksheet
    # K0 = 1,000 − 1,500 = −500; −500 + 400 ≤ 0: nothing is levied, so no credit is owed and
    # factor (3) shows 0.00 with everything else (docs/interpretations.md).
    assert worksheet.k0 == D("-500.00")
    assert (worksheet.credits, worksheet.subtotal, worksheet.safety_margin, worksheet.total_levy) == (
        D("0.00"),
        D("0.00"),
        D("0.00"),
        D("0.00"),
    )
    assert worksheet.credits_certified is True
    assert (result.roll_total, result.roll_credits, result.credits_gap) == (0, 0, 0)
    assert [(line.om_charge, line.credit, line.net) for line in result.lines] == [(0, 0, 0)]


@pytest.mark.parametrize(
    ("certified", "credits", "subtotal", "margin", "total"),
    [
        ("500.00", "0.00", "0.00", "0.00", "0.00"),  # −500 + 500 = 0: still nothing to levy
        ("500.01", "500.01", "0.01", "0.00", "0.01"),  # one cent above: the credits stand
        ("600.00", "600.00", "100.00", "2.00", "102.00"),
    ],
)
def test_certified_credits_at_a_subtotal_of_zero(certified: str, credits: str, subtotal: str, margin: str, total: str) -> None:
    result = compute_levy(
        fiscal_year=FY_2026,
        om_estimate=D("1000.00"),
        reserve=D("0"),
        misc_income=D("1500.00"),
        certified_credits=D(certified),
        parcels=[parcel("P1", gravity="1", credit="10")],
    )
    worksheet = result.worksheet
    assert (worksheet.credits, worksheet.subtotal, worksheet.safety_margin, worksheet.total_levy) == (
        D(credits),
        D(subtotal),
        D(margin),
        D(total),
    )


@pytest.mark.parametrize(
    "parcels",
    [
        [],
        [parcel("P1", gravity="10", water=date(2026, 1, 1))],
        [parcel("P1", gravity="10", water=None)],
        [parcel("P1", gravity="10", inclusion="trial")],
        [parcel("P1", gravity="0", pumped="0"), parcel("P2", gravity="5", water=None)],
    ],
    ids=["empty", "too-recent", "no-water-date", "trial-only", "zero-acres"],
)
def test_no_paying_acreage_is_refused(parcels: list[ParcelInput]) -> None:
    with pytest.raises(LevyRuleError, match="paying acreage is zero"):
        compute_levy(
            fiscal_year=FY_2026,
            om_estimate=D("1000.00"),
            reserve=D("0"),
            misc_income=D("0"),
            parcels=parcels,
        )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("om_estimate", D("-0.01"), "negative"),
        ("reserve", D("-1.00"), "negative"),
        ("misc_income", D("-1.00"), "negative"),
        ("deficit", D("-1.00"), "negative"),
        ("surplus", D("-1.00"), "negative"),
        ("certified_credits", D("-1.00"), "negative"),
        ("om_estimate", D("1000.001"), "cents"),
        ("om_estimate", D("Infinity"), "Decimal"),
        ("om_estimate", 1000.0, "Decimal"),
    ],
)
def test_bad_amounts_are_refused(field: str, value: object, message: str) -> None:
    inputs: dict[str, object] = {
        "fiscal_year": FY_2026,
        "om_estimate": D("1000.00"),
        "reserve": D("0"),
        "misc_income": D("0"),
        "parcels": [parcel("P1", gravity="1")],
    }
    inputs[field] = value
    with pytest.raises(LevyRuleError, match=message):
        compute_levy(**inputs)  # type: ignore[arg-type]


def test_deficit_and_surplus_together_are_refused() -> None:
    with pytest.raises(LevyRuleError, match="deficit or a surplus"):
        compute_levy(
            fiscal_year=FY_2026,
            om_estimate=D("1000.00"),
            reserve=D("0"),
            deficit=D("1.00"),
            surplus=D("2.00"),
            misc_income=D("0"),
            parcels=[parcel("P1", gravity="1")],
        )


def test_duplicate_parcel_ids_are_refused() -> None:
    with pytest.raises(LevyRuleError, match="twice"):
        compute_levy(
            fiscal_year=FY_2026,
            om_estimate=D("1000.00"),
            reserve=D("0"),
            misc_income=D("0"),
            parcels=[parcel("P1", gravity="1"), parcel("P1", gravity="2", inclusion="trial")],
        )


@pytest.mark.parametrize(
    "changes",
    [
        {"credit_percent": D("100.01")},
        {"credit_percent": D("-0.01")},
        {"gravity_acres": D("-1")},
        {"pumped_acres": D("NaN")},
        {"gravity_acres": 1.5},
        {"inclusion": "permanently"},
        {"parcel_id": ""},
    ],
)
def test_bad_parcels_are_refused(changes: dict[str, object]) -> None:
    with pytest.raises(LevyRuleError):
        dataclasses.replace(parcel("P1", gravity="1"), **changes)


def test_worksheet_checks_its_own_sums() -> None:
    worksheet = compute_example("example2").worksheet
    worksheet.verify()
    with pytest.raises(LevyRuleError, match="total"):
        dataclasses.replace(worksheet, total_levy=worksheet.total_levy + D("0.01"))
    lines = list(worksheet.lines)
    lines[2] = dataclasses.replace(lines[2], amount=D("33020.15"))
    with pytest.raises(LevyRuleError, match="credits"):
        dataclasses.replace(worksheet, lines=tuple(lines))
    with pytest.raises(LevyRuleError, match="subtotal"):
        dataclasses.replace(
            worksheet,
            credits=D("33020.15"),
            lines=tuple(
                dataclasses.replace(line, amount=D("33020.15")) if line.key == "credits" else line for line in worksheet.lines
            ),
        )


def test_input_order_does_not_matter() -> None:
    parcels = list(EXAMPLE_INPUTS["example2"]["parcels"])  # type: ignore[call-overload]
    random.Random(4).shuffle(parcels)
    shuffled = compute_levy(**dict(EXAMPLE_INPUTS["example2"], parcels=parcels))  # type: ignore[arg-type]
    assert shuffled == compute_example("example2")


# ---------------------------------------------------------------------------------------------
# Properties on random registries
# ---------------------------------------------------------------------------------------------


def cents(value: int) -> Decimal:
    return Decimal(value).scaleb(-2)


@st.composite
def registries(draw: st.DrawFn) -> dict[str, object]:
    ids = draw(
        st.lists(
            st.text(alphabet="ABCPQ0123456789", min_size=1, max_size=4),
            min_size=1,
            max_size=40,
            unique=True,
        )
    )
    parcels = []
    for parcel_id in ids:
        pumped = draw(st.one_of(st.just(0), st.integers(0, 5_000_000)))
        credit = draw(st.one_of(st.just(0), st.integers(0, 10_000)))
        parcels.append(
            ParcelInput(
                parcel_id=parcel_id,
                inclusion=draw(st.sampled_from(["permanent"] * 6 + ["trial", "excluded"])),
                gravity_acres=Decimal(draw(st.integers(0, 10_000_000))).scaleb(-4),
                pumped_acres=Decimal(pumped).scaleb(-4),
                water_since=draw(
                    st.one_of(
                        st.none(),
                        st.dates(min_value=date(2020, 1, 1), max_value=date(2027, 12, 31)),
                    )
                ),
                credit_percent=Decimal(credit).scaleb(-2),
            )
        )
    om_cents = draw(st.integers(0, 1_000_000_000))
    cap_cents = (om_cents * 2 + 50) // 100
    fund = draw(st.sampled_from(["none", "deficit", "surplus"]))
    certified = draw(st.one_of(st.none(), st.integers(0, 100_000_000)))
    return {
        "fiscal_year": date(draw(st.integers(2025, 2028)), 7, 1),
        "om_estimate": cents(om_cents),
        "reserve": cents(draw(st.integers(0, cap_cents))),
        "deficit": cents(draw(st.integers(1, 50_000_000)) if fund == "deficit" else 0),
        "surplus": cents(draw(st.integers(1, 50_000_000)) if fund == "surplus" else 0),
        "misc_income": cents(draw(st.integers(0, 100_000_000))),
        "certified_credits": None if certified is None else cents(certified),
        "params": draw(st.sampled_from([STATUTE, THIRTY_DAY])),
        "parcels": parcels,
    }


def oracle_paying(inputs: dict[str, object]) -> list[tuple[str, Fraction, Fraction]]:
    """Independent reading of ¶5/¶8/¶10: (id, equivalent acres, credit fraction) of payers."""
    params = inputs["params"]
    assert isinstance(params, LegalParameters)
    fiscal_year = inputs["fiscal_year"]
    assert isinstance(fiscal_year, date)
    paying = []
    for item in inputs["parcels"]:  # type: ignore[attr-defined]
        if item.inclusion != "permanent" or item.water_since is None:
            continue
        start = item.water_since
        if params.month_convention == "thirty_day":
            end = date.fromordinal(start.toordinal() + 360)
        else:
            year, month, day = start.year + 1, start.month, start.day
            end = date(year, month, min(day, 28)) if (month, day) == (2, 29) else date(year, month, day)
        if end > fiscal_year:
            continue
        acres = Fraction(item.gravity_acres) + Fraction(item.pumped_acres) / 2
        paying.append((item.parcel_id, acres, Fraction(item.credit_percent) / 100))
    return paying


def oracle_shares(total: Decimal, paying: list[tuple[str, Fraction, Fraction]]) -> dict[str, int]:
    """Largest remainder, written the slow obvious way, in cents."""
    total_cents = int(total * 100)
    weight = sum(acres for _pid, acres, _credit in paying)
    exact = {pid: total_cents * acres / weight for pid, acres, _credit in paying}
    shares = {pid: math.floor(value) for pid, value in exact.items()}
    leftover = total_cents - sum(shares.values())
    for pid in sorted(exact, key=lambda pid: (shares[pid] - exact[pid], pid))[:leftover]:
        shares[pid] += 1
    return shares


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs=registries())
def test_levy_properties(inputs: dict[str, object]) -> None:
    paying = oracle_paying(inputs)
    weight = sum(acres for _pid, acres, _credit in paying)
    k0 = sum(
        inputs[key] * sign  # type: ignore[operator]
        for key, sign in (
            ("om_estimate", 1),
            ("reserve", 1),
            ("deficit", 1),
            ("surplus", -1),
            ("misc_income", -1),
        )
    )
    if weight == 0:
        with pytest.raises(LevyRuleError, match="paying acreage is zero"):
            compute_levy(**inputs)  # type: ignore[arg-type]
        return
    k = sum(acres * credit for _pid, acres, credit in paying) / weight
    if inputs["certified_credits"] is None and k0 > 0 and Fraction(102, 100) * k >= 1:
        with pytest.raises(LevyRuleError, match="factor \\(3\\)"):
            compute_levy(**inputs)  # type: ignore[arg-type]
        return

    result = compute_levy(**inputs)  # type: ignore[arg-type]
    worksheet = result.worksheet
    lines = result.lines

    # Who is on the roll and who pays.
    permanent = sorted(p.parcel_id for p in inputs["parcels"] if p.inclusion == "permanent")  # type: ignore[attr-defined]
    assert [line.parcel_id for line in lines] == permanent
    assert {line.parcel_id for line in lines if line.levied} == {pid for pid, _a, _c in paying}
    assert result.parcels_levied == len(paying)
    assert Fraction(worksheet.equivalent_acres) == weight

    # The worksheet adds up and is never negative.
    assert worksheet.k0 == k0
    assert worksheet.subtotal == max(k0 + worksheet.credits, 0)
    assert worksheet.safety_margin == (worksheet.subtotal * D("0.02")).quantize(D("0.01"), rounding=ROUND_HALF_UP)
    assert worksheet.total_levy == worksheet.subtotal + worksheet.safety_margin
    if worksheet.total_levy:
        rate = Fraction(worksheet.total_levy) / weight
        assert abs(Fraction(worksheet.rate_gravity) - rate) <= Fraction(1, 2_000_000)
        assert abs(Fraction(worksheet.rate_pumped) - rate / 2) <= Fraction(1, 2_000_000)

    # The roll adds up to the levy exactly.
    assert result.roll_total == worksheet.total_levy
    assert sum(line.om_charge for line in lines) == worksheet.total_levy
    assert sum(line.net for line in lines) + sum(line.credit for line in lines) == (worksheet.total_levy)
    assert result.roll_credits == sum(line.credit for line in lines)
    assert result.credits_gap == worksheet.credits - result.roll_credits

    # Each charge is the largest-remainder share, each credit its percent half-up.
    shares = oracle_shares(worksheet.total_levy, paying)
    for line in lines:
        assert line.first_installment + line.second_installment == line.net
        assert line.first_installment - line.second_installment in (D("0.00"), D("0.01"))
        amounts = (
            line.om_charge,
            line.credit,
            line.net,
            line.first_installment,
            line.second_installment,
        )
        assert all(amount >= 0 and amount.as_tuple().exponent == -2 for amount in amounts)
        if line.levied:
            assert line.reason == "levied"
            assert line.om_charge == cents(shares[line.parcel_id])
            assert line.credit == (line.om_charge * line.credit_percent / 100).quantize(D("0.01"), rounding=ROUND_HALF_UP)
            assert line.net == line.om_charge - line.credit
        else:
            assert line.reason in ("no_water_date", "water_too_recent")
            assert amounts == (0, 0, 0, 0, 0)

    # Factor (3), when solved, matches the credits granted within a cent per credited parcel.
    if worksheet.credits_certified:
        certified = inputs["certified_credits"]
        assert worksheet.credits == (certified if k0 + certified > 0 else 0)  # type: ignore[operator]
    else:
        credited = sum(1 for line in lines if line.levied and line.credit_percent > 0)
        assert abs(worksheet.credits - result.roll_credits) <= D("0.01") * credited
        if k0 > 0:
            levy_exact = Fraction(102, 100) * Fraction(k0) / (1 - Fraction(102, 100) * k)
            assert abs(Fraction(worksheet.credits) - k * levy_exact) <= Fraction(1, 200)
    assert all(line.amount >= 0 for line in worksheet.lines), "worksheet lines are never negative"


def test_lines_are_frozen() -> None:
    result = compute_example("example1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.lines[0].om_charge = D("1.00")  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.worksheet.total_levy = D("1.00")  # type: ignore[misc]
    assert isinstance(result.worksheet, Worksheet)


@pytest.mark.parametrize("example", sorted(EXAMPLE_INPUTS))
def test_roll_lines_behave_like_plainly_built_ones(example: str) -> None:
    result = compute_example(example)
    for line in result.lines:
        rebuilt = RollLine(**dataclasses.asdict(line))
        assert rebuilt == line
        assert hash(rebuilt) == hash(line)
        assert repr(rebuilt) == repr(line)
        assert dataclasses.replace(line, net=line.net) == line
    assert pickle.loads(pickle.dumps(result)) == result


def test_datetimes_are_not_dates() -> None:
    with pytest.raises(LevyRuleError, match="water_since"):
        parcel("P1", gravity="1", water=datetime(2025, 7, 1, 12, 0))
    with pytest.raises(LevyRuleError, match="July 1"):
        eligibility(parcel=parcel("P1", gravity="1"), fiscal_year=datetime(2026, 7, 1), params=STATUTE)


# ---------------------------------------------------------------------------------------------
# Warning: credits that multiply the levy past 1.5 × (1.02 × K0)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("credit", "credits", "total", "multiplier", "exceeds"),
    [
        # k = 0.32: L = 1,020 / (1 − 0.3264) = 1,514.2517…; credits round(0.32 L) = 484.56;
        # 1,484.56 + 2% (29.69) = 1,514.25, below 1.5 × 1,020 = 1,530.00; 1,514.25 / 1,020 = 1.48.
        ("32", "484.56", "1514.25", "1.48", False),
        # k = 0.33: L = 1,020 / (1 − 0.3366) = 1,537.5339…; credits 507.39; 1,507.39 + 30.15 = 1,537.54.
        ("33", "507.39", "1537.54", "1.51", True),
    ],
)
def test_credits_multiplier_of_a_solved_levy(credit: str, credits: str, total: str, multiplier: str, exceeds: bool) -> None:
    result = compute_levy(
        fiscal_year=FY_2026,
        om_estimate=D("1000.00"),
        reserve=D("0"),
        misc_income=D("0"),
        parcels=[parcel("P1", gravity="1", credit=credit)],
    )
    worksheet = result.worksheet
    assert (worksheet.credits, worksheet.total_levy) == (D(credits), D(total))
    check = credits_multiplier(k0=worksheet.k0, total_levy=worksheet.total_levy, safety_margin_rate=D("0.02"))
    assert (check.base, check.threshold) == (D("1020.00"), D("1530.00"))
    assert check.multiplier == D(multiplier)
    assert check.exceeds is exceeds


@pytest.mark.parametrize(
    ("certified", "total", "exceeds"),
    [
        ("500.00", "1530.00", False),  # 1,500.00 + 30.00: exactly 1.5 × 1,020 does not warn
        ("500.01", "1530.01", True),  # 1,500.01 + 30.00 (30.0002 rounded): one cent over
    ],
)
def test_credits_multiplier_at_the_threshold(certified: str, total: str, exceeds: bool) -> None:
    result = compute_levy(
        fiscal_year=FY_2026,
        om_estimate=D("1000.00"),
        reserve=D("0"),
        misc_income=D("0"),
        certified_credits=D(certified),
        parcels=[parcel("P1", gravity="1", credit="10")],
    )
    assert result.worksheet.total_levy == D(total)
    check = credits_multiplier(k0=result.worksheet.k0, total_levy=result.worksheet.total_levy, safety_margin_rate=D("0.02"))
    assert check.exceeds is exceeds


def test_credits_multiplier_without_a_positive_base() -> None:
    # K0 = 1,000 − 1,500 = −500; certified 600 gives a levy of 102.00 that is all credits.
    check = credits_multiplier(k0=D("-500.00"), total_levy=D("102.00"), safety_margin_rate=D("0.02"))
    assert (check.base, check.threshold, check.multiplier, check.exceeds) == (D("-510.00"), D("-765.00"), None, True)
    nothing = credits_multiplier(k0=D("-500.00"), total_levy=D("0.00"), safety_margin_rate=D("0.02"))
    assert nothing.exceeds is False
    plain = credits_multiplier(k0=D("1000.00"), total_levy=D("1020.00"), safety_margin_rate=D("0.02"))
    assert (plain.multiplier, plain.exceeds) == (D("1.00"), False)
