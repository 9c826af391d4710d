"""The access log: sign-ins, failures, lockouts, sign-outs and refusals are recorded append-only,
never with a password, and shown on the audit page to the roles that may read it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.test import Client, RequestFactory
from django.urls import reverse

from parcels.models import AccessEvent
from parcels.roles import AUDITOR, AUTHORITY, COLLECTOR, HACIENDA, SUPERVISOR
from parcels.services import access_event_record
from tests.conftest import PASSWORD

LOGIN_URL = reverse("login")
AUDIT_READERS = (AUTHORITY, HACIENDA, COLLECTOR, SUPERVISOR, AUDITOR)


def sign_in(client: Client, username: str, password: str, address: str = "10.1.2.3"):
    return client.post(LOGIN_URL, {"username": username, "password": password}, REMOTE_ADDR=address)


def access_table(page: str) -> str:
    """The access-log table of the audit page (the filter's options name every kind too)."""
    return page.split('id="access-events"', 1)[1].split("</table>", 1)[0] if 'id="access-events"' in page else ""


def row_text(event: AccessEvent) -> str:
    """Every stored column of the row, as PostgreSQL holds it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT t::text FROM parcels_accessevent t WHERE id = %s", [event.pk])
        return cursor.fetchone()[0]


@pytest.mark.django_db
def test_a_sign_in_is_recorded_with_time_user_address_and_path(client, users):
    before = datetime.now(UTC)
    response = sign_in(client, "u_landowner", PASSWORD)
    assert response.status_code == 302
    event = AccessEvent.objects.get()
    assert (event.kind, event.user, event.username, event.client_ip, event.path) == (
        "login", users["landowner"], "u_landowner", "10.1.2.3", LOGIN_URL,
    )
    assert before <= event.at <= datetime.now(UTC) and event.at.utcoffset().total_seconds() == 0
    assert PASSWORD not in row_text(event)


@pytest.mark.django_db
def test_a_failed_sign_in_keeps_the_name_tried_and_never_the_password(client, users):
    response = sign_in(client, "u_hacienda", "Wrong-Horse-Battery-1", address="10.9.9.9")
    assert response.status_code == 200
    event = AccessEvent.objects.get()
    assert (event.kind, event.user, event.username, event.client_ip, event.path) == (
        "login_failed", None, "u_hacienda", "10.9.9.9", LOGIN_URL,
    )
    assert "Wrong-Horse-Battery-1" not in row_text(event)
    # a name that is nobody's is kept too (someone guessing user names)
    sign_in(client, "no-such-user", "Wrong-Horse-Battery-2")
    assert AccessEvent.objects.filter(kind="login_failed").values_list("username", flat=True).first() == "no-such-user"


@pytest.mark.django_db
def test_the_failure_that_reaches_the_limit_records_a_lockout(client, users):
    limit = settings.AXES_FAILURE_LIMIT
    for attempt in range(1, limit):
        assert sign_in(client, "u_collector", f"wrong-{attempt}").status_code == 200
    assert not AccessEvent.objects.filter(kind="lockout").exists()
    assert sign_in(client, "u_collector", f"wrong-{limit}").status_code == 429
    assert AccessEvent.objects.filter(kind="login_failed", username="u_collector").count() == limit
    lockout = AccessEvent.objects.get(kind="lockout")
    assert (lockout.user, lockout.username, lockout.client_ip, lockout.path) == (None, "u_collector", "10.1.2.3", LOGIN_URL)
    # the right password while locked out does not sign in, and is recorded as refused, not as a sign-in
    assert sign_in(client, "u_collector", PASSWORD).status_code == 429
    assert not AccessEvent.objects.filter(kind="login").exists()
    assert all(PASSWORD not in row_text(event) for event in AccessEvent.objects.all())


@pytest.mark.django_db
def test_a_sign_out_is_recorded(client, users):
    client.force_login(users["auditor"])
    assert client.post(reverse("logout"), REMOTE_ADDR="10.4.4.4").status_code == 302
    event = AccessEvent.objects.get(kind="logout")
    assert (event.user, event.username, event.client_ip, event.path) == (users["auditor"], "u_auditor", "10.4.4.4", reverse("logout"))


@pytest.mark.django_db
def test_a_role_refusal_is_recorded_with_the_path_and_the_roles_it_needed(client, users):
    client.force_login(users["collector"])
    url = reverse("parcels:import-upload")
    assert client.get(url + "?x=secret-in-query", REMOTE_ADDR="10.5.5.5").status_code == 403
    event = AccessEvent.objects.exclude(kind="login").get()  # force_login signs in too
    assert (event.kind, event.user, event.username, event.client_ip, event.path, event.detail) == (
        "forbidden", users["collector"], "u_collector", "10.5.5.5", url, "roles: authority",
    )
    # an anonymous visitor is sent to the login page: not a refusal
    Client().get(url)
    assert AccessEvent.objects.exclude(kind="login").count() == 1


@pytest.mark.django_db
def test_a_landowners_404_on_another_owners_parcel_is_recorded(client, users, parcel_a, parcel_b):
    client.force_login(users["landowner"])  # owner_a's account
    assert client.get(reverse("parcels:parcel-detail", args=[parcel_a.pk])).status_code == 200
    url = reverse("parcels:parcel-detail", args=[parcel_b.pk])
    assert client.get(url).status_code == 404
    event = AccessEvent.objects.exclude(kind="login").get()  # force_login signs in too
    assert (event.kind, event.username, event.path, event.detail) == ("not_found", "u_landowner", url, f"parcel {parcel_b.pk}")


@pytest.mark.django_db
def test_the_client_address_behind_the_proxy_is_the_one_nginx_saw(client, users, settings):
    """Behind deploy/nginx.conf the address is X-Real-IP, which nginx overwrites; a forged
    X-Forwarded-For changes nothing (parcels.middleware.client_ip)."""
    settings.BEHIND_PROXY = True
    client.post(LOGIN_URL, {"username": "u_hacienda", "password": "nope"}, REMOTE_ADDR="172.18.0.2",
                HTTP_X_REAL_IP="203.0.113.7", HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.9")
    assert AccessEvent.objects.get().client_ip == "203.0.113.7"


@pytest.mark.django_db
def test_a_token_in_the_path_is_not_stored():
    request = RequestFactory().post("/portal/activar/MQ/cz1234-0123456789abcdef0123456789abcdef/", REMOTE_ADDR="10.0.0.1")
    event = access_event_record(acting_user=None, kind=AccessEvent.Kind.LOGIN_FAILED, request=request, username="x")
    assert event.path == "/portal/activar/MQ/…/"


@pytest.mark.django_db
def test_a_row_of_the_access_log_refuses_update_and_delete(users):
    event = access_event_record(acting_user=users["auditor"], kind=AccessEvent.Kind.LOGIN)
    for statement in ("UPDATE parcels_accessevent SET username = 'someone-else' WHERE id = %s",
                      "DELETE FROM parcels_accessevent WHERE id = %s"):
        with pytest.raises(DatabaseError, match="Cannot update or delete"), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(statement, [event.pk])
    with pytest.raises(DatabaseError, match="Cannot update or delete"), transaction.atomic():
        AccessEvent.objects.filter(pk=event.pk).delete()
    assert AccessEvent.objects.get(pk=event.pk).username == "u_auditor"


@pytest.mark.django_db
@pytest.mark.parametrize("role", AUDIT_READERS)
def test_the_audit_page_shows_the_access_log_to_its_readers(client, users, role):
    sign_in(Client(), "u_hacienda", "wrong-password", address="10.7.7.7")
    refused = Client()
    refused.force_login(users["landowner"])
    refused.get(reverse("parcels:import-upload"))  # 403: the landowner is not registry staff
    client.force_login(users[role])
    table = access_table(client.get(reverse("parcels:audit")).content.decode())
    assert "Inicio de sesión fallido" in table and "10.7.7.7" in table and "u_hacienda" in table
    assert "Denegado por rol (403)" in table and reverse("parcels:import-upload") in table
    # the event-type filter: only the failed sign-ins, and no registry history
    page = client.get(reverse("parcels:audit"), {"event": "login_failed"}).content.decode()
    assert "Inicio de sesión fallido" in access_table(page) and "Denegado por rol (403)" not in access_table(page)
    assert "Historial de cambios del registro" not in page
    assert "Sin accesos registrados." in client.get(reverse("parcels:audit"), {"event": "lockout"}).content.decode()
    # the who filter narrows the access log too
    table = access_table(client.get(reverse("parcels:audit"), {"who": "u_landowner"}).content.decode())
    assert "Denegado por rol (403)" in table and "10.7.7.7" not in table


@pytest.mark.django_db
def test_the_audit_page_event_filter_keeps_registry_changes_apart(client, users, owner_a):
    sign_in(Client(), "u_hacienda", "wrong-password", address="10.7.7.7")
    client.force_login(users["auditor"])
    page = client.get(reverse("parcels:audit"), {"event": "changes"}).content.decode()
    assert "Carmen Irizarry Vélez" in page  # the owner's creation, from the registry history
    assert access_table(page) == "" and "Inicios y cierres de sesión, accesos denegados" not in page


@pytest.mark.django_db
def test_the_landowner_may_not_read_the_audit_page(client, users):
    client.force_login(users["landowner"])
    assert client.get(reverse("parcels:audit")).status_code == 403
