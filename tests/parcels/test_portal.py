"""Landowner portal access: staff invitations, claiming an account with the bill's access code,
password reset by email, and who may open which page."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from billing import portal
from billing.portal import CLAIM_FAILURE_LIMIT, CLAIM_PARCEL_DAILY_LIMIT, CLAIM_WINDOW_SECONDS
from parcels.roles import ROLES
from parcels.services import parcel_transfer, user_create
from tests.known_codes import ACCESS_CODES, TEST_SECRET_KEY

User = get_user_model()
NEW_PASSWORD = "Riego-Valle-Lajas-2026"
GENERIC_ERROR = "El número de catastro o el código no coinciden"


def expected_code(parcel_id: str, owner_key: str) -> str:
    """The code printed on the bill, as a known answer (tests/known_codes.py says how it was found)."""
    return ACCESS_CODES[(parcel_id, owner_key)]


@pytest.fixture(autouse=True)
def access_codes(settings):
    """The known codes hold for the test key; the claim throttle lives in the cache, so each test
    starts and ends with it empty."""
    settings.SECRET_KEY = TEST_SECRET_KEY
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def cache_clock(monkeypatch):
    """The shared cache's clock, moved forward by hand: ``cache_clock.advance(seconds)``. Django's
    database cache writes an entry's expiry from ``time.time()`` (``BaseCache.get_backend_timeout``)
    and compares it with ``timezone.now()`` (``db.tz_now``); both are moved, so entries expire as
    they would that much later."""
    import time as real_time
    from datetime import timedelta

    from django.core.cache import caches
    from django.core.cache.backends import base, db

    assert isinstance(caches["default"], db.DatabaseCache), "this clock only moves the database cache"

    class Clock:
        offset = 0.0

        def time(self) -> float:
            return real_time.time() + self.offset

        def now(self):
            return timezone.now() + timedelta(seconds=self.offset)

        def advance(self, seconds: float) -> None:
            self.offset += seconds

    clock = Clock()
    monkeypatch.setattr(base, "time", clock)
    monkeypatch.setattr(db, "tz_now", clock.now)
    return clock


def link_path(body: str, base: str) -> str:
    match = re.search(re.escape(base) + r"(/\S+/)", body)
    assert match, body
    return match.group(1)


def set_password_through(client: Client, path: str, password: str = NEW_PASSWORD):
    """Follow a one-time link the way a browser does: the token moves to the session, then the form."""
    response = client.get(path)
    assert response.status_code == 302, response.status_code
    form_url = response["Location"]
    assert client.get(form_url).context["validlink"]
    return client.post(form_url, {"new_password1": password, "new_password2": password})


def sign_in(username: str, password: str) -> tuple[Client, int]:
    client = Client()
    response = client.post(reverse("login"), {"username": username, "password": password})
    return client, response.status_code


def claim_data(parcel_id: str, code: str, email: str = "nuevo@example.pr", password: str = NEW_PASSWORD) -> dict:
    return {"parcel_id": parcel_id, "access_code": code, "email": email, "password1": password, "password2": password}


# --- Staff invitations ------------------------------------------------------------------------


@pytest.mark.django_db
def test_invite_creates_the_landowner_and_emails_a_link_that_sets_the_password(
    client, users, owner_a, parcel_a, parcel_b, make_parcel, mailoutbox, django_capture_on_commit_callbacks,
):
    make_parcel("LAJ-A2", owner_a)
    client.force_login(users["authority"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("portal:invite"), {"owner_key": "own-a", "email": " Carmen.I@Example.PR ", "confirm": "1"})
    assert response.status_code == 302

    user = User.objects.get(username="carmen.i@example.pr")
    assert user.email == "carmen.i@example.pr" and not user.has_usable_password()
    assert user.owner_account.owner == owner_a
    assert list(user.groups.values_list("name", flat=True)) == ["landowner"]

    assert len(mailoutbox) == 1
    mail = mailoutbox[0]
    assert mail.to == ["carmen.i@example.pr"] and "Active su cuenta" in mail.subject
    assert "Carmen Irizarry Vélez (OWN-A)" in mail.body and "carmen.i@example.pr" in mail.body
    path = link_path(mail.body, settings.SITE_URL)
    assert path.startswith("/portal/activar/")
    assert path in mail.alternatives[0][0]

    landowner = Client()
    response = set_password_through(landowner, path)
    assert response.status_code == 302 and response["Location"] == reverse("home")
    home = landowner.get(reverse("home")).content.decode()
    assert "LAJ-A1" in home and "LAJ-A2" in home and "LAJ-B1" not in home

    # One time only, and the chosen password signs in through the login page.
    assert Client().get(path).context["validlink"] is False
    signed_in, status = sign_in("carmen.i@example.pr", NEW_PASSWORD)
    assert status == 302 and signed_in.get(reverse("home")).status_code == 200


@pytest.mark.django_db
def test_invite_first_shows_whose_parcels_the_account_will_see(client, users, owner_a, parcel_a, mailoutbox):
    client.force_login(users["authority"])
    response = client.post(reverse("portal:invite"), {"owner_key": "OWN-A", "email": "carmen.i@example.pr"})
    page = response.content.decode()
    assert response.status_code == 200 and "Confirme la invitación" in page
    assert "Carmen Irizarry Vélez" in page and "LAJ-A1" in page
    assert not User.objects.filter(username="carmen.i@example.pr").exists() and mailoutbox == []


@pytest.mark.django_db
def test_invite_prefills_the_owner_email(client, users, owner_a):
    client.force_login(users["authority"])
    form = client.get(reverse("portal:invite"), {"owner": "OWN-A"}).context["form"]
    assert form.initial == {"owner_key": "OWN-A", "email": "carmen@example.pr"}


@pytest.mark.django_db
def test_invite_unknown_owner_is_an_error_on_the_field(client, users):
    client.force_login(users["authority"])
    response = client.post(reverse("portal:invite"), {"owner_key": "NOPE", "email": "x@example.pr", "confirm": "1"})
    assert "owner_key" in response.context["form"].errors
    assert 'aria-describedby="id_owner_key_helptext id_owner_key_error"' in response.content.decode()


@pytest.mark.django_db
def test_invite_again_resends_the_link_and_refuses_another_owners_address(
    client, users, owner_a, owner_b, mailoutbox, django_capture_on_commit_callbacks,
):
    client.force_login(users["authority"])
    data = {"owner_key": "OWN-A", "email": "carmen.i@example.pr", "confirm": "1"}
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("portal:invite"), data)
        client.post(reverse("portal:invite"), data)
    assert User.objects.filter(email="carmen.i@example.pr").count() == 1 and len(mailoutbox) == 2

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("portal:invite"), {**data, "owner_key": "OWN-B"})
    assert response.status_code == 200 and "ya pertenece a otra cuenta" in response.content.decode()
    assert len(mailoutbox) == 2


# --- Claiming an account with the bill's code -------------------------------------------------


@pytest.mark.django_db
def test_claim_with_the_right_code_creates_the_account_and_signs_in(client, owner_a, parcel_a, parcel_b, make_parcel):
    make_parcel("LAJ-A2", owner_a)
    code = expected_code("LAJ-A1", "OWN-A")
    typed = " " + code.replace("-", "").lower()[:4] + " " + code.replace("-", "").lower()[4:] + " "
    response = client.post(reverse("portal:claim"), claim_data(" laj-a1 ", typed, email="Nuevo@Example.PR"))
    assert response.status_code == 302 and response["Location"] == reverse("home")

    user = User.objects.get(username="nuevo@example.pr")
    assert user.owner_account.owner == owner_a and user.check_password(NEW_PASSWORD)
    assert list(user.groups.values_list("name", flat=True)) == ["landowner"]
    home = client.get(reverse("home")).content.decode()
    assert "LAJ-A1" in home and "LAJ-A2" in home and "LAJ-B1" not in home
    assert client.get(reverse("parcels:parcel-detail", args=[parcel_b.pk])).status_code == 404


@pytest.mark.django_db
def test_wrong_code_or_unknown_parcel_gives_one_generic_error_and_no_user(client, parcel_a, parcel_b):
    wrong_code = client.post(reverse("portal:claim"), claim_data("LAJ-A1", expected_code("LAJ-B1", "OWN-B")))
    unknown_parcel = client.post(reverse("portal:claim"), claim_data("LAJ-ZZ9", expected_code("LAJ-A1", "OWN-A")))
    for response in (wrong_code, unknown_parcel):
        assert response.status_code == 200
        assert response.context["form"].non_field_errors() == [GENERIC_ERROR + "."]
    assert not User.objects.filter(username="nuevo@example.pr").exists()
    # Nothing typed is lost but the passwords, which are never sent back.
    page = wrong_code.content.decode()
    assert 'value="LAJ-A1"' in page and 'value="nuevo@example.pr"' in page and NEW_PASSWORD not in page


@pytest.mark.django_db
def test_sixth_failed_claim_in_an_hour_is_refused_even_with_the_right_code(client, parcel_a):
    # One client address (the test client's): its failures count, whatever the spelling.
    for typed in ("LAJ-A1", "laj-a1", " LAJ-A1", "Laj-A1", "LAJ-A1 ")[:CLAIM_FAILURE_LIMIT]:
        response = client.post(reverse("portal:claim"), claim_data(typed, "AAAAA-AAAAA"))
        assert GENERIC_ERROR in response.content.decode()
    response = client.post(reverse("portal:claim"), claim_data("LAJ-A1", expected_code("LAJ-A1", "OWN-A")))
    page = response.content.decode()
    assert "demasiados intentos" in page and GENERIC_ERROR not in page
    assert not User.objects.filter(username="nuevo@example.pr").exists()


@pytest.mark.django_db
def test_claim_throttle_ends_after_the_hour(client, parcel_a, cache_clock):
    assert CLAIM_WINDOW_SECONDS == 3600
    for _ in range(CLAIM_FAILURE_LIMIT):
        client.post(reverse("portal:claim"), claim_data("LAJ-A1", "AAAAA-AAAAA"))
    right = claim_data("LAJ-A1", expected_code("LAJ-A1", "OWN-A"))
    # 59 min 50 s after the first failure the window is still open: refused even with the right code
    # (10 s of slack for the real seconds this test takes)
    cache_clock.advance(3590)
    assert "demasiados intentos" in client.post(reverse("portal:claim"), right).content.decode()
    # a refusal while throttled does not extend the window: at the hour it is over
    cache_clock.advance(10)
    response = client.post(reverse("portal:claim"), right)
    assert response.status_code == 302
    assert User.objects.get(username="nuevo@example.pr").owner_account.owner.owner_key == "OWN-A"


STRANGER, OWNER = "203.0.113.9", "198.51.100.7"


@pytest.mark.django_db
@pytest.mark.parametrize("typed", ["000006", "laj000006", " LAJ-000006 ", "laj 000006"])
def test_claim_reads_the_number_as_the_public_lookup_does(client, owner_a, make_parcel, typed):
    """Issue 18 §10: "000006" opened /cuanto-debo/ but the claim refused it (and counted the try)."""
    from billing.documents import portal_access_code

    make_parcel("LAJ-000006", owner_a)
    make_parcel("LAJ-000016", owner_a)  # ends in 6 too: not the one meant
    response = client.post(reverse("portal:claim"), claim_data(typed, portal_access_code("LAJ-000006", "OWN-A")))
    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert User.objects.get(username="nuevo@example.pr").owner_account.owner == owner_a


@pytest.mark.django_db
def test_a_strangers_failures_from_another_address_never_shut_the_owner_out(client, owner_a, parcel_a):
    """Issue 18 §10: wrong tries count per client address; the stranger is stopped, the owner is not."""
    for _ in range(CLAIM_FAILURE_LIMIT):
        response = client.post(reverse("portal:claim"), claim_data("LAJ-A1", "AAAAA-AAAAA"), REMOTE_ADDR=STRANGER)
        assert GENERIC_ERROR in response.content.decode()
    right = claim_data("LAJ-A1", expected_code("LAJ-A1", "OWN-A"))
    refused = client.post(reverse("portal:claim"), right, REMOTE_ADDR=STRANGER).content.decode()
    assert "demasiados intentos fallidos desde su conexión" in refused
    # the stranger's address is stopped for any number, not only the one it tried
    other = client.post(reverse("portal:claim"), claim_data("LAJ-B1", "AAAAA-AAAAA"), REMOTE_ADDR=STRANGER).content.decode()
    assert "desde su conexión" in other and GENERIC_ERROR not in other
    owner = Client().post(reverse("portal:claim"), right, REMOTE_ADDR=OWNER)
    assert owner.status_code == 302
    assert User.objects.get(username="nuevo@example.pr").owner_account.owner == owner_a


@pytest.mark.django_db
def test_a_parcel_has_a_high_daily_cap_of_failures_from_every_address(client, parcel_a, monkeypatch, cache_clock):
    """A guesser spread over many addresses meets the parcel's daily cap; it is high (the owner's own
    mistakes never reach it) and lasts a day."""
    assert CLAIM_PARCEL_DAILY_LIMIT >= 20 * CLAIM_FAILURE_LIMIT
    monkeypatch.setattr(portal, "CLAIM_PARCEL_DAILY_LIMIT", 3)  # the same rule, reached in three tries
    for n in range(3):  # every spelling of the number counts for the parcel
        client.post(reverse("portal:claim"), claim_data(("LAJ-A1", "laja1", "a1")[n], "AAAAA-AAAAA"), REMOTE_ADDR=f"203.0.113.{n + 1}")
    right = claim_data("LAJ-A1", expected_code("LAJ-A1", "OWN-A"))
    page = client.post(reverse("portal:claim"), right, REMOTE_ADDR=OWNER).content.decode()
    assert "demasiados intentos fallidos con este número de catastro hoy" in page
    cache_clock.advance(3600)  # an hour is not enough for the daily cap
    assert "hoy" in client.post(reverse("portal:claim"), right, REMOTE_ADDR=OWNER).content.decode()
    cache_clock.advance(23 * 3600)
    assert client.post(reverse("portal:claim"), right, REMOTE_ADDR=OWNER).status_code == 302


@pytest.mark.django_db
def test_claim_and_sign_in_pages_name_the_document_by_its_title(client):
    """Issue 18 §10: the document is the *Aviso de contribución*, not a "factura"."""
    for name in ("portal:claim", "login"):
        page = client.get(reverse(name)).content.decode()
        assert "aviso de contribución" in page and "factura" not in page.lower(), name


@pytest.mark.django_db
def test_after_a_sale_only_the_new_owners_code_claims_the_parcel(client, system_user, owner_a, owner_b, parcel_a):
    parcel_transfer(acting_user=system_user, parcel=parcel_a, to_owner=owner_b, effective_on=timezone.localdate())
    old = client.post(reverse("portal:claim"), claim_data("LAJ-A1", expected_code("LAJ-A1", "OWN-A")))
    assert GENERIC_ERROR in old.content.decode()
    new = client.post(reverse("portal:claim"), claim_data("LAJ-A1", expected_code("LAJ-A1", "OWN-B")))
    assert new.status_code == 302
    assert User.objects.get(username="nuevo@example.pr").owner_account.owner == owner_b


@pytest.mark.django_db
def test_claim_is_refused_when_the_email_already_has_an_account(client, owner_a, parcel_a):
    user_create(username="carmen@example.pr", email="carmen@example.pr", role="landowner", owner=owner_a)
    response = client.post(reverse("portal:claim"), claim_data("LAJ-A1", expected_code("LAJ-A1", "OWN-A"), email="CARMEN@example.pr"))
    assert "Ya hay una cuenta con ese correo" in response.content.decode()
    assert User.objects.filter(email__iexact="carmen@example.pr").count() == 1


@pytest.mark.django_db
def test_claim_checks_the_password_in_spanish_before_the_code(client, parcel_a):
    response = client.post(reverse("portal:claim"), claim_data("LAJ-A1", "AAAAA-AAAAA", password="12345"))
    errors = response.context["form"].errors["password1"]
    assert any("demasiado corta" in error for error in errors), errors
    assert GENERIC_ERROR not in response.content.decode()
    mismatch = client.post(reverse("portal:claim"), {**claim_data("LAJ-A1", "X"), "password2": "otra-cosa-distinta"})
    assert "password2" in mismatch.context["form"].errors
    assert not User.objects.filter(username="nuevo@example.pr").exists()


@pytest.mark.django_db
def test_access_code_contract_matches_billing_documents():
    from billing.documents import portal_access_code

    for (parcel_id, owner_key), code in ACCESS_CODES.items():
        assert portal_access_code(parcel_id, owner_key) == code, (parcel_id, owner_key)


# --- Password reset ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_password_reset_emails_a_link_on_the_requests_host_that_works(client, owner_a, mailoutbox):
    user_create(username="carmen@example.pr", email="carmen@example.pr", role="landowner", owner=owner_a, password="Viejo-Secreto-99")
    response = client.post(reverse("password_reset"), {"email": "Carmen@Example.pr"})
    assert response.status_code == 302 and response["Location"] == reverse("password_reset_done")
    assert len(mailoutbox) == 1
    mail = mailoutbox[0]
    assert mail.to == ["carmen@example.pr"] and "contraseña" in mail.subject and "Saludos" in mail.body
    path = link_path(mail.body, "http://testserver")
    assert path.startswith("/cuenta/clave/nueva/") and path in mail.alternatives[0][0]

    response = set_password_through(Client(), path)
    assert response.status_code == 302 and response["Location"] == reverse("password_reset_complete")
    assert sign_in("carmen@example.pr", NEW_PASSWORD)[1] == 302
    assert sign_in("carmen@example.pr", "Viejo-Secreto-99")[1] == 200


@pytest.mark.django_db
def test_a_user_created_without_a_password_chooses_one_through_reset(client, mailoutbox):
    """``create_user`` without ``--password-stdin`` tells IT to use the reset: it must work."""
    user = user_create(username="oficial1", email="oficial1@hacienda.pr.gov", role="hacienda", password=None)
    assert not user.has_usable_password()
    client.post(reverse("password_reset"), {"email": "OFICIAL1@hacienda.pr.gov"})
    assert [mail.to for mail in mailoutbox] == [["oficial1@hacienda.pr.gov"]]
    assert set_password_through(Client(), link_path(mailoutbox[0].body, "http://testserver")).status_code == 302
    assert sign_in("oficial1", NEW_PASSWORD)[1] == 302
    user.is_active = False  # a deactivated account still gets nothing
    user.save()
    client.post(reverse("password_reset"), {"email": "oficial1@hacienda.pr.gov"})
    assert len(mailoutbox) == 1


@pytest.mark.django_db
def test_password_reset_for_an_unknown_email_looks_the_same_and_sends_nothing(client, mailoutbox):
    response = client.post(reverse("password_reset"), {"email": "nadie@example.pr"})
    assert response.status_code == 302 and response["Location"] == reverse("password_reset_done")
    assert mailoutbox == []


# --- Who may open which page ------------------------------------------------------------------


@pytest.mark.django_db
def test_invite_page_is_for_authority_only(client, users):
    response = client.get(reverse("portal:invite"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    for role in ROLES:
        client.force_login(users[role])
        assert client.get(reverse("portal:invite")).status_code == (200 if role == "authority" else 403), role
        response = client.post(reverse("portal:invite"), {"owner_key": "OWN-A", "email": "x@example.pr", "confirm": "1"})
        assert response.status_code == (302 if role == "authority" else 403), role


@pytest.mark.django_db
def test_claim_and_reset_pages_are_public(client):
    for name in ("portal:claim", "password_reset", "password_reset_done", "password_reset_complete", "login"):
        response = client.get(reverse(name))
        assert response.status_code == 200, name
    bad_link = client.get(reverse("password_reset_confirm", kwargs={"uidb64": "MQ", "token": "nope"}))
    assert bad_link.status_code == 200 and bad_link.context["validlink"] is False


@pytest.mark.django_db
def test_login_page_links_to_reset_and_claim(client):
    page = client.get(reverse("login")).content.decode()
    assert reverse("password_reset") in page and reverse("portal:claim") in page


@pytest.mark.django_db
def test_claim_form_fields_carry_autocomplete_and_labels(client):
    page = client.get(reverse("portal:claim")).content.decode()
    for field, token in (("email", "username"), ("password1", "new-password"), ("password2", "new-password")):
        assert f'<label for="id_{field}">' in page
        assert re.search(rf'<input[^>]*autocomplete="{token}"[^>]*id="id_{field}"', page), field

