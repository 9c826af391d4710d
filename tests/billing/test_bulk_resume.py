"""A bulk-printing worker killed in the middle of a batch (SIGKILL: no clean-up at all) leaves
only whole transactions behind and no rendering process alive; another worker takes the job
again within a minute (heartbeats, ``parcels.jobs.retry_stalled_jobs``) and finishes the batch
without billing a charge twice or skipping a bill number (issues 6 and 10, reliability).

The data and the job are committed (``jobs_in_database``: transactional) so the worker processes
see them."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfReader

from billing import bulk
from billing.errors import BillingError
from billing.models import Bill, BillBatch, Charge, IssuedDocument
from billing.services import bills as bill_services
from billing.services.installments import roll_finalize
from levy.services import estimate_certify, estimate_enter, levy_compute
from parcels.models import Job
from parcels.services import parcels_import, user_create
from tests.workers import run_worker

PARCELS = 60  # CHUNK (24) bills per transaction: the worker is killed after the first commits


def district_csv(count: int) -> bytes:
    lines = ["parcel_id,owner_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since,credit_percent"]
    lines += [f"K-{n:03d},OK-{n:03d},Dueño {n},,private,{10 + n}.5,0,permanent,1990-01-01,{25 if n % 3 == 0 else 0}"
              for n in range(1, count + 1)]
    return ("\n".join(lines) + "\n").encode()


def wait_for(condition: Callable[[], Any], what: str, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return found


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def children(parent: int) -> list[int]:
    """The processes whose parent is ``parent`` (Linux /proc)."""
    return [int(entry.name) for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None and int(stat[1]) == parent]


def alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"  # a zombie has ended: only its exit status is left


def test_a_killed_bulk_worker_resumes_on_another_without_duplicates_or_orphans(jobs_in_database):
    assert parcels_import(acting_user=None, data=district_csv(PARCELS), source="test").ok
    authority = user_create(username="aut", role="authority", password=None)
    hacienda = user_create(username="hac", role="hacienda", password=None)
    estimate_enter(acting_user=authority, fiscal_year="2026-2027", om_estimate=Decimal("90000.00"), reserve=Decimal("1000.00"),
                   misc_income=Decimal("0.00"))
    estimate_certify(acting_user=authority, fiscal_year="2026-2027")
    levy_compute(acting_user=hacienda, fiscal_year="2026-2027")
    roll_finalize(acting_user=hacienda, fiscal_year="2026-2027", today=date(2026, 6, 30))
    first = run_worker()
    second = None
    try:
        batch = bill_services.bill_batch_start(hacienda, "2026-2027", 1, processes=2)  # rendered in two processes
        job = Job.objects.get(pk=batch.job_id)

        def issuing() -> list[int]:
            assert first.poll() is None, first.output()[-3000:]
            return IssuedDocument.objects.filter(bill__batch=batch).count() >= bulk.CHUNK and children(first.pid)

        renderers = wait_for(issuing, "the first worker to issue bills", timeout=240)
        assert len(renderers) >= 2  # the two rendering processes (and multiprocessing's resource tracker)
        second = run_worker()
        wait_for(lambda: second.poll() is None and Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).exists()
                 and "Starting worker" in second.output(), "the second worker to start", timeout=60)
        os.kill(first.pid, signal.SIGKILL)  # the worker alone, mid-batch: its children must follow it
        killed = time.monotonic()
        assert first.wait(timeout=10) == -signal.SIGKILL
        wait_for(lambda: not any(alive(pid) for pid in renderers), "the rendering processes to end", timeout=10)

        # issue 20: every bill was numbered in one transaction before any was rendered
        assert Bill.objects.filter(batch=batch).count() == PARCELS
        rendered_before = IssuedDocument.objects.filter(bill__batch=batch).count()
        assert bulk.CHUNK <= rendered_before < PARCELS, "killed too late to prove anything"
        assert rendered_before % bulk.CHUNK == 0  # whole transactions only
        assert not batch.parts.exists()

        # A second batch of the same semester is refused meanwhile (it would number the bills again).
        with pytest.raises(BillingError, match=r"los avisos de 2026-2027, plazo 1: lo pidió hac el .* va por el \d+ %"):
            bill_services.bill_batch_start(hacienda, "2026-2027", 1)

        def taken_again() -> bool:
            assert second.poll() is None, second.output()[-3000:]
            job.refresh_from_db()
            return job.attempts == 2

        wait_for(taken_again, "another worker to take the batch again", timeout=60)
        print(f"\nkilled bulk worker's job taken again after {time.monotonic() - killed:.1f} s")
        wait_for(lambda: Job.objects.get(pk=job.pk).status not in Job.ACTIVE, "the batch to end", timeout=300)
    finally:
        for worker in (first, second):
            if worker is not None and worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
                worker.wait(timeout=60)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.attempts == 2, job.error
    assert job.result["bills"] == PARCELS and job.result["issued"] == 0  # numbered by the first attempt
    assert Job.objects.filter(kind="bill_batch").count() == 1 and BillBatch.objects.count() == 1

    bills = list(Bill.objects.filter(batch=batch).order_by("number"))
    assert len(bills) == PARCELS
    assert {bill.charge_id for bill in bills} == set(Charge.objects.filter(number=1).values_list("pk", flat=True))
    assert [bill.number for bill in bills] == [f"AV-2026-{n:06d}" for n in range(1, PARCELS + 1)]  # no gap, no repeat
    assert IssuedDocument.objects.filter(kind=IssuedDocument.Kind.BILL).count() == PARCELS
    [part] = BillBatch.objects.get(pk=batch.pk).parts.all()
    with part.pdf.open("rb") as handle:
        merged = PdfReader(handle)
        assert part.pages == len(merged.pages) == PARCELS
        cadastre = [page.extract_text().split("Número de catastro")[1].split()[0] for page in merged.pages]
    # in the mailing list's order (issue 19): these owners have no postal address, so by name, then cadastre
    assert cadastre == [f"K-{n:03d}" for n in sorted(range(1, PARCELS + 1), key=lambda n: (f"Dueño {n}", n))]
