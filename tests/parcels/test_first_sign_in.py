"""Issue 17 §6, the enrolment hijack: whoever knows a new staff user's first password must not get
an authenticator key the real user later confirms. Both halves: the first password an
administrator set is changed at the first sign-in before anything else, and each session's
enrolment page shows a key of its own, discarded after 10 minutes unconfirmed. Also the second
factor's events in the access log, and ``Cache-Control: no-store, private`` on signed-in pages."""

from __future__ import annotations

import io
import re
from base64 import b32decode
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.plugins.otp_totp.models import TOTPDevice

from parcels.models import AccessEvent, PasswordChangeDue
from parcels.second_factor import recovery_codes_issue
from tests.conftest import PASSWORD
from tests.otp import Client, app_device, totp_code
from tests.parcels.test_second_factor import code_from_secret, redirects_to, sign_in_with_password, wrong

pytestmark = pytest.mark.django_db
User = get_user_model()
FIRST = "Primera-Clave-Del-Admin-7"
OWN = "Mi-Propia-Clave-Secreta-42"


def create_staff(username: str, monkeypatch, role: str = "hacienda") -> User:
    monkeypatch.setattr("sys.stdin", io.StringIO(FIRST + "\n"))
    call_command("create_user", username, "--role", role, "--password-stdin")
    return User.objects.get(username=username)


def secret_on(page) -> str:
    return re.search(r'<code id="otp-secret">([A-Z2-7 ]+)</code>', page.content.decode()).group(1)


def kinds(user) -> list[str]:
    return list(AccessEvent.objects.filter(user=user).order_by("id").values_list("kind", flat=True))


def test_a_first_password_from_create_user_is_changed_before_anything_else(monkeypatch, capsys):
    user = create_staff("nueva", monkeypatch)
    assert PasswordChangeDue.objects.filter(user=user).exists()
    assert "it must be changed at the first sign-in" in capsys.readouterr().out

    intruder = Client()
    signed_in = intruder.post(reverse("login"), {"username": "nueva", "password": FIRST})
    assert signed_in.status_code == 302
    # every page, the enrolment and the code page included, sends to the change of password
    for name in ("account:enrol", "account:verify", "account:security", "collections:delinquent", "home"):
        assert redirects_to(intruder.get(reverse(name)), "account:password-change"), name
    assert not TOTPDevice.objects.filter(user=user).exists()  # no key was made, none was shown
    page = intruder.get(reverse("account:password-change"))
    assert page.status_code == 200 and "La contraseña con que entró la puso el administrador" in page.content.decode()
    assert intruder.post(reverse("logout")).status_code == 302

    # the real user: the administrator's password again is refused, their own is taken
    real = Client()
    real.post(reverse("login"), {"username": "nueva", "password": FIRST})
    same = real.post(reverse("account:password-change"),
                     {"old_password": FIRST, "new_password1": FIRST, "new_password2": FIRST})
    assert same.status_code == 200 and "debe ser distinta de la que le dieron" in same.content.decode()
    done = real.post(reverse("account:password-change") + "?next=/cobros/morosos/",
                     {"old_password": FIRST, "new_password1": OWN, "new_password2": OWN, "next": "/cobros/morosos/"})
    assert done.status_code == 302 and done["Location"] == "/cobros/morosos/"
    user.refresh_from_db()
    assert user.check_password(OWN) and not PasswordChangeDue.objects.filter(user=user).exists()
    # the same session goes on to the second factor: staff have no app yet, so enrolment
    assert redirects_to(real.get("/cobros/morosos/"), "account:enrol")
    assert real.get(reverse("account:enrol")).status_code == 200
    # once changed, the page is not a way to change a password without the second factor
    assert real.get(reverse("account:password-change")).status_code == 302
    assert kinds(user) == ["login", "otp_abandoned", "logout", "login", "password_changed"]
    # the first password no longer signs in
    assert Client().post(reverse("login"), {"username": "nueva", "password": FIRST}).status_code == 200


def test_a_password_set_in_the_site_administration_is_a_first_password(users):
    admin_user = users["authority"]
    admin_user.is_staff = admin_user.is_superuser = True
    admin_user.save()
    client = Client()
    client.force_login(admin_user)
    added = client.post("/admin/auth/user/add/", {"username": "porelsitio", "password1": FIRST, "password2": FIRST,
                                                  "usable_password": "true", "staff_profile-TOTAL_FORMS": "0",
                                                  "staff_profile-INITIAL_FORMS": "0"})
    assert added.status_code == 302, added.content.decode()[:2000]
    new = User.objects.get(username="porelsitio")
    assert PasswordChangeDue.objects.filter(user=new).exists()
    PasswordChangeDue.objects.filter(user=new).delete()
    changed = client.post(f"/admin/auth/user/{new.pk}/password/", {"password1": OWN, "password2": OWN,
                                                                   "usable_password": "true"})
    assert changed.status_code == 302
    assert PasswordChangeDue.objects.filter(user=new).exists()
    # users made by the fixtures (and the portal's own sign-up) owe no change
    assert not PasswordChangeDue.objects.filter(user=users["hacienda"]).exists()


def test_each_session_gets_its_own_key_and_confirming_one_removes_the_others(users):
    user = users["hacienda"]
    intruder, real = Client(), Client()
    sign_in_with_password(intruder, user.username)
    stolen = secret_on(intruder.get(reverse("account:enrol")))
    assert secret_on(intruder.get(reverse("account:enrol"))) == stolen  # a reload there: the same key
    sign_in_with_password(real, user.username)
    fresh = secret_on(real.get(reverse("account:enrol")))
    assert fresh != stolen and TOTPDevice.objects.filter(user=user, confirmed=False).count() == 2

    # the code of the intruder's key does not confirm the real user's enrolment
    refused = real.post(reverse("account:enrol"), {"code": code_from_secret(stolen)})
    assert "El código no es correcto" in refused.content.decode()
    TOTPDevice.objects.filter(user=user).update(throttling_failure_timestamp=timezone.now() - timedelta(seconds=2))
    done = real.post(reverse("account:enrol"), {"code": code_from_secret(fresh)})
    assert done.status_code == 200 and len(re.findall(r"<li><code>([a-z2-7]{8})</code></li>", done.content.decode())) == 10
    (device,) = TOTPDevice.objects.filter(user=user)
    assert device.confirmed and device.bin_key == b32decode(fresh.replace(" ", ""))

    # the intruder, password in hand, has a code from the old key: refused, and their page is gone
    assert intruder.get(reverse("account:enrol")).status_code == 302  # enrolled: nothing to enrol
    late = Client()
    sign_in_with_password(late, user.username)
    again = late.post(reverse("account:verify"), {"code": code_from_secret(stolen)})
    assert again.status_code == 200 and DEVICE_ID_SESSION_KEY not in late.session
    assert kinds(user)[-2:] == ["login", "otp_failed"]


def test_a_key_left_unconfirmed_10_minutes_is_discarded(users):
    user = users["collector"]
    client = Client()
    sign_in_with_password(client, user.username)
    old = secret_on(client.get(reverse("account:enrol")))
    TOTPDevice.objects.filter(user=user).update(created_at=timezone.now() - timedelta(minutes=10, seconds=1))
    # the right code of the old key comes too late: refused as expired, and a new key is shown
    late = client.post(reverse("account:enrol"), {"code": code_from_secret(old)})
    page = late.content.decode()
    assert late.status_code == 200 and "caducó (dura 10 minutos sin confirmar)" in page
    new = secret_on(late)
    assert new != old
    (device,) = TOTPDevice.objects.filter(user=user)
    assert not device.confirmed and device.bin_key == b32decode(new.replace(" ", ""))
    # 9 minutes 50 seconds old is still this session's key
    TOTPDevice.objects.filter(user=user).update(created_at=timezone.now() - timedelta(minutes=9, seconds=50))
    assert secret_on(client.get(reverse("account:enrol"))) == new
    # an unconfirmed key of unknown age (left by the shared key of before) is never shown again
    TOTPDevice.objects.filter(user=user).update(created_at=None)
    assert secret_on(client.get(reverse("account:enrol"))) not in (old, new)
    assert TOTPDevice.objects.filter(user=user).count() == 1


def test_second_factor_events_are_in_the_access_log(users):
    user = users["supervisor"]
    device = app_device(user)
    codes = recovery_codes_issue(user=user)
    client = Client()
    sign_in_with_password(client, user.username)
    right = totp_code(device)
    client.post(reverse("account:verify"), {"code": wrong(right)}, REMOTE_ADDR="10.9.9.9")
    throttled = client.post(reverse("account:verify"), {"code": right})  # within the second of the wait
    assert "Demasiados códigos incorrectos" in throttled.content.decode()
    client.post(reverse("logout"))  # left at the password: never gave a right code
    sign_in_with_password(client, user.username)
    assert client.post(reverse("account:verify"), {"code": codes[0]}).status_code == 302
    client.post(reverse("logout"))  # verified: a plain sign-out

    events = list(AccessEvent.objects.filter(user=user).order_by("id").values_list("kind", "client_ip", "path", "detail"))
    verify = reverse("account:verify")
    assert [kind for kind, *_ in events] == [
        "login", "otp_failed", "otp_throttled", "otp_abandoned", "logout", "login", "otp_recovery", "logout"]
    assert events[1] == ("otp_failed", "10.9.9.9", verify, "")
    assert events[2][3].startswith("until ") and events[6][3] == "9 left"
    assert events[3][2] == reverse("logout")
    # a wrong code while enrolling, and the enrolment itself
    newcomer = users["auditor"]
    other = Client()
    sign_in_with_password(other, newcomer.username)
    secret = secret_on(other.get(reverse("account:enrol")))
    other.post(reverse("account:enrol"), {"code": wrong(code_from_secret(secret))})
    TOTPDevice.objects.filter(user=newcomer).update(throttling_failure_timestamp=timezone.now() - timedelta(seconds=2))
    other.post(reverse("account:enrol"), {"code": code_from_secret(secret)})
    assert list(AccessEvent.objects.filter(user=newcomer).order_by("id").values_list("kind", "detail")) == [
        ("login", ""), ("otp_failed", "enrolment"), ("otp_enrolled", "")]
    assert PASSWORD  # the fixture users' password, typed by sign_in_with_password


def test_signed_in_pages_documents_and_exports_are_not_stored(users, login):
    client = login(users["hacienda"])
    for url in (reverse("collections:delinquent"), reverse("home"), reverse("account:security")):
        response = client.get(url)
        assert response.status_code == 200 and response["Cache-Control"] == "no-store, private", url
    export = login(users["authority"]).get(reverse("parcels:import-template"))
    assert export.status_code == 200 and export["Content-Type"].startswith("text/csv")
    assert export["Cache-Control"] == "no-store, private"
    # a session still at the password too (its redirects)
    half = Client()
    half.force_login_password_only(users["collector"])
    assert half.get(reverse("billing:counter"))["Cache-Control"] == "no-store, private"
    # the sign-in page of an anonymous visitor is not forced to it
    assert Client().get(reverse("login")).get("Cache-Control", "") != "no-store, private"
