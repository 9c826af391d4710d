"""The roll and the worksheet reconcile at the precision they store, and say where a cent (or a
hundred-thousandth of an acre) comes from (issue 12)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from levy.services import estimate_certify, estimate_enter, levy_compute


def compute(users, fiscal_year: str = "2027-2028", **amounts: str):
    estimate_enter(acting_user=users["authority"], fiscal_year=fiscal_year, **{k: Decimal(v) for k, v in amounts.items()})
    estimate_certify(acting_user=users["authority"], fiscal_year=fiscal_year)
    return levy_compute(acting_user=users["hacienda"], fiscal_year=fiscal_year)


@pytest.mark.django_db
def test_acres_with_a_fifth_place_reconcile(client, users, make_parcel, owner_a):
    """¶5: 0.0001 pumped acres count 0.00005; 100 + 20.0001 ÷ 2 = 110.00005 acres, stored with five
    places on the levy. Rounding the lines' sum to four places (110.0001) made the roll say
    "no cuadra" against its own stored 110.00005."""
    make_parcel("G1", owner_a, gravity="100")
    make_parcel("G2", owner_a, gravity="0", pumped="20.0001")
    levy = compute(users, om_estimate="5000.00", reserve="0.00", misc_income="0.00")
    assert levy.equivalent_acres == Decimal("110.00005")
    client.force_login(users["hacienda"])
    response = client.get(reverse("levy:roll", args=["2027-2028"]))
    rec = response.context["rec"]
    assert rec["acres_ok"] and rec["acres_gap"] == 0
    page = response.content.decode()
    assert page.count("110.00005") == 2 and "no cuadra" not in page
    assert "a 5 decimales" in page


@pytest.mark.django_db
def test_worksheet_explains_the_credits_cent(client, users, example_2):
    """Example 2 (tests/levy/test_pages.py, test_roll_totals_row_and_reconciliation): factor (3) is
    $33,020.14, rounded once; the roll's five credits, each rounded to the cent, add to $33,020.15."""
    levy = compute(users, om_estimate="250000.00", reserve="5000.00", misc_income="20000.00", deficit="12345.67")
    assert (levy.credits.amount, levy.roll_credits.amount) == (Decimal("33020.14"), Decimal("33020.15"))
    client.force_login(users["hacienda"])
    page = client.get(reverse("levy:worksheet", args=["2027-2028"])).content.decode()
    assert "calculados igual a los créditos" not in page
    assert "El factor (3) de $33,020.14 redondea el total una vez" in page and "$0.01 de diferencia" in page
