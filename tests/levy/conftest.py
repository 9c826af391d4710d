"""The worked examples' parcels (../shared/statute/worked-examples.md), for the levy tests."""

from __future__ import annotations

from datetime import date

import pytest

from tests.conftest import EXAMPLE_1


@pytest.fixture
def example_1(make_parcel, owner_a):
    for parcel_id, gravity in EXAMPLE_1:
        make_parcel(parcel_id, owner_a, gravity=gravity, water_since=date(2000, 1, 1))


@pytest.fixture
def example_2(make_parcel, owner_a, owner_b):
    make_parcel("A", owner_a, gravity="120", credit="25")
    make_parcel("B", owner_a, gravity="0", pumped="80")
    make_parcel("C", owner_b, gravity="60", pumped="40", credit="10")
    make_parcel("D", owner_b, gravity="200")
    make_parcel("E", owner_b, gravity="33.3", credit="50")
