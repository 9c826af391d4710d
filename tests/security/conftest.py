"""A small finalized district built once for the security tests, through the services.

Every object a URL of the app can point at exists here twice where ownership matters: once for
owner A (whose landowner account is the one the matrix signs in with) and once for owner B, so a
landowner can be shown to get 404 on another owner's parcel, statement, receipt, bill or
certificate. Owners with hostile names (HTML, spreadsheet formulas) are on the roll too.

The district is built once for the whole ``tests/security`` package inside a transaction that is
rolled back at the end; each test runs in a savepoint of it (pytest-django's ``db``), so whatever
a test writes disappears when it ends.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from billing import accounts
from billing.services import bills, collection, counter, water
from parcels.roles import ROLES, STAFF_ROLES
from tests.otp import verify_session

PASSWORD = "Correct-Horse-Battery-9"
YEAR = "2026-2027"  # finalized on time: installments, receipts, bills, certificates
DRAFT_YEAR = "2027-2028"  # certified and computed, not finalized: what ``finalize`` would act on
OPEN_YEAR = "2028-2029"  # estimates entered, not certified: what ``estimate-certify`` would act on

HTML_NAME = "<script>alert(1)</script><b>x</b>"
# Names a spreadsheet would run as a formula (OWASP "CSV injection"): =, +, -, @, tab, CR.
FORMULA_NAMES = (
    '=HYPERLINK("http://evil","x")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
)
FORMULA_PARCEL_ID = "=2+3"  # a cadastre number is a text cell too

ANONYMOUS = "anonymous"
NOROLE = "norole"  # signed in, in no group: must be refused everywhere a role is needed
PRINCIPALS = (ANONYMOUS, *ROLES, NOROLE)

CSV_HEADER = b"parcel_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since,credit_percent\n"


def valid_import_csv(parcel_id: str = "SEC-NEW-1") -> SimpleUploadedFile:
    return SimpleUploadedFile(
        "predios.csv", CSV_HEADER + f"{parcel_id},Ana Rivera,,private,5,0,permanent,2001-01-01,0\n".encode(), "text/csv"
    )


@dataclass
class World:
    users: dict[str, Any]
    owners: dict[str, Any]
    parcels: dict[str, Any]
    receipts: dict[str, Any]
    bill_docs: dict[str, Any]
    certificates: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    def user(self, principal: str) -> Any:
        return self.users[principal]


class _NoProgress:
    def set(self, done: int, total: int) -> None:
        pass


def _build() -> World:
    from billing import bulk
    from billing.models import Charge
    from billing.services.installments import roll_finalize
    from levy.services import estimate_certify, estimate_enter, levy_compute, levy_compute_start
    from parcels.models import Owner
    from parcels.services import import_upload_create, owner_create, parcel_create, user_create
    from parcels.tasks import parse_upload

    today = timezone.localdate()

    def owner(key: str, name: str) -> Any:
        return owner_create(acting_user=None, name=name, owner_key=key, email=f"{key.lower()}@example.pr")

    owners = {
        "A": owner("OWN-A", "Carmen Irizarry Vélez"),
        "B": owner("OWN-B", "Luis Toro Ramos"),
        "X": owner("OWN-X", HTML_NAME),
    }
    for index, name in enumerate(FORMULA_NAMES, start=1):
        owners[f"F{index}"] = owner(f"OWN-F{index}", name)
    # issue 19: an owner whose postal address was last confirmed long ago (staff confirm it again)
    owners["M"] = owner_create(acting_user=None, name="Marta Colón Ruiz", owner_key="OWN-M", address_line1="Calle 3 #4",
                               address_town="Lajas", address_zip="00667")
    Owner.objects.filter(pk=owners["M"].pk).update(address_confirmed_on=date(2025, 1, 15))

    def parcel(code: str, who: str, gravity: str = "10", pumped: str = "0", water_since: date = date(2000, 1, 1)) -> Any:
        return parcel_create(
            acting_user=None, parcel_id=code, owner=owners[who], area_unit="acre", gravity_area=Decimal(gravity),
            pumped_area=Decimal(pumped), inclusion="permanent", water_since=water_since, credit_percent=Decimal("0"),
        )

    parcels = {
        "A1": parcel("A1", "A", gravity="100"),
        "A2": parcel("A2", "A", gravity="25"),
        "B1": parcel("B1", "B", gravity="0", pumped="80"),
        "X1": parcel("X1", "X", gravity="20"),
        # water from March 2026: pays the levy only from July 2027 (¶8), buys water meanwhile (sec. 374a)
        "W1": parcel("W1", "A", gravity="10", water_since=date(2026, 3, 10)),
    }
    for index in range(1, len(FORMULA_NAMES) + 1):
        parcels[f"F{index}"] = parcel(f"F{index}", f"F{index}")
    parcels["FX"] = parcel(FORMULA_PARCEL_ID, "F1")

    users: dict[str, Any] = {}
    for role in ROLES:
        staff = role in STAFF_ROLES  # staff sign certificates and notices with a name and a title
        users[role] = user_create(username=f"sec_{role}", role=role, password=PASSWORD,
                                  owner=owners["A"] if role == "landowner" else None,
                                  full_name=f"Oficial {role.title()} Seguridad" if staff else "", title="Oficial de Pruebas" if staff else "")
    users["landowner_b"] = user_create(username="sec_landowner_b", role="landowner", password=PASSWORD, owner=owners["B"])
    users["landowner_x"] = user_create(username="sec_landowner_x", role="landowner", password=PASSWORD, owner=owners["X"])
    users[NOROLE] = get_user_model().objects.create_user(username="sec_norole", password=PASSWORD)
    authority, hacienda, collector = users["authority"], users["hacienda"], users["collector"]

    def estimates(label: str, certify: bool) -> None:
        estimate_enter(acting_user=authority, fiscal_year=label, om_estimate=Decimal("100000.00"),
                       reserve=Decimal("1500.00"), misc_income=Decimal("7500.00"), surplus=Decimal("4000.00"))
        if certify:
            estimate_certify(acting_user=authority, fiscal_year=label)

    estimates(YEAR, certify=True)
    levy_compute(acting_user=hacienda, fiscal_year=YEAR)
    roll_finalize(acting_user=hacienda, fiscal_year=YEAR, today=date(2026, 6, 30))
    estimates(DRAFT_YEAR, certify=True)
    levy_compute(acting_user=hacienda, fiscal_year=DRAFT_YEAR)
    estimates(OPEN_YEAR, certify=False)

    def pay(code: str, amount: Decimal) -> Any:
        return counter.payment_record(acting_user=collector, parcel=parcels[code], amount=amount, paid_on=today)

    receipts = {"A": pay("A1", Decimal("100.00")), "B": pay("B1", Decimal("100.00")), "X": pay("X1", Decimal("100.00"))}
    # A2 paid everything and $20 more: a credit a supervisor could refund.
    owed = accounts.account_state(parcel=parcels["A2"], as_of=today).state.total_balance
    receipts["A2"] = pay("A2", owed + Decimal("20.00"))

    def first_charge(code: str) -> Any:
        return Charge.objects.get(parcel=parcels[code], fiscal_year__label=YEAR, number=1)

    bill_docs = {who: bills.bill_issue(acting_user=hacienda, charge=first_charge(code)).document
                 for who, code in (("A", "A1"), ("B", "B1"))}
    certificates = {who: collection.certificate_issue(acting_user=hacienda, parcel=parcels[code], as_of=today)
                    for who, code in (("A", "A1"), ("B", "B1"), ("X", "X1"))}

    extra: dict[str, Any] = {}
    extra["seizure_step"] = collection.seizure_step_issue(acting_user=hacienda, parcel=parcels["B1"], kind="notice")
    water.water_delivery_record(acting_user=authority, parcel=parcels["W1"], delivered_on=date(2026, 10, 4),
                                   acre_feet=Decimal("2.5"))
    # A compute job left queued (the worker never runs inside this transaction).
    extra["compute_job"] = levy_compute_start(acting_user=hacienda, fiscal_year=YEAR)
    upload = import_upload_create(acting_user=authority, file=valid_import_csv())
    parse_upload(upload.job, _NoProgress())
    upload.refresh_from_db()
    assert upload.status == "ready", upload.errors
    extra["upload"] = upload
    batch = bills.bill_batch_start(hacienda, YEAR, 2, {"parcel_ids": ["A1"]})
    bulk.bill_batch_run(batch=batch, processes=1)
    extra["batch"] = batch
    assert batch.parts.filter(index=0).exists()
    # issue 19: a collecting bank and one file of it (a line for the exceptions queue)
    from billing.models import Office
    from billing.services import bank as bank_services

    bppr = Office.objects.create(code="BPPR", name="Banco Popular — agente recaudador", kind=Office.Kind.BANK)
    extra["bank_file"] = bank_services.bank_file_import(
        acting_user=users["supervisor"], bank=bppr, name="bppr.csv",
        data=f"trace_number,value_date,amount,reference,payer_name\nS1,{today.isoformat()},25.00,LAJ-424242,Pedro\n".encode())
    return World(users=users, owners=owners, parcels=parcels, receipts=receipts, bill_docs=bill_docs,
                 certificates=certificates, extra=extra)


@pytest.fixture(scope="package")
def world(django_db_setup, django_db_blocker):
    """The district, built once and rolled back when the package's tests are done."""
    with django_db_blocker.unblock():
        with transaction.atomic():
            built = _build()
            yield built
            transaction.set_rollback(True)


@pytest.fixture
def w(world, db):
    """The district for a test that runs in its own savepoint (its writes are rolled back)."""
    return world


def sign_in(client: Client, world: World, principal: str) -> Client:
    """Signed in as ``principal`` with the second factor passed (a real device; ``tests/otp.py``)."""
    client.logout()
    if principal != ANONYMOUS:
        user = world.user(principal)
        client.force_login(user)
        verify_session(client, user)
    return client


def new_idempotency_key() -> str:
    return uuid.uuid4().hex


# --- what the database holds ----------------------------------------------------------------------


def _fingerprint_tables() -> list[str]:
    tables = []
    for label in ("parcels", "levy", "billing", "pghistory"):
        for model in apps.get_app_config(label).get_models():
            if model._meta.managed and not model._meta.proxy:
                tables.append(model._meta.db_table)
    tables += ["auth_user_groups"]
    tables.remove("parcels_accessevent")  # the access log records every refusal: that write is expected
    return sorted(set(tables))


def fingerprint() -> dict[str, tuple[int, str]]:
    """Row count and a digest of every row of every table the app writes (sessions, login
    attempts, the access log and ``auth_user.last_login`` excluded: signing in and refusals
    change those)."""
    parts = [
        f"SELECT '{table}', count(*), md5(coalesce(string_agg(md5(t::text), '' ORDER BY md5(t::text)), '')) FROM \"{table}\" t"
        for table in _fingerprint_tables()
    ]
    parts.append("SELECT 'auth_user', count(*), md5(coalesce(string_agg(md5(concat_ws('|', id, username, password, "
                 "is_active, is_staff, is_superuser, email)), '' ORDER BY id), '')) FROM auth_user")
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts))
        return {name: (count, digest) for name, count, digest in cursor.fetchall()}


def changed_tables(before: dict, after: dict) -> list[str]:
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


# --- response headers -----------------------------------------------------------------------------

OUTSIDE_SOURCE = re.compile(r"(https?:|wss?:|\*|//)", re.IGNORECASE)


def csp_directives(response: Any) -> dict[str, list[str]]:
    policy = response.headers.get("Content-Security-Policy", "")
    directives: dict[str, list[str]] = {}
    for part in policy.split(";"):
        words = part.split()
        if words:
            directives[words[0].lower()] = words[1:]
    return directives


def assert_security_headers(response: Any, where: str) -> None:
    """The headers every response of the app must carry, whatever its type or status."""
    directives = csp_directives(response)
    assert directives, f"{where}: no Content-Security-Policy"
    assert directives.get("default-src") == ["'self'"], (where, directives)
    for name, sources in directives.items():
        for source in sources:
            assert not OUTSIDE_SOURCE.search(source), f"{where}: {name} allows an outside origin {source!r}"
            assert source in ("'self'", "'none'", "data:"), f"{where}: {name} allows {source!r}"
    assert directives.get("frame-ancestors") == ["'none'"], (where, directives)
    assert directives.get("object-src") == ["'none'"], (where, directives)
    assert "'unsafe-inline'" not in response.headers["Content-Security-Policy"], where
    assert response.headers.get("X-Frame-Options") == "DENY", where
    assert response.headers.get("X-Content-Type-Options") == "nosniff", where
    assert response.headers.get("Referrer-Policy") == "same-origin", where


def is_login_redirect(response: Any) -> bool:
    return response.status_code == 302 and response["Location"].startswith(reverse("login") + "?next=")
