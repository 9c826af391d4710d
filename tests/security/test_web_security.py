"""The web-security promises of the portal, each as a test that fails when the promise breaks:
CSRF on every form, login throttling per user and address, 30-minute idle sessions, the security
headers on every kind of response (and HSTS with the production settings), the parcel upload's
size and type checks, spreadsheet formulas neutralized in every export, and owner names escaped
on the pages and printed as plain text in the PDFs."""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import re
import secrets
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from openpyxl import load_workbook
from pypdf import PdfReader

from levy.exports import FORMULA_PREFIXES
from tests.databases import database_url
from tests.otp import pass_second_factor

from .conftest import (
    ANONYMOUS,
    CSV_HEADER,
    FORMULA_NAMES,
    FORMULA_PARCEL_ID,
    HTML_NAME,
    PASSWORD,
    PRINCIPALS,
    YEAR,
    assert_security_headers,
    changed_tables,
    fingerprint,
    is_login_redirect,
    sign_in,
)
from .test_authorization_matrix import LOGIN, MATRIX, Route

ROOT = Path(__file__).resolve().parents[2]
LOGIN_URL = "/cuenta/entrar/"


def allowed_principal(route: Route) -> str:
    """A principal the route lets in (the first role that may POST, else the first that may GET)."""
    if route.post_roles:
        return sorted(route.post_roles)[0]
    for principal in PRINCIPALS:
        if route.get[principal] not in (LOGIN, 403, 404):
            return principal
    raise AssertionError("a route nobody may use")


# --- CSRF -----------------------------------------------------------------------------------------


def test_every_post_without_a_csrf_token_is_refused_and_writes_nothing(w, caplog):
    """Every URL of the matrix (so every one that accepts a POST), by a principal the view would
    let in and by an anonymous visitor: 403 from the CSRF check, and the database unchanged."""
    client = Client(enforce_csrf_checks=True)
    # the targets first: some are built on first use (a pending refund request, a bank file)
    urls = {name: reverse(name, kwargs=route.targets(w)[0]) for name, route in MATRIX.items()}
    before = fingerprint()
    failures = []
    for name, route in sorted(MATRIX.items()):
        url = urls[name]
        for principal in sorted({ANONYMOUS, allowed_principal(route)}):
            sign_in(client, w, principal)
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="django.security.csrf"):
                response = client.post(url, route.post_data(w))
            refused_by_csrf = any(record.name == "django.security.csrf" for record in caplog.records)
            if response.status_code != 403 or not refused_by_csrf:
                failures.append(f"POST {url} as {principal} without a token: {response.status_code}")
            assert_security_headers(response, f"CSRF refusal of {url}")
    assert not failures, "\n".join(failures)
    assert changed_tables(before, fingerprint()) == []


FORM = re.compile(r"<form\b([^>]*)>(.*?)</form>", re.DOTALL | re.IGNORECASE)
INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
INLINE_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.IGNORECASE)
INLINE_STYLE = re.compile(r"<[^>]+\sstyle\s*=", re.IGNORECASE)


def test_every_page_posts_its_forms_with_a_token_and_needs_no_inline_code(w):
    """Each HTML page, as a principal it lets in: every POST form carries the CSRF token, and the
    page has no inline script, event handler or style attribute (the CSP forbids them)."""
    client = Client(enforce_csrf_checks=True)
    failures, pages = [], 0
    for name, route in sorted(MATRIX.items()):
        principal = allowed_principal(route)
        sign_in(client, w, principal)
        for kwargs in route.targets(w):
            url = reverse(name, kwargs=kwargs) + route.query
            response = client.get(url)
            if response.status_code != 200 or not response["Content-Type"].startswith("text/html"):
                continue
            pages += 1
            html = response.content.decode()
            for attributes, body in FORM.findall(html):
                if re.search(r"method\s*=\s*[\"']?post", attributes, re.IGNORECASE) and 'name="csrfmiddlewaretoken"' not in body:
                    failures.append(f"{url}: a POST form without the CSRF token")
            for pattern, what in ((INLINE_SCRIPT, "inline script"), (INLINE_HANDLER, "inline event handler"),
                                  (INLINE_STYLE, "inline style")):
                if pattern.search(html):
                    failures.append(f"{url} ({principal}): {what} {pattern.search(html).group(0)[:80]!r}")
    assert pages > 40
    assert not failures, "\n".join(failures)


def test_a_form_posted_with_its_token_goes_through(w):
    """The counterpart of the refusals: the token the page hands out is the one that works."""
    from parcels.models import Owner

    client = Client(enforce_csrf_checks=True)
    sign_in(client, w, "authority")
    page = client.get(reverse("parcels:owner-create")).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    data = {"name": "Con Token", "kind": "private", "email": "", "mailing_address": ""}
    assert client.post(reverse("parcels:owner-create"), data).status_code == 403
    response = client.post(reverse("parcels:owner-create"), {**data, "csrfmiddlewaretoken": token})
    assert response.status_code == 302 and Owner.objects.filter(name="Con Token").exists()


# --- login throttling (django-axes) -----------------------------------------------------------------


def sign_in_with_password(client: Client, username: str, password: str, **extra: str) -> Any:
    return client.post(LOGIN_URL, {"username": username, "password": password}, **extra)


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_five_failed_logins_lock_that_user_from_that_address_only(w):
    assert settings.AXES_FAILURE_LIMIT == 5 and settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]
    attacker = Client()
    for attempt in range(1, 5):
        response = sign_in_with_password(attacker, "sec_hacienda", f"wrong-{attempt}", REMOTE_ADDR="10.0.0.5")
        assert response.status_code == 200 and not signed_in(attacker), attempt  # the form again, with its error
    fifth = sign_in_with_password(attacker, "sec_hacienda", "wrong-5", REMOTE_ADDR="10.0.0.5")
    assert fifth.status_code == 429
    locked = sign_in_with_password(attacker, "sec_hacienda", PASSWORD, REMOTE_ADDR="10.0.0.5")
    assert locked.status_code == 429 and not signed_in(attacker)
    page = locked.content.decode()
    assert "Cuenta bloqueada temporalmente" in page and "demasiados intentos fallidos" in page
    assert_security_headers(locked, "the lockout page")
    # the lock is for that user from that address: the user elsewhere, and others there, still sign in
    elsewhere = Client()
    response = sign_in_with_password(elsewhere, "sec_hacienda", PASSWORD, REMOTE_ADDR="10.0.0.6")
    assert is_redirect_home(response) and signed_in(elsewhere)
    colleague = Client()
    response = sign_in_with_password(colleague, "sec_auditor", PASSWORD, REMOTE_ADDR="10.0.0.5")
    assert is_redirect_home(response) and signed_in(colleague)


def is_redirect_home(response: Any) -> bool:
    return response.status_code == 302 and response["Location"] == reverse("home")


def test_a_forged_forwarded_for_header_does_not_dodge_the_lock(w, settings):
    """Without a proxy the socket's address counts, whatever X-Forwarded-For says; behind the
    compose nginx (BEHIND_PROXY) the X-Real-IP that nginx overwrites with the address it saw
    counts, not what the client wrote in X-Forwarded-For (or in X-Real-IP: nginx replaces it)."""
    attacker = Client()
    for attempt in range(5):
        sign_in_with_password(attacker, "sec_auditor", "wrong", REMOTE_ADDR="10.0.0.7",
                              HTTP_X_FORWARDED_FOR=f"192.0.2.{attempt}", HTTP_X_REAL_IP=f"192.0.2.{attempt}")
    response = sign_in_with_password(attacker, "sec_auditor", PASSWORD, REMOTE_ADDR="10.0.0.7",
                                     HTTP_X_FORWARDED_FOR="192.0.2.99", HTTP_X_REAL_IP="192.0.2.99")
    assert response.status_code == 429 and not signed_in(attacker)

    settings.BEHIND_PROXY = True
    behind = Client()
    for attempt in range(5):
        sign_in_with_password(behind, "sec_collector", "wrong", REMOTE_ADDR="172.18.0.5", HTTP_X_REAL_IP="203.0.113.9",
                              HTTP_X_FORWARDED_FOR=f"192.0.2.{attempt}, 203.0.113.9")
    response = sign_in_with_password(behind, "sec_collector", PASSWORD, REMOTE_ADDR="172.18.0.5", HTTP_X_REAL_IP="203.0.113.9",
                                     HTTP_X_FORWARDED_FOR="198.51.100.1, 203.0.113.9")
    assert response.status_code == 429 and not signed_in(behind)
    other = sign_in_with_password(Client(), "sec_collector", PASSWORD, REMOTE_ADDR="172.18.0.5",
                                  HTTP_X_REAL_IP="203.0.113.10", HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert is_redirect_home(other)  # another client behind the same proxy is not locked out


# --- sessions -----------------------------------------------------------------------------------------


def test_a_session_idle_for_30_minutes_is_over(w):
    assert settings.SESSION_COOKIE_AGE == 30 * 60 and settings.SESSION_SAVE_EVERY_REQUEST
    assert settings.SESSION_ENGINE == "django.contrib.sessions.backends.db"
    client = Client()
    response = sign_in_with_password(client, "sec_supervisor", PASSWORD)
    assert is_redirect_home(response)
    cookie = response.cookies[settings.SESSION_COOKIE_NAME]
    assert cookie["httponly"] and cookie["samesite"] == "Lax"
    assert not cookie["max-age"] and not cookie["expires"]  # also ends when the browser closes
    assert is_redirect_home(pass_second_factor(client, w.user("supervisor")))
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    url = reverse("billing:day-report")

    # 29 minutes idle: still signed in, and the request starts another 30 minutes
    Session.objects.filter(session_key=key).update(expire_date=timezone.now() + timedelta(minutes=1))
    assert client.get(url).status_code == 200
    renewed = Session.objects.get(session_key=key).expire_date - timezone.now()
    assert timedelta(minutes=29) < renewed <= timedelta(minutes=30)

    # 30 minutes idle: the next request is anonymous and goes to the login page
    Session.objects.filter(session_key=key).update(expire_date=timezone.now() - timedelta(seconds=1))
    response = client.get(url)
    assert is_login_redirect(response), response.status_code
    assert client.get(reverse("billing:receipt-pdf", args=[w.receipts["A"].pk])).status_code == 302


# --- security headers ---------------------------------------------------------------------------------


def test_security_headers_on_every_kind_of_response(w):
    client = Client()
    responses: dict[str, Any] = {}
    responses["login page"] = client.get(LOGIN_URL)
    responses["redirect to login"] = client.get(reverse("parcels:parcel-list"))
    responses["public verification page"] = client.get(reverse("verify:document", args=[w.receipts["A"].document.verification_code]))
    responses["404 (unknown URL)"] = client.get("/no-existe/")
    responses["404 (unknown code)"] = client.get(reverse("verify:document", args=["nada"]))
    responses["405"] = client.get(reverse("billing:void", args=[1]))
    sign_in(client, w, "hacienda")
    responses["HTML page"] = client.get(reverse("levy:roll", args=[YEAR]))
    responses["CSV download"] = client.get(reverse("levy:roll", args=[YEAR]) + "?format=csv")
    responses["XLSX download"] = client.get(reverse("levy:roll", args=[YEAR]) + "?format=xlsx")
    responses["delinquent CSV"] = client.get(reverse("collections:delinquent") + "?format=csv")
    responses["receipt PDF"] = client.get(reverse("billing:receipt-pdf", args=[w.receipts["A"].pk]))
    responses["certificate PDF"] = client.get(reverse("collections:certificate-pdf", args=[w.certificates["A"].pk]))
    responses["stored PDF file"] = client.get(reverse("collections:bill-batch-part", args=[w.extra["batch"].pk, 0]))
    responses["JSON"] = client.get(reverse("parcels:job-status", args=[w.extra["compute_job"].pk]))
    responses["403"] = client.get(reverse("parcels:parcel-create"))
    sign_in(client, w, "landowner")
    responses["landowner 404"] = client.get(reverse("billing:statement", args=[w.parcels["B1"].pk]))
    responses["landowner PDF"] = client.get(reverse("billing:document-pdf", args=[w.bill_docs["A"].pk]))

    expected = {"login page": 200, "redirect to login": 302, "public verification page": 200, "404 (unknown URL)": 404,
                "404 (unknown code)": 404, "405": 405, "HTML page": 200, "CSV download": 200, "XLSX download": 200,
                "delinquent CSV": 200, "receipt PDF": 200, "certificate PDF": 200, "stored PDF file": 200, "JSON": 200,
                "403": 403, "landowner 404": 404, "landowner PDF": 200}
    assert {kind: response.status_code for kind, response in responses.items()} == expected
    for kind, response in responses.items():
        assert_security_headers(response, kind)
    for kind in ("CSV download", "XLSX download", "delinquent CSV", "receipt PDF", "certificate PDF", "stored PDF file",
                 "landowner PDF"):
        assert responses[kind]["Content-Disposition"].startswith("attachment;"), kind  # downloaded, never shown inline
    for kind in ("receipt PDF", "certificate PDF", "stored PDF file", "landowner PDF"):
        assert responses[kind]["Content-Type"] == "application/pdf", kind
    assert responses["public verification page"]["Cache-Control"].startswith("max-age=0")


def settings_env_names() -> set[str]:
    """Every environment variable settings.py reads (``NAME_FILE`` too for secrets)."""
    text = (ROOT / "lajas_portal" / "settings.py").read_text(encoding="utf-8")
    names = set()
    for helper, name in re.findall(r"\b(env|envbool|envint|envsecret|envlist)\(\s*[\"']([A-Z][A-Z0-9_]*)[\"']", text):
        names.add(name)
        if helper == "envsecret":
            names.add(f"{name}_FILE")
    return names


def production_env() -> dict[str, str]:
    url = database_url(settings.DATABASES["default"])
    env = {name: value for name, value in os.environ.items()
           if name not in settings_env_names() and name not in ("DJANGO_ALLOW_ASYNC_UNSAFE", "TEST_MEDIA_ROOT")}
    env.update(DJANGO_SETTINGS_MODULE="lajas_portal.settings", SECRET_KEY=secrets.token_urlsafe(50), DEBUG="false",
               ALLOWED_HOSTS="riego.example.pr", DATABASE_URL=url)
    return env


def test_check_deploy_finds_nothing_with_production_settings(tmp_path):
    from billing import anchors

    anchors.keygen(str(tmp_path / "anchor.pem"))  # production requires the anchors' signing key (billing.E001)
    env = {**production_env(), "ANCHOR_SIGNING_KEY_FILE": str(tmp_path / "anchor.pem")}
    completed = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "DEBUG"],
                               env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert "System check identified no issues (0 silenced)." in output, output
    assert "WARNING" not in output and "?: (security." not in output, output


PRODUCTION_PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.test import Client
client = Client(HTTP_HOST="riego.example.pr")
plain = client.get("/predios/")
secure = client.get("/predios/", secure=True)
print(json.dumps({
    "debug": settings.DEBUG,
    "plain": [plain.status_code, plain.get("Location", "")],
    "secure": [secure.status_code, secure.get("Location", "")],
    "headers": dict(secure.headers),
    "cookies_secure": [settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE],
}))
"""


def test_production_settings_send_hsts_and_redirect_to_https():
    completed = subprocess.run([sys.executable, "-c", PRODUCTION_PROBE], env=production_env(), cwd=ROOT,
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    probe = json.loads(completed.stdout.strip().splitlines()[-1])
    assert probe["debug"] is False and probe["cookies_secure"] == [True, True]
    assert probe["plain"] == [301, "https://riego.example.pr/predios/"]
    assert probe["secure"][0] == 302 and probe["secure"][1].startswith(reverse("login"))
    headers = {name.lower(): value for name, value in probe["headers"].items()}
    assert headers["strict-transport-security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]


# --- uploads --------------------------------------------------------------------------------------------


def media_files() -> set[Path]:
    root = Path(settings.MEDIA_ROOT)
    return {path for path in root.rglob("*") if path.is_file()} if root.exists() else set()


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" + b"\x00" * 64
EXE = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00\xb8" + b"\x00" * 40 + b"This program cannot be run in DOS mode."
XLSX = b"PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00" + bytes(range(256))
NOT_CSV = "no es un CSV de texto en UTF-8"


@pytest.mark.parametrize(("filename", "data", "message"), [
    ("foto.png", PNG, "Suba un archivo .csv."),
    ("foto.csv", PNG, NOT_CSV),
    ("programa.exe", EXE, "Suba un archivo .csv."),
    ("predios.csv", EXE, NOT_CSV),
    ("predios.csv", XLSX, NOT_CSV),
    ("predios.csv", CSV_HEADER.decode().encode("utf-16"), NOT_CSV),
], ids=["png", "png-named-csv", "exe", "exe-named-csv", "xlsx-named-csv", "utf16"])
def test_upload_of_a_wrong_type_is_refused_and_stores_nothing(w, client, filename, data, message):
    from parcels.models import ImportUpload, Job

    sign_in(client, w, "authority")
    uploads, jobs, files = ImportUpload.objects.count(), Job.objects.count(), media_files()
    response = client.post(reverse("parcels:import-upload"), {"file": SimpleUploadedFile(filename, data, "text/csv")})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert (ImportUpload.objects.count(), Job.objects.count(), media_files()) == (uploads, jobs, files)


def test_upload_over_20_mb_is_refused_and_stores_nothing(w, client):
    from parcels.models import ImportUpload, Job

    sign_in(client, w, "authority")
    row = b"SEC-BIG,Ana,,private,1,0,permanent,2001-01-01,0\n"
    data = CSV_HEADER + row * (settings.MAX_UPLOAD_BYTES // len(row) + 1)
    assert settings.MAX_UPLOAD_BYTES == 20 * 1024 * 1024 < len(data)
    uploads, jobs, files = ImportUpload.objects.count(), Job.objects.count(), media_files()
    response = client.post(reverse("parcels:import-upload"), {"file": SimpleUploadedFile("predios.csv", data, "text/csv")})
    assert response.status_code == 200 and "El archivo pasa de 20 MB." in response.content.decode()
    assert (ImportUpload.objects.count(), Job.objects.count(), media_files()) == (uploads, jobs, files)
    # a file just under the limit is taken (so the refusal above is about the size)
    small = SimpleUploadedFile("predios.csv", CSV_HEADER + row, "text/csv")
    assert client.post(reverse("parcels:import-upload"), {"file": small}).status_code == 302
    assert ImportUpload.objects.count() == uploads + 1


# --- spreadsheet formulas in exports ------------------------------------------------------------------

NUMBER = re.compile(r"-?\d+(\.\d+)?")


def formula_cells(rows: list[list[Any]]) -> list[Any]:
    """Text cells a spreadsheet would run as a formula (a plain negative number is not one)."""
    return [cell for row in rows for cell in row
            if isinstance(cell, str) and cell.startswith(FORMULA_PREFIXES) and not NUMBER.fullmatch(cell)]


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def assert_neutralized(rows: list[list[Any]], where: str) -> None:
    """No cell would run as a formula, and each hostile name is there, quoted with ``'``. (A
    carriage return may come out as a line feed: a lone CR would start a new row in a spreadsheet.)"""
    assert formula_cells(rows) == [], where
    cells = {cell.replace("\r", "\n") for row in rows for cell in row if isinstance(cell, str)}
    for name in (*FORMULA_NAMES, FORMULA_PARCEL_ID):
        assert "'" + name.replace("\r", "\n") in cells, (where, name)


def command_output(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_every_csv_and_xlsx_export_neutralizes_formulas(w):
    client = Client()
    sign_in(client, w, "hacienda")
    roll_csv = client.get(reverse("levy:roll", args=[YEAR]) + "?format=csv")
    assert roll_csv["Content-Type"].startswith("text/csv")
    assert_neutralized(csv_rows(b"".join(roll_csv.streaming_content).decode()), "roll CSV")  # streamed from a file (issue 20)
    delinquent = client.get(reverse("collections:delinquent") + "?format=csv")
    assert delinquent["Content-Type"].startswith("text/csv")
    assert_neutralized(csv_rows(delinquent.content.decode()), "delinquent CSV")
    assert_neutralized(csv_rows(command_output("levy", "export", "--fiscal-year", YEAR, "--format", "csv")), "levy export")
    today = timezone.localdate().isoformat()
    assert_neutralized(csv_rows(command_output("billing", "delinquent", "--as-of", today)), "billing delinquent")

    xlsx = client.get(reverse("levy:roll", args=[YEAR]) + "?format=xlsx")
    book = load_workbook(io.BytesIO(b"".join(xlsx.streaming_content)))
    for sheet in book.worksheets:
        assert not [cell.coordinate for row in sheet.iter_rows() for cell in row if cell.data_type == "f"], sheet.title
    roll_sheet = [[cell.value for cell in row] for row in book.worksheets[0].iter_rows()]
    assert_neutralized(roll_sheet, "roll XLSX")
    summary = [[cell.value for cell in row] for row in book.worksheets[1].iter_rows()]
    assert formula_cells(summary) == []


# --- names with HTML ----------------------------------------------------------------------------------

ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;"


def test_an_owner_name_with_html_is_shown_escaped_on_every_page(w):
    x1, owner = w.parcels["X1"], w.owners["X"]
    pages = {
        "hacienda": [reverse("parcels:parcel-list") + "?q=X1", reverse("parcels:owner-list"),
                     reverse("parcels:owner-detail", args=[owner.pk]), reverse("parcels:parcel-detail", args=[x1.pk]),
                     reverse("levy:roll", args=[YEAR]), reverse("collections:delinquent"),
                     reverse("collections:seizure", args=[x1.pk]), reverse("billing:statement", args=[x1.pk])],
        "collector": [reverse("billing:counter") + "?q=X1", reverse("billing:counter-parcel", args=[x1.pk]),
                      reverse("billing:receipt", args=[w.receipts["X"].pk])],
        "authority": [reverse("parcels:parcel-transfer", args=[x1.pk])],
        "landowner_x": [reverse("parcels:parcel-detail", args=[x1.pk]), reverse("billing:statement", args=[x1.pk]),
                        reverse("billing:receipt", args=[w.receipts["X"].pk])],
    }
    client = Client()
    for principal, urls in pages.items():
        sign_in(client, w, principal)
        for url in urls:
            response = client.get(url)
            page = response.content.decode()
            assert response.status_code == 200, (principal, url)
            assert ESCAPED in page, (principal, url)
            assert "<script>alert" not in page and "<b>x</b>" not in page, (principal, url)


def pdf_text(data: bytes) -> str:
    return re.sub(r"\s+", " ", " ".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages))


def test_an_owner_name_with_html_is_plain_text_in_the_pdfs(w):
    client = Client()
    sign_in(client, w, "landowner_x")
    receipt = client.get(reverse("billing:receipt-pdf", args=[w.receipts["X"].pk]))
    sign_in(client, w, "hacienda")
    certificate = client.get(reverse("collections:certificate-pdf", args=[w.certificates["X"].pk]))
    for kind, response in (("receipt", receipt), ("certificate", certificate)):
        assert response.status_code == 200 and response.content.startswith(b"%PDF"), kind
        text = pdf_text(response.content)
        # the markup printed as characters, not interpreted (text extraction may space out "</ b>")
        assert HTML_NAME in re.sub(r"\s+", "", text), (kind, text[:400])
        assert "&lt;" not in text and "&amp;" not in text, kind  # and not escaped twice


def test_the_public_verification_page_names_no_owner(w):
    """The verification page is public: it confirms a document, never whose it is."""
    documents = [w.receipts[key].document for key in ("A", "B", "X")] + list(w.bill_docs.values())
    documents += [certificate.document for certificate in w.certificates.values()]
    client = Client()
    for document in documents:
        page = client.get(reverse("verify:document", args=[document.verification_code])).content.decode()
        assert "DOCUMENTO VÁLIDO" in page, document.number
        for owner in w.owners.values():
            assert owner.owner_key not in page and owner.name not in page, (document.number, owner.owner_key)
        assert ESCAPED not in page and "Carmen" not in page and "Luis" not in page, document.number
