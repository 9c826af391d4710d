"""Issue 19: the landowner's home (the portal) shows each open charge's RF payment reference and how
to pay by bank transfer (¶13), in Spanish and English, at 390 px; what it shows decodes to the charge."""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from billing.models import Charge
from billing.references import charge_id_from_reference
from parcels.models import Owner
from parcels.services import user_create
from tests.browser.test_counter import in_language
from tests.browser.test_journeys import PASSWORD, _finalized_district
from tests.clock import move_clock_to

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "es": {"intro": "Para pagar por transferencia, escriba en el memo la referencia de un cargo abierto:",
           "heading": "Pagar por transferencia bancaria", "order": "el cargo más antiguo primero", "bank": "Banco"},
    "en": {"intro": "To pay by transfer, write the reference of an open charge in the memo:",
           "heading": "Pay by bank transfer", "order": "oldest charge first", "bank": "Bank"},
}


@pytest.mark.parametrize("lang", ["es", "en"])
def test_the_portal_shows_each_open_charges_reference_and_how_to_pay_by_transfer(visit, monkeypatch, settings, lang):
    settings.PAYMENT_TRANSFER_ACCOUNT = "000-123456-7"
    words = WORDS[lang]
    move_clock_to(monkeypatch, datetime(2026, 7, 15, 10, 0, tzinfo=ZoneInfo("America/Puerto_Rico")))
    _finalized_district()
    owner = Owner.objects.get(owner_key="OW-1")
    user_create(username="carmen", role="landowner", password=PASSWORD, owner=owner)
    visit.login("carmen", PASSWORD)
    in_language(visit, lang)
    visit.page.set_viewport_size({"width": 390, "height": 844})
    visit.go("/")
    page = visit.page
    page.screenshot(path=f"/tmp/issue19-portal-references-{lang}.png", full_page=True)
    main = page.inner_text("main")
    assert words["intro"] in main and words["heading"] in main and words["order"] in main and "000-123456-7" in main
    shown = [page.locator(".payment-reference").nth(i).inner_text() for i in range(page.locator(".payment-reference").count())]
    open_charges = set(Charge.objects.filter(parcel__owner=owner, kind="installment").values_list("pk", flat=True))
    assert shown and all(re.fullmatch(r"RF\d\d( \d{4})+", text) for text in shown), shown
    decoded = {charge_id_from_reference(text) for text in shown}
    assert decoded == open_charges  # every open installment of her parcels, nothing else (nothing is paid yet)
    box = page.locator(".payment-reference").first.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 390  # the reference fits the phone's width
