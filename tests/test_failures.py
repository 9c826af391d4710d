"""Reliability: a database connection lost in the middle of a payment or a roll job, and a worker
killed while it holds a job, leave nothing half-written, and the work is done exactly once on retry.

The connection is lost the way it is lost in production: another session runs
``pg_terminate_backend`` on the backend serving the write, at a chosen point inside its
transaction, and the write carries on until its next statement fails. These tests commit real
data (``seed_rows``: transactional), so a worker in another process sees it too.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connection, connections
from django.db.models import Sum

from billing import accounts, documents
from billing.models import IssuedDocument, LedgerEntry, Payment, Receipt, ReceiptSeries
from billing.services import counter
from billing.services.installments import roll_finalize
from levy import services as levy_services
from levy.models import FiscalYear, Levy, RollLine
from levy.services import estimate_certify, estimate_enter, levy_compute
from parcels import jobs
from parcels.models import Job, Parcel
from tests.clock import on_day
from tests.conftest import EXAMPLE_1, run_async
from tests.workers import run_worker

YEAR = "2026-2027"
LOST = (OperationalError, InterfaceError)


# --- Helpers ----------------------------------------------------------------------------------


def side_sql(sql: str, params: list[Any] | None = None) -> list[tuple]:
    """Run one statement on a connection of its own (autocommit), as another session would."""
    side = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        with side.cursor() as cursor:
            cursor.execute(sql, params or [])
            return cursor.fetchall() if cursor.description else []
    finally:
        side.close()


def backend_pid() -> int:
    connection.ensure_connection()
    return connection.connection.info.backend_pid


def terminate(pid: int) -> None:
    """Kill a backend from another session and wait (up to 5 s) until it is gone."""
    assert side_sql("SELECT pg_terminate_backend(%s, 5000)", [pid]) == [(True,)]


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return found


def copy_progress(pid: int) -> int:
    """Bytes a backend's COPY has taken in so far (0 when it runs none). Not tuples_processed:
    PostgreSQL 18 (the embedded server) counts rows only as it flushes them, 1,000 at a time."""
    rows = side_sql("SELECT bytes_processed FROM pg_stat_progress_copy WHERE pid = %s", [pid])
    return rows[0][0] if rows else 0


def drop_connection_before(target: Any, name: str, monkeypatch: pytest.MonkeyPatch,
                           when: Callable[..., bool] = lambda *a, **k: True) -> list[int]:
    """Patch ``target.name`` so that, the first time it is called (and ``when`` holds), the
    backend of this thread's connection is terminated before the original runs on."""
    original = getattr(target, name)
    killed: list[int] = []

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not killed and when(*args, **kwargs):
            pid = backend_pid()
            terminate(pid)
            killed.append(pid)
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, wrapper)
    return killed


def after_request() -> None:
    """What Django does when a request ends (and the worker before each job): a connection that
    saw an error and no longer answers is closed, so the next query opens a fresh one."""
    connection.close_if_unusable_or_obsolete()


# --- Payment ----------------------------------------------------------------------------------



@pytest.fixture
def staff(make_user) -> dict[str, Any]:
    return {"authority": make_user("aut", "authority"), "hacienda": make_user("hac", "hacienda"),
            "collector": make_user("col", "collector")}


def certified_estimates(staff: dict[str, Any]) -> None:
    estimate_enter(acting_user=staff["authority"], fiscal_year=YEAR, om_estimate=Decimal("100000.00"),
                   reserve=Decimal("1500.00"), misc_income=Decimal("7500.00"), surplus=Decimal("4000.00"))
    estimate_certify(acting_user=staff["authority"], fiscal_year=YEAR)


@pytest.fixture
def district(seed_rows, make_parcel, owner_a, staff) -> Levy:
    """Worked example 1, finalized on time, its installments issued (data committed)."""
    for parcel_id, gravity in EXAMPLE_1:
        make_parcel(parcel_id, owner_a, gravity=gravity)
    certified_estimates(staff)
    levy_compute(acting_user=staff["hacienda"], fiscal_year=YEAR)
    return roll_finalize(acting_user=staff["hacienda"], fiscal_year=YEAR, today=date(2026, 6, 30))


def pay(staff: dict[str, Any], parcel_id: str, key: str, amount: str = "100.00") -> Receipt:
    with on_day(date(2026, 10, 15)):
        return counter.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id=parcel_id),
                                       amount=Decimal(amount), paid_on=date(2026, 10, 15), idempotency_key=key)


def written() -> dict[str, Any]:
    return {
        "payments": Payment.objects.count(), "ledger": LedgerEntry.objects.count(),
        "receipts": Receipt.objects.count(), "documents": IssuedDocument.objects.count(),
        "last_number": list(ReceiptSeries.objects.values_list("last_number", flat=True)),
        "balance": accounts.ledger_balance(Parcel.objects.get(parcel_id="P4")),
    }


@pytest.mark.parametrize("point", ["ledger written, before the receipt number", "receipt numbered, while its PDF renders"])
def test_a_payment_whose_connection_drops_leaves_nothing_and_is_retried_once(district, staff, monkeypatch, point):
    first = pay(staff, "P1", "counter-1")
    assert first.number == 1
    before = written()
    if point.startswith("ledger"):
        killed = drop_connection_before(counter, "_receipt_issue", monkeypatch)
    else:
        killed = drop_connection_before(documents, "render_receipt", monkeypatch)

    with pytest.raises(LOST):
        pay(staff, "P4", "counter-2", "7000.21")
    assert killed
    after_request()
    monkeypatch.undo()
    assert backend_pid() != killed[0]  # what follows runs on a fresh connection

    assert written() == before  # no payment, ledger line, receipt, PDF or receipt number left behind
    assert not Payment.objects.filter(idempotency_key="counter-2").exists()

    retried = pay(staff, "P4", "counter-2", "7000.21")  # the collector submits the same form again
    assert retried.number == 2  # the number the lost attempt took was given back: no gap
    again = pay(staff, "P4", "counter-2", "7000.21")
    assert again.pk == retried.pk
    payment = Payment.objects.get(idempotency_key="counter-2")
    assert payment.amount.amount == Decimal("7000.21")
    assert LedgerEntry.objects.filter(payment=payment, kind=LedgerEntry.Kind.PAYMENT).count() == 1
    assert IssuedDocument.objects.filter(receipt=retried).count() == 1
    assert accounts.ledger_balance(payment.parcel) == before["balance"] - Decimal("7000.21") + Decimal("69.31")  # ¶12 surcharge
    assert pay(staff, "P2", "counter-3").number == 3
    assert list(Receipt.objects.order_by("number").values_list("number", flat=True)) == [1, 2, 3]


# --- The roll job -----------------------------------------------------------------------------


def roll_district(make_parcel, owner_a, owner_b, count: int) -> None:
    for n in range(count):
        make_parcel(f"LAJ-{n:04d}", owner_a if n % 3 else owner_b, gravity=str(5 + n % 40), pumped=str(n % 7 * 3),
                    credit=str(n % 5 * 10), inclusion="trial" if n % 17 == 0 else "permanent")


def expected_roll() -> dict[str, Any]:
    """The roll computed directly by the rules from the registry as it is now (no writes)."""
    year = FiscalYear.objects.get(label=YEAR)
    result = levy_services.compute(year=year, estimate=levy_services.current_estimate(year))
    return {"lines": len(result.lines), "roll_total": result.roll_total, "roll_net": result.roll_net,
            "total_levy": result.worksheet.total_levy}


def stored_roll() -> dict[str, Any]:
    """The year's draft as stored; there is never more than one."""
    (levy,) = Levy.objects.filter(fiscal_year__label=YEAR)
    sums = RollLine.objects.filter(levy=levy).aggregate(om=Sum("om_charge"), net=Sum("net"))
    assert (levy.roll_total.amount, levy.roll_net.amount) == (sums["om"], sums["net"])
    return {"lines": RollLine.objects.filter(levy=levy).count(), "roll_total": sums["om"], "roll_net": sums["net"],
            "total_levy": levy.total_levy.amount}


def test_a_roll_job_whose_connection_drops_mid_copy_leaves_the_old_draft_and_is_retried(
    seed_rows, make_parcel, owner_a, owner_b, staff, monkeypatch, inline_jobs,
):
    # ~140 bytes a roll line: 600 lines make two 32 kB chunks, so the server holds a whole CopyData
    # message even over a Unix socket (the embedded server), where libpq holds back the last part
    # of its buffer that does not fill an 8 kB block: one chunk alone never arrives whole.
    roll_district(make_parcel, owner_a, owner_b, 600)
    certified_estimates(staff)
    old = levy_compute(acting_user=staff["hacienda"], fiscal_year=YEAR)
    previous = stored_roll()
    make_parcel("LAJ-NEW", owner_b, gravity="321.5")  # the registry moves on: the new roll differs
    assert expected_roll() != previous

    # The last progress report comes from inside the COPY of the roll lines: the new Levy row is
    # written and the server has taken lines in (psycopg sends them in 32 kB chunks), the COPY is
    # not ended. The connection dies right there.
    copied: list[int] = []
    report = jobs.JobProgress.set

    def report_then_drop(self: jobs.JobProgress, done: int, total: int) -> None:
        if done == total > 1 and not copied:
            pid = backend_pid()
            copied.append(wait_for(lambda: copy_progress(pid), "roll lines to reach the server"))
            terminate(pid)
        report(self, done, total)

    # What the second attempt finds when it starts: what the first one left behind.
    found_by_retry: list[tuple] = []
    compute = levy_services.levy_compute

    def look_then_compute(**kwargs: Any) -> Levy:
        if copied:
            record = Job.objects.get()
            found_by_retry.append((stored_roll(), Levy.objects.get().pk, record.status, record.attempts))
        return compute(**kwargs)

    monkeypatch.setattr(jobs.JobProgress, "set", report_then_drop)
    monkeypatch.setattr(levy_services, "levy_compute", look_then_compute)
    job = levy_services.levy_compute_start(acting_user=staff["hacienda"], fiscal_year=YEAR)  # committed: it runs
    assert copied[0] > 0  # bytes of roll lines the server had taken in when the connection died
    [(roll, levy_pk, status, attempts)] = found_by_retry
    assert roll == previous and levy_pk == old.pk  # the old draft, whole
    assert (status, attempts) == (Job.Status.RUNNING, 2)  # taken again from the queue, a second attempt

    job.refresh_from_db()
    assert (job.status, job.attempts, job.error) == (Job.Status.DONE, 2, "")
    assert inline_jobs.statuses() == ["succeeded"]  # one procrastinate job, retried once by its task's strategy
    assert stored_roll() == expected_roll()
    assert job.result["levy_id"] == Levy.objects.get().pk != old.pk


def test_a_roll_job_that_keeps_losing_its_connection_fails_after_max_attempts(
    seed_rows, make_parcel, owner_a, owner_b, staff, monkeypatch, inline_jobs,
):
    roll_district(make_parcel, owner_a, owner_b, 20)
    certified_estimates(staff)
    original = levy_services.copy_insert
    tries: list[int] = []

    def copy_insert_on_a_dying_connection(*args: Any, **kwargs: Any) -> int:
        tries.append(Job.objects.get().attempts)
        terminate(backend_pid())
        return original(*args, **kwargs)

    monkeypatch.setattr(levy_services, "copy_insert", copy_insert_on_a_dying_connection)
    job = levy_services.levy_compute_start(acting_user=staff["hacienda"], fiscal_year=YEAR)
    assert tries == [1, 2, 3] == list(range(1, jobs.MAX_ATTEMPTS + 1))
    job.refresh_from_db()
    assert (job.status, job.attempts) == (Job.Status.FAILED, jobs.MAX_ATTEMPTS) and job.finished_at is not None
    assert "terminating connection" in job.error
    assert inline_jobs.statuses() == ["failed"]
    assert not Levy.objects.exists() and not RollLine.objects.exists()


def test_the_jobs_of_a_silent_worker_go_back_to_the_queue_and_fail_after_their_last_attempt(
    seed_rows, staff, inline_jobs, settings,
):
    """``retry_stalled_jobs``, on procrastinate's in-memory connector: the worker that took three
    computes stopped sending heartbeats; another one is alive and busy with a fourth. (The data is
    committed: the task writes the records from a thread of its own.)"""
    from procrastinate.contrib.django import app
    from procrastinate.job_context import JobContext

    records = {label: levy_services.levy_compute_start(acting_user=staff["hacienda"], fiscal_year=label)
               for label in ("2026-2027", "2027-2028", "2028-2029")}
    connector = inline_jobs.connector
    dead, alive = (run_async(app.job_manager.register_worker()) for _ in range(2))
    connector.workers[dead] -= timedelta(seconds=settings.JOBS_STALLED_AFTER_SECONDS + 1)
    for label, worker_id, attempts in [("2026-2027", dead, 0), ("2027-2028", dead, jobs.MAX_ATTEMPTS - 1),
                                       ("2028-2029", alive, 0)]:
        connector.jobs[records[label].procrastinate_job_id].update(status="doing", worker_id=worker_id, attempts=attempts)
        Job.objects.filter(pk=records[label].pk).update(status=Job.Status.RUNNING, attempts=attempts + 1)

    context = JobContext(app=app, job=None, start_timestamp=time.time(), abort_reason=lambda: None)
    retried = run_async(jobs.retry_stalled_jobs.func(context, int(time.time())))

    rows = {label: connector.jobs[record.procrastinate_job_id] for label, record in records.items()}
    assert retried == [rows["2026-2027"]["id"]]
    assert [(row["status"], row["attempts"]) for row in rows.values()] == [("todo", 1), ("failed", 3), ("doing", 0)]
    for record in records.values():
        record.refresh_from_db()
    assert records["2026-2027"].status == Job.Status.QUEUED  # the page shows it waiting for a worker again
    assert records["2027-2028"].status == Job.Status.FAILED and records["2027-2028"].finished_at is not None
    assert records["2027-2028"].error == "El proceso que hacía este trabajo se detuvo en cada uno de sus 3 intentos."
    assert records["2028-2029"].status == Job.Status.RUNNING  # its worker is alive: left alone


# --- Real workers: connections cut, a worker killed, two workers sharing the queue ------------


def worker_backends(worker: Any) -> list[tuple[int, str]]:
    """The database sessions of a worker process (tests/workers.py names them)."""
    return side_sql("SELECT pid, query FROM pg_stat_activity WHERE application_name = %s", [worker.application_name])


def registered_workers() -> int:
    return side_sql("SELECT count(*) FROM procrastinate_workers")[0][0]


def stop(worker: Any) -> None:
    """SIGTERM, as ``docker stop`` sends it: the worker ends cleanly."""
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0, worker.output()[-3000:]


def test_a_worker_whose_connections_are_cut_reconnects_and_carries_on(jobs_in_database, make_parcel, owner_a, staff):
    for parcel_id, gravity in EXAMPLE_1:
        make_parcel(parcel_id, owner_a, gravity=gravity)
    certified_estimates(staff)
    worker = run_worker()
    try:
        def listening() -> list[tuple[int, str]]:
            assert worker.poll() is None, worker.output()[-3000:]
            backends = worker_backends(worker)
            return backends if registered_workers() == 1 and any(q.startswith("LISTEN") for _pid, q in backends) else []

        backends = wait_for(listening, "the worker to connect and listen", timeout=60)
        # Every connection of the worker is cut, as an operator's pg_terminate_backend does.
        cut = [pid for pid, done in side_sql("SELECT pid, pg_terminate_backend(pid, 5000) FROM unnest(%s::int[]) AS pid",
                                             [[pid for pid, _query in backends]]) if done]
        assert len(cut) >= 2  # its pool and its listener
        # Every connection it had is gone: cut here, or (a listener that was being replaced under
        # load when it was read) ended on its own a moment before.
        assert not {pid for pid, _query in worker_backends(worker)} & {pid for pid, _query in backends}

        job = levy_services.levy_compute_start(acting_user=staff["hacienda"], fiscal_year=YEAR)

        def done() -> bool:
            assert worker.poll() is None, worker.output()[-3000:]  # the same process, still running
            job.refresh_from_db()
            return job.status not in Job.ACTIVE

        wait_for(done, "the worker to run the job", timeout=60)
        assert (job.status, job.attempts) == (Job.Status.DONE, 1), job.error
        # Worked example 1: $90,000.00 subtotal + the 2% margin of ¶3 = $91,800.00 over 5 lines.
        assert job.result["lines"] == 5 and job.result["total_levy"] == "91800.00"
        assert registered_workers() == 1
    finally:
        stop(worker)


def test_a_killed_workers_roll_job_is_taken_again_by_another_worker_within_a_minute(
    jobs_in_database, make_parcel, owner_a, owner_b, staff,
):
    roll_district(make_parcel, owner_a, owner_b, 40)
    certified_estimates(staff)
    name = connection.settings_dict["NAME"]
    # Another session holds a lock on the roll lines' table, so the worker stops inside
    # levy_compute as its COPY of the lines starts (the job running, the new Levy row written,
    # the transaction open) and is killed there.
    blocker = connections.create_connection(DEFAULT_DB_ALIAS)
    blocker.set_autocommit(False)
    with blocker.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {RollLine._meta.db_table} IN SHARE MODE")
    first = run_worker()
    second = None
    try:
        job = levy_services.levy_compute_start(acting_user=staff["hacienda"], fiscal_year=YEAR)

        def blocked_worker() -> list[tuple]:
            assert first.poll() is None, first.output()[-3000:]
            return side_sql("SELECT pid, query FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'", [name])

        ((pid, query),) = wait_for(blocked_worker, "the worker to reach the COPY", timeout=60)
        assert query.startswith("COPY")
        job.refresh_from_db()
        assert (job.status, job.attempts) == (Job.Status.RUNNING, 1)
        second = run_worker()
        wait_for(lambda: registered_workers() == 2, "the second worker to start", timeout=60)
        first.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        assert first.wait(timeout=10) == -signal.SIGKILL
        # The dead worker's backend goes away with it; make sure before looking at what it left.
        side_sql("SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE pid = %s", [pid])
    finally:
        blocker.rollback()
        blocker.close()
        if first.poll() is None:
            first.kill()
            first.wait()
    try:
        job.refresh_from_db()
        assert (job.status, job.attempts) == (Job.Status.RUNNING, 1)  # nobody finished it
        assert not Levy.objects.exists() and not RollLine.objects.exists()  # and it wrote nothing

        def taken_again() -> bool:
            assert second.poll() is None, second.output()[-3000:]
            job.refresh_from_db()
            return job.attempts == 2

        wait_for(taken_again, "the second worker to take the job again", timeout=60)
        retaken = time.monotonic() - killed
        print(f"\nkilled worker's job taken again after {retaken:.1f} s")
        assert retaken < 60
        wait_for(lambda: Job.objects.filter(pk=job.pk, status=Job.Status.DONE).exists() or
                 Job.objects.filter(pk=job.pk, status=Job.Status.FAILED).exists(), "the job to end", timeout=60)
        job.refresh_from_db()
        assert (job.status, job.attempts) == (Job.Status.DONE, 2), job.error
        assert stored_roll() == expected_roll()
        assert job.result["levy_id"] == Levy.objects.get().pk
        # procrastinate's own row: one job, started twice (the retry of the stalled run), succeeded
        # (procrastinate counts an attempt when a run is retried and when it ends).
        assert side_sql("SELECT status, attempts FROM procrastinate_jobs WHERE id = %s", [job.procrastinate_job_id]) == [
            ("succeeded", 2)]
        assert side_sql("SELECT count(*) FROM procrastinate_events WHERE job_id = %s AND type = 'started'",
                        [job.procrastinate_job_id]) == [(2,)]
    finally:
        stop(second)


def test_two_workers_run_twenty_jobs_each_exactly_once(jobs_in_database, staff):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from parcels.models import ImportUpload
    from parcels.services import import_upload_create

    header = "parcel_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since,credit_percent\n"
    workers = [run_worker(), run_worker()]
    try:
        uploads = [import_upload_create(acting_user=staff["authority"], file=SimpleUploadedFile(
            f"p{n}.csv", f"{header}U-{n},Dueño {n},,private,{n}.5,0,permanent,2001-01-01,0\n".encode(), "text/csv"))
            for n in range(1, 21)]

        def all_done() -> bool:
            for worker in workers:
                assert worker.poll() is None, worker.output()[-3000:]
            return not Job.objects.filter(status__in=Job.ACTIVE).exists()

        wait_for(all_done, "the twenty jobs", timeout=120)
        assert registered_workers() == 2
        records = Job.objects.filter(pk__in=[upload.job_id for upload in uploads])
        assert sorted(records.values_list("status", "attempts")) == [(Job.Status.DONE, 1)] * 20
        assert sorted(ImportUpload.objects.values_list("status", "summary__created")) == [("ready", 1)] * 20
        ids = [record.procrastinate_job_id for record in records]
        assert side_sql("SELECT status, attempts, count(*) FROM procrastinate_jobs WHERE id = ANY(%s) GROUP BY 1, 2",
                        [ids]) == [("succeeded", 1, 20)]
        started = side_sql("SELECT job_id, count(*) FROM procrastinate_events WHERE job_id = ANY(%s) AND type = 'started' "
                           "GROUP BY job_id", [ids])
        assert sorted(count for _job, count in started) == [1] * 20  # each taken by one worker, once
    finally:
        for worker in workers:
            stop(worker)
