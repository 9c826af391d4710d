"""How a test's child process (a worker, ``manage.py``, ``pg_restore``) reaches the database the test
uses: the machine's server over TCP or the embedded server's Unix socket, whatever PGHOST/PGPORT
say in the environment the tests were started from."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from django.db import connection


def database_url(settings_dict: dict[str, Any] | None = None, name: str | None = None) -> str:
    """A ``DATABASE_URL`` that ``dj_database_url`` parses back into the same HOST, PORT, USER,
    PASSWORD and NAME (default: the test database). A socket directory goes in the host part,
    percent-encoded (``postgres://postgres@%2Fpath%2Fto%2Fdata:5432/test_lajas``): in a
    ``?host=`` query it would land in OPTIONS with an empty PORT, and the child would take PGPORT's."""
    db = settings_dict if settings_dict is not None else connection.settings_dict
    user = quote(db.get("USER") or "", safe="")
    password = f":{quote(db['PASSWORD'], safe='')}" if db.get("PASSWORD") else ""
    host = quote(str(db.get("HOST") or "127.0.0.1"), safe="")
    return f"postgres://{user}{password}@{host}:{db.get('PORT') or 5432}/{quote(name or db['NAME'], safe='')}"


def libpq_env(settings_dict: dict[str, Any] | None = None, name: str | None = None) -> dict[str, str]:
    """PGHOST, PGPORT, PGUSER, PGDATABASE (and PGPASSWORD) for libpq programs (psql, pg_restore)."""
    db = settings_dict if settings_dict is not None else connection.settings_dict
    env = {"PGHOST": str(db.get("HOST") or "127.0.0.1"), "PGPORT": str(db.get("PORT") or 5432),
           "PGUSER": str(db.get("USER") or ""), "PGDATABASE": name or str(db["NAME"])}
    if db.get("PASSWORD"):
        env["PGPASSWORD"] = str(db["PASSWORD"])
    return env


def child_env(settings_dict: dict[str, Any] | None = None, name: str | None = None, **variables: str) -> dict[str, str]:
    """This process's environment pointed at the test database (or ``name`` on its server):
    ``DATABASE_URL`` and the PG* variables, plus ``variables``."""
    return {**os.environ, **libpq_env(settings_dict, name), "DATABASE_URL": database_url(settings_dict, name), **variables}
