"""A small database-backed job queue for long runs (imports, rolls, bulk printing).

``job_enqueue`` stores a row; the worker (``manage.py run_worker``) claims rows with
``SELECT … FOR UPDATE SKIP LOCKED`` so two workers never take the same job. Handlers are
registered by kind with ``@job_handler("kind")`` and report progress through ``JobProgress``.
A job whose worker dies is left ``running``; the worker takes it again after ``STALE_AFTER``.
A job that loses its database connection goes back to the queue. Either way it is tried at most
``MAX_ATTEMPTS`` times, and handlers are written to resume without duplicating work.
With ``settings.JOBS_RUN_INLINE`` (tests) a job runs right after its transaction commits.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import (
    DEFAULT_DB_ALIAS,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    connections,
    transaction,
)
from django.utils import timezone

from .models import Job

logger = logging.getLogger(__name__)
HANDLERS: dict[str, Callable[[Job, JobProgress], dict]] = {}
STALE_AFTER = timedelta(minutes=10)
MAX_ATTEMPTS = 3


class JobProgress:
    """Handlers call ``progress.set(done, total)``; it writes at most every few percent.

    Progress goes through a connection of its own in autocommit, so the page that waits sees it
    while the handler's own transaction (which may be in the middle of a COPY) is still open."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self._last = -1
        self._connection = None

    def set(self, done: int, total: int) -> None:
        step = max(1, total // 50)
        if done == total or done - self._last >= step:
            if self._connection is None:
                self._connection = connections.create_connection(DEFAULT_DB_ALIAS)
            with self._connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {Job._meta.db_table} SET progress = %s, total = %s WHERE id = %s", [done, total, self.job.pk]
                )
            self._last = done

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


def job_handler(kind: str) -> Callable:
    def register(function: Callable[[Job, JobProgress], dict]) -> Callable[[Job, JobProgress], dict]:
        HANDLERS[kind] = function
        return function

    return register


def job_enqueue(*, kind: str, payload: dict[str, Any], acting_user: Any) -> Job:
    job = Job.objects.create(kind=kind, payload=payload, created_by=acting_user)
    if settings.JOBS_RUN_INLINE:
        transaction.on_commit(lambda: job_run(job.pk))
    return job


def job_claim() -> Job | None:
    """Take the oldest queued job, or a running one whose worker died long ago."""
    stale = timezone.now() - STALE_AFTER
    with transaction.atomic():
        # Its worker died on the last attempt: failed, not left ``running`` for the page to wait on.
        Job.objects.filter(status=Job.Status.RUNNING, started_at__lt=stale, attempts__gte=MAX_ATTEMPTS).update(
            status=Job.Status.FAILED, error=f"the worker stopped during each of {MAX_ATTEMPTS} attempts",
            finished_at=timezone.now(),
        )
        job = (
            Job.objects.select_for_update(skip_locked=True)
            .filter(status=Job.Status.QUEUED)
            .order_by("created_at")
            .first()
        ) or (
            Job.objects.select_for_update(skip_locked=True)
            .filter(status=Job.Status.RUNNING, started_at__lt=stale, attempts__lt=MAX_ATTEMPTS)
            .order_by("created_at")
            .first()
        )
        if job is None:
            return None
        job.status = Job.Status.RUNNING
        job.started_at = timezone.now()
        job.attempts += 1
        job.save(update_fields=["status", "started_at", "attempts"])
        return job


def job_run(job_id: int) -> Job:
    """Run one job to the end; failures are stored on the job, never raised to the caller."""
    job = Job.objects.get(pk=job_id)
    if job.status == Job.Status.QUEUED:
        job.attempts += 1
        Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, started_at=timezone.now(), attempts=job.attempts)
    progress = JobProgress(job)
    try:
        handler = HANDLERS.get(job.kind)
        if handler is None:
            raise LookupError(f"no handler for job kind {job.kind!r}")
        result = handler(job, progress)
    except Exception as exc:  # the job records its own failure for the page that waits on it
        logger.exception("job %s (%s) failed", job.pk, job.kind)
        # A lost connection (or a shutdown, deadlock, timeout) says nothing about the job, whose
        # transaction was rolled back: it goes back to the queue, up to MAX_ATTEMPTS, and its
        # status is written on a fresh connection. COPY raises psycopg's errors unwrapped.
        database = connection.Database
        transient = (OperationalError, InterfaceError, database.OperationalError, database.InterfaceError)
        retry = isinstance(exc, transient) and job.attempts < MAX_ATTEMPTS
        if isinstance(exc, transient) and not connection.in_atomic_block:
            connection.errors_occurred = True
            connection.close_if_unusable_or_obsolete()
        Job.objects.filter(pk=job.pk).update(
            status=Job.Status.QUEUED if retry else Job.Status.FAILED, error=f"{exc}\n{traceback.format_exc(limit=3)}",
            finished_at=None if retry else timezone.now(),
        )
    else:
        Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, result=result or {}, finished_at=timezone.now())
    finally:
        progress.close()
    job.refresh_from_db()
    return job


def worker_loop(*, once: bool = False, idle_sleep: float = 1.0) -> int:
    """Take and run jobs until stopped (or until the queue is empty with ``once``).

    SIGTERM/SIGINT let the job at hand finish, then the loop ends: a stopped container does not
    leave a job half done for the stale-job timeout to pick up."""
    import signal
    import time

    stopping = []

    def stop(signum: int, frame: Any) -> None:
        stopping.append(signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    done = 0
    while not stopping:
        close_old_connections()
        job = job_claim()
        if job is None:
            if once:
                return done
            time.sleep(idle_sleep)
            continue
        job_run(job.pk)
        done += 1
    return done
