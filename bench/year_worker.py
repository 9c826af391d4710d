"""A job worker for ``bench/year.py`` on the year's simulated clock: ``manage.py run_worker`` in
this process, with ``django.utils.timezone.now`` moved by ``YEAR_CLOCK_OFFSET`` seconds (the
offset the year's own process uses), so what the worker records (bills, parts, job rows) is dated
on the simulated day like everything else, and a later ``verify_books`` reads one timeline.

Only the periodic task the year needs stays scheduled (``retry_stalled_jobs``: a killed worker's
batch is given to the next one); the nightly books check, backup and reminders, which follow the
real clock, would record rows dated outside the simulated year."""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lajas_portal.settings_test")


def main() -> None:
    import django
    from django.utils import timezone

    offset = timedelta(seconds=float(os.environ.get("YEAR_CLOCK_OFFSET", "0")))
    real_now = timezone.now
    timezone.now = lambda: real_now() + offset
    django.setup()
    from django.core.management import call_command
    from procrastinate.contrib.django import app

    periodic = app.periodic_registry.periodic_tasks
    for key in [key for key in periodic if key[0] != "retry_stalled_jobs"]:
        del periodic[key]
    call_command("run_worker", *sys.argv[1:])


if __name__ == "__main__":
    main()
