"""After a sale the previous owner keeps their receipts; the buyer sees the parcel's debts, not them."""

from datetime import date
from decimal import Decimal

import pytest
from django.urls import reverse

from billing import services
from parcels.models import Parcel
from parcels.services import parcel_transfer


@pytest.mark.django_db
def test_previous_owner_keeps_receipts_after_a_sale(client, district_1, staff, make_user, owner_a, owner_b):
    seller = make_user("seller", "landowner", owner_a)
    buyer = make_user("buyer", "landowner", owner_b)
    p1 = Parcel.objects.get(parcel_id="P1")
    receipt = services.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("9180.00"), paid_on=date(2026, 7, 3))
    parcel_transfer(acting_user=staff["authority"], parcel=p1, to_owner=owner_b, effective_on=date(2026, 8, 1))
    url = reverse("billing:receipt", args=[receipt.pk])
    client.force_login(seller)
    assert client.get(url).status_code == 200
    assert client.get(reverse("billing:statement", args=[p1.pk])).status_code == 404  # no longer theirs
    client.force_login(buyer)
    assert client.get(url).status_code == 404
    statement = client.get(reverse("billing:statement", args=[p1.pk]))
    assert statement.status_code == 200 and "9,180.00" in statement.content.decode()  # the January half stays with the land
