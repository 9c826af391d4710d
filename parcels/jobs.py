"""Long runs (CSV imports, rolls, bulk printing) as procrastinate tasks, each with a progress record.

procrastinate (``procrastinate.contrib.django``, tables ``procrastinate_*``) queues the work and
runs it in workers (``manage.py run_worker``, as many as wanted); ``Job`` is our record of one run,
for the page that waits on it: status, progress, result or error, who asked it and when.

- ``@job_task("kind")`` makes a handler ``(job, progress) -> dict`` the procrastinate task ``kind``.
  ``job_defer`` writes the record and defers the task in the caller's transaction (the Django
  connector uses the request's connection): both are committed, or neither.
- A record with a ``key`` (a roll's fiscal year, a bill batch's semester) runs alone: a second
  one is refused while the first is queued or running (``JobBusy`` says which one, who asked it,
  since when and how far it is), backed by a partial unique constraint; the procrastinate job
  carries the key as its ``lock`` too, so two runs of the same key never overlap.
- A worker sends a heartbeat every ``JOBS_HEARTBEAT_SECONDS``. ``retry_stalled_jobs`` (a periodic
  task, deferred by every worker) gives the jobs of a worker silent for
  ``JOBS_STALLED_AFTER_SECONDS`` (killed, its machine gone) to another worker; a job that loses
  its database connection goes back to the queue too. Either way a job runs at most
  ``MAX_ATTEMPTS`` times, and the handlers resume without duplicating work.
- ``worker_run`` is the worker: when it loses its database it connects again and carries on.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import traceback
from collections.abc import Callable
from typing import Any

import psycopg
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import (
    DEFAULT_DB_ALIAS,
    IntegrityError,
    InterfaceError,
    OperationalError,
    connection,
    connections,
    transaction,
)
from django.db.models import F
from django.utils import formats, timezone
from django.utils.translation import gettext as _
from procrastinate import RetryStrategy, worker
from procrastinate import exceptions as procrastinate_exceptions
from procrastinate import jobs as procrastinate_jobs
from procrastinate.contrib.django import app
from procrastinate.contrib.django.django_connector import DjangoConnector

from .models import Job

logger = logging.getLogger(__name__)
MAX_ATTEMPTS = 3
# A lost connection (or a shutdown, a deadlock, a timeout) says nothing about the job, whose
# transaction was rolled back: it is tried again. COPY raises psycopg's errors unwrapped.
TRANSIENT = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)
RECONNECT_PAUSE = 2.0  # seconds between two attempts of a worker to reach its database again


class JobBusy(Exception):
    """Another record of the same kind and key is queued or running."""

    def __init__(self, job: Job, what: str) -> None:
        self.job = job
        who = job.created_by.get_full_name() or job.created_by.get_username()
        since = formats.date_format(timezone.localtime(job.started_at or job.created_at), "d/m/Y H:i")
        super().__init__(_("Ya hay un proceso en curso para %(what)s: lo pidió %(who)s el %(since)s y va por el "
                           "%(percent)s %% (%(status)s). Espere a que termine.")
                         % {"what": what, "who": who, "since": since, "percent": job.percent,
                            "status": job.get_status_display().lower()})


def job_active(kind: str, key: str) -> Job | None:
    return Job.objects.select_related("created_by").filter(kind=kind, key=key, status__in=Job.ACTIVE).first()


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


Handler = Callable[[Job, JobProgress], dict]


def job_task(kind: str) -> Callable[[Handler], Handler]:
    """Register ``handler`` as the procrastinate task ``kind`` (run by ``job_run``). procrastinate
    retries it after a lost connection, as ``job_run`` records it (``MAX_ATTEMPTS`` runs)."""

    def register(handler: Handler) -> Handler:
        @app.task(name=kind, retry=RetryStrategy(max_attempts=MAX_ATTEMPTS - 1, retry_exceptions=set(TRANSIENT)))
        def run(job_id: int) -> dict:
            return job_run(job_id, handler)

        return handler

    return register


def job_defer(*, kind: str, payload: dict[str, Any], acting_user: Any, key: str | None = None, what: str = "",
              queue: str | None = None) -> Job:
    """Write the record and defer its task, in the caller's transaction. With a ``key``, raise
    ``JobBusy`` (``what`` names the work in its message) while another one of it is active."""
    if key is not None and (running := job_active(kind, key)) is not None:
        raise JobBusy(running, what)
    try:
        with transaction.atomic():
            job = Job.objects.create(kind=kind, key=key, payload=payload, created_by=acting_user)
    except IntegrityError:  # the other one was written meanwhile
        running = job_active(kind, key or "")
        if running is None:
            raise
        raise JobBusy(running, what) from None
    options: dict[str, Any] = {"lock": f"{kind}:{key}"} if key is not None else {}
    if queue:
        options["queue"] = queue
    job.procrastinate_job_id = app.tasks[kind].configure(**options).defer(job_id=job.pk)
    job.save(update_fields=["procrastinate_job_id"])
    return job


def job_run(job_id: int, handler: Handler) -> dict:
    """Run one record's handler; the outcome is stored on the record, and an error is raised on
    to procrastinate, which tries a transient one again."""
    Job.objects.filter(pk=job_id).update(status=Job.Status.RUNNING, started_at=timezone.now(), attempts=F("attempts") + 1,
                                         error="")
    job = Job.objects.select_related("created_by").get(pk=job_id)
    progress = JobProgress(job)
    try:
        result = handler(job, progress)
    except Exception as exc:
        logger.exception("job %s (%s) failed on attempt %s", job.pk, job.kind, job.attempts)
        transient = isinstance(exc, TRANSIENT)
        retry = transient and job.attempts < MAX_ATTEMPTS
        if transient and not connection.in_atomic_block:  # the status is written on a fresh connection
            connection.errors_occurred = True
            connection.close_if_unusable_or_obsolete()
        Job.objects.filter(pk=job.pk).update(
            status=Job.Status.QUEUED if retry else Job.Status.FAILED, error=f"{exc}\n{traceback.format_exc(limit=3)}",
            finished_at=None if retry else timezone.now(),
        )
        raise
    else:
        result = result or {}
        Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, result=result, finished_at=timezone.now())
        return result
    finally:
        progress.close()


# --- Jobs of dead workers ----------------------------------------------------------------------


def _stalled_record(procrastinate_job_id: int, *, retried: bool) -> None:
    records = Job.objects.filter(procrastinate_job_id=procrastinate_job_id, status__in=Job.ACTIVE)
    if retried:
        records.update(status=Job.Status.QUEUED)
    else:
        records.update(status=Job.Status.FAILED, finished_at=timezone.now(),
                       error=_("El proceso que hacía este trabajo se detuvo en cada uno de sus %(n)s intentos.")
                       % {"n": MAX_ATTEMPTS})


@app.periodic(cron=f"* * * * * */{settings.JOBS_STALLED_CHECK_SECONDS}", periodic_id="retry_stalled_jobs")
@app.task(name="retry_stalled_jobs", queueing_lock="retry_stalled_jobs", pass_context=True)
async def retry_stalled_jobs(context: Any, timestamp: int) -> list[int]:
    """The jobs of workers whose heartbeat stopped more than ``JOBS_STALLED_AFTER_SECONDS`` ago go
    back to the queue for another worker (their handlers resume), up to ``MAX_ATTEMPTS`` runs;
    after the last one the job and its record are failed, not left running."""
    manager = context.app.job_manager
    retried = []
    for stalled in await manager.get_stalled_jobs(seconds_since_heartbeat=settings.JOBS_STALLED_AFTER_SECONDS):
        if stalled.task_name == "retry_stalled_jobs":  # the next one is deferred on time anyway
            await manager.finish_job(stalled, status=procrastinate_jobs.Status.FAILED, delete_job=False)
            continue
        again = stalled.attempts + 1 < MAX_ATTEMPTS
        logger.warning("job %s (%s): its worker %s stopped; %s", stalled.id, stalled.task_name, stalled.worker_id,
                       "queued again" if again else "failed after its last attempt")
        if again:
            await manager.retry_job(stalled)
            retried.append(stalled.id)
        else:
            await manager.finish_job(stalled, status=procrastinate_jobs.Status.FAILED, delete_job=False)
        await sync_to_async(_stalled_record)(stalled.id, retried=again)
    return retried


# --- The worker --------------------------------------------------------------------------------


async def _serve(worker_app: Any, *, once: bool, queues: list[str] | None) -> None:
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    stop = asyncio.ensure_future(stopping.wait())
    options = {**worker_app.worker_defaults, "wait": not once, "install_signal_handlers": False, "queues": queues}
    while True:
        runner = worker.Worker(app=worker_app, **options)
        run = asyncio.ensure_future(runner.run())
        await asyncio.wait({run, stop}, return_when=asyncio.FIRST_COMPLETED)
        if stopping.is_set():  # SIGTERM (docker stop): the job at hand ends first
            runner.stop()
            await asyncio.gather(run, return_exceptions=True)
            return
        failure = run.exception()
        if failure is None and once:
            return
        # The worker stopped by itself: it lost its database (a side task failed) or never
        # reached it. Start a new one, registered afresh, once the database answers.
        logger.warning("worker stopped (%r); connecting again in %s s", failure, RECONNECT_PAUSE)
        await asyncio.wait({stop}, timeout=RECONNECT_PAUSE)
        if stopping.is_set():
            return


def worker_run(*, once: bool = False, queues: list[str] | None = None) -> None:
    """Run jobs (of ``queues``, default all) until SIGTERM/SIGINT, or with ``once`` until there
    are none left, on a connection pool of its own (psycopg), reconnecting whenever the database
    goes away."""
    connector = app.connector
    worker_connector = connector.get_worker_connector() if isinstance(connector, DjangoConnector) else connector

    async def main() -> None:
        with app.replace_connector(worker_connector) as worker_app:
            while True:
                try:
                    async with worker_app.open_async():
                        await _serve(worker_app, once=once, queues=queues)
                    return
                except (procrastinate_exceptions.ConnectorException, *TRANSIENT) as exc:
                    logger.warning("worker cannot reach its database (%s); trying again in %s s", exc, RECONNECT_PAUSE)
                    await asyncio.sleep(RECONNECT_PAUSE)

    asyncio.run(main())
