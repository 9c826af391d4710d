"""The roll and the delinquent list search like the registry (parcels.search, issue 12): owner
names whatever the accents and case, cadastre numbers with or without their dashes."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.urls import reverse

from billing.services import counter
from parcels.models import Parcel
from tests.clock import on_day


def found(response) -> list[str]:
    return sorted(item.parcel.parcel_id for item in response.context["page"].object_list)


@pytest.mark.django_db
def test_roll_search_folds_the_owner_name_kept_on_the_line(client, staff, district_1):
    client.force_login(staff["hacienda"])
    url = reverse("levy:roll", args=["2026-2027"])
    lines = client.get(url, {"q": "IRIZARRY velez"}).context["page"].object_list
    assert sorted(line.parcel_code for line in lines) == ["P1", "P2", "P3", "P4", "P5"]
    assert [line.parcel_code for line in client.get(url, {"q": "p-3"}).context["page"].object_list] == ["P3"]
    assert list(client.get(url, {"q": "toro"}).context["page"].object_list) == []


@pytest.mark.django_db
def test_delinquent_list_search(client, staff, district_1):
    """Every parcel of example 1 is late on 2026-09-01 but P1, which paid its July half (¶12:
    9,180.00 is P1's first half; nothing late is left)."""
    with on_day(date(2026, 8, 1)):
        counter.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id="P1"),
                                amount=Decimal("9180.00"), paid_on=date(2026, 8, 1))
    client.force_login(staff["hacienda"])
    url = reverse("collections:delinquent")
    assert found(client.get(url, {"q": "Velez", "as_of": "2026-09-01"})) == ["P2", "P3", "P4", "P5"]
    assert found(client.get(url, {"q": "p 4", "as_of": "2026-09-01"})) == ["P4"]
    assert found(client.get(url, {"q": "p1", "as_of": "2026-09-01"})) == []  # P1 is paid up
    assert found(client.get(url, {"q": "Toro", "as_of": "2026-09-01"})) == []
    page = client.get(url, {"q": "carmen", "as_of": "2026-09-01"})
    assert 'name="q"' in page.content.decode() and page.context["valid"]
