"""Issue 17 §5: trust that does not rest on the database's owner (``billing.anchors``).

Each attack of the issue is played as the database's owner would (the superuser, with every
trigger off: ``session_replication_role = replica``) or, for the merged bulk-printing part, as
the application's role. The books are built through the services; the anchors are written by the
``billing.anchor`` task the issuing transactions deferred (run here as a worker would:
``inline_jobs.run()``), signed with a key in a temporary folder, into an anchor folder outside
both the database and ``MEDIA_ROOT``. ``verify_books --no-anchors`` shows that each attack beats
the database-only check; ``verify_books`` must then name what differs from the newest anchor."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from django.core import mail
from django.core.files.base import ContentFile
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction

from billing import anchors, books, bulk, chain, checks
from billing.models import BillBatchPart, BooksCheckpoint, IssuedDocument, Receipt
from billing.services import bills, counter
from parcels.models import Parcel
from tests.billing import conftest as billing_fixtures
from tests.clock import on_day
from tests.commands import run_command
from tests.test_books import build_books, forge_file

district_1 = billing_fixtures.district_1
staff = billing_fixtures.staff

AUDITORS = "auditoria@example.pr"


@pytest.fixture
def anchored(tmp_path, settings):
    """A signing key and an anchor folder, both outside the database and outside MEDIA_ROOT."""
    key_file = tmp_path / "keys" / "anchor.pem"
    key_file.parent.mkdir()
    code, out, err = run_command("anchor", "keygen", "--out", str(key_file))
    assert code == 0, err
    folder = tmp_path / "anchors"
    assert not folder.is_relative_to(settings.MEDIA_ROOT)
    settings.ANCHOR_SIGNING_KEY_FILE = str(key_file)
    settings.ANCHOR_EMAIL = [AUDITORS]
    settings.STORAGES = {**settings.STORAGES, "anchors": {
        "BACKEND": "billing.storage.WriteOnceStorage", "OPTIONS": {"location": str(folder), "deletable": False}}}
    return {"key": key_file, "public": Path(f"{key_file}.pub"), "folder": folder, "keygen_out": out}


def anchor_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("anchor-*.json")) if folder.exists() else []


def verify_books(*args: str) -> tuple[int, str, str]:
    return run_command("verify_books", *args)


def as_database_owner(*statements: tuple[str, list]) -> None:
    """SQL run as the superuser with every trigger off (the append-only guards, the TRUNCATE
    guard and the foreign keys): what the owner of the database can always do."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no pending FK events before a TRUNCATE
        cursor.execute("SET session_replication_role = replica")
        try:
            for sql, params in statements:
                cursor.execute(sql, params)
        finally:
            cursor.execute("SET session_replication_role = DEFAULT")


@pytest.fixture
def anchored_books(district_1, staff, anchored, inline_jobs):
    """Worked example 1 with every kind of issued record, anchored by the outbox task, then a
    clean recorded ``verify_books`` (which stores a checkpoint)."""
    build_books(staff)
    queued = [row for row in inline_jobs.connector.jobs.values() if row["task_name"] == "billing.anchor"]
    assert [row["status"] for row in queued] == ["todo"]  # a burst of issued records: one anchor waiting
    assert inline_jobs.run() >= 1
    assert len(anchor_files(anchored["folder"])) == 1
    code, out, err = verify_books()
    assert code == 0, out + err
    assert out.startswith("books balance and the signed anchor anchor-"), out
    assert BooksCheckpoint.objects.count() == 1
    return anchored


# --- Writing anchors ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_issued_receipt_is_anchored_by_its_outbox_task_signed_stored_and_mailed(district_1, staff, anchored, inline_jobs):
    assert "fingerprint: " in anchored["keygen_out"] and "BEGIN PUBLIC KEY" in anchored["keygen_out"]
    assert stat.S_IMODE(os.stat(anchored["key"]).st_mode) == 0o600
    with on_day(date(2026, 7, 2)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id="P1"),
                                         amount=Decimal("9180.00"), paid_on=date(2026, 7, 2))
    assert anchor_files(anchored["folder"]) == []  # deferred in the transaction, written by the worker
    assert inline_jobs.run() == 1
    [path] = anchor_files(anchored["folder"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    document = json.loads(path.read_bytes())
    payload = document["anchor"]
    link = chain.link_of(chain.RECEIPT, receipt.pk)
    assert payload["chain"][link.series] == [1, link.hash]
    assert payload["counts"]["billing_payment"] == 1 and payload["counts"]["billing_receipt"] == 1
    assert payload["series"] == {f"receipt LAJ {receipt.fiscal_year}": 1}
    # anyone can check it with the published key and no code of ours
    public = anchors.public_key(str(anchored["public"]))
    public.verify(base64.b64decode(document["signature"]), chain.canonical(payload))
    # the store never overwrites nor deletes an anchor
    storage = anchors.anchor_storage()
    with pytest.raises(FileExistsError):
        storage.save(path.name, ContentFile(b"{}"))
    with pytest.raises(PermissionError):
        storage.delete(path.name)
    [message] = mail.outbox
    assert message.to == [AUDITORS] and message.attachments[0][0] == path.name
    assert message.attachments[0][1] == path.read_bytes()


@pytest.mark.django_db
def test_a_day_close_writes_an_anchor_at_once(district_1, staff, anchored, inline_jobs):
    from billing.models import Office

    with on_day(date(2026, 7, 2)):
        counter.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id="P1"),
                               amount=Decimal("9180.00"), paid_on=date(2026, 7, 2))
        counter.day_close(acting_user=staff["supervisor"], office=Office.objects.get(code="LAJ"), day=date(2026, 7, 2),
                          counted_cash=Decimal("9180.00"), counted_checks=Decimal("0.00"))
    jobs = sorted((row["queueing_lock"], row["scheduled_at"] is None) for row in inline_jobs.connector.jobs.values())
    assert jobs == [("billing.anchor", False), ("billing.anchor.day_close", True)]  # the close's is not delayed
    assert inline_jobs.run() == 2
    newest = json.loads(anchor_files(anchored["folder"])[-1].read_bytes())["anchor"]
    assert newest["chain"]["day_close LAJ"][0] == 1 and newest["counts"]["billing_dayclose"] == 1


# --- Clean books, no anchors, a forged anchor -----------------------------------------------------


@pytest.mark.django_db
def test_clean_books_pass_against_their_anchor(anchored_books):
    code, out, err = verify_books("--no-record", "--anchors", str(anchored_books["folder"]),
                                  "--public-key", str(anchored_books["public"]))
    assert code == 0 and out.startswith("books balance and the signed anchor anchor-"), out + err
    assert err == ""


@pytest.mark.django_db
def test_without_key_or_anchors_verify_books_says_so(district_1, staff, settings, tmp_path):
    build_books(staff)
    code, out, err = verify_books("--no-record")
    assert code == 0 and out.startswith("books balance; control totals:")
    assert err.startswith("warning: no anchors checked: no public key")
    key = tmp_path / "k.pem"
    anchors.keygen(str(key))
    code, out, err = verify_books("--no-record", "--public-key", f"{key}.pub", "--anchors", str(tmp_path))
    assert code == 0
    assert err == f"warning: no anchors found in {tmp_path}: the books were checked against the database alone\n"


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_forged_anchor_is_reported_and_the_books_are_compared_with_the_last_good_one(anchored_books):
    folder = anchored_books["folder"]
    [good] = anchor_files(folder)
    document = json.loads(good.read_bytes())
    document["anchor"]["counts"]["billing_payment"] = 0  # the owner lowers what was anchored...
    forged = folder / "anchor-29991231T000000000000Z.json"  # ...in a newer file: he has no key to sign it
    forged.write_text(json.dumps(document))
    code, out, err = verify_books("--no-record")
    assert code == 1
    assert out.splitlines() == [
        f"anchors: anchor {forged.name}: its signature does not verify with the public key "
        f"{anchors.fingerprint(anchors.public_key(str(anchored_books['public'])))}"
    ]


# --- The four attacks of issue 17 §5 ----------------------------------------------------------------

BOOKS_TABLES = (
    "billing_charge", "billing_payment", "billing_paymentvoid", "billing_refund", "billing_receipt", "billing_ledgerentry",
    "billing_dayclose", "billing_debtcertificate", "billing_seizurestep", "billing_seizurecase", "billing_bill",
    "billing_issueddocument", "billing_accountstatement", "billing_billbatchpart", "billing_billbatch",
    "billing_paymentallocation", "billing_correctioncharge", "billing_principaladjustment", "billing_lastdaymove",
    "billing_giveback", "billing_creditapplication", "billing_receiptseries", "billing_documentseries",
    "billing_bookscheck", "billing_bookscheckpoint", "levy_chainlink", "levy_rollcorrection", "levy_rollline", "levy_levy",
)


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_attack_1_emptied_books_fail_against_the_anchor(anchored_books):
    receipts = chain.link_of(chain.RECEIPT, Receipt.objects.order_by("-number").first().pk)
    as_database_owner((f"TRUNCATE {', '.join(BOOKS_TABLES)} CASCADE", []))
    assert books.verify() == []  # the database alone: nothing left to disagree
    code, out, err = verify_books("--no-record", "--no-anchors")
    assert code == 0 and out.startswith("books balance"), out + err
    code, out, err = verify_books()
    assert code == 1
    lines = out.splitlines()
    anchor = anchor_files(anchored_books["folder"])[-1].name
    assert f"anchors: anchor {anchor}: series {receipts.series} had link 5 with hash {receipts.hash[:16]}…, it is now missing" in lines
    assert f"anchors: anchor {anchor}: billing_payment has 0 rows, fewer than the 5 anchored" in lines
    assert f"anchors: anchor {anchor}: numbering series receipt LAJ 2026-2027 is at (missing), below the 5 anchored" in lines
    assert not BooksCheckpoint.objects.exists()  # the failing check stored no new checkpoint


def rechain(series: str, start: int) -> None:
    """Recompute every link of ``series`` from ``start`` on, as a forger must."""
    from levy.models import ChainLink

    links = list(ChainLink.objects.filter(series=series, position__gte=start).order_by("position"))
    previous = ChainLink.objects.get(series=series, position=start - 1).hash if start > 1 else chain.GENESIS
    with connection.cursor() as cursor:
        for link in links:
            record = next(chain.records(cursor, link.kind, [link.record_id]))
            content = chain.full_content(record, link.heads)
            new = chain.link_hash(previous, content)
            as_database_owner(("UPDATE levy_chainlink SET previous_hash = %s, content_hash = %s, hash = %s WHERE id = %s",
                               [previous, chain.content_hash(content), new, link.pk]))
            previous = new


def recompute_last_checkpoint() -> None:
    checkpoint = BooksCheckpoint.objects.order_by("-pk").first()
    with connection.cursor() as cursor:
        marks = {**checkpoint.marks, "chain": chain.heads_now(cursor)}
        totals = books.checkpoint_totals(cursor, marks)
    as_database_owner(("UPDATE billing_bookscheckpoint SET marks = %s, totals = %s WHERE id = %s",
                       [json.dumps(marks), json.dumps([[k, v] for k, v in totals.items()]), checkpoint.pk]))


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_attack_2_a_forged_receipt_pdf_with_its_chain_and_checkpoint_recomputed_fails(document_store, anchored_books):
    receipt = Receipt.objects.get(number=2)
    link = chain.link_of(chain.RECEIPT, receipt.pk)
    head = chain.link_of(chain.RECEIPT, Receipt.objects.get(number=5).pk)
    forged = b"%PDF-1.7 forged receipt"
    forge_file(IssuedDocument.objects.get(receipt=receipt).pdf.name, forged)  # the file in the document store (issue 20)
    as_database_owner(("UPDATE billing_issueddocument SET sha256 = %s WHERE receipt_id = %s",
                       [hashlib.sha256(forged).hexdigest(), receipt.pk]))
    rechain(link.series, link.position)
    recompute_last_checkpoint()
    assert books.verify() == []
    code, out, err = verify_books("--no-record", "--no-anchors")
    assert code == 0, out
    code, out, err = verify_books("--no-record")
    new_head = chain.link_of(chain.RECEIPT, Receipt.objects.get(number=5).pk).hash
    anchor = anchor_files(anchored_books["folder"])[-1].name
    assert code == 1
    assert out.splitlines()[0] == (f"anchors: anchor {anchor}: series {link.series} had link 5 with hash {head.hash[:16]}…, "
                                   f"it is now hash {new_head[:16]}…")
    assert IssuedDocument.objects.get(receipt=receipt).sha256 == hashlib.sha256(forged).hexdigest()


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_attack_3_a_payment_after_the_last_checkpoint_deleted_whole_fails(anchored_books, staff, inline_jobs):
    before = len(anchor_files(anchored_books["folder"]))
    with on_day(date(2026, 12, 2)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id="P2"),
                                         amount=Decimal("500.00"), paid_on=date(2026, 12, 2))
    assert inline_jobs.run() == 1  # the outbox task: an anchor right after the receipt
    assert len(anchor_files(anchored_books["folder"])) == before + 1
    link = chain.link_of(chain.RECEIPT, receipt.pk)
    assert link.position == 6
    payment = receipt.payment_id
    as_database_owner(
        ("DELETE FROM billing_ledgerentry WHERE payment_id = %s", [payment]),
        ("DELETE FROM billing_paymentallocation WHERE payment_id = %s", [payment]),
        ("DELETE FROM billing_issueddocument WHERE receipt_id = %s", [receipt.pk]),
        ("DELETE FROM levy_chainlink WHERE id = %s", [link.pk]),
        ("DELETE FROM billing_receipt WHERE id = %s", [receipt.pk]),
        ("DELETE FROM billing_payment WHERE id = %s", [payment]),
        ("UPDATE billing_receiptseries SET last_number = last_number - 1", []),
    )
    assert books.verify() == []
    code, out, err = verify_books("--no-record", "--no-anchors")
    assert code == 0, out
    code, out, err = verify_books("--no-record")
    anchor = anchor_files(anchored_books["folder"])[-1].name
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == f"anchors: anchor {anchor}: series {link.series} had link 6 with hash {link.hash[:16]}…, it is now missing"
    assert f"anchors: anchor {anchor}: billing_payment has 5 rows, fewer than the 6 anchored" in lines
    assert f"anchors: anchor {anchor}: numbering series receipt LAJ 2026-2027 is at 5, below the 6 anchored" in lines


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_attack_4_a_replaced_bulk_printing_part_is_refused_or_found(anchored_books, staff, inline_jobs):
    batch = bills.bill_batch_start(staff["hacienda"], "2026-2027", 2)
    bulk.bill_batch_run(batch=batch, processes=1)
    inline_jobs.run()
    part = BillBatchPart.objects.get(batch=batch)
    forged = b"%PDF-1.7 a forged print file"
    # Through the storage API: never overwritten, never renamed.
    with pytest.raises(FileExistsError):
        part.pdf.storage.save(part.pdf.name, ContentFile(forged))
    # The application's role: the row is append-only.
    with pytest.raises(DatabaseError, match="Cannot update or delete rows"), transaction.atomic():
        BillBatchPart.objects.filter(pk=part.pk).update(sha256=hashlib.sha256(forged).hexdigest())
    with pytest.raises(DatabaseError, match="Cannot update or delete rows"), transaction.atomic():
        BillBatchPart.objects.filter(pk=part.pk).delete()
    # The owner of the volume and of the database: the file replaced, the hash row updated.
    path = Path(part.pdf.path)
    path.chmod(0o644)
    path.write_bytes(forged)
    as_database_owner(("UPDATE billing_billbatchpart SET sha256 = %s WHERE id = %s",
                       [hashlib.sha256(forged).hexdigest(), part.pk]))
    assert books.verify() == []
    code, out, err = verify_books("--no-record", "--no-anchors")
    assert code == 0, out
    code, out, err = verify_books("--no-record")
    anchor = anchor_files(anchored_books["folder"])[-1].name
    assert code == 1
    assert out.splitlines() == [
        f"anchors: anchor {anchor}: bulk-printing part #{part.pk} was {part.pdf.name} with SHA-256 {part.sha256[:16]}…, "
        f"it is now {part.pdf.name} with SHA-256 {hashlib.sha256(forged).hexdigest()[:16]}…"
    ]


# --- The key in production ----------------------------------------------------------------------------


def test_production_without_a_signing_key_is_an_error(settings, tmp_path):
    settings.DEBUG = False
    settings.ANCHOR_SIGNING_KEY_FILE = ""
    [error] = checks.anchor_signing_key(None)
    assert error.id == "billing.E001" and "ANCHOR_SIGNING_KEY_FILE is not set" in error.msg
    settings.ANCHOR_SIGNING_KEY_FILE = str(tmp_path / "missing.pem")
    [error] = checks.anchor_signing_key(None)
    assert error.id == "billing.E001" and "cannot read the anchor signing key" in error.msg
    anchors.keygen(str(tmp_path / "key.pem"))
    settings.ANCHOR_SIGNING_KEY_FILE = str(tmp_path / "key.pem")
    assert checks.anchor_signing_key(None) == []


def test_keygen_never_overwrites_a_key(tmp_path):
    key = tmp_path / "key.pem"
    assert run_command("anchor", "keygen", "--out", str(key))[0] == 0
    before = key.read_bytes()
    with pytest.raises(CommandError, match="a signing key is never overwritten"):
        run_command("anchor", "keygen", "--out", str(key))
    assert key.read_bytes() == before


# --- The published key ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_verification_pages_publish_the_public_key(district_1, staff, anchored, client):
    published = anchors.published_key()
    assert published.pem == anchored["public"].read_text()
    with on_day(date(2026, 7, 2)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id="P1"),
                                         amount=Decimal("9180.00"), paid_on=date(2026, 7, 2))
    code = IssuedDocument.objects.get(receipt=receipt).verification_code
    for url in (f"/verificar/{code}/", "/verificar/clave-publica/", "/verificar/no-such-code/"):
        page = client.get(url).content.decode()
        assert published.fingerprint in page and "-----BEGIN PUBLIC KEY-----" in page, url


# --- The outbox on procrastinate's own tables -----------------------------------------------------


def test_a_burst_of_committed_receipts_queues_one_anchor_in_their_transactions(jobs_in_database, district_1, staff, anchored):
    """With the real job tables (not the in-memory stand-in): the task is deferred inside each
    issuing transaction, the second defer meets the queueing lock in a savepoint and the payment
    is still committed; one anchor waits, scheduled ANCHOR_DELAY_SECONDS later."""
    for code, amount in (("P1", "9180.00"), ("P3", "4590.00")):
        with on_day(date(2026, 7, 2)):
            counter.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id=code),
                                   amount=Decimal(amount), paid_on=date(2026, 7, 2))
    assert Receipt.objects.count() == 2
    with connection.cursor() as cursor:
        cursor.execute("SELECT status, queueing_lock, scheduled_at > now() + interval '20 seconds' FROM procrastinate_jobs"
                       " WHERE task_name = 'billing.anchor'")
        assert cursor.fetchall() == [("todo", "billing.anchor", True)]
    assert anchor_files(anchored["folder"]) == []


def test_every_append_only_books_table_is_counted_in_the_anchor():
    """Each append-only table of the books (tests/test_database_guard.py) is a floor in every anchor,
    so emptying it is found; the number series (counters, updated in place) are anchored by their
    last number instead, and the offices' history is not money."""
    from tests.test_database_guard import GUARDED

    books_tables = {table for table in GUARDED if table.startswith("billing_")}
    assert books_tables - {"billing_receiptseries", "billing_documentseries", "billing_officeevent"} <= set(anchors.COUNTS)
    assert "billing_voidreversal" in {table for _name, table, _stamp, _aggregate in books.CHECKPOINT_TABLES}
