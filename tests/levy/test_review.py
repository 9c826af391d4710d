"""The irreversible acts happen only from their review page's POST (parcels.review): a direct
POST shows the review page and writes nothing; a forged or stale fingerprint is refused (409,
the review page again with the current figures) and writes nothing."""

from __future__ import annotations

from decimal import Decimal

import pytest

from levy.models import Estimate, Levy
from parcels import review
from tests.levy import test_pages
from tests.levy.test_pages import EXAMPLE_1_ESTIMATES, YEAR, url
from tests.review import fingerprint_in

FORGED = "0" * 64
draft_1 = test_pages.draft_1  # the fixture: worked example 1 computed, not final


@pytest.mark.django_db
def test_certify_needs_the_reviewed_figures(client, users, example_1):
    client.force_login(users["authority"])
    client.post(url("estimates", year=YEAR), EXAMPLE_1_ESTIMATES)
    estimate = Estimate.objects.get()
    target = url("estimate-certify", year=YEAR)
    shown = client.post(target, {"estimate": estimate.pk})  # straight from the estimates page: the review page
    body = shown.content.decode()
    assert shown.status_code == 200 and "Esto no se puede deshacer." in body
    assert "$100,000.00" in body and "¶1(2)" in body and "solo reemplazarse por una nueva certificación con una razón" in body
    assert "csrfmiddlewaretoken" in body and review.FIELD in body
    assert Estimate.objects.get().status == "entered"
    forged = client.post(target, {"estimate": estimate.pk, review.FIELD: FORGED})
    assert forged.status_code == 409 and "no se certificó nada" in forged.content.decode()
    assert Estimate.objects.get().status == "entered"
    # a figure that changed since the review (here the O&M estimate): the old fingerprint is refused
    fingerprint = fingerprint_in(shown)
    Estimate.objects.filter(pk=estimate.pk).update(om_estimate=Decimal("100001.00"))
    stale = client.post(target, {"estimate": estimate.pk, review.FIELD: fingerprint})
    assert stale.status_code == 409 and "$100,001.00" in stale.content.decode()
    assert Estimate.objects.get().status == "entered"
    done = client.post(target, {"estimate": estimate.pk, review.FIELD: fingerprint_in_409(stale)})
    assert done.status_code == 302 and Estimate.objects.get().status == "certified"


def fingerprint_in_409(response):
    response.status_code = 200  # the refused page is a review page too, with the current figures
    return fingerprint_in(response)


@pytest.mark.django_db
def test_finalize_needs_the_reviewed_figures(client, users, draft_1):
    client.force_login(users["hacienda"])
    target = url("finalize", year=YEAR)
    shown = client.post(target, {"confirm": "yes"})  # the old one-click confirmation no longer finalizes
    body = shown.content.decode()
    assert shown.status_code == 200 and "Esto no se puede deshacer." in body and "$91,800.00" in body
    assert Levy.objects.get().status == "draft"
    assert client.post(target, {review.FIELD: FORGED}).status_code == 409
    assert Levy.objects.get().status == "draft"
    assert client.post(target, {review.FIELD: fingerprint_in(shown)}).status_code == 302
    assert Levy.objects.get().status == "final"
