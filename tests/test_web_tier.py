"""A web tier with no state of its own (issue 10): several gunicorn workers and several app servers
serve one PostgreSQL. What must hold across them is in the shared cache (the claim and
password-reset throttles, the delinquent list) or the database; a connection the database
dropped costs no request; a NUL byte is a 400; throttles count by the address the proxy saw, not
by headers a client writes; an export cut half-way never arrives as a complete 200."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import OperationalError, connection
from django.test import RequestFactory
from django.urls import reverse

from billing import delinquency
from billing.portal import CLAIM_FAILURE_LIMIT
from billing.web.portal import PASSWORD_RESET_PER_CLIENT, PASSWORD_RESET_PER_EMAIL
from lajas_portal.settings import cache_settings
from parcels.middleware import client_ip
from parcels.services import user_create
from tests.conftest import PASSWORD
from tests.otp import Client
from tests.workers import ROOT, database_url

WRONG_CODE = "AAAAA-AAAAA"


def child_env(**extra: str) -> dict[str, str]:
    """A second process of the app on this test's database (another worker, another server)."""
    return {**os.environ, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "lajas_portal.settings_test",
            "TEST_MEDIA_ROOT": str(settings.MEDIA_ROOT), **extra}


def in_another_process(code: str) -> list[str]:
    """Runs ``code`` with ``manage.py shell -c`` in a child process; its printed lines."""
    done = subprocess.run([sys.executable, "manage.py", "shell", "--no-imports", "-c", code], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()


def claim(client: Client, code: str):
    return client.post(reverse("portal:claim"), {
        "parcel_id": "LAJ-A1", "access_code": code, "email": "nuevo@example.pr",
        "password1": "Riego-Valle-Lajas-2026", "password2": "Riego-Valle-Lajas-2026",
    })


# --- the shared cache ---------------------------------------------------------------------------


def test_the_cache_is_the_databases_table_unless_cache_url_names_redis():
    assert settings.CACHES["default"] == cache_settings("")
    assert cache_settings("")["BACKEND"] == "django.core.cache.backends.db.DatabaseCache"
    assert cache_settings("redis://cache:6379/0") == {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://cache:6379/0"}
    with pytest.raises(ImproperlyConfigured):
        cache_settings("memcached://cache:11211")
    import redis

    assert redis.__version__ == "8.1.0"  # Django's RedisCache client, pinned in requirements.txt
    assert "redis==8.1.0" in (ROOT / "requirements.txt").read_text().splitlines()


@pytest.mark.django_db
def test_migrate_creates_the_cache_table_when_it_is_missing():
    """Wherever the app is migrated (make run, the web container's start, CI) the table is there."""
    table = settings.CACHES["default"]["LOCATION"]
    assert table in connection.introspection.table_names()
    with connection.cursor() as cursor:
        cursor.execute(f'DROP TABLE "{table}"')
    assert table not in connection.introspection.table_names()
    call_command("migrate", verbosity=0)
    assert table in connection.introspection.table_names()
    for where in ("Makefile", "deploy/entrypoint.sh"):  # both run migrate before serving
        assert re.search(r"manage\.py migrate\b", (ROOT / where).read_text()), where


def test_claim_failures_in_another_process_count_toward_the_same_limit(seed_rows, parcel_a):
    """Three failures here, two in another process (from the same client address, 127.0.0.1, the
    test client's): the next claim, with the right code, is refused."""
    from billing.documents import portal_access_code

    client = Client()
    for _ in range(CLAIM_FAILURE_LIMIT - 2):
        assert "no coinciden" in claim(client, WRONG_CODE).content.decode()
    codes = in_another_process(
        "from billing import portal\n"
        "for _ in range(2):\n"
        "    try:\n"
        "        portal.account_claim(parcel_id='laj-a1', access_code='AAAAA-AAAAA', email='x@example.pr',"
        " password='Riego-Valle-Lajas-2026', client='127.0.0.1')\n"
        "    except portal.ClaimRefused as exc:\n"
        "        print(exc.code)\n"
    )
    assert codes == ["mismatch", "mismatch"]
    page = claim(client, portal_access_code("LAJ-A1", "OWN-A")).content.decode()
    assert "demasiados intentos" in page
    assert not user_model().objects.filter(username="nuevo@example.pr").exists()


def user_model():
    from django.contrib.auth import get_user_model

    return get_user_model()


def reset(client: Client, email: str, address: str = "198.51.100.7"):
    return client.post(reverse("password_reset"), {"email": email}, REMOTE_ADDR=address)


def test_password_resets_in_another_process_count_toward_the_same_limit(seed_rows, mailoutbox):
    user_create(username="oficial", email="oficial@hacienda.pr.gov", role="hacienda", password=PASSWORD)
    client = Client()
    for _ in range(PASSWORD_RESET_PER_EMAIL - 1):
        reset(client, "oficial@hacienda.pr.gov")
    assert len(mailoutbox) == PASSWORD_RESET_PER_EMAIL - 1
    (line,) = in_another_process(
        "from django.test.utils import setup_test_environment\n"
        "setup_test_environment()\n"
        "from django.core import mail\n"
        "from django.test import Client\n"
        "r = Client().post('/cuenta/clave/olvido/', {'email': 'Oficial@Hacienda.pr.gov'}, REMOTE_ADDR='203.0.113.50')\n"
        "print(r.status_code, r['Location'], len(mail.outbox))\n"
    )
    assert line == f"302 {reverse('password_reset_done')} 1"  # the last one of the hour, sent there
    response = reset(client, "oficial@hacienda.pr.gov")
    assert response.status_code == 302 and response["Location"] == reverse("password_reset_done")
    assert len(mailoutbox) == PASSWORD_RESET_PER_EMAIL - 1  # nothing more from here either


@pytest.fixture
def redis_url(tmp_path):
    """A Redis server of this test's own (Debian's redis-server), as CACHE_URL would name one."""
    import shutil

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed here")
    port = free_port()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                               "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, server)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_with_cache_url_the_throttles_hold_across_processes_in_redis(seed_rows, parcel_a, redis_url, settings):
    """CACHE_URL=redis://… on every server: failed claims here and in another process add up there."""
    from billing.documents import portal_access_code

    settings.CACHES = {"default": cache_settings(redis_url)}
    import redis

    store = redis.Redis.from_url(redis_url)
    client = Client()
    for _ in range(CLAIM_FAILURE_LIMIT - 1):
        claim(client, WRONG_CODE)
    assert len(store.keys("*throttle:portal-claim-client:*")) == CLAIM_FAILURE_LIMIT - 1  # in Redis, not in the table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {cache_settings('')['LOCATION']}")
        assert cursor.fetchone() == (0,)
    done = subprocess.run([sys.executable, "manage.py", "shell", "--no-imports", "-c",
                           "from billing import portal\n"
                           "try:\n"
                           "    portal.account_claim(parcel_id='LAJ-A1', access_code='AAAAA-AAAAA', email='x@example.pr',"
                           " password='Riego-Valle-Lajas-2026', client='127.0.0.1')\n"
                           "except portal.ClaimRefused as exc:\n"
                           "    print(exc.code)\n"],
                          cwd=ROOT, env=child_env(CACHE_URL=redis_url), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["mismatch"], done.stderr
    assert "demasiados intentos" in claim(client, portal_access_code("LAJ-A1", "OWN-A")).content.decode()


# --- password reset: a few emails an hour, and the same answer whatever happened ----------------


@pytest.mark.django_db
def test_password_reset_sends_at_most_three_emails_an_hour_per_address(client, mailoutbox):
    user_create(username="oficial", email="oficial@hacienda.pr.gov", role="hacienda", password=PASSWORD)
    answers = []
    for n in range(PASSWORD_RESET_PER_EMAIL + 2):  # from different addresses: the address asked for counts
        response = reset(client, "OFICIAL@hacienda.pr.gov", address=f"198.51.100.{n + 1}")
        answers.append((response.status_code, response["Location"], response.content))
    assert PASSWORD_RESET_PER_EMAIL == 3 and len(mailoutbox) == 3
    assert [message.to for message in mailoutbox] == [["oficial@hacienda.pr.gov"]] * 3
    # sent or not, the same redirect to the same page: nothing tells whether an email went out
    assert answers == [(302, reverse("password_reset_done"), b"")] * 5
    unknown = reset(client, "nadie@example.pr", address="198.51.100.99")
    assert (unknown.status_code, unknown["Location"], unknown.content) == answers[0] and len(mailoutbox) == 3
    done = client.get(reverse("password_reset_done")).content.decode()
    assert "Si hay una cuenta con ese correo electrónico" in done and "oficial@" not in done.lower()

    with connection.cursor() as cursor:  # what the end of the hour does
        cursor.execute(f"UPDATE {settings.CACHES['default']['LOCATION']} SET expires = now() - interval '1 second'")
    reset(client, "oficial@hacienda.pr.gov")
    assert len(mailoutbox) == 4


@pytest.mark.django_db
def test_password_reset_sends_at_most_five_emails_an_hour_per_client_address(client, mailoutbox):
    for n in range(PASSWORD_RESET_PER_CLIENT + 1):
        user_create(username=f"u{n}", email=f"u{n}@example.pr", role="auditor", password=PASSWORD)
    answers = {reset(client, f"u{n}@example.pr", address="192.0.2.10")["Location"] for n in range(PASSWORD_RESET_PER_CLIENT + 1)}
    assert answers == {reverse("password_reset_done")}
    assert PASSWORD_RESET_PER_CLIENT == 5 and len(mailoutbox) == 5
    assert f"u{PASSWORD_RESET_PER_CLIENT}@example.pr" not in {message.to[0] for message in mailoutbox}
    reset(client, f"u{PASSWORD_RESET_PER_CLIENT}@example.pr", address="192.0.2.11")  # another client
    assert mailoutbox[-1].to == [f"u{PASSWORD_RESET_PER_CLIENT}@example.pr"] and len(mailoutbox) == 6


# --- a connection the database dropped ----------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, server: subprocess.Popen) -> None:
    """Bounded: until the server started in ``server`` accepts connections."""
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


APP_NAME = "lajas-web-tier-test"  # the gunicorn process's connections say so (libpq's PGAPPNAME)


def app_backends() -> list[int]:
    """The gunicorn process's connections, not those an earlier test's processes may have left."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s"
                       " AND backend_type = 'client backend'", [APP_NAME])
        return [pid for (pid,) in cursor.fetchall()]


def test_a_connection_the_database_dropped_costs_no_request(seed_rows):
    """One gunicorn worker keeps its connection between requests (CONN_MAX_AGE); the database
    drops it; the next request still answers (CONN_HEALTH_CHECKS), where it used to be a 500."""
    assert settings.DATABASES["default"]["CONN_HEALTH_CHECKS"] is True
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "lajas_portal.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT, env=child_env(ALLOWED_HOSTS="127.0.0.1", CONN_MAX_AGE="600", PGAPPNAME=APP_NAME), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        wait_for_port(port, server)
        page = f"http://127.0.0.1:{port}/verificar/NO-EXISTE/"  # a lookup in the database: 404
        assert get(page) == 404
        (backend,) = app_backends()  # the worker's kept connection
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [backend])
        deadline = time.monotonic() + 30
        while backend in app_backends():
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert get(page) == 404  # not 500 "the connection is closed"
        assert get(page) == 404
        assert len(app_backends()) == 1
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        _, errors = server.communicate(timeout=30)
    assert "connection is closed" not in errors and "Traceback" not in errors, errors


# --- a NUL byte is a malformed request, not a server error --------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("role", "path"), [
    (None, "/verificar/%00/"),
    (None, "/verificar/ab%00cd/"),
    ("authority", "/duenos/?q=%00"),
    ("authority", "/duenos/?q=a%00b&page=1"),
    ("auditor", "/auditoria/?who=%00"),
    ("auditor", "/auditoria/?%00=x"),
])
def test_a_nul_byte_in_the_address_is_a_400(client, users, role, path):
    if role:
        client.force_login(users[role])
    response = client.get(path)
    assert response.status_code == 400
    assert "carácter no permitido" in response.content.decode()
    assert response["Content-Security-Policy"]  # the security headers as on every response
    clean = client.get(path.replace("%00", ""))
    assert clean.status_code in (200, 404), clean.status_code


@pytest.mark.django_db
def test_a_nul_byte_in_a_posted_field_is_a_400(client, users):
    response = client.post(reverse("login"), {"username": "u_hacienda\x00", "password": PASSWORD})
    assert response.status_code == 400
    response = client.post(reverse("password_reset"), {"email": "a\x00@example.pr"})
    assert response.status_code == 400
    client.force_login(users["authority"])
    response = client.post(reverse("parcels:owner-create"), {"name": "Nombre\x00", "email": ""})
    assert response.status_code == 400
    assert client.post(reverse("login"), {"username": "u_hacienda", "password": PASSWORD}).status_code == 302


@pytest.mark.django_db
def test_a_nul_byte_in_the_session_cookie_is_a_400(client, users):
    client.force_login(users["auditor"])
    assert client.get(reverse("parcels:audit")).status_code == 200
    client.cookies[settings.SESSION_COOKIE_NAME] = "abcdefgh\x00ijklmnop"  # sent quoted, "\000"
    response = client.get(reverse("parcels:audit"))
    assert response.status_code == 400


@pytest.mark.django_db
def test_the_nul_refusal_speaks_the_language_chosen(client):
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    response = client.get("/verificar/%00/")
    assert response.status_code == 400 and "a character that is not allowed" in response.content.decode()
    assert "not allowed" in Client().get("/verificar/%00/", HTTP_ACCEPT_LANGUAGE="en").content.decode()


# --- the client's address: what the proxy saw, never what the client wrote ----------------------


def test_the_client_address_is_the_proxys_header_or_the_socket_never_x_forwarded_for(settings):
    forged = {"HTTP_X_FORWARDED_FOR": "192.0.2.1, 192.0.2.2", "REMOTE_ADDR": "172.18.0.4"}
    settings.BEHIND_PROXY = False
    assert client_ip(RequestFactory().get("/", **forged, HTTP_X_REAL_IP="192.0.2.3")) == "172.18.0.4"
    settings.BEHIND_PROXY = True
    assert client_ip(RequestFactory().get("/", **forged, HTTP_X_REAL_IP="203.0.113.9")) == "203.0.113.9"
    # without the header, or with anything but an address in it, the request did not come
    # through nginx: the socket's address
    assert client_ip(RequestFactory().get("/", **forged)) == "172.18.0.4"
    assert client_ip(RequestFactory().get("/", **forged, HTTP_X_REAL_IP="203.0.113.9\x00")) == "172.18.0.4"
    assert client_ip(RequestFactory().get("/", **forged, HTTP_X_REAL_IP="2001:DB8::1")) == "2001:db8::1"


@pytest.mark.django_db
def test_forged_forwarded_headers_never_change_the_address_the_lockout_counts(client, users, settings):
    """Behind nginx: twelve wrong passwords with a new X-Forwarded-For each time are twelve
    failures of one client (nginx's X-Real-IP), locked out at the fifth."""
    settings.BEHIND_PROXY = True
    answers = [
        client.post(reverse("login"), {"username": "u_hacienda", "password": f"wrong-{n}"}, REMOTE_ADDR="172.18.0.4",
                    HTTP_X_REAL_IP="203.0.113.9", HTTP_X_FORWARDED_FOR=f"192.0.2.{n}, 10.0.0.{n}").status_code
        for n in range(12)
    ]
    assert answers == [200] * 4 + [429] * 8
    right = client.post(reverse("login"), {"username": "u_hacienda", "password": PASSWORD}, REMOTE_ADDR="172.18.0.4",
                        HTTP_X_REAL_IP="203.0.113.9", HTTP_X_FORWARDED_FOR="198.51.100.1")
    assert right.status_code == 429
    other = Client().post(reverse("login"), {"username": "u_hacienda", "password": PASSWORD}, REMOTE_ADDR="172.18.0.4",
                          HTTP_X_REAL_IP="203.0.113.10")
    assert other.status_code == 302  # another client behind the same nginx is not locked out
    from axes.models import AccessAttempt

    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.9"}


def nginx_directives(name: str) -> list[str]:
    text = re.sub(r"#[^\n]*", "", (ROOT / "deploy" / "nginx.conf").read_text(encoding="utf-8"))
    return [value.strip() for value in re.findall(rf"(?m)^\s*{name}\s+([^;]+);", text)]


def test_nginx_overwrites_the_client_address_headers_and_compose_trusts_only_them():
    headers = dict(value.split(None, 1) for value in nginx_directives("proxy_set_header"))
    assert headers["X-Real-IP"] == "$remote_addr"
    assert headers["X-Forwarded-For"] == "$remote_addr"  # overwritten, never $proxy_add_x_forwarded_for
    assert "proxy_add_x_forwarded_for" not in re.sub(r"#[^\n]*", "", (ROOT / "deploy" / "nginx.conf").read_text())
    # a load balancer in front is trusted only by its address, in the included file
    assert nginx_directives("include") == ["/etc/nginx/lajas/real-ip*.conf"]
    example = (ROOT / "deploy" / "nginx-real-ip.conf.example").read_text()
    assert re.search(r"(?m)^set_real_ip_from \S+;", example) and "real_ip_header X-Forwarded-For;" in example
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert compose["services"]["web"]["environment"]["BEHIND_PROXY"] == "true"
    env_example = (ROOT / ".env.example").read_text()
    assert not re.search(r"(?m)^#?\s*AXES_PROXY_COUNT=", env_example) and re.search(r"(?m)^#?\s*BEHIND_PROXY=true$", env_example)


def test_the_old_proxy_count_setting_stops_the_app_from_starting():
    """Left in an .env, AXES_PROXY_COUNT would silently count every client as nginx."""
    done = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, capture_output=True, text=True,
                          env={**child_env(), "AXES_PROXY_COUNT": "2"}, timeout=60)
    assert done.returncode != 0 and "AXES_PROXY_COUNT is no longer read" in done.stderr


# --- an export cut half-way never arrives as a complete 200 -------------------------------------


def failing_after(rows, count: int):
    """The rows of the real source, then the error a dropped database connection raises."""
    for n, row in enumerate(rows):
        if n == count:
            rows.close()  # the real source's cursor, closed now rather than when collected
            raise OperationalError("the connection is closed")
        yield row


@pytest.fixture
def hacienda_client(make_parcel, owner_a, users):
    """Worked example 1's roll, final, and a Hacienda officer signed in."""
    from datetime import date

    from tests.billing.conftest import example_1_finalize
    from tests.clock import on_day

    with on_day(date(2026, 6, 30)):  # recorded that day: lists of a past day read it (issue 17 §1)
        example_1_finalize(make_parcel, owner_a, users, finalized_on=date(2026, 6, 30))
    client = Client(raise_request_exception=False)
    client.force_login(users["hacienda"])
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("export", ["csv", "xlsx"])
def test_a_roll_export_cut_half_way_is_a_500_not_a_shorter_file(hacienda_client, monkeypatch, export):
    from levy import exports
    from levy.exports import roll_rows

    url = reverse("levy:roll", args=["2026-2027"]) + f"?format={export}"
    whole = hacienda_client.get(url)
    # issue 20: written whole to a temporary file first, then streamed from it with its length
    content = b"".join(whole.streaming_content) if whole.streaming else whole.content
    assert whole.status_code == 200
    assert int(whole["Content-Length"]) == len(content)  # a transfer cut on the way shows as one
    if export == "csv":
        assert len(content.decode().splitlines()) == 6  # the header and P1..P5

    monkeypatch.setattr(exports, "roll_rows", lambda levy: failing_after(roll_rows(levy), 2))
    cut = hacienda_client.get(url)
    assert cut.status_code == 500 and not cut.streaming
    assert not cut.get("Content-Disposition")  # no file at all, not two lines of one
    assert b"P1" not in cut.content


@pytest.mark.django_db
def test_the_delinquent_csv_cut_half_way_is_a_500_not_a_shorter_file(hacienda_client, monkeypatch):
    from billing.web import hacienda as hacienda_views

    url = reverse("collections:delinquent") + "?format=csv&as_of=2026-09-02"
    whole = hacienda_client.get(url)
    assert whole.status_code == 200 and not whole.streaming
    assert int(whole["Content-Length"]) == len(whole.content)
    assert len(whole.content.decode().splitlines()) == 6  # the header and P1..P5's July installments

    class CutList(list):
        def __iter__(self):
            return failing_after((item for item in list.__iter__(self)), 2)

    real = delinquency.kept_lines
    monkeypatch.setattr(hacienda_views.delinquency, "kept_lines", lambda *args, **kwargs: CutList(real(*args, **kwargs)))
    cut = hacienda_client.get(url)
    assert cut.status_code == 500 and not cut.get("Content-Disposition")


def test_every_export_is_built_before_its_first_byte():
    """No view streams a CSV or XLSX (a streamed response has sent its 200 before its last row)."""
    for path in list(Path(ROOT).glob("*/views.py")) + list(Path(ROOT).glob("*/*_views.py")):
        assert "StreamingHttpResponse" not in path.read_text(), path
