"""A staff member's first and second sign-in in Chromium: password, enrolment of an
authenticator app (the secret typed in by hand, as into an app), recovery codes, then the code."""

from __future__ import annotations

import re
from base64 import b32decode

import pytest
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from parcels.services import user_create
from tests.otp import totp_code

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "Una-Clave-Muy-Larga-2026"


def test_a_hacienda_officer_enrols_at_the_first_sign_in_and_gives_the_code_the_next_time(visit):
    user_create(username="u_hac_nueva", role="hacienda", password=PASSWORD)
    visit.go("/cobros/morosos/")
    assert "/cuenta/entrar/" in visit.page.url
    visit.page.fill("#id_username", "u_hac_nueva")
    visit.page.fill("#id_password", PASSWORD)
    visit.page.click("main form button[type=submit]")
    visit.page.wait_for_load_state()
    visit.check()
    # no app yet: the enrolment page, with the QR code and the secret for typing in by hand
    assert "/cuenta/inscribir/" in visit.page.url
    assert visit.page.get_by_role("img", name=re.compile("Código QR")).is_visible()
    assert visit.page.locator("nav.main-nav").count() == 0
    secret = visit.page.inner_text("#otp-secret").replace(" ", "")
    code = f"{TOTP(b32decode(secret)).token():06d}"
    visit.submit_code(f"{(int(code) + 1) % 1_000_000:06d}")
    assert "El código no es correcto" in visit.page.inner_text("main")
    device = TOTPDevice.objects.get(user__username="u_hac_nueva")
    TOTPDevice.objects.filter(pk=device.pk).update(throttling_failure_timestamp=None)  # the 1-second wait, passed
    visit.submit_code(code)
    main = visit.page.inner_text("main")
    assert "La verificación en dos pasos quedó activada" in main
    codes = visit.page.locator("ul.recovery-codes code").all_inner_texts()
    assert len(codes) == 10
    visit.page.get_by_role("link", name="Ya los guardé: continuar").click()
    visit.page.wait_for_load_state()
    visit.check()
    assert visit.page.url.endswith("/cobros/morosos/")
    visit.go("/cuenta/seguridad/")
    assert "Le quedan 10 códigos de recuperación" in visit.page.inner_text("main")

    visit.logout()
    visit.login_password_only("u_hac_nueva", PASSWORD)
    assert "/cuenta/verificar/" in visit.page.url
    visit.submit_code(totp_code(device))  # the app's code (the next one if this one was just used)
    assert visit.page.url == visit.base + "/"
    assert "Morosos" in visit.page.inner_text("nav.main-nav")
