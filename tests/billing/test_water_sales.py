"""Sec. 374a water sales before the levy starts (¶8): which land a delivery went to, the Authority
rate that must be on file, and excluded land (docs/interpretations.md)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from billing import rules
from billing.errors import BillingError
from billing.models import WaterDelivery, WaterRate
from billing.services import water
from tests.billing.conftest import billing_cmd

# Water since 2025-09-15: the first 12 months end 2026-09-15, so October 2026 is past them.
AFTER_FIRST_YEAR = date(2026, 10, 6)


@pytest.fixture
def clock(monkeypatch):
    state = {"today": date(2026, 11, 2)}
    monkeypatch.setattr(timezone, "localdate", lambda *args, **kwargs: state["today"])
    return state


@pytest.fixture
def mixed(make_parcel, owner_a):
    """A trial parcel with 6 gravity acres and 4 acres the owner waters with his own pumps."""
    return make_parcel("M1", owner_a, gravity="6", pumped="4", inclusion="trial", water_since=date(2025, 9, 15))


@pytest.fixture
def authority_rate(staff):
    return water.water_authority_rate_set(acting_user=staff["authority"], effective_from=date(2026, 7, 1), rate=Decimal("5.25"))


@pytest.mark.django_db
def test_a_parcel_with_both_lands_must_say_which(mixed, staff, authority_rate):
    with pytest.raises(BillingError, match="tierra por gravedad y tierra por bombeo del dueño: indique a cuál"):
        water.water_delivery_record(acting_user=staff["authority"], parcel=mixed, delivered_on=AFTER_FIRST_YEAR, acre_feet=Decimal("4"))
    pumped = water.water_delivery_record(acting_user=staff["authority"], parcel=mixed, delivered_on=AFTER_FIRST_YEAR,
                                            acre_feet=Decimal("4"), land="pumped")
    gravity = water.water_delivery_record(acting_user=staff["authority"], parcel=mixed, delivered_on=AFTER_FIRST_YEAR,
                                             acre_feet=Decimal("2.5"), land="gravity")
    # Pumped land after the first 12 months: $3.00 × 4 = $12.00; gravity at the Authority's $5.25 × 2.5 = $13.125 → $13.13.
    assert (pumped.land, pumped.rate, pumped.amount) == ("pumped", Decimal("3.00"), Decimal("12.00"))
    assert (gravity.land, gravity.rate, gravity.amount) == ("gravity", Decimal("5.25"), Decimal("13.13"))
    assert water.water_charges_issue(acting_user=staff["authority"], year=2026, month=10) == 1
    assert mixed.charges.get(kind="water").principal.amount == Decimal("25.13")


@pytest.mark.django_db
def test_a_parcel_with_one_land_needs_no_answer_and_cannot_name_the_other(make_parcel, owner_a, staff, authority_rate):
    pumped_only = make_parcel("P9", owner_a, gravity="0", pumped="10", inclusion="trial", water_since=date(2025, 9, 15))
    delivery = water.water_delivery_record(acting_user=staff["authority"], parcel=pumped_only, delivered_on=AFTER_FIRST_YEAR,
                                              acre_feet=Decimal("2"))
    assert (delivery.land, delivery.rate, delivery.amount) == ("pumped", Decimal("3.00"), Decimal("6.00"))
    with pytest.raises(BillingError, match="no tiene tierra por gravedad"):
        water.water_delivery_record(acting_user=staff["authority"], parcel=pumped_only, delivered_on=AFTER_FIRST_YEAR,
                                       acre_feet=Decimal("2"), land="gravity")


@pytest.mark.django_db
def test_in_the_first_twelve_months_both_lands_pay_the_first_year_rate(mixed, staff):
    # 2026-09-14 is still inside the first 12 months (they end 2026-09-15): $2.00, no Authority rate needed.
    delivery = water.water_delivery_record(acting_user=staff["authority"], parcel=mixed, delivered_on=date(2026, 9, 14),
                                              acre_feet=Decimal("3"), land="pumped")
    assert (delivery.rate, delivery.amount) == (Decimal("2.00"), Decimal("6.00"))


@pytest.mark.django_db
def test_no_authority_rate_on_file_refuses_instead_of_charging_the_cap(mixed, staff):
    with pytest.raises(BillingError, match=r"Falta la tarifa de la Autoridad por acre-pie vigente el 06/10/2026") as refused:
        water.water_delivery_record(acting_user=staff["authority"], parcel=mixed, delivered_on=AFTER_FIRST_YEAR,
                                       acre_feet=Decimal("1"), land="gravity")
    assert "No se factura al tope de $6.00" in str(refused.value)
    assert not WaterDelivery.objects.exists()
    # A rate from a later date does not cover an earlier delivery.
    water.water_authority_rate_set(acting_user=staff["authority"], effective_from=date(2026, 10, 7), rate=Decimal("4.00"))
    with pytest.raises(BillingError, match="Falta la tarifa"):
        water.water_delivery_record(acting_user=staff["authority"], parcel=mixed, delivered_on=AFTER_FIRST_YEAR,
                                       acre_feet=Decimal("1"), land="gravity")
    on_the_day = water.water_delivery_record(acting_user=staff["authority"], parcel=mixed, delivered_on=date(2026, 10, 7),
                                                acre_feet=Decimal("1"), land="gravity")
    assert on_the_day.rate == Decimal("4.00")
    # Pumped land does not need the Authority's rate.
    pumped = water.water_delivery_record(acting_user=staff["authority"], parcel=mixed, delivered_on=AFTER_FIRST_YEAR,
                                            acre_feet=Decimal("1"), land="pumped")
    assert pumped.rate == Decimal("3.00")


def test_the_rule_refuses_a_missing_authority_rate_only_where_it_is_needed():
    first = date(2025, 9, 15)
    with pytest.raises(rules.WaterRateMissing):
        rules.water_rate(first_water=first, delivery_date=AFTER_FIRST_YEAR, pumped=False, authority_rate=None)
    assert rules.water_rate(first_water=first, delivery_date=AFTER_FIRST_YEAR, pumped=True, authority_rate=None) == Decimal("3.00")
    assert rules.water_rate(first_water=first, delivery_date=date(2026, 9, 14), pumped=False, authority_rate=None) == Decimal("2.00")


@pytest.mark.django_db
def test_excluded_land_cannot_buy_water(make_parcel, owner_a, staff, authority_rate):
    excluded = make_parcel("X1", owner_a, gravity="10", inclusion="excluded", water_since=date(2025, 9, 15))
    with pytest.raises(BillingError, match="El predio X1 está excluido del Distrito: no compra agua"):
        water.water_delivery_record(acting_user=staff["authority"], parcel=excluded, delivered_on=AFTER_FIRST_YEAR, acre_feet=Decimal("1"))
    assert not WaterDelivery.objects.exists()


@pytest.mark.django_db
def test_authority_rate_is_capped_and_never_replaced(staff, authority_rate):
    with pytest.raises(BillingError, match=r"de \$0.00 a \$6.00"):
        water.water_authority_rate_set(acting_user=staff["authority"], effective_from=date(2027, 1, 1), rate=Decimal("6.01"))
    with pytest.raises(BillingError, match="Ya hay una tarifa"):
        water.water_authority_rate_set(acting_user=staff["authority"], effective_from=date(2026, 7, 1), rate=Decimal("5.00"))
    with pytest.raises(BillingError, match="Solo la Autoridad"):
        water.water_authority_rate_set(acting_user=staff["hacienda"], effective_from=date(2027, 1, 1), rate=Decimal("5.00"))
    assert list(WaterRate.objects.values_list("rate", flat=True)) == [Decimal("5.25")]
    code, out, _ = billing_cmd("water-rate", "--effective-from", "2027-01-01", "--rate", "5.75", "--user", "aut")
    assert code == 0 and "5.75" in out
    assert water.water_rates_on(date(2027, 1, 1))[1] == Decimal("5.75")


@pytest.mark.django_db
def test_the_import_takes_a_land_column(mixed, staff, authority_rate, tmp_path):
    missing = tmp_path / "missing.csv"
    missing.write_text("parcel_id,delivered_on,acre_feet\nM1,2026-10-06,3\n", encoding="utf-8")
    code, _, err = billing_cmd("water-import", str(missing), "--user", "aut")
    assert code == 1 and "línea 2" in err and "indique a cuál" in err
    good = tmp_path / "good.csv"
    good.write_text("parcel_id,delivered_on,acre_feet,land\nM1,2026-10-06,3,pumped\nM1,2026-10-06,2,gravity\n", encoding="utf-8")
    assert billing_cmd("water-import", str(good), "--user", "aut")[0] == 0
    # pumped $3.00 × 3 = $9.00; gravity $5.25 × 2 = $10.50
    assert sorted(WaterDelivery.objects.values_list("land", "amount")) == [("gravity", Decimal("10.50")), ("pumped", Decimal("9.00"))]


@pytest.mark.django_db
def test_the_page_asks_which_land(client, staff, mixed, authority_rate, clock):
    client.force_login(staff["authority"])
    url = reverse("collections:water")
    refused = client.post(url, {"parcel_id": "M1", "delivered_on": "2026-10-06", "acre_feet": "4"})
    assert refused.status_code == 200 and "indique a cuál fue el agua" in refused.content.decode()
    done = client.post(url, {"parcel_id": "M1", "delivered_on": "2026-10-06", "acre_feet": "4", "land": "pumped"}, follow=True)
    assert "tierra por bombeo del dueño, 4 acres-pie a $3.00 = $12.00" in done.content.decode()
    bad = b"parcel_id,delivered_on,acre_feet,land\nM1,2026-10-06,4,bombas\n"
    html = client.post(reverse("collections:water-import"), {"file": SimpleUploadedFile("agua.csv", bad)}).content.decode()
    assert "línea 2: tierra «bombas» (use gravity o pumped)" in html
