"""Issue 19, mailing, in Chromium at 390 px: the landowner chooses e-mail delivery on the portal
(the address first, confirmed by the link e-mailed to it, then the choice), and a Hacienda clerk
records a returned envelope, after which the registry's owner list shows the flagged owner.
Screenshots go to ``PHONE_SCREENSHOTS`` when set (tests/browser/test_phone.py)."""

from __future__ import annotations

import os
import re

import pytest
from django.core import mail

from parcels.models import Owner
from parcels.services import user_create
from tests.browser.test_journeys import PASSWORD
from tests.browser.test_phone import HEIGHT, OVERFLOW, SHOTS, WIDTH
from tests.factories import OwnerFactory, ParcelFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _shot(visit, name: str) -> None:
    assert visit.page.evaluate(OVERFLOW) <= WIDTH, f"{name}: the page scrolls sideways at {WIDTH} px"
    if SHOTS:
        os.makedirs(SHOTS, exist_ok=True)
        visit.page.screenshot(path=os.path.join(SHOTS, f"issue19-{name}.png"), full_page=True)


def _phone(visit, language: str = "es-pr") -> None:
    visit.page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    visit.page.context.clear_cookies()
    visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])


@pytest.fixture
def ana(db):
    owner = OwnerFactory(name="Ana Ruiz Toro", owner_key="OW-19", address_line1="Calle 5 #20", address_town="Lajas",
                         address_zip="00667")
    ParcelFactory(parcel_id="LAJ-000019", owner=owner)
    user_create(username="ana", role="landowner", password=PASSWORD, owner=owner)
    return owner


def test_a_landowner_confirms_her_email_and_chooses_email_delivery_on_a_phone(visit, ana):
    page = visit.page
    _phone(visit)
    visit.login("ana", PASSWORD)
    page.click("text=Cómo recibir sus avisos: papel o correo electrónico")
    page.wait_for_load_state()
    assert page.url.endswith("/portal/entrega/")
    visit.check()
    assert page.locator("h1").inner_text() == "Cómo recibir sus avisos"
    assert page.is_checked("input[name='delivery-delivery'][value='paper']")
    _shot(visit, "entrega-inicio")
    # e-mail delivery before the address is confirmed: refused, said in the form
    page.check("input[name='delivery-delivery'][value='email']")
    page.click("section[aria-labelledby='delivery-heading'] button[type=submit]")
    page.wait_for_load_state()
    assert "Confirme primero su correo electrónico" in page.locator("main").inner_text()
    visit.check()
    # the address, then the link e-mailed to it
    mail.outbox.clear()
    page.fill("#id_email-email", "ana@example.pr")
    page.click("section[aria-labelledby='email-heading'] button[type=submit]")
    page.wait_for_load_state()
    assert "Le enviamos un enlace a ana@example.pr" in page.locator("main").inner_text()
    assert "sin confirmar" in page.locator("dl.summary-list").inner_text()
    _shot(visit, "entrega-enlace-enviado")
    [message] = mail.outbox
    link = re.search(r"https?://\S+(/portal/entrega/confirmar/\S+/)", message.body).group(1)
    visit.go(link)
    assert "quedó confirmado" in page.locator("main").inner_text()
    _shot(visit, "correo-confirmado")
    page.click("text=Ir a «Cómo recibir sus avisos»")
    page.wait_for_load_state()
    page.check("input[name='delivery-delivery'][value='email']")
    page.click("section[aria-labelledby='delivery-heading'] button[type=submit]")
    page.wait_for_load_state()
    visit.check()
    assert "Recibirá sus avisos: correo electrónico." in page.locator("main").inner_text()
    assert "confirmado" in page.locator("dl.summary-list").inner_text()
    _shot(visit, "entrega-correo")
    ana.refresh_from_db()
    assert ana.delivery == "email" and ana.email_confirmed_at is not None
    # and in English
    _phone(visit, "en")
    visit.login("ana", PASSWORD)
    visit.go("/portal/entrega/")
    assert page.locator("h1").inner_text() == "How to receive your bills"
    assert page.is_checked("input[name='delivery-delivery'][value='email']")
    _shot(visit, "delivery-en")


def test_a_hacienda_clerk_records_returned_mail_and_the_registry_lists_the_owner_on_a_phone(visit, ana):
    page = visit.page
    user_create(username="hac19", role="hacienda", password=PASSWORD)
    _phone(visit)
    visit.login("hac19", PASSWORD)
    visit.go("/duenos/")
    assert page.locator("#returned-mail").count() == 0  # nobody flagged yet
    page.click("text=Registrar correo devuelto")
    page.wait_for_load_state()
    visit.check()
    assert page.locator("h1").inner_text() == "Correo devuelto"
    _shot(visit, "correo-devuelto-vacio")
    page.fill("#id_reference", "laj-000099")  # a parcel that does not exist: said on the field
    page.click("main form button[type=submit]")
    page.wait_for_load_state()
    assert "Predio desconocido" in page.locator("main form").inner_text()
    page.fill("#id_reference", "LAJ-000019")
    page.fill("#id_note", "Dirección insuficiente")
    page.click("main form button[type=submit]")
    page.wait_for_load_state()
    visit.check()
    main = page.locator("main").inner_text()
    assert "Ana Ruiz Toro (OW-19) queda señalado para una dirección nueva" in main and "Dirección insuficiente" in main
    _shot(visit, "correo-devuelto-registrado")
    assert Owner.objects.get(owner_key="OW-19").returned_mail
    page.click("text=Dueños con correo devuelto")
    page.wait_for_load_state()
    visit.check()
    assert "1 dueño con correo devuelto" in page.locator("#returned-mail").inner_text()
    assert page.locator("table tbody tr").count() == 1 and "Ana Ruiz Toro" in page.locator("table tbody").inner_text()
    _shot(visit, "duenos-correo-devuelto")
