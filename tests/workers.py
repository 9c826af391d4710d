"""A real job worker (``manage.py run_worker``) in a process of its own, on the test database,
for the tests that kill one. The test's data must be committed (``seed_rows``: transactional)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from tests.databases import database_url

ROOT = Path(__file__).resolve().parent.parent


def run_worker(*args: str) -> subprocess.Popen:
    """Start ``manage.py run_worker *args`` in its own process group (``os.killpg`` kills it with
    the rendering processes it may have started), sharing this process's MEDIA_ROOT."""
    env = {**os.environ, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "lajas_portal.settings_test",
           "TEST_MEDIA_ROOT": str(settings.MEDIA_ROOT)}
    return subprocess.Popen([sys.executable, "manage.py", "run_worker", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
