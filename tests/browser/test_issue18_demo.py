"""Issue 18, "the demo reaches every document": on the demo `make run` builds (``seed_demo``), a
Hacienda officer issues the auction notice of the seizure case whose 30-day term has run (¶14), and
the demo landowner opens the ¶9 "nothing to pay" notice of her parcel at 100 % credit; both PDFs
are read back as text. At 390 px, as a newcomer with a phone would."""

from __future__ import annotations

from io import BytesIO

import pytest
from django.core.management import call_command

from billing.models import Bill, SeizureCase, SeizureStep
from parcels.models import Parcel

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}


def _pdf_text(data: bytes) -> str:
    from pypdf import PdfReader

    return " ".join(" ".join((page.extract_text() or "").split()) for page in PdfReader(BytesIO(data)).pages)


def _download(visit, href: str) -> bytes:
    """The PDF a link points to, fetched with the page's session (as a click would download it)."""
    response = visit.page.request.get(visit.base + href)
    assert response.ok and response.headers["content-type"] == "application/pdf", (href, response.status)
    return response.body()


def test_demo_reaches_the_auction_notice_and_the_nothing_to_pay_notice(visit):
    call_command("seed_demo", "--parcels", "40")
    visit.page.set_viewport_size(PHONE)

    # Hacienda: LAJ-000002's notice term has run and its certificate is issued: the auction is next
    seized = Parcel.objects.get(parcel_id="LAJ-000002")
    notice = SeizureStep.objects.get(case__parcel=seized, kind="notice")
    visit.login("hacienda", "Lajas-2026-hacienda")
    visit.go(f"/cobros/predio/{seized.pk}/embargo/")
    visit.page.screenshot(path="/tmp/issue18-demo-seizure-390.png", full_page=True)
    row = visit.page.locator("main tr", has_text=notice.number).inner_text()
    assert "vencido" in row and notice.term_ends.strftime("%d/%m/%Y") in row  # the 30-day term has run
    assert visit.page.locator("main tr", has_text="CE-2026-").is_visible()  # the certificate of attachment
    button = visit.page.get_by_role("button", name="Emitir: Aviso de subasta")
    assert button.is_visible()
    button.click()
    visit.page.wait_for_load_state()
    if not SeizureStep.objects.filter(kind="auction").exists():  # a review page before the step is issued
        visit.check()
        visit.page.locator("main form button[type=submit]").first.click()
        visit.page.wait_for_load_state()
    visit.check()
    auction = SeizureStep.objects.get(kind="auction", case__parcel=seized)
    message = visit.page.get_by_text(auction.number).first  # the success message, before the steps' table
    assert "Aviso de subasta" in message.inner_text()
    box = message.bounding_box()
    assert box is not None and box["y"] + box["height"] <= PHONE["height"]  # said on the first screen
    visit.page.screenshot(path="/tmp/issue18-demo-auction-390.png", full_page=True)
    link = visit.page.locator(f"a:has(span:text-is(' {auction.number}'))")
    pdf = _download(visit, link.get_attribute("href"))
    text = _pdf_text(pdf)
    assert auction.number in text and "subasta" in text.lower() and "LAJ-000002" in text
    assert SeizureCase.objects.get(parcel=seized).steps.count() == 3
    visit.logout()

    # the demo landowner: her third parcel is at 100 % credit; its yearly notice says nothing to pay
    zero = Bill.objects.get(snapshot__nothing_to_pay=True)
    assert zero.parcel.owner.owner_key == "DEMO-LANDOWNER"
    visit.login("terrateniente", "Lajas-2026-landowner")
    visit.go(f"/colecturia/predio/{zero.parcel.pk}/estado/")
    visit.page.screenshot(path="/tmp/issue18-demo-zero-notice-390.png", full_page=True)
    link = visit.page.get_by_role("link", name=f"{zero.number} (PDF)")
    assert link.is_visible() and "Documentos emitidos" in visit.page.inner_text("main")
    text = _pdf_text(_download(visit, link.get_attribute("href")))
    assert zero.number in text and zero.parcel.parcel_id in text
    assert "Aviso anual: nada que pagar" in text and "Nada que pagar en el año fiscal 2026-2027." in text
