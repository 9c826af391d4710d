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
from django.db.models import F, Sum
from django.utils import timezone

from billing import documents, services
from billing.models import IssuedDocument, LedgerEntry, Payment, Receipt, ReceiptSeries
from levy import services as levy_services
from levy.models import FiscalYear, Levy, RollLine
from levy.services import estimate_certify, estimate_enter, levy_compute, roll_finalize
from levy.tasks import LEVY_COMPUTE
from parcels import jobs
from parcels.models import Job, Parcel
from tests.conftest import EXAMPLE_1
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
    return services.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id=parcel_id),
                                   amount=Decimal(amount), paid_on=date(2026, 10, 15), idempotency_key=key)


def written() -> dict[str, Any]:
    return {
        "payments": Payment.objects.count(), "ledger": LedgerEntry.objects.count(),
        "receipts": Receipt.objects.count(), "documents": IssuedDocument.objects.count(),
        "last_number": list(ReceiptSeries.objects.values_list("last_number", flat=True)),
        "balance": services.ledger_balance(Parcel.objects.get(parcel_id="P4")),
    }


@pytest.mark.parametrize("point", ["ledger written, before the receipt number", "receipt numbered, while its PDF renders"])
def test_a_payment_whose_connection_drops_leaves_nothing_and_is_retried_once(district, staff, monkeypatch, point):
    first = pay(staff, "P1", "counter-1")
    assert first.number == 1
    before = written()
    if point.startswith("ledger"):
        killed = drop_connection_before(services, "_receipt_issue", monkeypatch)
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
    assert services.ledger_balance(payment.parcel) == before["balance"] - Decimal("7000.21") + Decimal("69.31")  # ¶12 surcharge
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
    seed_rows, make_parcel, owner_a, owner_b, staff, settings, monkeypatch,
):
    settings.JOBS_RUN_INLINE = False  # a worker takes the job, as in production
    # ~140 bytes a roll line: 600 lines make two 32 kB chunks, so the server holds a whole CopyData
    # message even over a Unix socket (the embedded server), where libpq holds back the last part
    # of its buffer that does not fill an 8 kB block: one chunk alone never arrives whole.
    roll_district(make_parcel, owner_a, owner_b, 600)
    certified_estimates(staff)
    old = levy_compute(acting_user=staff["hacienda"], fiscal_year=YEAR)
    previous = stored_roll()
    make_parcel("LAJ-NEW", owner_b, gravity="321.5")  # the registry moves on: the new roll differs
    assert expected_roll() != previous

    job = jobs.job_enqueue(kind=LEVY_COMPUTE, payload={"fiscal_year": YEAR}, acting_user=staff["hacienda"])
    claimed = jobs.job_claim()
    assert claimed.pk == job.pk
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

    monkeypatch.setattr(jobs.JobProgress, "set", report_then_drop)
    jobs.job_run(job.pk)
    assert copied[0] > 0
    monkeypatch.undo()

    assert stored_roll() == previous and Levy.objects.get().pk == old.pk  # the old draft, whole
    job.refresh_from_db()
    assert (job.status, job.attempts) == (Job.Status.QUEUED, 1)  # back in the queue, one attempt spent
    assert "terminating connection" in job.error

    assert jobs.job_claim().pk == job.pk  # the next turn of the worker loop, on the same worker
    job = jobs.job_run(job.pk)
    assert (job.status, job.attempts) == (Job.Status.DONE, 2)
    assert stored_roll() == expected_roll()
    assert job.result["levy_id"] == Levy.objects.get().pk != old.pk


def test_a_roll_job_that_keeps_losing_its_connection_fails_after_max_attempts(
    seed_rows, make_parcel, owner_a, owner_b, staff, settings, monkeypatch,
):
    settings.JOBS_RUN_INLINE = False
    roll_district(make_parcel, owner_a, owner_b, 20)
    certified_estimates(staff)
    job = jobs.job_enqueue(kind=LEVY_COMPUTE, payload={"fiscal_year": YEAR}, acting_user=staff["hacienda"])
    original = levy_services.copy_insert

    def copy_insert_on_a_dying_connection(*args: Any, **kwargs: Any) -> int:
        terminate(backend_pid())
        return original(*args, **kwargs)

    monkeypatch.setattr(levy_services, "copy_insert", copy_insert_on_a_dying_connection)
    statuses = []
    while (claimed := jobs.job_claim()) is not None:
        statuses.append(jobs.job_run(claimed.pk).status)
    assert statuses == [Job.Status.QUEUED] * (jobs.MAX_ATTEMPTS - 1) + [Job.Status.FAILED]
    job.refresh_from_db()
    assert job.attempts == jobs.MAX_ATTEMPTS and job.finished_at is not None
    assert not Levy.objects.exists() and not RollLine.objects.exists()


def test_a_job_whose_worker_died_on_its_last_attempt_is_failed_not_left_running(seed_rows, staff):
    """Otherwise the compute page would wait on it forever and no new compute could be queued."""
    job = jobs.job_enqueue(kind=LEVY_COMPUTE, payload={"fiscal_year": YEAR}, acting_user=staff["hacienda"])
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, attempts=jobs.MAX_ATTEMPTS,
                                         started_at=timezone.now() - jobs.STALE_AFTER - timedelta(minutes=1))
    assert jobs.job_claim() is None
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.error and job.finished_at is not None


# --- A worker killed while it holds a job -----------------------------------------------------


def test_a_job_whose_worker_is_killed_is_taken_again_once_stale_and_completes_once(
    seed_rows, make_parcel, owner_a, owner_b, staff, settings,
):
    settings.JOBS_RUN_INLINE = False
    roll_district(make_parcel, owner_a, owner_b, 40)
    certified_estimates(staff)
    job = jobs.job_enqueue(kind=LEVY_COMPUTE, payload={"fiscal_year": YEAR}, acting_user=staff["hacienda"])
    name = connection.settings_dict["NAME"]

    # Another session holds a lock on the roll lines' table, so the worker stops inside
    # levy_compute as its COPY of the lines starts (the job ``running``, the new Levy row written,
    # the transaction open) and is killed there.
    blocker = connections.create_connection(DEFAULT_DB_ALIAS)
    blocker.set_autocommit(False)
    worker = run_worker()
    try:
        with blocker.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {RollLine._meta.db_table} IN SHARE MODE")

        def blocked_worker() -> list[tuple]:
            assert worker.poll() is None, worker.communicate()[1]
            return side_sql("SELECT pid, query FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'", [name])

        ((pid, query),) = wait_for(blocked_worker, "the worker to reach the COPY")
        assert query.startswith("COPY")
        job.refresh_from_db()
        assert (job.status, job.attempts) == (Job.Status.RUNNING, 1)
        worker.send_signal(signal.SIGKILL)
        assert worker.wait(timeout=10) == -signal.SIGKILL
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        blocker.rollback()
        blocker.close()
    # The dead worker's backend goes away with it; make sure before looking at what it left.
    side_sql("SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE pid = %s", [pid])

    job.refresh_from_db()
    assert (job.status, job.attempts) == (Job.Status.RUNNING, 1)  # nobody finished it
    assert not Levy.objects.exists() and not RollLine.objects.exists()  # and it wrote nothing
    assert jobs.job_claim() is None  # not stale yet: a live worker may still be on it

    Job.objects.filter(pk=job.pk).update(started_at=F("started_at") - jobs.STALE_AFTER - timedelta(seconds=1))
    out, err = run_worker("--once").communicate(timeout=60)
    assert out.strip() == "1 job(s) run", err
    job.refresh_from_db()
    assert (job.status, job.attempts) == (Job.Status.DONE, 2)
    assert stored_roll() == expected_roll()
    assert job.result["levy_id"] == Levy.objects.get().pk
    assert jobs.job_claim() is None  # done once: no worker takes it again
