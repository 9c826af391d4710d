"""Issue 17 §6, the enrolment hijack, shut out in Chromium.

Before: whoever knew a new staff user's first password opened ``/cuenta/inscribir/``, read the
app key and left; the page kept that unconfirmed key for the next visit, the real user scanned
it, and the intruder signed in with the password and a code of the key they had read.

Now: the intruder, first password in hand, gets the change of password and no key. The real user
signs in, is made to change the password first, then enrols with a key made for their session
(the unconfirmed key the old page had left from the intruder's visit is not reused), and a code
from that old key is refused at the code page. Screenshots of each step go to
``$SCREENSHOT_DIR`` (default: a temporary directory)."""

from __future__ import annotations

import io
import os
import tempfile
from base64 import b32decode
from pathlib import Path

import pytest
from django.core.management import call_command
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from parcels.models import AccessEvent, PasswordChangeDue

from .conftest import Visit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FIRST = "Clave-Inicial-Del-Admin-2026"
OWN = "Solo-Yo-La-Conozco-2026"
SHOTS = Path(os.environ.get("SCREENSHOT_DIR") or tempfile.mkdtemp(prefix="hijack-"))


def shot(visit: Visit, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    visit.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def code_of(key: bytes, later_steps: int = 0) -> str:
    totp = TOTP(key)
    totp.time = totp.time + 30 * later_steps
    return f"{totp.token():06d}"


def test_the_first_password_opens_no_key_and_an_old_key_is_refused(visit, browser, browser_context_args, live_server,
                                                                   monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(FIRST + "\n"))
    call_command("create_user", "oficial_nueva", "--role", "hacienda", "--password-stdin")

    # the intruder knows the first password: signs in and opens the enrolment page
    context = browser.new_context(**browser_context_args)
    intruder = Visit(context.new_page(), live_server.url)
    intruder.login_password_only("oficial_nueva", FIRST)
    intruder.go("/cuenta/inscribir/")
    assert "/cuenta/clave/cambiar/" in intruder.page.url
    assert intruder.page.locator("#otp-secret").count() == 0 and intruder.page.locator("img.otp-qr").count() == 0
    assert "La contraseña con que entró la puso el administrador" in intruder.page.inner_text("main")
    shot(intruder, "1-intruder-gets-the-password-change-not-a-key")
    assert not TOTPDevice.objects.filter(user__username="oficial_nueva").exists()
    intruder.assert_clean()
    context.close()  # and leaves, without changing anything
    # the key the page of before would have made for that visit and kept for the next one
    old = TOTPDevice.objects.create(user=PasswordChangeDue.objects.get().user, name="app", confirmed=False)

    # the real user: the password first, before anything else
    visit.go("/cobros/morosos/")
    visit.page.fill("#id_username", "oficial_nueva")
    visit.page.fill("#id_password", FIRST)
    visit.page.click("main form button[type=submit]")
    visit.page.wait_for_load_state()
    visit.check()
    assert "/cuenta/clave/cambiar/" in visit.page.url
    assert visit.page.locator("nav.main-nav").count() == 0
    shot(visit, "2-real-user-must-change-the-password")
    visit.page.fill("#id_old_password", FIRST)
    visit.page.fill("#id_new_password1", FIRST)
    visit.page.fill("#id_new_password2", FIRST)
    visit.page.click("main form button[type=submit]")
    visit.page.wait_for_load_state()
    visit.check()
    assert "debe ser distinta de la que le dieron" in visit.page.inner_text("main")
    visit.page.fill("#id_old_password", FIRST)
    visit.page.fill("#id_new_password1", OWN)
    visit.page.fill("#id_new_password2", OWN)
    visit.page.click("main form button[type=submit]")
    visit.page.wait_for_load_state()
    visit.check()

    # then the enrolment, with a key made for this session, not the one left from before
    assert "/cuenta/inscribir/" in visit.page.url
    secret = visit.page.inner_text("#otp-secret").replace(" ", "")
    key = b32decode(secret)
    assert key != old.bin_key
    shot(visit, "3-real-user-enrols-with-a-fresh-key")
    visit.submit_code(code_of(key))
    assert "La verificación en dos pasos quedó activada" in visit.page.inner_text("main")
    shot(visit, "4-recovery-codes")
    visit.page.get_by_role("link", name="Ya los guardé: continuar").click()
    visit.page.wait_for_load_state()
    assert visit.page.url.endswith("/cobros/morosos/")
    (device,) = TOTPDevice.objects.filter(user__username="oficial_nueva")
    assert device.confirmed and device.bin_key == key  # the old key is gone

    # a code of the old key, with the password: refused; the user's own code signs in
    visit.logout()
    visit.login_password_only("oficial_nueva", OWN)
    assert "/cuenta/verificar/" in visit.page.url
    visit.submit_code(code_of(old.bin_key))
    assert "El código no es correcto" in visit.page.inner_text("main") and "/cuenta/verificar/" in visit.page.url
    shot(visit, "5-code-of-the-old-key-refused")
    TOTPDevice.objects.filter(pk=device.pk).update(throttling_failure_timestamp=None)  # the 1-second wait, passed
    visit.submit_code(code_of(key, later_steps=1))
    assert visit.page.url == visit.base + "/"
    assert list(AccessEvent.objects.filter(username="oficial_nueva").order_by("id").values_list("kind", flat=True)) == [
        "login",  # the intruder's, who left without signing out
        "login", "password_changed", "otp_enrolled", "logout", "login", "otp_failed",
    ]
