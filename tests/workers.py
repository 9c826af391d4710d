"""A real job worker (``manage.py run_worker``) in a process of its own, on the test database,
for the tests that kill one. The test's data must be committed (``seed_rows``: transactional)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def database_url() -> str:
    """The test database's address, over TCP or the embedded server's socket directory."""
    db = connection.settings_dict
    user = quote(db["USER"] or "")
    password = f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else ""
    host = db["HOST"] or "127.0.0.1"
    if host.startswith("/"):
        return f"postgresql://{user}{password}@/{quote(db['NAME'])}?host={quote(host)}"
    return f"postgres://{user}{password}@{host}:{db['PORT'] or 5432}/{quote(db['NAME'])}"


def run_worker(*args: str) -> subprocess.Popen:
    """Start ``manage.py run_worker *args`` in its own process group (``os.killpg`` kills it with
    the rendering processes it may have started), sharing this process's MEDIA_ROOT."""
    env = {**os.environ, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "lajas_portal.settings_test",
           "TEST_MEDIA_ROOT": str(settings.MEDIA_ROOT)}
    return subprocess.Popen([sys.executable, "manage.py", "run_worker", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
