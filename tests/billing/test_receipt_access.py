"""After a sale the previous owner keeps their receipts; the buyer sees the parcel's debts, not them."""

from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse

from billing.services import bills, collection, counter
from parcels.models import AccessEvent, Parcel
from parcels.services import parcel_transfer
from tests.clock import move_clock_to, on_day
from tests.review import post_reviewed


@pytest.mark.django_db
def test_previous_owner_keeps_receipts_after_a_sale(client, district_1, staff, make_user, owner_a, owner_b):
    seller = make_user("seller", "landowner", owner_a)
    buyer = make_user("buyer", "landowner", owner_b)
    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(date(2026, 7, 3)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("9180.00"), paid_on=date(2026, 7, 3))
    parcel_transfer(acting_user=staff["authority"], parcel=p1, to_owner=owner_b, effective_on=date(2026, 8, 1))
    url = reverse("billing:receipt", args=[receipt.pk])
    client.force_login(seller)
    assert client.get(url).status_code == 200
    assert client.get(reverse("billing:statement", args=[p1.pk])).status_code == 404  # no longer theirs
    client.force_login(buyer)
    assert client.get(url).status_code == 404
    statement = client.get(reverse("billing:statement", args=[p1.pk]))
    assert statement.status_code == 200 and "9,180.00" in statement.content.decode()  # the January half stays with the land


@pytest.mark.django_db
def test_supervisor_closes_the_day_and_refunds_credit_from_the_pages(client, district_1, staff, monkeypatch):
    from billing.models import DayClose, Refund

    p3 = Parcel.objects.get(parcel_id="P3")
    today = date(2026, 7, 15)  # the July half is within its 60 days: no ¶12 surcharge
    move_clock_to(monkeypatch, datetime(2026, 7, 15, 10, 0, tzinfo=ZoneInfo("America/Puerto_Rico")))
    # P3 (worked example 1): 50 ac × 183.60 $/ac = 9,180.00 = the July half 4,590.00 + the January
    # half 4,590.00, both issued; paying 20.00 more than both leaves a 20.00 credit
    paid = Decimal("9200.00")
    counter.payment_record(acting_user=staff["collector"], parcel=p3, amount=paid, paid_on=today)
    client.force_login(staff["collector"])
    assert client.post(reverse("billing:day-close"), {"office": "LAJ", "day": today.isoformat(), "counted_cash": str(paid),
                                                      "counted_checks": "0"}).status_code == 403
    client.force_login(staff["supervisor"])
    short = {"office": "LAJ", "day": today.isoformat(), "counted_cash": str(paid - 10), "counted_checks": "0"}
    response = client.post(reverse("billing:day-close"), short)  # $10.00 short and no word about it: refused
    assert response.status_code == 302 and not DayClose.objects.exists()
    assert "escriba qué pasó con el sobrante o faltante" in client.get(response.url).content.decode()
    response = post_reviewed(client, reverse("billing:day-close"), {**short, "explanation": "Billete de $10 roto, devuelto al banco"})
    assert response.status_code == 302
    close = DayClose.objects.get()
    assert (close.expected_cash.amount, close.counted_cash.amount) == (paid, paid - 10)
    assert close.explanation == "Billete de $10 roto, devuelto al banco"
    page = client.get(reverse("billing:statement", args=[p3.pk])).content.decode()
    assert "Pedir el reembolso del crédito" in page
    # issue 18: through its review page, saying how the money will go back; issue 19: a request that a
    # second supervisor approves, with the check's number
    post_reviewed(client, reverse("billing:refund", args=[p3.pk]), {"amount": "20.00", "method": "check",
                                                                    "reason": "Pagó de más"})
    assert not Refund.objects.exists()
    from billing.models import RefundRequest
    from tests.factories import UserFactory

    counter.refund_approve(acting_user=UserFactory(username="sup_two", role="supervisor"), request=RefundRequest.objects.get(),
                           check_number="1001")
    assert (Refund.objects.get().amount.amount, Refund.objects.get().check_number) == (Decimal("20.00"), "1001")


@pytest.mark.django_db
def test_landowner_downloads_their_bills_and_certificates_and_no_one_elses(client, district_1, staff, make_user, owner_a, owner_b):
    from billing.models import IssuedDocument

    p1 = Parcel.objects.get(parcel_id="P1")
    charge = p1.charges.get(number=1)
    bills.bill_issue(acting_user=staff["hacienda"], charge=charge)
    collection.certificate_issue(acting_user=staff["hacienda"], parcel=p1, as_of=date(2026, 10, 1))
    mine = make_user("carmen", "landowner", owner_a)
    other = make_user("luis", "landowner", owner_b)
    client.force_login(mine)
    page = client.get(reverse("billing:statement", args=[p1.pk])).content.decode()
    docs = IssuedDocument.objects.filter(parcel=p1, kind__in=["bill", "certificate"])
    assert docs.count() == 2
    for doc in docs:
        assert reverse("billing:document-pdf", args=[doc.pk]) in page
        response = client.get(reverse("billing:document-pdf", args=[doc.pk]))
        assert response.status_code == 200 and response.content.startswith(b"%PDF")
    client.force_login(other)
    for doc in docs:
        assert client.get(reverse("billing:document-pdf", args=[doc.pk])).status_code == 404
    # each refusal is in the access log, naming the document asked for
    refused = AccessEvent.objects.filter(kind="not_found", username="luis").order_by("id")
    assert [(e.path, e.detail) for e in refused] == [
        (reverse("billing:document-pdf", args=[doc.pk]), f"{doc.kind} {doc.pk}") for doc in docs
    ]


@pytest.mark.django_db
def test_a_landowners_404_on_another_owners_receipt_is_in_the_access_log(client, district_1, staff, make_user, owner_b):
    p1 = Parcel.objects.get(parcel_id="P1")  # owner_a's
    with on_day(date(2026, 7, 3)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("100.00"), paid_on=date(2026, 7, 3))
    client.force_login(make_user("luis", "landowner", owner_b))
    url = reverse("billing:receipt", args=[receipt.pk])
    assert client.get(url, REMOTE_ADDR="10.8.8.8").status_code == 404
    event = AccessEvent.objects.get(kind="not_found")
    assert (event.username, event.client_ip, event.path, event.detail) == ("luis", "10.8.8.8", url, f"receipt {receipt.pk}")
    # the staff who may read any receipt are not refused, and nothing more is logged
    client.force_login(staff["collector"])
    assert client.get(url).status_code == 200
    assert AccessEvent.objects.filter(kind="not_found").count() == 1
