"""The second factor at sign-in (parcels.second_factor): staff give a TOTP code after the
password, enrol an authenticator app at the first sign-in, may use each recovery code once, and
an administrator's reset is in the audit trail; landowners sign in with the password unless they
enrolled."""

from __future__ import annotations

import base64
import io
import re
from base64 import b32decode
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.oath import TOTP, hotp
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from parcels.models import SecondFactorReset
from parcels.roles import STAFF_ROLES
from parcels.second_factor import recovery_codes_issue
from tests.conftest import PASSWORD
from tests.otp import Client, app_device, pass_second_factor, totp_code

pytestmark = pytest.mark.django_db
User = get_user_model()
STAFF_PAGES = {"authority": "parcels:import-upload", "hacienda": "collections:delinquent", "collector": "billing:counter",
               "supervisor": "billing:day-report", "auditor": "parcels:audit"}


def sign_in_with_password(client: Client, username: str, next_url: str = "") -> object:
    return client.post(reverse("login") + (f"?next={next_url}" if next_url else ""), {"username": username, "password": PASSWORD})


def code_from_secret(secret: str, *, later_steps: int = 0) -> str:
    """What an authenticator app computes from the secret typed in by hand."""
    key = b32decode(secret.replace(" ", ""))
    totp = TOTP(key)
    totp.time = totp.time + 30 * later_steps
    return f"{totp.token():06d}"


def wrong(code: str) -> str:
    return f"{(int(code) + 1) % 1_000_000:06d}"


def redirects_to(response, name: str) -> bool:
    return response.status_code == 302 and response["Location"].startswith(reverse(name) + "?next=")


def test_staff_without_the_code_reach_no_staff_page(users):
    assert set(STAFF_PAGES) == set(STAFF_ROLES)
    for role, page in STAFF_PAGES.items():
        client = Client()
        client.force_login_password_only(users[role])
        # never enrolled: enrolment first, with the way back to the page asked for
        response = client.get(reverse(page))
        assert redirects_to(response, "account:enrol"), (role, response.status_code)
        assert parse_qs(urlsplit(response["Location"]).query)["next"] == [reverse(page)]
        for other in ("home", "account:security", "parcels:parcel-list"):
            assert redirects_to(client.get(reverse(other)), "account:enrol"), (role, other)
        # enrolled, not verified in this session: the code page
        app_device(users[role])
        assert redirects_to(client.get(reverse(page)), "account:verify"), role
        assert redirects_to(client.get("/admin/"), "account:verify"), role
        page_html = client.get(reverse("account:verify")).content.decode()
        assert 'class="main-nav"' not in page_html and reverse("parcels:parcel-list") not in page_html  # no menu yet
        # the code passes it
        assert pass_second_factor(client, users[role]).status_code == 302
        assert client.get(reverse(page)).status_code == 200, role


def test_an_admin_account_without_the_code_does_not_reach_the_admin_site():
    admin = User.objects.create_superuser("it_admin", "it@example.pr", PASSWORD)
    client = Client()
    client.force_login_password_only(admin)
    assert redirects_to(client.get("/admin/auth/user/"), "account:enrol")
    client.force_login(admin)
    assert client.get("/admin/auth/user/").status_code == 200


def test_enrolment_shows_the_qr_code_and_secret_refuses_a_wrong_code_and_takes_the_right_one(users):
    import PIL.Image
    import zxingcpp

    user = users["hacienda"]
    client = Client()
    sign_in_with_password(client, user.username)
    response = client.get(reverse("account:enrol") + "?next=/cobros/morosos/")
    assert response.status_code == 200
    html = response.content.decode()
    secret = re.search(r'<code id="otp-secret">([A-Z2-7 ]+)</code>', html).group(1)
    device = TOTPDevice.objects.get(user=user)
    assert not device.confirmed and b32decode(secret.replace(" ", "")) == device.bin_key
    # the QR code is the otpauth:// URI of the same key
    png = re.search(r'<img src="data:image/png;base64,([^"]+)"', html).group(1)
    image = PIL.Image.open(io.BytesIO(base64.b64decode(png)))
    (found,) = [result.text for result in zxingcpp.read_barcodes(image)]
    uri = urlsplit(found)
    assert (uri.scheme, uri.netloc, uri.path) == ("otpauth", "totp", "/Riego%20Lajas%3Au_hacienda")
    assert parse_qs(uri.query)["secret"] == [secret.replace(" ", "")] and parse_qs(uri.query)["issuer"] == ["Riego Lajas"]
    assert client.get(reverse("account:enrol")).content.decode().count(secret) == 1  # a reload: the same key

    right = code_from_secret(secret)
    refused = client.post(reverse("account:enrol"), {"code": wrong(right), "next": "/cobros/morosos/"})
    assert refused.status_code == 200 and "El código no es correcto" in refused.content.decode()
    device.refresh_from_db()
    assert not device.confirmed and device.throttling_failure_count == 1
    assert redirects_to(client.get(reverse("collections:delinquent")), "account:enrol")

    # while throttled (as after five wrong codes in a row: 16 seconds) even the right code waits
    TOTPDevice.objects.filter(pk=device.pk).update(throttling_failure_count=5, throttling_failure_timestamp=timezone.now())
    throttled = client.post(reverse("account:enrol"), {"code": right})
    assert "Demasiados códigos incorrectos" in throttled.content.decode()
    TOTPDevice.objects.filter(pk=device.pk).update(throttling_failure_timestamp=timezone.now() - timedelta(seconds=17))

    done = client.post(reverse("account:enrol"), {"code": right, "next": "/cobros/morosos/"})
    assert done.status_code == 200
    page = done.content.decode()
    codes = re.findall(r"<li><code>([a-z2-7]{8})</code></li>", page)
    assert len(codes) == 10 and len(set(codes)) == 10
    assert sorted(codes) == sorted(StaticToken.objects.filter(device__user=user).values_list("token", flat=True))
    assert 'href="/cobros/morosos/"' in page and "No se volverán a mostrar" in page
    device.refresh_from_db()
    assert device.confirmed and device.throttling_failure_count == 0
    assert client.get(reverse("collections:delinquent")).status_code == 200  # verified by the enrolment itself
    assert client.get(reverse("account:enrol")).status_code == 302  # enrolled: nothing more to enrol


def test_sign_in_asks_for_the_code_after_the_password(users):
    user = users["collector"]
    device = app_device(user)
    client = Client()
    response = sign_in_with_password(client, user.username, next_url=reverse("billing:counter"))
    assert response.status_code == 302 and response["Location"] == reverse("billing:counter")
    asked = client.get(response["Location"])
    assert redirects_to(asked, "account:verify")
    page = client.get(asked["Location"])
    assert page.status_code == 200 and 'name="code"' in page.content.decode()

    right = totp_code(device)
    refused = client.post(reverse("account:verify"), {"code": wrong(right), "next": reverse("billing:counter")})
    assert refused.status_code == 200 and "El código no es correcto" in refused.content.decode()
    assert DEVICE_ID_SESSION_KEY not in client.session
    device.refresh_from_db()
    assert device.throttling_failure_count == 1

    # the one-second wait after one wrong code, without sleeping: that failure two seconds ago
    TOTPDevice.objects.filter(pk=device.pk).update(throttling_failure_timestamp=timezone.now() - timedelta(seconds=2))
    session_before = client.cookies["sessionid"].value
    accepted = client.post(reverse("account:verify"), {"code": right, "next": reverse("billing:counter")})
    assert accepted.status_code == 302 and accepted["Location"] == reverse("billing:counter")
    assert client.cookies["sessionid"].value != session_before  # a new session key once verified
    assert client.get(reverse("billing:counter")).status_code == 200
    # the same code cannot be used again (a second sign-in within the same 30 seconds)
    other = Client()
    sign_in_with_password(other, user.username)
    assert other.post(reverse("account:verify"), {"code": right}).status_code == 200
    assert DEVICE_ID_SESSION_KEY not in other.session


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/"])
def test_the_code_page_sends_nobody_off_site(users, target):
    user = users["auditor"]
    client = Client()
    sign_in_with_password(client, user.username)
    response = pass_second_factor(client, user, next_url=target)
    assert response.status_code == 302 and response["Location"] == reverse("home")


def test_a_recovery_code_works_once_and_new_codes_replace_the_old(users):
    user = users["supervisor"]
    app_device(user)
    codes = recovery_codes_issue(user=user)
    client = Client()
    sign_in_with_password(client, user.username)
    response = client.post(reverse("account:verify"), {"code": codes[0].upper()[:4] + " " + codes[0][4:]}, follow=True)
    assert response.status_code == 200 and response.redirect_chain[-1][0] == reverse("home")
    assert "le quedan 9" in response.content.decode()
    assert StaticToken.objects.filter(device__user=user).count() == 9
    assert TOTPDevice.objects.get(user=user).throttling_failure_count == 0  # not counted against the app

    client.post(reverse("logout"))
    sign_in_with_password(client, user.username)
    again = client.post(reverse("account:verify"), {"code": codes[0]})
    assert again.status_code == 200 and DEVICE_ID_SESSION_KEY not in client.session

    # new codes from Mi cuenta: ten, shown once; the old ones stop working
    # (the refused code above throttles the recovery codes for a second: as if that second had passed)
    StaticDevice.objects.filter(user=user).update(throttling_failure_timestamp=timezone.now() - timedelta(seconds=2))
    assert client.post(reverse("account:verify"), {"code": codes[1]}).status_code == 302
    assert "Le quedan 8 códigos de recuperación" in client.get(reverse("account:security")).content.decode()
    fresh = re.findall(r"<li><code>([a-z2-7]{8})</code></li>", client.post(reverse("account:recovery-codes")).content.decode())
    assert len(fresh) == 10 and not set(fresh) & set(codes)
    assert sorted(StaticToken.objects.filter(device__user=user).values_list("token", flat=True)) == sorted(fresh)


def test_an_administrators_reset_is_audited_and_makes_the_user_enrol_again(users, capsys):
    user = users["hacienda"]
    User.objects.create_superuser("it_admin", "it@example.pr", PASSWORD)
    app_device(user)
    recovery_codes_issue(user=user)
    victim = Client()
    victim.force_login(user)
    assert victim.get(reverse("collections:delinquent")).status_code == 200

    with pytest.raises(CommandError, match="administrator"):
        call_command("reset_second_factor", user.username, "--by", users["authority"].username, "--reason", "x")
    call_command("reset_second_factor", user.username, "--by", "it_admin", "--reason", "Teléfono perdido", "--dry-run")
    assert TOTPDevice.objects.filter(user=user).exists() and not SecondFactorReset.objects.exists()
    call_command("reset_second_factor", user.username, "--by", "it_admin", "--reason", "Teléfono perdido")
    assert "2 device(s) removed" in capsys.readouterr().out
    assert not TOTPDevice.objects.filter(user=user).exists() and not StaticDevice.objects.filter(user=user).exists()
    # the session verified by the removed app owes the code again, and there is no app: enrolment
    assert redirects_to(victim.get(reverse("collections:delinquent")), "account:enrol")

    auditor = Client()
    auditor.force_login(users["auditor"])
    page = auditor.get(reverse("parcels:audit"), {"what": "parcels.SecondFactorResetEvent", "event": "changes"}).content.decode()
    rows = re.findall(r"<tr>\s*<td>(.*?)</td>\s*<td>(.*?)</td>\s*<td>(.*?)</td>", page, re.DOTALL)
    assert len(rows) == 1
    when, who, what = rows[0]
    assert who.startswith("it_admin") and what == "Verificación en dos pasos restablecida · u_hacienda"
    assert "Teléfono perdido" in page
    record = SecondFactorReset.objects.get()
    assert record.devices_removed == 2 and record.events.get().pgh_context["username"] == "it_admin"
    assert timezone.localtime(record.reset_at).strftime("%d/%m/%Y") in when


def test_the_admin_sites_reset_action_is_audited_with_the_administrator(users):
    user = users["collector"]
    app_device(user)
    admin = User.objects.create_superuser("it_admin", "it@example.pr", PASSWORD)
    client = Client()
    client.force_login(admin)
    response = client.post("/admin/auth/user/", {"action": "reset_second_factor", "_selected_action": [user.pk]})
    assert response.status_code == 302
    assert not TOTPDevice.objects.filter(user=user).exists()
    record = SecondFactorReset.objects.get(user=user)
    assert record.devices_removed == 1 and record.events.get().pgh_context["username"] == "it_admin"


def test_a_landowner_without_an_app_signs_in_with_the_password_only(users):
    client = Client()
    response = sign_in_with_password(client, users["landowner"].username)
    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert client.get(reverse("home")).status_code == 200
    page = client.get(reverse("account:security")).content.decode()
    assert "Es opcional para terratenientes" in page and reverse("account:enrol") in page


def test_a_landowner_who_enrolled_is_asked_for_the_code(users):
    landowner = users["landowner"]
    client = Client()
    sign_in_with_password(client, landowner.username)
    html = client.get(reverse("account:enrol")).content.decode()
    assert "Opcional" in html
    secret = re.search(r'<code id="otp-secret">([A-Z2-7 ]+)</code>', html).group(1)
    assert client.post(reverse("account:enrol"), {"code": code_from_secret(secret)}).status_code == 200
    assert TOTPDevice.objects.get(user=landowner).confirmed

    client.post(reverse("logout"))
    sign_in_with_password(client, landowner.username)
    assert redirects_to(client.get(reverse("home")), "account:verify")
    accepted = client.post(reverse("account:verify"), {"code": code_from_secret(secret, later_steps=1)})
    assert accepted.status_code == 302 and client.get(reverse("home")).status_code == 200


def test_create_user_says_staff_enrol_at_the_first_sign_in(owner_a, capsys):
    call_command("create_user", "nuevo_colector", "--role", "collector")
    out = capsys.readouterr().out
    assert "second factor: at the first sign-in nuevo_colector adds an authenticator app" in out
    call_command("create_user", "nueva_duena", "--role", "landowner", "--owner", "OWN-A")
    assert "second factor" not in capsys.readouterr().out


def test_demo_totp_prints_the_apps_code_and_refuses_production(users, settings, capsys):
    device = app_device(users["auditor"])
    call_command("demo_totp", users["auditor"].username)
    code = capsys.readouterr().out.split()[0]
    step = TOTP(device.bin_key).t()
    assert code in {f"{hotp(device.bin_key, t):06d}" for t in (step - 1, step)}  # the step may have turned since
    settings.DEMO_DATA_ALLOWED = False
    with pytest.raises(CommandError, match="production"):
        call_command("demo_totp", users["auditor"].username)


def test_the_code_page_is_offered_in_english(users):
    app_device(users["auditor"])
    client = Client()
    client.cookies["django_language"] = "en"
    sign_in_with_password(client, users["auditor"].username)
    page = client.get(reverse("account:verify")).content.decode()
    assert "Verification code" in page and "one of your recovery codes" in page and "Código de verificación" not in page
    refused = client.post(reverse("account:verify"), {"code": "12345"}).content.decode()
    assert "That code is not right" in refused
