"""The irreversible acts happen only from their review page's POST (parcels.review): a direct
POST shows the review page and writes nothing; a forged or stale fingerprint is refused (409,
the review page again with the current figures) and writes nothing."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from billing.models import DayClose, PaymentVoid
from parcels import review
from tests.billing import test_pages
from tests.billing.test_pages import TODAY, pay
from tests.review import fingerprint_in, post_reviewed

pytestmark = pytest.mark.django_db
FORGED = "0" * 64
frozen_today = test_pages.frozen_today  # the worked example's today, as the counter tests
district_1 = test_pages.district_1


def test_void_needs_the_reviewed_figures(client, users, district_1):
    receipt = pay(users, district_1["P2"], "100.00", method="check", reference="CHK-7")
    client.force_login(users["supervisor"])
    target = reverse("billing:void", args=[receipt.payment_id])
    shown = client.post(target, {"reason": "Cheque devuelto"})
    body = shown.content.decode()
    assert shown.status_code == 200 and receipt.display_number in body and "$100.00" in body and "Cheque devuelto" in body
    assert not PaymentVoid.objects.exists()
    # the fingerprint covers the reason: another reason with the reviewed fingerprint is refused
    wrong = client.post(target, {"reason": "Otra razón", review.FIELD: fingerprint_in(shown)})
    assert wrong.status_code == 409 and not PaymentVoid.objects.exists()
    assert client.post(target, {"reason": "Cheque devuelto", review.FIELD: fingerprint_in(shown)}).status_code == 302
    assert PaymentVoid.objects.get().reason == "Cheque devuelto"


def test_day_close_needs_the_reviewed_figures(client, users, district_1):
    pay(users, district_1["P1"], "80.00")
    client.force_login(users["supervisor"])
    target = reverse("billing:day-close")
    data = {"office": "LAJ", "day": TODAY.isoformat(), "counted_cash": "70.00", "counted_checks": "0.00",
            "explanation": "Faltan $10.00: billete roto"}
    shown = client.post(target, data)
    body = shown.content.decode()
    assert shown.status_code == 200 and "$80.00" in body and "$70.00" in body and "-$10.00" in body
    assert "Faltan $10.00: billete roto" in body and not DayClose.objects.exists()
    # a payment recorded after the review changes the expected cash: the old fingerprint is refused
    fingerprint = fingerprint_in(shown)
    pay(users, district_1["P2"], "5.00")
    stale = client.post(target, {**data, review.FIELD: fingerprint})
    assert stale.status_code == 409 and "$85.00" in stale.content.decode() and not DayClose.objects.exists()
    response = post_reviewed(client, target, data)
    assert response.status_code == 302 and "csrfmiddlewaretoken" not in response["Location"]
    close = DayClose.objects.get()
    assert (close.expected_cash.amount, close.counted_cash.amount) == (Decimal("85.00"), Decimal("70.00"))
