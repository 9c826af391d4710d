"""Bulk printing of bills for Hacienda: the ``bill_batch`` job and its parts (issue 20).

1. The job (``bill_batch_job``) numbers every installment of the batch not billed yet in ONE
   short transaction (``bills.bill_batch_number``: the snapshots are computed before the bill
   series is locked, the lock is held only to number, insert and chain). A ¶9 zero-notice batch
   (``BillBatch.number`` 0) was numbered at finalization already.
2. It plans the parts (``batch_plan``: the paper bills in the mailing list's order, ZIP then
   address, cut into parts of ``PART_PAGES``; then the e-mailed bills, rendered but not merged),
   records how many parts are merged (``BillBatch.parts_planned``) and defers one procrastinate
   task per part (``bill_batch_part``): any number of workers, on any machine.
3. A part (``part_run``) renders the PDFs its bills lack from their frozen snapshots
   (``bills.bill_documents_render``) and merges its paper bills into one file
   (``BillBatchPart``). The last part to finish (``batch_finish_if_done``, under the batch's
   row lock) e-mails the bills of owners who chose e-mail and sets ``finished_at``.

Resumable: a part re-run after a crash renders the same bills with the same numbers (the
bytes come from the frozen snapshot) and skips what is stored; numbers are never assigned
twice (``UniqueConstraint`` (batch, charge), ``one_bill_per_installment``, one document per
bill, one part per index). ``bill_batch_run`` does all of it in this process (the CLI, tests,
the bench), rendering in ``processes`` local processes when asked.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import secrets
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.conf import settings
from django.core.files import File
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _
from procrastinate import RetryStrategy
from procrastinate.contrib.django import app

from parcels.jobs import MAX_ATTEMPTS, TRANSIENT, JobProgress, job_task
from parcels.models import Job

from . import anchors, mailing, pdf
from .models import Bill, BillBatch, BillBatchPart, IssuedDocument
from .services import bills
from .services import mailing as mailing_services
from .storage import stored_pdf

logger = logging.getLogger(__name__)
PART_PAGES = 250  # bills (pages) per merged PDF: what the print shop takes in one file
CHUNK = 24  # bills issued per transaction (the bill series stays locked for a few seconds)


class Renderer:
    """Renders bills and merges parts in this process, or in ``processes`` worker processes
    started with ``spawn``: fresh interpreters that inherit no database connection and never
    open one (they get HTML, or PDF bytes, and give back PDF bytes, or a file), and that die
    with this process (``pdf.die_with_parent``)."""

    def __init__(self, processes: int | None = None) -> None:
        wanted = processes or getattr(settings, "BILL_BATCH_PROCESSES", None) or os.cpu_count() or 1
        self.processes = max(1, int(wanted))
        self._pool: Executor | None = None

    def _executor(self) -> Executor | None:
        if self.processes > 1 and self._pool is None:
            import multiprocessing

            self._pool = ProcessPoolExecutor(self.processes, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=pdf.die_with_parent, initargs=(os.getpid(),))
        return self._pool

    def __call__(self, htmls: list[str]) -> list[bytes]:
        pool = self._executor() if len(htmls) > 1 else None
        if pool is None:
            return [pdf.html_to_fitting_pdf(html) for html in htmls]
        render = functools.partial(pdf.html_to_fitting_pdf, setup=pdf.render_setup())
        return list(pool.map(render, htmls, chunksize=max(1, len(htmls) // (2 * self.processes))))

    def merge(self, datas: list[bytes], path: str, title: str = "") -> Future:
        pool = self._executor()
        if pool is not None:
            return pool.submit(pdf.merge_pdfs, datas, path, title)
        done: Future = Future()
        done.set_result(pdf.merge_pdfs(datas, path, title))
        return done

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


def _chunks(items: Sequence[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(items), size):
        yield list(items[start:start + size])


def part_pdfs(*, batch: BillBatch, bill_ids: Sequence[int]) -> list[bytes]:
    """The stored PDFs of a part's bills, in the part's (mailing list) order: the batch's own and
    those issued before it on demand (one bill per installment), as stored."""
    rows = IssuedDocument.objects.filter(bill_id__in=list(bill_ids)).values_list("bill_id", "pdf", "sha256", "number")
    found = {bill_id: stored_pdf(name, sha256=sha256, label=number)  # from the document store, hash checked (issue 20)
             for bill_id, name, sha256, number in rows.iterator(chunk_size=50)}
    if set(found) != set(bill_ids):
        raise RuntimeError(f"batch {batch.pk}: {len(found)} bills stored for a part of {len(bill_ids)} bills")
    return [found[bill_id] for bill_id in bill_ids]


def batch_bills(batch: BillBatch) -> QuerySet[Bill]:
    """The bills a batch prints: those it numbered (its ¶9 zero notices, for a batch of number 0)
    and those of its installments issued before it on demand."""
    return Bill.objects.filter(Q(batch=batch) | Q(charge__in=bills.bill_batch_charges(batch)))


def print_order(*, bills_of_batch: Iterable[Bill]) -> list[int]:
    """Issue 19: the ids of the bills that go on paper, in the mailing list's order (ZIP, then
    address: ``mailing.mailing_rows``), read from what each bill froze, so a restarted batch
    merges the same parts. Bills frozen with e-mail delivery are not printed."""
    by_number = {}
    for bill in bills_of_batch:
        by_number[bill.number] = bill
    return [by_number[row.bill_number].pk for row in mailing.mailing_rows(by_number.values())]


def batch_rows(batch: BillBatch) -> list[mailing.MailingRow]:
    """Issue 19: the mailing list of a batch: its paper bills, in the order its parts print them."""
    return mailing.mailing_rows(batch_bills(batch).select_related("parcel").iterator(chunk_size=500))


@dataclass(frozen=True)
class PartPlan:
    index: int
    bill_ids: list[int]
    paper: bool  # merged into a ``BillBatchPart`` (e-mailed bills are only rendered)


def batch_plan(batch: BillBatch) -> list[PartPlan]:
    """The parts of a numbered batch, the same on every run (from the bills' frozen snapshots):
    the paper bills in mailing order in parts of ``PART_PAGES``, then the other bills in number
    order, in parts of the same size that are rendered but not merged."""
    size = batch.part_pages or PART_PAGES
    rows = list(batch_bills(batch).select_related("parcel").order_by("number").iterator(chunk_size=500))
    paper = print_order(bills_of_batch=rows)
    on_paper = set(paper)
    rest = [bill.pk for bill in rows if bill.pk not in on_paper]
    plan = [PartPlan(index, ids, True) for index, ids in enumerate(_chunks(paper, size))]
    first = len(plan)
    plan += [PartPlan(first + n, ids, False) for n, ids in enumerate(_chunks(rest, size))]
    return plan


@dataclass(frozen=True)
class Merging:
    """A part being merged (maybe in a worker process) into a temporary file."""

    index: int
    path: str
    future: Future


def part_write(*, batch: BillBatch, index: int, bill_ids: Sequence[int], renderer: Renderer) -> Merging:
    """Start merging a part into a temporary file; ``part_store`` files it when it is done."""
    datas = part_pdfs(batch=batch, bill_ids=bill_ids)
    handle = tempfile.NamedTemporaryFile(prefix=f"lote{batch.pk}-parte{index + 1:03d}-", suffix=".pdf", delete=False)
    handle.close()
    title = _("Avisos de contribución %(fy)s, plazo %(n)s, lote %(batch)s, parte %(part)s") % {  # plazo 0: ¶9
        "fy": batch.fiscal_year.label, "n": batch.number, "batch": batch.pk, "part": index + 1}
    return Merging(index=index, path=handle.name, future=renderer.merge(datas, handle.name, title))


def part_store(*, batch: BillBatch, merging: Merging) -> BillBatchPart:
    index, path, future = merging.index, merging.path, merging.future
    try:
        pages = future.result()
        with open(path, "rb") as handle:
            part = BillBatchPart(batch=batch, index=index, pages=pages, sha256=hashlib.file_digest(handle, "sha256").hexdigest())
            handle.seek(0)
            # Parts are stored write-once (billing.storage: a taken name is refused, never reused):
            # a run that died after storing the file but before its row leaves that file behind, so
            # each run's file has a name of its own.
            part.pdf.save(f"avisos-{batch.fiscal_year.label}-plazo{batch.number}-lote{batch.pk}-parte{index + 1:03d}-"
                          f"{secrets.token_hex(4)}.pdf", File(handle), save=False)
    finally:
        os.unlink(path)
    try:
        with transaction.atomic():
            part.save()
            anchors.anchor_soon(reason="bulk-printing part")  # its hash goes into a signed anchor
    except IntegrityError:  # another run of the same batch wrote this part meanwhile
        part.pdf.delete(save=False)
        part = BillBatchPart.objects.get(batch=batch, index=index)
    return part


def batch_number(*, batch: BillBatch, issued_on: date | None = None) -> tuple[int, list[PartPlan]]:
    """Step 1 and 2: number what the batch has not numbered (one transaction), plan its parts and
    record how many are merged. Returns the bills numbered now and the plan."""
    issued = 0
    if batch.number != BillBatch.ZERO_NOTICES:
        issued = bills.bill_batch_number(batch=batch, issued_on=issued_on or timezone.localdate(batch.created_at))
    plan = batch_plan(batch)
    paper_parts = sum(1 for part in plan if part.paper)
    if batch.parts_planned != paper_parts:
        BillBatch.objects.filter(pk=batch.pk).update(parts_planned=paper_parts)
        batch.parts_planned = paper_parts
    return issued, plan


def part_run(*, batch: BillBatch, part: PartPlan, renderer: Renderer | None = None, lang: str | None = None) -> int:
    """Step 3, one part: render the PDFs its bills lack (a chunk of ``CHUNK`` a transaction, so a
    crash keeps what was stored), then merge its paper bills if that part is not stored yet.
    Returns the PDFs rendered. Safe to run again, or twice at once."""
    own = renderer or Renderer(1)
    rendered = 0
    try:
        for chunk in _chunks(part.bill_ids, CHUNK):
            rendered += bills.bill_documents_render(bill_ids=chunk, render_many=own, lang=lang)
        if part.paper and not batch.parts.filter(index=part.index).exists():
            part_store(batch=batch, merging=part_write(batch=batch, index=part.index, bill_ids=part.bill_ids, renderer=own))
    finally:
        if renderer is None:
            own.close()
    return rendered


def batch_finish_if_done(*, batch: BillBatch, again: bool = False) -> dict[str, Any] | None:
    """The last part to finish ends the batch: when every bill of the batch has its PDF and every
    paper part is stored, e-mail the bills of owners who chose e-mail (issue 19, each send
    logged) and set ``finished_at``. Under the batch's row lock, so it happens once; ``None``
    while parts are still at work (or when it was done already, unless ``again``: a run of
    the whole batch sends the e-mails that failed before)."""
    with transaction.atomic():
        locked = BillBatch.objects.select_for_update().get(pk=batch.pk)
        if (locked.finished_at is not None and not again) or locked.parts_planned is None:
            return None
        if locked.parts.count() < locked.parts_planned:
            return None
        if Bill.objects.filter(batch=locked, printed_later=True, document__isnull=True).exists():
            return None
        charge_ids = list(bills.bill_batch_charges(locked).values_list("pk", flat=True))
        emails = mailing_services.batch_emails_send(batch=locked, charge_ids=charge_ids)
        if locked.finished_at is None:
            locked.finished_at = timezone.now()
            locked.save(update_fields=["finished_at"])
    return emails


def batch_summary(batch: BillBatch) -> dict[str, Any]:
    """What a batch made: its bills, its merged parts and their files, the paper bills in them,
    the PDFs rendered so far and the bills e-mailed (the batch page and the CLI show it)."""
    parts = list(batch.parts.order_by("index"))
    of_batch = batch_bills(batch)
    return {"batch": batch.pk, "bills": of_batch.count(), "rendered": of_batch.filter(document__isnull=False).count(),
            "parts": len(parts), "files": [part.pdf.name for part in parts], "paper": sum(part.pages for part in parts),
            "emailed": of_batch.filter(emails__status="sent").count(), "finished": batch.finished_at is not None}


def bill_batch_run(*, batch: BillBatch, progress: JobProgress | None = None, processes: int | None = None,
                   issued_on: date | None = None, lang: str | None = None) -> dict[str, Any]:
    """Make (or finish) a batch in this process: number it, run every part (rendering in
    ``processes`` local processes), finish it. Safe to run again, even alongside the parts' tasks
    (it only skips what they did)."""
    issued, plan = batch_number(batch=batch, issued_on=issued_on)
    total = sum(len(part.bill_ids) for part in plan)
    renderer = Renderer(processes)
    done = 0
    try:
        for part in plan:
            part_run(batch=batch, part=part, renderer=renderer, lang=lang)
            done += len(part.bill_ids)
            if progress is not None:
                progress.set(done, total)
    finally:
        renderer.close()
    emails = batch_finish_if_done(batch=batch, again=True) or {"sent": 0, "failed": 0}
    batch.refresh_from_db()
    return {**batch_summary(batch), "issued": issued, "emailed": emails["sent"], "email_failed": emails["failed"]}  # this run's


@job_task("bill_batch")
def bill_batch_job(job: Job, progress: JobProgress) -> dict:
    """Number the batch (one short transaction) and defer one task per part
    (``bill_batch_part``), for any worker on any machine to take; the last part
    finishes the batch. With ``processes`` in the payload the parts are made here instead, in
    that many local processes (``bill_batch_run``)."""
    batch = BillBatch.objects.select_related("fiscal_year").get(pk=job.payload["batch_id"])
    lang = job.payload.get("lang")
    if job.payload.get("processes"):  # one machine's cores, as asked (``billing bulk-bills --processes``)
        return bill_batch_run(batch=batch, progress=progress, processes=job.payload["processes"], lang=lang)
    issued, plan = batch_number(batch=batch)
    task = bill_batch_part.configure(queue=job.payload["queue"]) if job.payload.get("queue") else bill_batch_part
    for part in plan:
        task.defer(batch_id=batch.pk, index=part.index, bill_ids=part.bill_ids, paper=part.paper, lang=lang or "")
    total = sum(len(part.bill_ids) for part in plan)
    progress.set(total, total)  # numbered and planned; the batch page counts the PDFs rendered
    if not plan:
        batch_finish_if_done(batch=batch)
    return {"batch": batch.pk, "bills": total, "issued": issued, "parts_deferred": len(plan)}


@app.task(name="billing.bill_batch_part", retry=RetryStrategy(max_attempts=MAX_ATTEMPTS - 1, retry_exceptions=set(TRANSIENT)))
def bill_batch_part(batch_id: int, index: int, bill_ids: list[int], paper: bool, lang: str = "") -> int:
    """Issue 20: one part of a bulk-printing batch, rendered in this worker (parallelism comes from
    the number of workers): the PDFs its bills lack, then its merged file; the last part to
    finish ends the batch (``batch_finish_if_done``). Run again after a crash (a stalled
    worker's task is retried, ``parcels.jobs.retry_stalled_jobs``) it renders the same bills and
    skips what is stored. A part that fails with an error that is not retried (a lost connection
    is) fails the batch's job record, so the batch page offers to resume it
    (``bills.bill_batch_resume`` plans and defers every part again).
    Returns the PDFs rendered."""
    batch = BillBatch.objects.select_related("fiscal_year").get(pk=batch_id)
    try:
        rendered = part_run(batch=batch, part=PartPlan(index, list(bill_ids), paper), lang=lang or None)
        batch_finish_if_done(batch=batch)
    except Exception as exc:
        if not isinstance(exc, TRANSIENT) and batch.job_id is not None:
            Job.objects.filter(pk=batch.job_id).update(status=Job.Status.FAILED, finished_at=timezone.now(),
                                                       error=_("Parte %(n)s: %(e)s") % {"n": index + 1, "e": exc})
        raise
    return rendered
