"""A bulk-printing worker killed in the middle of a batch (SIGKILL: no clean-up at all) leaves
only whole transactions behind, and the next worker finishes the batch without billing a
charge twice or skipping a bill number (issue 6, reliability).

The data is committed (``seed_rows``: transactional) so the worker processes see it."""

from __future__ import annotations

import os
import signal
import time
from datetime import date, timedelta
from decimal import Decimal

from django.utils import timezone
from pypdf import PdfReader

from billing import bulk, documents
from billing.models import Bill, BillBatch, Charge, IssuedDocument
from levy.services import estimate_certify, estimate_enter, levy_compute, roll_finalize
from parcels import jobs
from parcels.models import Job
from parcels.services import parcels_import, user_create
from tests.workers import run_worker

PARCELS = 60  # CHUNK (24) bills per transaction: the worker is killed after the first commits


def district_csv(count: int) -> bytes:
    lines = ["parcel_id,owner_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since,credit_percent"]
    lines += [f"K-{n:03d},OK-{n:03d},Dueño {n},,private,{10 + n}.5,0,permanent,1990-01-01,{25 if n % 3 == 0 else 0}"
              for n in range(1, count + 1)]
    return ("\n".join(lines) + "\n").encode()


def test_a_killed_bulk_worker_resumes_without_duplicates(seed_rows, settings):
    settings.JOBS_RUN_INLINE = False
    assert parcels_import(acting_user=None, data=district_csv(PARCELS), source="test").ok
    authority = user_create(username="aut", role="authority", password=None)
    hacienda = user_create(username="hac", role="hacienda", password=None)
    estimate_enter(acting_user=authority, fiscal_year="2026-2027", om_estimate=Decimal("90000.00"), reserve=Decimal("1000.00"),
                   misc_income=Decimal("0.00"))
    estimate_certify(acting_user=authority, fiscal_year="2026-2027")
    levy_compute(acting_user=hacienda, fiscal_year="2026-2027")
    roll_finalize(acting_user=hacienda, fiscal_year="2026-2027", today=date(2026, 6, 30))
    batch = documents.bill_batch_start(hacienda, "2026-2027", 1)
    job = Job.objects.get(pk=batch.job_id)
    assert job.status == Job.Status.QUEUED

    first = run_worker("--once")
    deadline = time.monotonic() + 120
    while Bill.objects.filter(batch=batch).count() < bulk.CHUNK:
        assert first.poll() is None, first.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "the worker issued no bills in two minutes"
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGKILL)  # the worker and its rendering processes, mid-batch
    first.wait(timeout=30)

    issued_before = Bill.objects.filter(batch=batch).count()
    assert bulk.CHUNK <= issued_before < PARCELS, "killed too late to prove anything"
    assert issued_before % bulk.CHUNK == 0  # whole transactions only
    assert IssuedDocument.objects.filter(bill__batch=batch).count() == issued_before
    assert not batch.parts.exists()
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING and job.attempts == 1  # nobody is left to say otherwise

    # The next worker takes the job once it has gone stale, and finishes it.
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - jobs.STALE_AFTER - timedelta(seconds=1))
    second = run_worker("--once")
    output = second.communicate(timeout=300)[1]
    assert second.returncode == 0, output[-2000:]
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.attempts == 2, job.error
    assert job.result["bills"] == PARCELS and job.result["issued"] == PARCELS - issued_before

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
    assert cadastre == [f"K-{n:03d}" for n in range(1, PARCELS + 1)]
