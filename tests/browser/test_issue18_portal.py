"""Issue 18, points 10 and 11, in Chromium at 390 px, in Spanish and English.

10. The claim page (/portal/crear-cuenta/) reads the cadastre number as the public lookup does
    ("000006" for LAJ-000006); wrong tries count per client address (``parcels.network.client_ip``:
    here the X-Real-IP header, as behind deploy/nginx.conf), so a stranger who tried five wrong codes
    from his own connection is stopped there while the owner, from hers, claims at once. The claim and
    sign-in pages call the document by its title, *aviso de contribución* ("bill" in English).
11. The landowner's home says where to pay as the bill does (the Collector's office: name, address,
    hours, phone); the header names the person (the owner's name, a staff user's full name), not the
    username; staff reading a statement read "Adeuda hoy" / "Owed today", not "Usted debe hoy".
"""

from __future__ import annotations

import os

import pytest
from django.contrib.auth import get_user_model

from billing.documents import portal_access_code
from billing.models import Office
from billing.portal import CLAIM_FAILURE_LIMIT
from parcels.models import Owner
from parcels.services import user_create
from tests.browser.test_journeys import OCTOBER_15
from tests.browser.test_phone import HEIGHT, SHOTS, WIDTH, _district, _look, _open
from tests.factories import OwnerFactory, ParcelFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STRANGER, OWNER = "203.0.113.9", "198.51.100.7"
NEW_PASSWORD = "Riego-Valle-Lajas-2026"


def _in_first_screen(locator) -> None:
    box = locator.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + min(box["height"], 60) <= HEIGHT, box


def _claim(visit, number: str, code: str, email: str) -> None:
    page = visit.page
    page.fill("#id_parcel_id", number)
    page.fill("#id_access_code", code)
    page.fill("#id_email", email)
    page.fill("#id_password1", NEW_PASSWORD)
    page.fill("#id_password2", NEW_PASSWORD)
    page.click("main form button[type=submit]")
    page.wait_for_load_state()


def _as_client(visit, address: str, language: str = "es-pr") -> None:
    """A browser on another connection: its own address (X-Real-IP, read behind the proxy), no cookies."""
    visit.page.context.clear_cookies()
    visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])
    visit.page.set_extra_http_headers({"X-Real-IP": address})


@pytest.fixture
def carmen_parcel(settings):
    settings.BEHIND_PROXY = True  # the client's address is the X-Real-IP header nginx writes
    owner = OwnerFactory(name="Carmen Irizarry Vélez", owner_key="OW-6")
    ParcelFactory(parcel_id="LAJ-000006", owner=owner)
    ParcelFactory(parcel_id="LAJ-000016", owner=OwnerFactory())  # also ends in 6: not the one typed
    return owner


def test_a_strangers_wrong_tries_from_elsewhere_never_stop_the_owner_who_types_000006(visit, carmen_parcel):
    page = visit.page
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    code = portal_access_code("LAJ-000006", "OW-6")

    # A stranger guesses at LAJ-000006 from his own connection.
    _as_client(visit, STRANGER)
    visit.go("/portal/crear-cuenta/")
    for n in range(CLAIM_FAILURE_LIMIT):
        _claim(visit, "LAJ-000006", f"AAAAA-AAAA{n}", f"extrano{n}@example.pr")
        summary = page.locator("#error-summary")
        assert "El número de catastro o el código no coinciden." in summary.inner_text()
        _in_first_screen(summary)
        assert page.evaluate("document.activeElement.id") == "error-summary"
    visit.check()
    # Then even the right code is refused from there, saying why.
    _claim(visit, "000006", code, "extrano@example.pr")
    refused = page.locator("#error-summary").inner_text()
    if SHOTS:
        page.screenshot(path=os.path.join(SHOTS, "es-pr-issue18-claim-stranger-stopped.png"), full_page=True)
    assert "Hubo demasiados intentos fallidos desde su conexión" in refused
    assert not get_user_model().objects.filter(username__startswith="extrano").exists()

    # The owner, from her connection, types the number as the public lookup takes it: "000006".
    _as_client(visit, OWNER)
    visit.go("/portal/crear-cuenta/")
    hint = page.locator("#id_parcel_id_helptext").inner_text()
    assert "aviso de contribución" in hint and "000123" in hint
    _claim(visit, "000006", code.lower(), "carmen@example.pr")
    assert page.url == visit.base + "/", page.url
    visit.check()
    message = page.locator(".messages .alert").first
    assert message.inner_text() == "Su cuenta está lista. Estos son sus predios."
    _in_first_screen(message)
    # Her parcel, and her name in the header: the owner's, not the username (point 11).
    assert "LAJ-000006" in page.locator("main").inner_text() and "LAJ-000016" not in page.locator("main").inner_text()
    header = page.locator("header .user-name").inner_text()
    assert header.startswith("Carmen Irizarry Vélez") and "carmen@example.pr" not in header
    user = get_user_model().objects.get(username="carmen@example.pr")
    assert user.owner_account.owner == carmen_parcel


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_claim_and_sign_in_pages_name_the_document_by_its_title(visit, carmen_parcel, language):
    visit.page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])
    for path, name in (("/portal/crear-cuenta/", "claim"), ("/cuenta/entrar/", "login")):
        _look(visit, path, f"issue18-{name}", language)
        text = visit.page.locator("main").inner_text()
        assert "factura" not in text.lower(), path
        if language == "en":
            assert "bill" in text and "aviso" not in text.lower(), path
        else:
            assert "aviso de contribución" in text, path


@pytest.fixture
def district(monkeypatch):
    found = _district(monkeypatch, OCTOBER_15)
    # the office as migration 0018 describes it (the test database is flushed to 0002's row), with a phone
    Office.objects.filter(code="LAJ").update(
        address_line1="Calle Principal", town="Lajas", zip_code="00667", on_bills=True, phone="(787) 899-2020",
        hours_es="Lunes a viernes, de 8:00 a. m. a 4:30 p. m., excepto días feriados.",
        hours_en="Monday to Friday, 8:00 a.m. to 4:30 p.m., except holidays.")
    collector = get_user_model().objects.get(username="u_collector")
    collector.first_name, collector.last_name = "Wanda", "Cruz Pagán"
    collector.save(update_fields=["first_name", "last_name"])
    return found


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_the_landowners_home_says_where_to_pay_as_the_bill_does_and_names_her(visit, district, language):
    english = language == "en"
    _open(visit, language, "carmen")
    _look(visit, "/", "issue18-home", language)
    page = visit.page
    header = page.locator("header .user-name").inner_text()
    assert header.startswith("Carmen Irizarry Vélez") and "carmen ·" not in header, header
    _in_first_screen(page.locator("header .user-name"))
    where = page.locator("#where-to-pay")
    where.scroll_into_view_if_needed()
    assert where.is_visible()
    text = where.inner_text()
    office = Office.objects.get(code="LAJ")
    for expected in (office.name, "CALLE PRINCIPAL, LAJAS PR 00667", "(787) 899-2020",
                     office.hours_en if english else office.hours_es):
        assert expected in text, (expected, text)
    for label in (("Address", "Hours", "Phone") if english else ("Dirección", "Horario", "Teléfono")):
        assert label in text, (label, text)
    assert page.locator("#where-to-pay a[href='tel:7878992020']").count() == 1
    assert "este aviso" not in text and "this bill" not in text  # the office's ways to pay are written for the bill
    # the same office, address and hours the bill prints (billing.services.bills.office_snapshot)
    from billing.services.bills import bill_office, office_snapshot

    snapshot = office_snapshot(bill_office())
    assert ", ".join(snapshot.address_block[1:]) in text
    # the landowner still reads her own wording on her statement
    _look(visit, f"/colecturia/predio/{district['p2'].pk}/estado/", "issue18-statement-landowner", language)
    box = page.locator("main .summary-box").first.inner_text()
    assert ("You owe today" if english else "Usted debe hoy") in box


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_staff_read_a_statement_in_words_for_staff_and_their_own_name(visit, district, language):
    english = language == "en"
    _open(visit, language, "u_collector")
    _look(visit, f"/colecturia/predio/{district['p2'].pk}/estado/", "issue18-statement-staff", language)
    page = visit.page
    header = page.locator("header .user-name").inner_text()
    assert header.startswith("Wanda Cruz Pagán") and "u_collector" not in header, header
    summary = page.locator("main .summary-box").first
    text = summary.inner_text()
    assert ("Owed today" if english else "Adeuda hoy") in text, text
    assert ("What is owed and by when" if english else "Lo que adeuda y para cuándo") in text
    assert "You owe" not in text and "Usted debe" not in text, text
    owed = summary.locator(".owed").first
    assert owed.inner_text() == "$23,179.50"
    _in_first_screen(owed)
    # the parcel's page shows the same box to staff
    _look(visit, f"/predios/{district['p2'].pk}/", "issue18-parcel-staff", language)
    box = page.locator("main .summary-box").first.inner_text()
    assert ("Owed today" if english else "Adeuda hoy") in box and "You owe" not in box and "Usted debe" not in box


def test_an_owner_without_a_linked_name_still_sees_something_in_the_header(visit, district):
    """A landowner's header is the owner's name (Owner.name is required); a staff user without a full
    name still sees the username rather than nothing."""
    user_create(username="sin_nombre", role="hacienda", password="Una-Clave-Muy-Larga-2026")
    assert Owner.objects.get(owner_key="OW-1").name
    _open(visit, "es-pr", "sin_nombre")
    assert visit.page.locator("header .user-name").inner_text().startswith("sin_nombre")
