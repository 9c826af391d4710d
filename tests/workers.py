"""A real job worker (``manage.py run_worker``, a procrastinate worker) in a process of its own,
on the test database, for the tests that kill one or cut its connections. The test's data and its
jobs must be committed (``jobs_in_database``: transactional, jobs in procrastinate's tables)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from django.conf import settings

from tests.databases import database_url

ROOT = Path(__file__).resolve().parent.parent


def run_worker(*args: str) -> subprocess.Popen:
    """Start ``manage.py run_worker *args`` in its own process group (``os.killpg`` kills it with
    the rendering processes it may have started), sharing this process's MEDIA_ROOT. Its output
    goes to a file (``worker.output()``), which never fills up and blocks it as a pipe would. Its
    database sessions carry ``worker.application_name`` (pg_stat_activity.application_name)."""
    application_name = f"test-worker-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "lajas_portal.settings_test",
           "TEST_MEDIA_ROOT": str(settings.MEDIA_ROOT), "PGAPPNAME": application_name}
    log = tempfile.NamedTemporaryFile(prefix="worker-", suffix=".log", delete=False)
    worker = subprocess.Popen([sys.executable, "manage.py", "run_worker", *args], cwd=ROOT, env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    worker.application_name = application_name  # type: ignore[attr-defined]
    worker.output = lambda: Path(log.name).read_text(errors="replace")  # type: ignore[attr-defined]
    return worker
