"""Issue 20: finalize commits without rendering the ¶9 zero notices (they are numbered and frozen
in one step and printed afterwards by the bulk printing), and bulk printing numbers a batch in
one transaction, then renders its parts as separate tasks that any number of workers take:
two workers give the same bills as one, no number twice, and a part killed midway and run
again gives the same result."""

from __future__ import annotations

import hashlib
import signal
import time
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
import weasyprint

from billing import books, bulk, documents, pdf
from billing.models import Bill, BillBatch, BillBatchPart, Charge, IssuedDocument
from billing.services import bills as bill_services
from billing.services.installments import roll_finalize
from levy.models import RollLine
from levy.services import estimate_certify, estimate_enter, levy_compute
from parcels.models import Job
from parcels.services import parcels_import, user_create
from tests.workers import run_worker

YEAR = "2026-2027"


def district_csv(count: int, *, full_credit_every: int = 0) -> bytes:
    """``count`` parcels; with ``full_credit_every`` = 5, one in five (20 %) at 100 % credit (¶9)."""
    lines = ["parcel_id,owner_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since,credit_percent"]
    for n in range(1, count + 1):
        credit = 100 if full_credit_every and n % full_credit_every == 0 else (25 if n % 3 == 0 else 0)
        lines.append(f"B-{n:03d},OB-{n:03d},Dueña {n},,private,{10 + n}.5,0,permanent,1990-01-01,{credit}")
    return ("\n".join(lines) + "\n").encode()


def finalize_district(count: int, *, full_credit_every: int = 0) -> dict[str, Any]:
    assert parcels_import(acting_user=None, data=district_csv(count, full_credit_every=full_credit_every), source="test").ok
    authority = user_create(username="aut", role="authority", password=None)
    hacienda = user_create(username="hac", role="hacienda", password=None)
    estimate_enter(acting_user=authority, fiscal_year=YEAR, om_estimate=Decimal("90000.00"), reserve=Decimal("1000.00"),
                   misc_income=Decimal("0.00"))
    estimate_certify(acting_user=authority, fiscal_year=YEAR)
    levy_compute(acting_user=hacienda, fiscal_year=YEAR)
    return {"hacienda": hacienda, "authority": authority}


@pytest.fixture
def renders(monkeypatch) -> list[int]:
    """Every PDF WeasyPrint writes in this process (bills, notices, receipts, stamps) appends 1."""
    calls: list[int] = []
    real = weasyprint.Document.write_pdf

    def counted(self, *args, **kwargs):
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(weasyprint.Document, "write_pdf", counted)
    return calls


def render_again(bill: Bill) -> bytes:
    """The bill's PDF rendered afresh from its frozen snapshot, in this process."""
    code = documents.verification_code(IssuedDocument.Kind.BILL, bill.number)
    return pdf.html_to_fitting_pdf(documents.bill_html(number=bill.number, snapshot=bill.snapshot, issued_on=bill.issued_on,
                                                       code=code))


def books_findings() -> list[str]:
    return [f"{finding.check}: {finding.message}" for finding in books.verify()]


@pytest.mark.django_db
@pytest.mark.books_unchecked  # its last step forges a stored notice
def test_finalize_renders_no_zero_notice_and_the_bulk_printing_prints_them(renders, inline_jobs, django_capture_on_commit_callbacks,
                                                                            document_store):
    """¶9, ¶11: 20 % of the lines at 100 % credit; finalize renders no PDF (however many notices),
    numbers and freezes every notice, and queues their printing; the books are clean with the
    notices pending, and the bulk printing's job and part tasks then store one PDF per notice."""
    staff = finalize_district(25, full_credit_every=5)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        levy = roll_finalize(acting_user=staff["hacienda"], fiscal_year=YEAR, today=date(2026, 6, 30))
    assert renders == []  # not one PDF rendered inside finalize
    assert callbacks  # the bulk printing runs once finalize has committed
    full = RollLine.objects.filter(levy=levy, levied=True, om_charge__gt=0, net=0)
    assert full.count() == 5
    notices = list(Bill.objects.filter(roll_line__isnull=False).order_by("number"))
    assert [notice.roll_line.parcel_code for notice in notices] == [f"B-{n:03d}" for n in (5, 10, 15, 20, 25)]
    assert [notice.number for notice in notices] == [f"AV-2026-{n:06d}" for n in range(1, 6)]
    assert all(notice.printed_later and notice.snapshot["nothing_to_pay"] for notice in notices)
    assert not IssuedDocument.objects.exists()
    [batch] = BillBatch.objects.all()
    assert batch.number == BillBatch.ZERO_NOTICES and {notice.batch_id for notice in notices} == {batch.pk}
    assert Job.objects.get(pk=batch.job_id).status == Job.Status.QUEUED
    # a notice still being printed is not a broken book: it has no PDF to differ yet
    assert books_findings() == []

    assert inline_jobs.run() == 2  # the batch's job, then its one part
    assert set(inline_jobs.statuses()) == {"succeeded"}
    assert len(renders) == 5
    batch.refresh_from_db()
    assert batch.finished_at is not None and batch.parts.count() == 1 and batch.parts.get().pages == 5
    for notice in notices:
        document = IssuedDocument.objects.get(bill=notice)
        assert document.number == notice.number and document.sha256 == hashlib.sha256(bytes(document.pdf)).hexdigest()
        assert bytes(document.pdf) == render_again(notice)  # the bytes come from the frozen snapshot alone
    assert books_findings() == []
    # a rendered notice whose stored file differs is found (the folder's owner edits behind the API)
    path = document_store / IssuedDocument.objects.get(bill=notices[0]).pdf.name
    path.chmod(0o644)
    path.write_bytes(b"%PDF-forged")
    found = books_findings()
    assert any(notices[0].number in line and line.startswith("documents") for line in found), found


@pytest.mark.django_db
def test_a_part_killed_midway_and_run_again_gives_the_same_bills(monkeypatch, inline_jobs):
    staff = finalize_district(12)
    roll_finalize(acting_user=staff["hacienda"], fiscal_year=YEAR, today=date(2026, 6, 30))
    monkeypatch.setattr(bulk, "CHUNK", 2)
    batch = bill_services.bill_batch_start(staff["hacienda"], YEAR, 1, part_pages=5)
    issued, plan = bulk.batch_number(batch=batch)
    assert issued == 12 and [len(part.bill_ids) for part in plan] == [5, 5, 2]
    numbers = dict(Bill.objects.filter(batch=batch).values_list("pk", "number"))
    assert sorted(numbers.values()) == [f"AV-2026-{n:06d}" for n in range(1, 13)]

    real = bill_services.bill_documents_render
    calls = []

    def killed_on_second_chunk(**kwargs):
        calls.append(kwargs["bill_ids"])
        if len(calls) == 2:
            raise SystemExit("worker killed")  # not an Exception: nothing in the part may catch it
        return real(**kwargs)

    monkeypatch.setattr(bill_services, "bill_documents_render", killed_on_second_chunk)
    with pytest.raises(SystemExit):
        bulk.part_run(batch=batch, part=plan[0])
    first = dict(IssuedDocument.objects.filter(bill__batch=batch).values_list("bill_id", "sha256"))
    assert set(first) == set(plan[0].bill_ids[:2]) and not batch.parts.exists()  # one whole chunk kept

    monkeypatch.setattr(bill_services, "bill_documents_render", real)
    assert bulk.part_run(batch=batch, part=plan[0]) == 3  # the rest of the part only
    assert bulk.part_run(batch=batch, part=plan[0]) == 0  # and once more: nothing at all
    again = dict(IssuedDocument.objects.filter(bill__batch=batch).values_list("bill_id", "sha256"))
    assert {pk: again[pk] for pk in first} == first and set(again) == set(plan[0].bill_ids)
    for bill in Bill.objects.filter(pk__in=plan[0].bill_ids):
        assert IssuedDocument.objects.get(bill=bill).sha256 == hashlib.sha256(render_again(bill)).hexdigest()
    [part] = batch.parts.all()
    assert part.index == 0 and part.pages == 5
    assert bulk.batch_finish_if_done(batch=batch) is None  # parts 1 and 2 still to do
    for rest in plan[1:]:
        bulk.part_run(batch=batch, part=rest)
    assert bulk.batch_finish_if_done(batch=batch) == {"sent": 0, "failed": 0}
    assert bulk.batch_finish_if_done(batch=batch) is None  # once
    assert dict(Bill.objects.filter(batch=batch).values_list("pk", "number")) == numbers  # nothing renumbered
    assert IssuedDocument.objects.filter(kind="bill").count() == 12 and BillBatchPart.objects.count() == 3
    assert books_findings() == []


# --- real workers -----------------------------------------------------------------------------------


def wait_for(condition: Callable[[], Any], what: str, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return found


def printed_with(workers: int, staff: dict[str, Any], number: int) -> tuple[BillBatch, list[Any]]:
    """Print installment ``number`` with ``workers`` real worker processes; the batch and the log
    of each worker."""
    batch = bill_services.bill_batch_start(staff["hacienda"], YEAR, number, part_pages=4)
    running = [run_worker() for _ in range(workers)]
    try:
        def finished() -> bool:
            for worker in running:
                assert worker.poll() is None, worker.output()[-3000:]
            job = Job.objects.get(pk=batch.job_id)
            assert job.status != Job.Status.FAILED, job.error
            return BillBatch.objects.filter(pk=batch.pk, finished_at__isnull=False).exists()

        wait_for(finished, f"the batch to be printed by {workers} worker(s)", timeout=300)
    finally:
        for worker in running:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
                worker.wait(timeout=60)
    batch.refresh_from_db()
    return batch, [worker.output() for worker in running]


def bills_of(batch: BillBatch) -> list[tuple]:
    """What a batch made, independent of who made it: per bill (in number order) its number
    within the batch, parcel, installment and PDF hash; and each part's pages and parcels."""
    rows = list(Bill.objects.filter(batch=batch).select_related("charge", "document", "parcel").order_by("number"))
    first = int(rows[0].number.rsplit("-", 1)[1])
    return [(int(bill.number.rsplit("-", 1)[1]) - first, bill.parcel.parcel_id, bill.charge.number, bill.document.sha256)
            for bill in rows]


def test_two_workers_print_the_same_bills_as_one_and_no_number_twice(jobs_in_database):
    """The July bills printed by one worker and the January bills by two: each installment's bills
    are numbered in one run in cadastre order, rendered from their frozen snapshots (the same bytes
    as a render in this process), the parts taken by both workers; no number is used twice."""
    staff = finalize_district(20)
    roll_finalize(acting_user=staff["hacienda"], fiscal_year=YEAR, today=date(2026, 6, 30))
    with_one, _logs = printed_with(1, staff, 1)
    with_two, logs = printed_with(2, staff, 2)
    assert all("billing.bill_batch_part" in log for log in logs), [log[-2000:] for log in logs]  # both took parts
    for batch in (with_one, with_two):
        made = bills_of(batch)
        assert [row[:2] for row in made] == [(n, f"B-{n + 1:03d}") for n in range(20)]  # cadastre order, no gap
        assert batch.parts_planned == 5 and [part.pages for part in batch.parts.all()] == [4, 4, 4, 4, 4]
        for bill in Bill.objects.filter(batch=batch).select_related("document"):
            assert bill.document.sha256 == hashlib.sha256(render_again(bill)).hexdigest()
    numbers = list(Bill.objects.values_list("number", flat=True))
    assert len(numbers) == len(set(numbers)) == 40
    assert sorted(numbers) == [f"AV-2026-{n:06d}" for n in range(1, 41)]
    assert IssuedDocument.objects.filter(kind="bill").count() == 40
    assert Charge.objects.filter(kind="installment").exclude(bills__isnull=False).count() == 0
    assert books_findings() == []


@pytest.mark.django_db
def test_a_notice_asked_for_before_its_part_is_printed_is_rendered_then_and_not_again(renders, inline_jobs,
                                                                                        django_capture_on_commit_callbacks):
    """¶9: the landowner (or the counter) asks for a zero notice its printing batch has not reached:
    it is rendered from its frozen snapshot and stored at once, and the batch then prints only the
    others; the stored bytes are those the batch would have stored."""
    staff = finalize_district(10, full_credit_every=5)
    with django_capture_on_commit_callbacks(execute=False):
        roll_finalize(acting_user=staff["hacienda"], fiscal_year=YEAR, today=date(2026, 6, 30))
    first, second = Bill.objects.filter(roll_line__isnull=False).order_by("number")
    assert not IssuedDocument.objects.exists()
    document = bill_services.bill_document(first)
    assert len(renders) == 1
    assert bill_services.bill_document(first).pk == document.pk and len(renders) == 1  # stored once, not rendered again
    inline_jobs.run()
    assert len(renders) == 2  # the batch printed only the other notice
    assert bytes(document.pdf) == render_again(first)
    assert IssuedDocument.objects.get(bill=second).sha256 == hashlib.sha256(render_again(second)).hexdigest()
    assert books_findings() == []
