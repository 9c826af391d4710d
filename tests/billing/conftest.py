"""Billing fixtures: a finalized district (worked example 1) and its staff."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

import pytest

from billing.services.installments import roll_finalize
from levy.models import Levy
from levy.services import estimate_certify, estimate_enter, levy_compute
from tests.clock import on_day
from tests.commands import run_command
from tests.conftest import EXAMPLE_1


def billing_cmd(*args: str) -> tuple[int, str, str]:
    return run_command("billing", *args)


@pytest.fixture
def staff(make_user):
    return {"authority": make_user("aut", "authority"), "hacienda": make_user("hac", "hacienda"),
            "collector": make_user("col", "collector"), "collector2": make_user("col2", "collector"),
            "supervisor": make_user("sup", "supervisor")}


@pytest.fixture
def supervisor2(make_user):
    """Issue 19: a second supervisor, who approves or rejects what ``staff["supervisor"]`` asks."""
    return make_user("sup2", "supervisor")


def example_1_finalize(make_parcel, owner, staff, *, finalized_on: date) -> Levy:
    """Example 1 of the worked examples: its parcels (all ``owner``'s), the 2026-2027 estimates
    certified by ``staff["authority"]``, the levy computed and the roll finalized on
    ``finalized_on`` by ``staff["hacienda"]``."""
    for parcel_id, gravity in EXAMPLE_1:
        make_parcel(parcel_id, owner, gravity=gravity)
    estimate_enter(acting_user=staff["authority"], fiscal_year="2026-2027", om_estimate=Decimal("100000.00"),
                   reserve=Decimal("1500.00"), misc_income=Decimal("7500.00"), surplus=Decimal("4000.00"))
    estimate_certify(acting_user=staff["authority"], fiscal_year="2026-2027")
    levy_compute(acting_user=staff["hacienda"], fiscal_year="2026-2027")
    return roll_finalize(acting_user=staff["hacienda"], fiscal_year="2026-2027", today=finalized_on)


@pytest.fixture
def district_1(make_parcel, owner_a, staff):
    """Example 1, finalized on 2026-06-30 (on time), on that day: recorded before the payments the
    tests make on later days (``tests.clock.on_day``)."""
    with on_day(date(2026, 6, 30)):
        return example_1_finalize(make_parcel, owner_a, staff, finalized_on=date(2026, 6, 30))


def statement(parcel_id: str, as_of: str) -> dict:
    code, out, err = billing_cmd("statement", "--parcel", parcel_id, "--as-of", as_of, "--format", "json")
    assert code == 0, err
    return json.loads(out)


