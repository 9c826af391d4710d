"""The Authority edits an owner's language and mailing address in Chromium: a wrong ZIP and a
missing town open on the error summary, the corrected form saves, the owner page shows the USPS
block; at 1280 px and at 390 px, in Spanish and in English, with axe-core after each step."""

from __future__ import annotations

import os

import pytest

from parcels.models import Owner
from parcels.services import owner_create, user_create
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("LAJAS_SCREENSHOTS")  # a folder: keep a PNG of each step to look at


def shot(visit, name: str) -> None:
    if SHOTS:
        visit.page.screenshot(path=os.path.join(SHOTS, f"{name}.png"), full_page=True)


@pytest.mark.parametrize(("language", "width"), [("es-pr", 1280), ("en", 390)])
def test_the_authority_fills_the_mailing_address_and_reads_the_block(visit, language, width):
    owner = owner_create(acting_user=None, name="Rosa Pagán Cruz", owner_key="OW-9")
    Owner.objects.filter(pk=owner.pk).update(mailing_address="HC 2 Box 7123\nLajas")  # old text the migration could not read
    user_create(username="u_authority", role="authority", password=PASSWORD)
    visit.page.set_viewport_size({"width": width, "height": 900})
    visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])
    visit.login("u_authority", PASSWORD)
    visit.go(f"/duenos/{owner.pk}/editar/")
    page = visit.page
    assert "HC 2 Box 7123" in page.locator("#old_address").inner_text()  # the old text, to copy from
    page.select_option("#id_preferred_language", "en")
    page.fill("#id_care_of", "a/c Luis Pagán")
    page.fill("#id_address_line1", "HC 2 Box 7123")
    page.fill("#id_address_line2", "Bo. Palmarejo")
    page.fill("#id_address_zip", "32801")
    page.click("main form button[type=submit]")
    page.wait_for_load_state()
    visit.check()
    shot(visit, f"owner_edit_errors_{language}_{width}")
    summary = page.locator("#error-summary")
    assert page.evaluate("document.activeElement.id") == "error-summary"
    zip_error = page.locator("#id_address_zip_error").inner_text()
    town_error = page.locator("#id_address_town_error").inner_text()
    if language == "en":
        assert zip_error == "Puerto Rico ZIP codes start with 006, 007 or 009 (for example 00667 for Lajas)."
        assert town_error == "Enter the town."
    else:
        assert zip_error.startswith("Los códigos postales (ZIP) de Puerto Rico empiezan con 006, 007 o 009")
        assert town_error == "Escriba el pueblo."
    assert summary.locator("a").count() == 2
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways scrolling

    page.fill("#id_address_town", "Lajas")
    page.fill("#id_address_zip", "006679701")
    page.click("main form button[type=submit]")
    page.wait_for_load_state()
    assert page.url.endswith(f"/duenos/{owner.pk}/")
    visit.check()
    shot(visit, f"owner_detail_{language}_{width}")
    block = page.locator("address.address-block").inner_text()
    assert block.splitlines() == ["ROSA PAGAN CRUZ", "C/O LUIS PAGAN", "HC 2 BOX 7123", "BO PALMAREJO", "LAJAS PR 00667-9701"]
    assert ("English" if language == "en" else "Inglés") in page.locator("main dl").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    owner.refresh_from_db()
    assert (owner.address_zip, owner.preferred_language, owner.mailing_address) == ("00667-9701", "en", "HC 2 Box 7123\nLajas")
