"""Issue 20, "documents out of the database": issued PDFs (¶9 receipts, ¶12 bills, ¶11 certificates,
¶14 seizure notices) are files written once to the document store (``STORAGES["documents"]``,
``billing.storage``); the rows keep the name and the SHA-256. Served byte-identical to that hash or
refused; overwriting is refused; ``verify_books`` re-hashes every file (or ``--sample N``); the data
migration moves a bytea document into the store and back.

Each test has its own store (``document_store``: a folder in ``tmp_path``), so a forged file never
meets another test's PDF."""

from __future__ import annotations

import hashlib
import stat
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from billing import books, documents
from billing.models import IssuedDocument, Receipt
from billing.services import counter
from billing.storage import DocumentAltered, document_storage, document_write
from parcels.models import Parcel
from tests.billing.conftest import district_1, staff  # noqa: F401 (fixtures)
from tests.clock import on_day
from tests.commands import run_command

pytestmark = pytest.mark.django_db


def pay(staff: dict, code: str, amount: str, day: int = 15) -> Receipt:  # noqa: F811
    """¶13: a payment at the counter in July 2026 and its numbered receipt (¶9)."""
    with on_day(date(2026, 7, day)):
        return counter.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id=code),
                                      amount=Decimal(amount), paid_on=date(2026, 7, day))


def forge(folder: Path, name: str, data: bytes | None) -> None:
    """Change (or with ``None`` delete) a stored file behind the storage API, as the folder's owner can."""
    path = folder / name
    path.chmod(0o644)
    if data is None:
        path.unlink()
    else:
        path.write_bytes(data)


def test_issuing_a_receipt_writes_a_file_whose_sha256_is_the_rows(document_store, district_1, staff):  # noqa: F811
    receipt = pay(staff, "P1", "100.00")
    document = IssuedDocument.objects.get(receipt=receipt)
    path = document_store / document.pdf.name
    assert document.pdf.name == f"documents/receipt/{receipt.display_number}-{document.sha256[:16]}.pdf"
    data = path.read_bytes()
    assert data.startswith(b"%PDF-") and hashlib.sha256(data).hexdigest() == document.sha256
    assert stat.S_IMODE(path.stat().st_mode) == 0o444  # written read-only
    assert bytes(document.pdf) == data and documents.document_pdf(document) == data
    # the bytes are no longer in the database: the column holds the file's name
    with connection.cursor() as cursor:
        cursor.execute("SELECT data_type FROM information_schema.columns WHERE table_name = 'billing_issueddocument' "
                       "AND column_name = 'pdf'")
        assert cursor.fetchone()[0] == "character varying"
        cursor.execute("SELECT pdf FROM billing_issueddocument WHERE id = %s", [document.pk])
        assert cursor.fetchone()[0] == document.pdf.name


@pytest.mark.books_unchecked
def test_the_download_is_byte_identical_and_a_changed_or_missing_file_is_refused(
    document_store, client, district_1, staff,  # noqa: F811
):
    receipt = pay(staff, "P1", "100.00")
    document = IssuedDocument.objects.get(receipt=receipt)
    client.force_login(staff["collector"])
    response = client.get(reverse("billing:receipt-pdf", args=[receipt.pk]))
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    assert hashlib.sha256(response.content).hexdigest() == document.sha256
    assert response.content == (document_store / document.pdf.name).read_bytes()

    forge(document_store, document.pdf.name, b"%PDF-1.7 forged")
    response = client.get(reverse("billing:receipt-pdf", args=[receipt.pk]))
    assert response.status_code == 500 and b"forged" not in response.content
    assert response.content.decode().startswith(f"El archivo del documento Recibo contributivo {receipt.display_number} "
                                                "no es el que se emitió (su huella SHA-256 no coincide)")
    forge(document_store, document.pdf.name, None)
    response = client.get(reverse("billing:receipt-pdf", args=[receipt.pk]))
    assert response.status_code == 500
    assert response.content.decode().startswith(f"El documento Recibo contributivo {receipt.display_number} no está en el "
                                                "almacén de documentos")
    with pytest.raises(DocumentAltered):
        documents.document_pdf(IssuedDocument.objects.get(pk=document.pk))


def test_overwriting_a_stored_document_is_refused(document_store, district_1, staff):  # noqa: F811
    receipt = pay(staff, "P1", "100.00")
    document = IssuedDocument.objects.get(receipt=receipt)
    before = (document_store / document.pdf.name).read_bytes()
    storage = document_storage()
    with pytest.raises(FileExistsError, match="never overwritten"):
        storage.save(document.pdf.name, ContentFile(b"%PDF-1.7 other"))
    with pytest.raises(FileExistsError, match="other bytes"):
        document_write(name=document.pdf.name, data=b"%PDF-1.7 other", sha256=hashlib.sha256(b"%PDF-1.7 other").hexdigest())
    with pytest.raises(PermissionError):
        storage.delete(document.pdf.name)
    # the same bytes again (a retried issue) keep the file as it is
    assert document_write(name=document.pdf.name, data=before, sha256=document.sha256) == document.pdf.name
    assert (document_store / document.pdf.name).read_bytes() == before
    assert sorted(p.name for p in (document_store / "documents" / "receipt").iterdir()) == [Path(document.pdf.name).name]


@pytest.mark.books_unchecked
def test_verify_books_finds_a_changed_and_a_deleted_file_in_full_and_in_a_sample(document_store, district_1, staff):  # noqa: F811
    first, second = pay(staff, "P1", "100.00"), pay(staff, "P2", "50.00", day=16)
    changed, deleted = (IssuedDocument.objects.get(receipt=r) for r in (first, second))
    assert books.verify() == []
    forge(document_store, changed.pdf.name, b"%PDF-1.7 forged")
    forge(document_store, deleted.pdf.name, None)
    forged = hashlib.sha256(b"%PDF-1.7 forged").hexdigest()
    expected = [
        f"documents: receipt {changed.number}: stored bytes hash to {forged[:16]}…, issued as {changed.sha256[:16]}… "
        f"(file {changed.pdf.name})",
        f"documents: receipt {deleted.number}: its file {deleted.pdf.name} is missing from the document store",
    ]
    assert [str(f) for f in books.verify()] == expected
    code, out, _err = run_command("verify_books", "--no-record", "--no-anchors")  # every file
    assert code == 1 and out.splitlines() == expected
    code, out, _err = run_command("verify_books", "--no-record", "--no-anchors", "--full")
    assert code == 1 and out.splitlines() == expected
    # a sample of N files of each kind: 1 of the 2 receipts (either), none with 0
    code, out, _err = run_command("verify_books", "--no-record", "--no-anchors", "--sample", "1")
    assert code == 1 and len(out.splitlines()) == 1 and out.splitlines()[0] in expected
    assert [str(f) for f in books.verify(file_sample=0)] == []
    assert sorted(str(f) for f in books.verify(file_sample=5)) == sorted(expected)


MIGRATED = ("billing", "0032_documents_drop_bytea")
BEFORE = ("billing", "0030_issueddocument_file_seizurestep_file")


@pytest.mark.django_db(transaction=True)
def test_the_data_migration_moves_a_bytea_document_into_storage_and_back(document_store, district_1, staff):  # noqa: F811
    receipt = pay(staff, "P1", "100.00")
    document = IssuedDocument.objects.get(receipt=receipt)
    data = (document_store / document.pdf.name).read_bytes()
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([BEFORE])  # backwards: 0032 restores the bytea column, 0031 reads the file into it
        with connection.cursor() as cursor:
            cursor.execute("SELECT pdf, file FROM billing_issueddocument WHERE id = %s", [document.pk])
            stored, name = cursor.fetchone()
        assert bytes(stored) == data and name == ""
        forge(document_store, document.pdf.name, None)  # the store is empty again: the bytes are only in bytea
        assert not (document_store / document.pdf.name).exists()
    finally:
        executor.loader.build_graph()
        executor.migrate([MIGRATED])  # forwards: 0031 writes the bytea document to the store, 0032 drops the column
    moved = IssuedDocument.objects.get(pk=document.pk)
    assert moved.pdf.name == document.pdf.name and moved.sha256 == document.sha256
    assert (document_store / moved.pdf.name).read_bytes() == data
    assert documents.document_pdf(moved) == data
    with connection.cursor() as cursor:
        cursor.execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'billing_issueddocument' "
                       "AND column_name IN ('pdf', 'file')")
        assert [row[0] for row in cursor.fetchall()] == ["pdf"]
    assert books.verify() == []
