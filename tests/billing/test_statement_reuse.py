"""Issue 17 §6: the landowner's numbered *estado de cuenta* (¶12, ¶13). Twenty requests in a row
stored twenty permanent PDFs; now the day's estado is served again while the account has not
changed since (today's statement equals its snapshot), a new one once it has (a payment), and a
landowner asks for one parcel's estado at most ``STATEMENT_LIMIT`` times an hour."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.urls import reverse

from billing.models import AccountStatement, IssuedDocument
from billing.services import counter
from billing.web import portal as portal_views
from parcels.models import AccessEvent, Parcel
from tests.clock import on_day

pytestmark = pytest.mark.django_db


def test_the_days_estado_is_reused_until_the_account_changes_and_requests_are_throttled(
        client, district_1, staff, make_user, owner_a):
    carmen = make_user("carmen", "landowner", owner_a)
    p2 = Parcel.objects.get(parcel_id="P2")
    url = reverse("portal:statement-pdf", args=[p2.pk])
    with on_day(date(2026, 7, 10)):
        client.force_login(carmen)
        first = client.post(url)
        assert first.status_code == 200 and first["Content-Type"] == "application/pdf"
        assert first["Cache-Control"] == "no-store, private"  # a signed-in document
        (issued,) = AccountStatement.objects.all()
        for _n in range(3):  # the same account: the same estado, the same stored bytes
            again = client.post(url)
            assert again.content == first.content and again["Content-Disposition"] == first["Content-Disposition"]
        assert AccountStatement.objects.count() == 1 and IssuedDocument.objects.filter(kind="statement").count() == 1

        # a payment at the counter changes the account: the next request issues a new estado
        counter.payment_record(acting_user=staff["collector"], parcel=p2, amount=Decimal("100.00"))
        changed = client.post(url)
        assert AccountStatement.objects.count() == 2
        latest = AccountStatement.objects.order_by("-pk").first()
        assert changed.content == bytes(latest.document.pdf) and latest.number != issued.number
        # what is owed dropped by the 100.00 paid
        assert (Decimal(issued.snapshot["total_due"]) - Decimal(latest.snapshot["total_due"])) == Decimal("100.00")
        assert client.post(url).content == changed.content and AccountStatement.objects.count() == 2

        # the 6 requests so far and 4 more are allowed in the hour; the 11th is refused, nothing issued
        assert portal_views.STATEMENT_LIMIT == 10
        for _n in range(4):
            assert client.post(url).status_code == 200
        refused = client.post(url)
        assert refused.status_code == 302 and refused["Location"] == reverse("billing:statement", args=[p2.pk])
        assert AccountStatement.objects.count() == 2

    # another day: a new estado (as of that day), even with no ledger change
    with on_day(date(2026, 7, 11)):
        from django.core.cache import cache

        cache.clear()  # the hour has passed
        client.force_login(carmen)
        client.post(url)
        assert list(AccountStatement.objects.order_by("pk").values_list("as_of", flat=True)) == [
            date(2026, 7, 10), date(2026, 7, 10), date(2026, 7, 11)]
    assert not AccessEvent.objects.filter(kind="forbidden").exists()
