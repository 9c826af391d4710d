"""Bulk printing of bills for Hacienda: the ``bill_batch`` job.

A batch's installments, in cadastre order, not billed yet are issued in small transactions
(``bills.bill_batch_issue``: numbered, rendered, stored). Then the paper bills, in the mailing
list's order (ZIP, then address; ``billing.mailing``, issue 19), are cut into parts of
``PART_PAGES`` bills (one page each) and each part's stored PDFs merged into one file in
``BillBatchPart.pdf`` (default storage); the owners who chose e-mail are e-mailed a link to their
stored bill instead (``services.mailing.batch_emails_send``, each send logged). A restarted job
skips the charges already billed and the parts already written (``UniqueConstraint`` (batch,
charge) and (batch, index) back this up): nothing is billed twice.

WeasyPrint is CPU-bound, so with several cores the bills are rendered (HTML → PDF) and the
parts merged in worker processes; this process reads the accounts, numbers the bills and
writes to the database. Memory stays bounded: at most a chunk of bills and a part's stored
bytes (a few MB) are held at a time, and a part is written through a temporary file.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import secrets
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.conf import settings
from django.core.files import File
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from parcels.jobs import JobProgress, job_task
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


def part_pdfs(*, batch: BillBatch, charge_ids: Sequence[int]) -> list[bytes]:
    """The stored PDFs of a part's bills, in the part's (mailing list) order: the batch's own and
    those issued before it on demand (one bill per installment), as stored."""
    rows = IssuedDocument.objects.filter(bill__charge_id__in=charge_ids).values_list("bill__charge_id", "pdf", "sha256", "number")
    found = {charge_id: stored_pdf(name, sha256=sha256, label=number)  # from the document store, hash checked (issue 20)
             for charge_id, name, sha256, number in rows.iterator(chunk_size=50)}
    if len(found) != len(charge_ids) or set(found) != set(charge_ids):
        raise RuntimeError(f"batch {batch.pk}: {len(found)} bills stored for a part of {len(charge_ids)} charges")
    return [found[charge_id] for charge_id in charge_ids]


def print_order(*, charge_ids: Sequence[int]) -> list[int]:
    """Issue 19: the charges whose bills go on paper, in the mailing list's order (ZIP, then
    address: ``mailing.mailing_rows``), read from what each bill froze, so a restarted batch
    merges the same parts. Bills frozen with e-mail delivery are not printed."""
    bills = Bill.objects.filter(charge_id__in=charge_ids).select_related("parcel")
    return [row.charge_id for row in mailing.mailing_rows(bills.iterator(chunk_size=500))]


def batch_rows(batch: BillBatch) -> list[mailing.MailingRow]:
    """Issue 19: the mailing list of a batch: its installments' paper bills, in the order its
    parts print them (``print_order``)."""
    bills_of_batch = Bill.objects.filter(charge__in=bills.bill_batch_charges(batch)).select_related("parcel")
    return mailing.mailing_rows(bills_of_batch.iterator(chunk_size=500))


@dataclass(frozen=True)
class Merging:
    """A part being merged (maybe in a worker process) into a temporary file."""

    index: int
    path: str
    future: Future


def part_write(*, batch: BillBatch, index: int, charge_ids: Sequence[int], renderer: Renderer) -> Merging:
    """Start merging a part into a temporary file; ``part_store`` files it when it is done."""
    datas = part_pdfs(batch=batch, charge_ids=charge_ids)
    handle = tempfile.NamedTemporaryFile(prefix=f"lote{batch.pk}-parte{index + 1:03d}-", suffix=".pdf", delete=False)
    handle.close()
    title = _("Avisos de contribución %(fy)s, plazo %(n)s, lote %(batch)s, parte %(part)s") % {
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


def bill_batch_run(*, batch: BillBatch, progress: JobProgress | None = None, processes: int | None = None,
                   issued_on: date | None = None) -> dict[str, Any]:
    """Make (or finish) a batch: issue its bills, write its parts, e-mail the bills of owners who
    chose e-mail (issue 19). Safe to run again, even alongside another run of the same batch
    (the second only skips what the first did).

    Every bill is issued first (in cadastre order, ``CHUNK`` a transaction); then the paper bills
    are merged in the mailing list's order (``print_order``: ZIP, then address), which is read
    from the bills' frozen snapshots and so is the same on a restart; the bills frozen with
    e-mail delivery are stored but not printed, and each of their owners is e-mailed a link."""
    charge_ids = list(bills.bill_batch_charges(batch).values_list("pk", flat=True))
    total = len(charge_ids)
    issued_on = issued_on or timezone.localdate(batch.created_at)
    billed = set(Bill.objects.filter(charge_id__in=charge_ids).values_list("charge_id", flat=True))
    renderer = Renderer(processes)
    merging: list[Merging] = []
    issued = 0

    def store_merged(wait: bool) -> None:
        for item in list(merging):
            if wait or item.future.done():
                merging.remove(item)
                part_store(batch=batch, merging=item)

    try:
        todo = [pk for pk in charge_ids if pk not in billed]
        done = total - len(todo)
        for chunk in _chunks(todo, CHUNK):
            issued += bills.bill_batch_issue(batch=batch, charge_ids=chunk, issued_on=issued_on, render_many=renderer)
            done += len(chunk)
            if progress is not None:
                progress.set(done, total)
        written = set(batch.parts.values_list("index", flat=True))
        paper = print_order(charge_ids=charge_ids)
        for index, part_ids in enumerate(_chunks(paper, PART_PAGES)):
            if index not in written:
                merging.append(part_write(batch=batch, index=index, charge_ids=part_ids, renderer=renderer))
                store_merged(wait=False)
        store_merged(wait=True)
    except BaseException:
        try:  # keep the parts already merged, so a restart need not merge them again
            store_merged(wait=True)
        except Exception:
            logger.exception("batch %s: a merged part could not be stored", batch.pk)
        raise
    finally:
        renderer.close()
    emails = mailing_services.batch_emails_send(batch=batch, charge_ids=charge_ids)  # after the batch has rendered
    if progress is not None:
        progress.set(total, total)
    parts = list(batch.parts.order_by("index"))
    return {"batch": batch.pk, "bills": total, "issued": issued, "parts": len(parts), "files": [part.pdf.name for part in parts],
            "paper": len(paper), "emailed": emails["sent"], "email_failed": emails["failed"]}


@job_task("bill_batch")
def bill_batch_job(job: Job, progress: JobProgress) -> dict:
    """A semester's bills, however long it takes: the worker's heartbeat, not the job's age,
    tells the other workers it is still at it (``parcels.jobs.retry_stalled_jobs``)."""
    batch = BillBatch.objects.select_related("fiscal_year").get(pk=job.payload["batch_id"])
    return bill_batch_run(batch=batch, progress=progress, processes=job.payload.get("processes"))
