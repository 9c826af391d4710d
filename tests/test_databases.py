"""A test's child processes reach the test's own database (the machine's server or the embedded
one), even when PGHOST and PGPORT point elsewhere; ``backup`` takes the embedded server's pg_dump."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import dj_database_url
import pytest
from django.conf import settings
from django.db import connection

from billing.management.commands import backup
from tests.databases import child_env, database_url, libpq_env

ROOT = Path(__file__).resolve().parent.parent
PROBE = ("import django; django.setup(); from django.db import connection; c = connection.cursor(); "
         "c.execute('SELECT current_database(), current_setting(%s)', ['data_directory']); print(*c.fetchone())")


@pytest.mark.parametrize("host, port", [("/work/checkout/.pgdata/data", 5432), ("db.example.pr", 6543)])
def test_database_url_parses_back_into_the_same_settings(host, port):
    db = {"USER": "lajas", "PASSWORD": "p@ss/word", "HOST": host, "PORT": port, "NAME": "test_lajas"}
    parsed = dj_database_url.parse(database_url(db))
    assert {key: parsed[key] for key in db} == db
    assert dj_database_url.parse(database_url(db, "test_lajas_restored"))["NAME"] == "test_lajas_restored"
    assert libpq_env(db) == {"PGHOST": host, "PGPORT": str(port), "PGUSER": "lajas", "PGDATABASE": "test_lajas",
                             "PGPASSWORD": "p@ss/word"}


@pytest.mark.django_db
def test_a_child_process_reaches_the_test_database_whatever_pghost_says(monkeypatch):
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database(), current_setting('data_directory')")
        expected = " ".join(cursor.fetchone())
    monkeypatch.setenv("PGHOST", "/nonexistent")
    monkeypatch.setenv("PGPORT", "1")
    env = child_env(DJANGO_SETTINGS_MODULE="lajas_portal.settings_test")
    child = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == expected and expected.startswith(connection.settings_dict["NAME"] + " ")

    psql = backup.pg_tool("psql", backup.server_major())
    shown = subprocess.run([str(psql), "--no-psqlrc", "-Atc", "SELECT current_database()"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and shown.stdout.strip() == connection.settings_dict["NAME"], shown.stderr


@pytest.mark.django_db
def test_backup_takes_the_wheels_pg_dump_first_only_for_the_embedded_server(settings):
    wheel = backup.embedded_bin_dir()
    assert wheel is not None and (wheel / "pg_dump").is_file()
    settings.EMBEDDED_DATABASE = True
    assert backup.tool_candidates("pg_dump", 18)[:2] == [wheel / "pg_dump", Path("/usr/lib/postgresql/18/bin/pg_dump")]
    settings.EMBEDDED_DATABASE = False
    assert backup.tool_candidates("pg_dump", 15)[:2] == [Path("/usr/lib/postgresql/15/bin/pg_dump"), wheel / "pg_dump"]


@pytest.mark.skipif(not settings.EMBEDDED_DATABASE, reason="the embedded server is not in use (DATABASE_URL is set)")
@pytest.mark.django_db
def test_the_embedded_server_is_named_by_socket_directory_and_port():
    db = connection.settings_dict
    assert Path(db["HOST"]).is_absolute() and isinstance(db["PORT"], int)
    assert (Path(db["HOST"]) / f".s.PGSQL.{db['PORT']}").is_socket()
    assert backup.pg_tool("pg_dump", backup.server_major()).parent == backup.embedded_bin_dir()
