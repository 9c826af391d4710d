"""axe-core over every page, for the role that uses it, in Spanish and in English."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django_otp.plugins.otp_totp.models import TOTPDevice

from billing.models import BooksCheck
from billing.services import books_checks, counter, water
from parcels.models import Owner, Parcel
from parcels.services import user_create
from tests.browser.test_journeys import PASSWORD, _finalized_district
from tests.clock import on_day
from tests.otp import totp_code

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def enrolling(username: str) -> TOTPDevice:
    """The unconfirmed app of an enrolment under way (its key is what the QR code carries)."""
    return TOTPDevice.objects.get(user__username=username, confirmed=False)


def wrong(code: str) -> str:
    return f"{(int(code) + 1) % 1_000_000:06d}"


def pages(p1: Parcel, owner: Owner, receipt_pk: int) -> dict[str, list[str]]:
    return {
        "authority": ["/", "/predios/", f"/predios/{p1.pk}/", "/predios/nuevo/", f"/predios/{p1.pk}/editar/",
                      f"/predios/{p1.pk}/traspaso/", "/duenos/", f"/duenos/{owner.pk}/", f"/duenos/{owner.pk}/editar/", "/duenos/nuevo/", "/importar/",
                      "/auditoria/", "/contribucion/", "/contribucion/2026-2027/estimados/", "/contribucion/parametros/",
                      "/contribucion/2026-2027/simulacion/", "/cobros/agua/", "/cobros/resumen/", "/portal/invitar/",
                      "/cuenta/seguridad/"],
        "hacienda": ["/contribucion/2026-2027/hoja/", "/contribucion/2026-2027/padron/", "/contribucion/2026-2027/correcciones/",
                     "/cobros/morosos/", f"/cobros/predio/{p1.pk}/embargo/", f"/cobros/predio/{p1.pk}/certificaciones/",
                     "/cobros/cierres/", "/cobros/avisos/", f"/colecturia/recibo/{receipt_pk}/", "/auditoria/libros/",
                     "/cobros/oficinas/", "/cobros/oficinas/LAJ/", "/auditoria/registros/?kind=receipts&start=01/07/2026&end=31/07/2026",
                     "/cobros/correo-devuelto/", "/duenos/?devuelto=1"],
        "collector": ["/colecturia/", "/colecturia/?q=P1", f"/colecturia/predio/{p1.pk}/", f"/colecturia/predio/{p1.pk}/estado/",
                      "/colecturia/cuadre/"],
        "landowner": ["/", f"/predios/{p1.pk}/", f"/colecturia/predio/{p1.pk}/estado/", f"/colecturia/recibo/{receipt_pk}/",
                      "/cuenta/seguridad/", "/cuenta/inscribir/", "/portal/entrega/"],
        "anonymous": ["/cuenta/entrar/", "/portal/crear-cuenta/", "/cuenta/clave/olvido/", "/cuanto-debo/"],
    }


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_every_page_passes_axe_in_both_languages(visit, language):
    _finalized_district()
    owner = Owner.objects.get(owner_key="OW-1")
    for role in ("collector", "landowner"):
        user_create(username=f"a11y_{role}", role=role, password=PASSWORD, owner=owner if role == "landowner" else None)
    p1 = Parcel.objects.get(parcel_id="P1")
    collector = get_user_model().objects.get(username="a11y_collector")
    with on_day(date(2026, 7, 10)):
        receipt = counter.payment_record(acting_user=collector, parcel=p1, amount=Decimal("100.00"), paid_on=date(2026, 7, 10))
    # /auditoria/libros/: a passed nightly check below a failed one (totals that differ from a saved file)
    books_checks.books_check_run(acting_user=None, trigger=BooksCheck.Trigger.NIGHTLY)
    books_checks.books_check_run(acting_user=collector, trigger=BooksCheck.Trigger.COMMAND, expected_totals={"payments": "0 (0)"},
                             compared_with="lajas-20261201T063000Z.totals.json")
    logins = {"authority": "u_authority", "hacienda": "u_hac_a", "collector": "a11y_collector", "landowner": "a11y_landowner"}
    for role, urls in pages(p1, owner, receipt.pk).items():
        visit.page.context.clear_cookies()
        visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])
        if role != "anonymous":
            visit.login(logins[role], PASSWORD)
        for url in urls:
            response = visit.page.goto(visit.base + url)
            assert response.status == 200, (role, url, response.status)
            expected = "en" if language == "en" else "es-PR"
            assert visit.page.get_attribute("html", "lang") == expected, url
            visit.check()
    # the second-factor pages of a sign-in: enrolment (with an error), recovery codes, the code page
    visit.page.context.clear_cookies()
    visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])
    user_create(username="a11y_new", role="supervisor", password=PASSWORD)
    visit.login_password_only("a11y_new", PASSWORD)
    assert "/cuenta/inscribir/" in visit.page.url
    device = enrolling("a11y_new")
    visit.submit_code(wrong(totp_code(device)))
    TOTPDevice.objects.filter(pk=device.pk).update(throttling_failure_timestamp=None)  # the 1-second wait, passed
    visit.submit_code(totp_code(device))
    assert visit.page.locator("ul.recovery-codes code").count() == 10
    visit.page.context.clear_cookies()
    visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])
    visit.login_password_only("a11y_new", PASSWORD)
    assert "/cuenta/verificar/" in visit.page.url
    visit.submit_code(wrong(totp_code(device)))
    assert "/cuenta/verificar/" in visit.page.url  # refused, the page with its error checked


def test_the_worksheet_credits_warning_and_the_water_land_field_pass_axe(visit):
    """The states the sweep above does not reach: the worksheet's warning when the credits multiply
    the levy (K0 90,000.00; certified 50,000.00: 142,800.00 is 1.56 × 91,800.00), and the water page
    with a delivery that names its land."""
    from levy.services import estimate_certify, estimate_enter, levy_compute
    from parcels.services import owner_create, parcel_create

    owner = owner_create(acting_user=None, name="Carmen Irizarry Vélez", owner_key="OW-1")
    for parcel_id, gravity, pumped, inclusion in [("P1", "100", "0", "permanent"), ("M1", "6", "4", "trial")]:
        parcel_create(acting_user=None, parcel_id=parcel_id, owner=owner, area_unit="acre", gravity_area=Decimal(gravity),
                      pumped_area=Decimal(pumped), inclusion=inclusion, water_since=date(2025, 9, 15) if parcel_id == "M1" else date(2000, 1, 1),
                      credit_percent=Decimal("0"))
    for username, role, name in (("u_authority", "authority", "Ramón Acosta Lugo"), ("u_hac_a", "hacienda", "Gladys Montalvo Seda")):
        user_create(username=username, role=role, password=PASSWORD, full_name=name, title="Oficial de Pruebas")
    users = {u.username: u for u in get_user_model().objects.all()}
    estimate_enter(acting_user=users["u_authority"], fiscal_year="2026-2027", om_estimate=Decimal("100000.00"), reserve=Decimal("1500.00"),
                   misc_income=Decimal("7500.00"), surplus=Decimal("4000.00"), certified_credits=Decimal("50000.00"))
    estimate_certify(acting_user=users["u_authority"], fiscal_year="2026-2027")
    levy_compute(acting_user=users["u_hac_a"], fiscal_year="2026-2027")
    water.water_delivery_record(acting_user=users["u_authority"], parcel=Parcel.objects.get(parcel_id="M1"),
                                   delivered_on=date(2026, 10, 6), acre_feet=Decimal("4"), land="pumped")
    for language in ("es-pr", "en"):
        visit.page.context.clear_cookies()
        visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])
        visit.login("u_hac_a", PASSWORD)
        visit.go("/contribucion/2026-2027/hoja/")
        warning = visit.page.inner_text("#credits-warning")
        assert ("1.56" in warning and "$91,800.00" in warning and "$137,700.00" in warning), warning
        visit.page.screenshot(path=f"/tmp/worksheet-warning-{language}.png", full_page=True)
        visit.page.context.clear_cookies()
        visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])
        visit.login("u_authority", PASSWORD)
        visit.go("/cobros/agua/")
        assert visit.page.locator("#id_land").count() == 1
        visit.page.screenshot(path=f"/tmp/water-{language}.png", full_page=True)
