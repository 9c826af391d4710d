"""``manage.py backup``: a dump of committed books (built through the services) restored with
``pg_restore`` into a fresh database passes ``verify_books`` in another process with identical
control totals, and its media tar brings the bulk-printing parts back."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from billing import books
from billing.management.commands import backup
from billing.models import BillBatchPart, IssuedDocument, SeizureStep
from tests.databases import child_env
from tests.test_books import build_books, district_1, staff  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parent.parent


def admin_connection() -> psycopg.Connection:
    params = connection.get_connection_params()
    params["dbname"] = "postgres"
    return psycopg.connect(**params, autocommit=True)


@pytest.fixture
def fresh_database():
    """An empty database beside the test database, dropped afterwards."""
    name = f"{connection.settings_dict['NAME']}_restored"
    with admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    yield name
    with admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600, check=False)


@pytest.mark.django_db(transaction=True)
def test_a_backup_restores_into_a_fresh_database_with_identical_control_totals(
    document_store, seed_rows, district_1, staff, tmp_path, fresh_database,  # noqa: F811
):
    # The issued PDFs go to a document store outside MEDIA_ROOT (as on S3): the backup adds the files
    # the dumped rows name to the media tar, and the restore finds them under MEDIA_ROOT/documents.
    build_books(staff)
    out = io.StringIO()
    call_command("billing", "bulk-bills", "--fiscal-year", "2026-2027", "--installment", "2", "--user", "hac",
                 "--processes", "1", stdout=out)
    part = BillBatchPart.objects.get()
    assert books.verify() == []
    totals = books.control_totals()
    assert totals["bulk-printing parts"] == "1" and totals["payments"] == "5 (45130.21)"

    out = io.StringIO()
    call_command("backup", "--out", str(tmp_path / "backups") + os.sep, stdout=out)
    lines = out.getvalue().splitlines()
    dump = Path(lines[0].split()[1])
    media = Path(lines[1].split()[1])
    saved = Path(lines[2].split()[2])
    assert dump.parent == tmp_path / "backups" and dump.name.startswith(f"{connection.settings_dict['NAME']}-")
    assert dump.suffix == ".dump" and dump.read_bytes()[:5] == b"PGDMP"  # custom format
    assert media.name == dump.name.removesuffix(".dump") + ".media.tar.gz"
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in (dump, media, saved))
    assert json.loads(saved.read_text())["totals"] == totals and json.loads(saved.read_text())["findings"] == []
    assert "  documents digest" in out.getvalue() and totals["documents digest"] in out.getvalue()
    assert not list(dump.parent.glob("*.partial"))

    # The documented restore: pg_restore of the same major version into a fresh database, the media
    # untarred, migrate, verify_books comparing with the saved totals, in other processes.
    major = backup.server_major()
    pg_restore = backup.pg_tool("pg_restore", major)
    args, env = backup.connection_arguments(connection.settings_dict)
    restored = subprocess.run([str(pg_restore), "--no-owner", "--no-privileges", "--exit-on-error", *args,
                               "--dbname", fresh_database, str(dump)], env=env, capture_output=True, text=True, check=False)
    assert restored.returncode == 0, restored.stderr
    media_root = tmp_path / "restored"
    media_root.mkdir()
    with tarfile.open(media) as archive:
        archive.extractall(media_root, filter="data")
    restored_part = media_root / "media" / part.pdf.name
    assert restored_part.read_bytes() == (Path(settings.MEDIA_ROOT) / part.pdf.name).read_bytes()
    issued = [*IssuedDocument.objects.order_by("pk"), *SeizureStep.objects.order_by("pk")]
    assert {document.kind for document in issued[:-1]} >= {"receipt", "bill", "certificate"} and issued[-1].number.startswith("NE-")
    for document in issued:  # every issued PDF is in the tar, byte-identical to its hash (issue 20)
        restored_file = media_root / "media" / document.pdf.name
        assert hashlib.sha256(restored_file.read_bytes()).hexdigest() == document.sha256, document.pdf.name
    env = child_env(name=fresh_database, DJANGO_SETTINGS_MODULE="lajas_portal.settings",
                    SECRET_KEY="restore-test-key-" + "x" * 40, MEDIA_ROOT=str(media_root / "media"), DEBUG="false")
    migrated = manage("migrate", "--no-input", env=env)
    assert migrated.returncode == 0 and "No migrations to apply." in migrated.stdout, migrated.stdout + migrated.stderr
    checked = manage("verify_books", "--compare", str(saved), "--format", "json", env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert report["ok"] and report["findings"] == [] and report["totals"] == totals
    checked = manage("verify_books", env=env)
    assert checked.returncode == 0 and checked.stdout.startswith("books balance; control totals:"), checked.stderr

    # Without the media the restored books say which part is missing.
    env["MEDIA_ROOT"] = str(tmp_path / "empty")
    checked = manage("verify_books", env=env)
    assert checked.returncode == 1
    lines = checked.stdout.splitlines()
    assert lines[-1] == f"documents: bulk-printing part file {part.pdf.name}: missing"
    receipt = IssuedDocument.objects.filter(kind="receipt").earliest("pk")
    step = SeizureStep.objects.get()
    assert f"documents: receipt {receipt.number}: its file {receipt.pdf.name} is missing from the document store" in lines
    assert f"documents: seizure notice {step.number}: its file {step.pdf.name} is missing from the document store" in lines
    assert len(lines) == min(len(issued), books.DEFAULT_LIMIT + 1) + 1


@pytest.mark.django_db
def test_backup_refuses_without_a_pg_dump_of_the_server_version(tmp_path, monkeypatch):
    fake = tmp_path / "pg_dump"
    fake.write_text("#!/bin/sh\necho 'pg_dump (PostgreSQL) 9.6.24'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(backup, "tool_candidates", lambda name, major: [tmp_path / "missing" / name, fake])
    major = backup.server_major()
    with pytest.raises(CommandError) as refused:
        call_command("backup", "--out", str(tmp_path / "backups"))
    message = str(refused.value)
    assert message.startswith(f"no pg_dump of PostgreSQL {major} (the server's major version) found; looked at ")
    assert f"{tmp_path / 'missing' / 'pg_dump'}: missing" in message and f"{fake}: PostgreSQL 9" in message
    assert not (tmp_path / "backups").exists()


def test_client_programs_report_their_major_version(tmp_path):
    fake = tmp_path / "pg_restore"
    fake.write_text("#!/bin/sh\necho 'pg_restore (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)'\n")
    fake.chmod(0o755)
    assert backup.tool_major(fake) == 15
    assert backup.tool_major(tmp_path / "nothing") is None


def test_connection_arguments_keep_the_password_off_the_command_line():
    args, env = backup.connection_arguments({"HOST": "db", "PORT": 5432, "USER": "lajas", "PASSWORD": "s3cret",
                                             "OPTIONS": {"sslmode": "require"}})
    assert args == ["--host", "db", "--port", "5432", "--username", "lajas"]
    assert env["PGPASSWORD"] == "s3cret" and env["PGSSLMODE"] == "require" and "s3cret" not in args
