"""What PostgreSQL refuses whoever asks (parcels.database): no TRUNCATE of an append-only or issued
table, not even by a superuser nor through another table's CASCADE; and the application's own
role, set up by the same ``app_role_grant`` production runs after its migrations, does its ordinary
work but cannot TRUNCATE, ALTER, DROP, disable triggers, create tables or leave the triggers off."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from datetime import date
from decimal import Decimal
from pathlib import Path

import pgtrigger
import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.db.utils import DatabaseError
from django.utils import timezone

from billing import bulk
from billing.management.commands import backup
from billing.models import BooksCheck, Charge, Office, RefundRequest
from billing.services import bills, books_checks, counter, mailing, reminders
from parcels.database import RoleError, app_role_grant
from parcels.models import AccessEvent, Parcel
from parcels.second_factor import second_factor_reset
from parcels.services import access_event_record, owner_create, parcel_transfer, staff_profile_set
from tests.billing import conftest as billing_fixtures
from tests.billing.test_ledger_models import fill_ledger_tables
from tests.commands import run_command
from tests.databases import database_url
from tests.test_books import build_books
from tests.test_deployment import ENTRYPOINT, ROOT, production_env

district_1 = billing_fixtures.district_1
staff = billing_fixtures.staff

# Every table with the BEFORE TRUNCATE guard (parcels.database.NO_TRUNCATE).
GUARDED = {
    # levy: dated legal parameters, certified estimates, final levies and roll lines, corrections
    "levy_legalparameterset", "levy_estimate", "levy_levy", "levy_rollline", "levy_rollcorrection",
    # the tamper-evident chain of every issued record (billing.chain) and the books' checkpoints
    "levy_chainlink", "billing_bookscheckpoint",
    # billing: the books and every issued document, with their gapless number series
    "billing_charge", "billing_payment", "billing_paymentvoid", "billing_refund", "billing_receipt",
    "billing_ledgerentry", "billing_dayclose", "billing_debtcertificate", "billing_seizurestep", "billing_bill",
    "billing_issueddocument", "billing_accountstatement", "billing_receiptseries", "billing_documentseries", "billing_bookscheck",
    # billing: the ledger's stored allocations and dated entries (issue 11)
    "billing_paymentallocation", "billing_correctioncharge", "billing_principaladjustment", "billing_lastdaymove",
    "billing_giveback", "billing_creditapplication",
    # billing: a void's reversals of later entries that moved the voided payment's money (issue 17)
    "billing_voidreversal",
    # billing: the history of the Collector's offices' printed details (issue 12)
    "billing_officeevent",
    # billing: the merged bulk-printing parts, written once (issue 17 §5)
    "billing_billbatchpart",
    # billing: the e-mail reminders' claims and their attempts (issue 19)
    "billing_remindersend", "billing_reminderattempt",
    # billing: refund requests, decided once by a second supervisor (issue 19)
    "billing_refundrequest",
    # billing: the fund journal for accounting (issue 19)
    "billing_journal", "billing_journalline",
    # billing: the collecting banks' files, their lines and the resolutions of their exceptions (issue 19)
    "billing_bankfile", "billing_bankfileline", "billing_banklineresolution",
    # billing: every COPIA reprint of an issued document (issue 19, the registers)
    "billing_reprintlog",
    # parcels: the registry's change history, the access log, second-factor resets
    "parcels_ownerevent", "parcels_parcelevent", "parcels_ownershiptransferevent", "parcels_accessevent",
    "parcels_secondfactorreset", "parcels_secondfactorresetevent", "parcels_staffprofileevent",
    # issue 19, mailing: returned envelopes, and every e-mail that sent a bill (or failed to)
    "parcels_returnedmail", "billing_billemail",
}


def table_counts() -> dict[str, int]:
    """Rows of every table of the schema, counted in one statement."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename"
        )
        names = [name for (name,) in cursor.fetchall()]
        cursor.execute(" UNION ALL ".join(f"SELECT %s, count(*) FROM {connection.ops.quote_name(n)}" for n in names), names)
        return dict(cursor.fetchall())


def truncate_guarded_tables() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid"
            " WHERE NOT t.tgisinternal AND t.tgtype & 32 = 32 AND t.tgtype & 2 = 2"  # TRUNCATE, BEFORE
            " AND t.tgenabled = 'O' AND p.prosrc LIKE %s",
            ["%TRUNCATE of % is refused%"],
        )
        return {name for (name,) in cursor.fetchall()}


@pytest.fixture
def full_books(district_1, staff):
    """Worked example 1 finalized, with every kind of row the guard protects."""
    build_books(staff)
    fill_ledger_tables(staff)
    counter.day_close(acting_user=staff["supervisor"], office=Office.objects.get(code="LAJ"), day=date(2026, 7, 2),
                       counted_cash=Decimal("9180.00"), counted_checks=Decimal("0.00"))
    buyer = owner_create(acting_user=staff["authority"], name="Ana Ortiz Matos", owner_key="OWN-T", email="ana@example.pr")
    # issue 19: the buyer confirmed her e-mail and chose e-mail delivery (the batch below e-mails her
    # bill: a BillEmail row); the post office returned P1's mail (a ReturnedMail row)
    mailing.delivery_email_confirm(token=mailing.email_confirm_token(buyer))
    mailing.delivery_choose(acting_user=None, owner=buyer, delivery="email")
    mailing.returned_mail_record(acting_user=staff["hacienda"], reference="P1")
    parcel_transfer(acting_user=staff["authority"], parcel=Parcel.objects.get(parcel_id="P2"), to_owner=buyer,
                    effective_on=date(2026, 7, 15))
    # an officer's title (what certificates are signed with) and its history
    staff_profile_set(acting_user=staff["authority"], user=staff["hacienda"], full_name="Ana Rivera Soto",
                      title="Colector de Rentas Internas")
    # a merged bulk-printing part (billing.bulk) and an e-mailed bill
    bulk.bill_batch_run(batch=bills.bill_batch_start(staff["hacienda"], "2026-2027", 2), processes=1)
    # the e-mail reminders of 16 August 2026 (issue 19) to the confirmed owner of example 1
    owner = Parcel.objects.get(parcel_id="P1").owner
    owner.email, owner.email_confirmed_at = "carmen@example.pr", timezone.now()
    owner.save(update_fields=["email", "email_confirmed_at"])
    assert reminders.reminders_send(as_of=date(2026, 8, 16)).count("sent") > 0
    # issue 19: a collecting bank's file whose one line is an exception, kept as unapplied funds, and
    # a logged COPIA reprint
    from billing.models import IssuedDocument
    from billing.services import bank, reprints

    bppr = Office.objects.create(code="BPPR", name="Banco Popular — agente recaudador", kind=Office.Kind.BANK)
    bank_file = bank.bank_file_import(acting_user=staff["supervisor"], bank=bppr, name="bppr.csv",
                                      data=b"trace_number,value_date,amount,reference,payer_name\nG1,2026-07-20,25.00,LAJ-404,Nadie\n")
    bank.bank_exception_resolve(acting_user=staff["supervisor"], line=bank_file.lines.get(), action="unapplied")
    reprints.reprint_issue(acting_user=staff["supervisor"], document=IssuedDocument.objects.order_by("pk").first(), channel="counter")
    # the nightly check's record, the access log and a second-factor reset
    books_checks.books_check_run(acting_user=staff["hacienda"], trigger=BooksCheck.Trigger.COMMAND)
    access_event_record(acting_user=staff["collector"], kind=AccessEvent.Kind.LOGIN)
    second_factor_reset(acting_user=get_user_model().objects.create_superuser("it_admin", "it@example.pr", "x"), user=staff["hacienda"],
                        reason="Teléfono perdido")
    # issue 19: a refund request awaiting a second supervisor (by hand: the books' credit is refunded already)
    RefundRequest.objects.create(parcel=Parcel.objects.get(parcel_id="P5"), amount=Decimal("1.00"), reason="Pagó de más",
                                 method="cash", office=Office.objects.get(code="LAJ"), requested_by=staff["supervisor"])


@pytest.mark.django_db
def test_every_append_only_or_issued_table_has_the_truncate_guard():
    assert truncate_guarded_tables() == GUARDED


@pytest.mark.django_db
def test_truncate_cascade_of_each_guarded_table_is_refused_and_nothing_is_lost(full_books):
    before = table_counts()
    assert all(before[table] > 0 for table in GUARDED), {t: before[t] for t in GUARDED if not before[t]}
    connection.ensure_connection()
    assert connection.connection.info.parameter_status("is_superuser") == "on"  # refused even so
    with connection.cursor() as cursor:
        # The test's own transaction still has deferred foreign-key checks queued, and PostgreSQL
        # refuses TRUNCATE of a table with pending trigger events before asking the guard.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    for table in sorted(GUARDED):
        with pytest.raises(DatabaseError, match=r"TRUNCATE of \w+ is refused"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(f"TRUNCATE {table} CASCADE")
    # Through another table: the parcels reach the roll lines, the offices the receipts.
    for table in ("parcels_parcel", "parcels_owner", "billing_office", "levy_fiscalyear"):
        with pytest.raises(DatabaseError, match=r"TRUNCATE of \w+ is refused"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(f"TRUNCATE {table} CASCADE")
    assert table_counts() == before
    code, out, err = run_command("verify_books")
    assert code == 0 and out.startswith("books balance"), out + err


@pytest.mark.django_db
def test_a_table_without_the_guard_can_still_be_emptied(full_books):
    """The guard is the trigger, not something else refusing every TRUNCATE."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM auth_group")
        assert cursor.fetchone()[0] > 0  # the roles (parcels.roles)
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # as above
        cursor.execute("TRUNCATE auth_group CASCADE")
        cursor.execute("SELECT count(*) FROM auth_group")
        assert cursor.fetchone() == (0,)


# --- The application's role --------------------------------------------------------------------


@pytest.fixture
def app_role(transactional_db, monkeypatch):
    """A fresh login role set up by the command the migrate service runs, on the test database,
    from the URL web and worker would connect with. Roles belong to the whole cluster: the name is
    unique to this process and the role is dropped afterwards."""
    role, password = f"lajas_app_test_{os.getpid()}", secrets.token_hex(16)
    db = connection.settings_dict
    monkeypatch.setenv("APP_DATABASE_URL", app_url(role, password))
    code, out, err = run_command("db_grant_app_role")
    assert code == 0, err
    assert out.startswith(f"created role {role}: SELECT, INSERT, UPDATE, DELETE on ")
    assert out.rstrip().endswith(f"schema public (owner {db['USER']}); no TRUNCATE, no DDL")
    yield role, password
    with connection.cursor() as cursor:
        cursor.execute(f"DROP OWNED BY {role}")
        cursor.execute(f"DROP ROLE {role}")


def connect_as(role: str, password: str) -> psycopg.Connection:
    settings = connection.settings_dict
    return psycopg.connect(
        host=settings["HOST"] or None, port=settings["PORT"] or None, dbname=settings["NAME"], user=role,
        password=password, autocommit=True,
    )


REFUSED = {
    "TRUNCATE": "TRUNCATE billing_ledgerentry",
    "TRUNCATE CASCADE": "TRUNCATE levy_rollline CASCADE",
    "ALTER TABLE": "ALTER TABLE billing_payment ADD COLUMN note text",
    "DISABLE TRIGGER": "ALTER TABLE billing_ledgerentry DISABLE TRIGGER ALL",
    "DISABLE TRIGGER USER": "ALTER TABLE levy_rollline DISABLE TRIGGER USER",
    "session_replication_role": "SET session_replication_role = replica",
    "session_replication_role (local)": "SET LOCAL session_replication_role = replica",
    "DROP TABLE": "DROP TABLE billing_receipt CASCADE",
    "CREATE TABLE": "CREATE TABLE public.scratch (id int)",
    "CREATE SCHEMA": "CREATE SCHEMA scratch",
    "CREATE FUNCTION in the schema": "CREATE FUNCTION public.scratch() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    "SET ROLE to the owner": f"SET ROLE {connection.settings_dict['USER'] or 'postgres'}",
}


def test_the_app_role_does_its_work_and_is_refused_the_rest(app_role):
    role, password = app_role
    with connect_as(role, password) as app:
        assert app.execute("SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user").fetchone() == (role, False)
        # Ordinary work: a new owner (its key from the sequence; the history trigger writes the event).
        key = app.execute("SELECT 'OWN-' || nextval('parcels_owner_key_seq')").fetchone()[0]
        app.execute(
            "INSERT INTO parcels_owner (owner_key, name, email, mailing_address, kind, created_at)"
            " VALUES (%s, 'Rosa Pagán', '', '', 'private', now())", [key],
        )
        app.execute("UPDATE parcels_owner SET name = 'Rosa Pagán Cruz' WHERE owner_key = %s", [key])
        assert app.execute("SELECT name FROM parcels_owner WHERE owner_key = %s", [key]).fetchone() == ("Rosa Pagán Cruz",)
        assert app.execute("SELECT count(*) FROM parcels_ownerevent WHERE owner_key = %s", [key]).fetchone() == (2,)
        with app.transaction():
            app.execute("CREATE TEMPORARY TABLE _bulk (id int) ON COMMIT DROP")  # parcels/bulk.py does this
        app.execute("DELETE FROM parcels_owner WHERE owner_key = %s", [key])
        for what, statement in REFUSED.items():
            with pytest.raises(psycopg.errors.InsufficientPrivilege), app.transaction():
                app.execute(statement)
            assert app.execute("SHOW session_replication_role").fetchone() == ("origin",), what
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = 'billing_payment' AND column_name = 'note'")
        assert cursor.fetchone() == (0,)


def test_the_app_role_cannot_skip_a_trigger_with_pgtrigger_ignore(app_role, seed_rows, district_1):
    """django-pgtrigger's switch (the ``pgtrigger.ignore`` parameter) is any role's to set; after
    migrate only the owner may skip a trigger with it (parcels.database.trigger_skip_restrict)."""
    role, password = app_role
    append_only = Charge._meta.triggers[0]
    assert append_only.name == "append_only"
    pgid = append_only.get_pgid(Charge)
    with connect_as(role, password) as app:
        app.execute("SELECT set_config('pgtrigger.ignore', %s, false)", ["{" + pgid + "}"])
        with pytest.raises(psycopg.errors.RaiseException, match="Cannot update or delete rows from billing_charge table"):
            app.execute("UPDATE billing_charge SET principal = 0")
        with pytest.raises(psycopg.errors.RaiseException, match="Cannot update or delete rows from billing_charge table"):
            app.execute("DELETE FROM billing_charge")
    # The owner (here the test database's superuser) still may, as tests/test_books.py does.
    with transaction.atomic():
        with pgtrigger.ignore("billing.Charge:append_only"):
            assert Charge.objects.filter(number=2).update(due_date=date(2026, 12, 31)) == 5
        transaction.set_rollback(True)
    assert set(Charge.objects.filter(number=2).values_list("due_date", flat=True)) == {date(2027, 1, 1)}


def test_tables_created_by_later_migrations_come_with_the_same_privileges(app_role):
    role, password = app_role
    with connection.cursor() as cursor:  # the owner, as a later migration would
        cursor.execute("CREATE TABLE later_table (id serial PRIMARY KEY, label text)")
    try:
        with connect_as(role, password) as app:
            app.execute("INSERT INTO later_table (label) VALUES ('nuevo')")
            assert app.execute("SELECT label FROM later_table").fetchall() == [("nuevo",)]
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                app.execute("TRUNCATE later_table")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE later_table")


def test_granting_again_resets_what_was_added_by_hand(app_role):
    role, password = app_role
    with connection.cursor() as cursor:
        cursor.execute(f"GRANT TRUNCATE, TRIGGER ON billing_charge TO {role}")
    code, out, err = run_command("db_grant_app_role", "--role", role)  # as after every migrate
    assert code == 0 and out.startswith(f"updated role {role}:"), err
    with connect_as(role, password) as app:  # the password was left as it was
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute("TRUNCATE billing_charge")
        privileges = app.execute(
            "SELECT privilege_type FROM information_schema.table_privileges"
            " WHERE grantee = current_user AND table_name = 'billing_charge' ORDER BY 1"
        ).fetchall()
        assert [p for (p,) in privileges] == ["DELETE", "INSERT", "SELECT", "UPDATE"]


def app_url(role: str, password: str) -> str:
    """The test database's address as ``role`` (the embedded server's socket directory included)."""
    return database_url({**connection.settings_dict, "USER": role, "PASSWORD": password})


def run_real_entrypoint(database_url: str) -> subprocess.CompletedProcess:
    """deploy/entrypoint.sh as the worker container runs it: real python, production settings."""
    env = production_env(
        APP_ROLE="worker", DEBUG="false", SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="riego.example.pr",
        DATABASE_URL=database_url, MIGRATION_WAIT_TIMEOUT="0", DB_WAIT_TIMEOUT="10",
    )
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
    return subprocess.run(["/bin/sh", str(ENTRYPOINT), "echo", "started"], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=180)


def test_the_entrypoint_starts_the_worker_as_the_app_role(app_role):
    completed = run_real_entrypoint(app_url(*app_role))
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "started"


@pytest.mark.django_db
def test_the_entrypoint_refuses_to_start_the_worker_as_the_owner():
    db = connection.settings_dict
    completed = run_real_entrypoint(database_url({**db, "PASSWORD": ""}))
    assert completed.returncode != 0 and "started" not in completed.stdout
    assert "must connect as the application's own role, not the owner" in completed.stderr
    assert f"{db['USER']} is a superuser" in completed.stderr and "may TRUNCATE" in completed.stderr


def test_a_backup_needs_no_more_than_the_app_role(app_role, tmp_path):
    """pg_dump of the whole database (what ``manage.py backup`` runs) as the application's role."""
    role, password = app_role
    dump = tmp_path / "app.dump"
    pg_dump = backup.pg_tool("pg_dump", backup.server_major())
    completed = subprocess.run(
        [str(pg_dump), "--format=custom", "--file", str(dump), "--dbname", app_url(role, password)],
        capture_output=True, text=True, timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    listing = subprocess.run([str(backup.pg_tool("pg_restore", backup.server_major())), "--list", str(dump)],
                             capture_output=True, text=True, check=True).stdout
    assert "TABLE DATA public billing_ledgerentry" in listing and "TRIGGER public billing_ledgerentry pgtrigger_no_truncate_" in listing


@pytest.mark.django_db
def test_the_grant_refuses_the_owner_itself_odd_names_and_another_database(monkeypatch):
    with pytest.raises(CommandError, match="role running the migrations"):
        run_command("db_grant_app_role", "--role", connection.settings_dict["USER"])
    with pytest.raises(RoleError, match="lower-case"):
        app_role_grant(role='app"; DROP TABLE billing_charge; --')
    monkeypatch.setenv("APP_DATABASE_URL", "postgres://lajas_app:pw@db:5432/some_other_database")
    with pytest.raises(CommandError, match="names database 'some_other_database'"):
        run_command("db_grant_app_role")
    monkeypatch.delenv("APP_DATABASE_URL")
    with pytest.raises(CommandError, match="APP_DATABASE_URL"):
        run_command("db_grant_app_role")


def test_a_role_that_owns_a_table_is_neither_granted_nor_started_as(app_role):
    role, password = app_role
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE owned_by_app (id int); ALTER TABLE owned_by_app OWNER TO {role}")
    try:
        with pytest.raises(CommandError, match="owns tables; it must own nothing"):
            run_command("db_grant_app_role", "--role", role)
        completed = run_real_entrypoint(app_url(role, password))
        assert completed.returncode != 0 and "started" not in completed.stdout
        assert f"{role} owns 1 tables" in completed.stderr
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE owned_by_app")
