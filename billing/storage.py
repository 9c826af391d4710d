"""Write-once file storage: what is stored under a name stays what it was.

``WriteOnceStorage`` is Django's ``FileSystemStorage`` that never overwrites and never renames:
a name that exists already is refused (``FileExistsError``) instead of Django's silent
``name_AbC123.pdf``, so whoever writes learns that the name was taken and nothing is replaced
through the storage API. Files are written read-only (0444). With ``deletable=False`` (the
anchor store) ``delete`` is refused too.

- ``parts_storage()``: the merged bulk-printing parts (``BillBatchPart.pdf``) in ``MEDIA_ROOT``.
- ``document_storage()``: the issued PDFs (``IssuedDocument.pdf``, ``SeizureStep.pdf``), the
  ``STORAGES["documents"]`` alias: a ``WriteOnceStorage`` of ``MEDIA_ROOT`` (``documents/…``) that
  never deletes, or S3 object storage with object lock (``DOCUMENT_STORAGE=s3``, see the README).
  The rows keep each file's SHA-256 (and the chain holds it); ``verify_books`` re-hashes the files.
- The anchor store is the ``STORAGES["anchors"]`` alias (``billing.anchors``): a
  ``WriteOnceStorage`` rooted at ``ANCHOR_DIR`` by default, or S3 object storage with object lock
  (``ANCHOR_STORAGE=s3``, see the README).

What the operating system's owner of the folder does behind the API is caught elsewhere: the
parts' hashes are in the signed anchors, the anchors are signed.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, storages
from django.core.signals import setting_changed
from django.db import models
from django.db.models.fields.files import FieldFile
from django.dispatch import receiver
from django.utils.deconstruct import deconstructible
from django.utils.functional import LazyObject, empty
from django.utils.text import get_valid_filename
from django.utils.translation import gettext as _

from .errors import BillingError

logger = logging.getLogger(__name__)


@deconstructible(path="billing.storage.WriteOnceStorage")
class WriteOnceStorage(FileSystemStorage):
    """A ``FileSystemStorage`` whose files are written once: an existing name is refused."""

    def __init__(self, *args: Any, deletable: bool = True, **kwargs: Any) -> None:
        kwargs.setdefault("file_permissions_mode", 0o444)
        kwargs["allow_overwrite"] = False
        super().__init__(*args, **kwargs)
        self.deletable = deletable

    def get_available_name(self, name: str, max_length: int | None = None) -> str:
        if max_length is not None and len(name) > max_length:
            raise ValueError(f"storage name {name!r} is longer than {max_length} characters")
        if self.exists(name):
            raise FileExistsError(f"{name} is stored already and is never overwritten (write-once storage)")
        return name

    def delete(self, name: str) -> None:
        if not self.deletable:
            raise PermissionError(f"{name}: files of this store are never deleted (append-only)")
        super().delete(name)


def parts_storage() -> WriteOnceStorage:
    """Where merged bulk-printing parts are stored: ``MEDIA_ROOT``, written once (the callable keeps
    the path out of migrations)."""
    return WriteOnceStorage(location=settings.MEDIA_ROOT, base_url=settings.MEDIA_URL)


def anchor_storage() -> Any:
    """The append-only anchor store (``STORAGES["anchors"]``)."""
    return storages["anchors"]


# --- Issued documents (issue 20) ------------------------------------------------------------------


class DocumentFieldFile(FieldFile):
    """A stored issued PDF. ``bytes(document.pdf)`` reads the stored file as it is (no hash
    check; ``billing.documents.document_pdf`` checks it)."""

    def __bytes__(self) -> bytes:
        if not self.name:
            return b""
        with document_storage().open(self.name, "rb") as handle:
            return handle.read()


class DocumentStorage(LazyObject):
    """The ``STORAGES["documents"]`` store, looked up when first used and again after a test
    changes ``STORAGES`` (like Django's ``default_storage``), so the field's ``.path``/``.open``
    and ``document_storage()`` always mean the same store."""

    def _setup(self) -> None:
        self._wrapped = storages["documents"]


document_store = DocumentStorage()


@receiver(setting_changed)
def _document_store_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("STORAGES", "MEDIA_ROOT"):
        document_store._wrapped = empty


class DocumentFileField(models.FileField):
    """The file of an issued PDF in the ``STORAGES["documents"]`` store; its name is set by
    ``billing.documents.document_save`` (never by an upload), the row keeps its SHA-256."""

    attr_class = DocumentFieldFile

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 255)
        kwargs.setdefault("storage", document_store)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple[str, str, list[Any], dict[str, Any]]:
        name, path, args, kwargs = super().deconstruct()
        kwargs.pop("storage", None)  # always ``document_storage``: the class says it
        if kwargs.get("max_length") == 255:
            del kwargs["max_length"]
        return name, "billing.storage.DocumentFileField", args, kwargs


def document_storage() -> Any:
    """The store of issued PDFs (``STORAGES["documents"]``): a ``WriteOnceStorage`` of
    ``MEDIA_ROOT`` that never deletes by default, S3 object storage with object lock when
    ``DOCUMENT_STORAGE=s3`` (README). Read at each call so a test's settings apply."""
    return storages["documents"]


def document_name(*, kind: str, number: str, sha256: str) -> str:
    """``documents/<kind>/<number>-<first 16 hex of the SHA-256>.pdf``: the hash in the name
    makes a document's name follow from its bytes, so a transaction rolled back after writing
    its file (the file stays: the store never deletes) never blocks the number's next issue."""
    return f"documents/{kind}/{get_valid_filename(number)}-{sha256[:16]}.pdf"


def document_write(*, name: str, data: bytes, sha256: str) -> str:
    """Write ``data`` once under ``name`` and return the name. A file already there with the
    same bytes (a retry of a rolled-back issue) is kept; one with other bytes is refused
    (``FileExistsError``): a stored document is never replaced."""
    storage = document_storage()
    if storage.exists(name):
        with storage.open(name, "rb") as handle:
            found = hashlib.file_digest(handle, "sha256").hexdigest()
        if found != sha256:
            raise FileExistsError(f"{name} is stored already with other bytes and is never overwritten")
        return name
    saved = storage.save(name, ContentFile(data))
    if saved != name:  # a store that renames instead of refusing (S3 without file_overwrite)
        raise FileExistsError(f"{name} was stored as {saved}: the document store must keep the names it is given")
    return saved


class DocumentAltered(BillingError):
    """A stored document's file is missing from the document store or no longer hashes as it was
    issued: it is not served (``verify_books`` names it too)."""


def stored_pdf(name: str, *, sha256: str, label: str) -> bytes:
    """The bytes of a stored document's file, checked against the hash it was issued with;
    ``DocumentAltered`` when the file is missing or differs (``label`` names the document)."""
    try:
        with document_storage().open(name, "rb") as handle:
            data = handle.read()
    except OSError:  # FileNotFoundError, or the object store's refusal
        logger.error("issued document %s: its file %s is missing from the document store", label, name)
        raise DocumentAltered(_("El documento %(d)s no está en el almacén de documentos: no se puede servir. "
                                "Avise a la oficina.") % {"d": label}) from None
    if hashlib.sha256(data).hexdigest() != sha256:
        logger.error("issued document %s: its file %s no longer hashes to %s", label, name, sha256)
        raise DocumentAltered(_("El archivo del documento %(d)s no es el que se emitió (su huella SHA-256 no coincide): "
                                "no se sirve. Avise a la oficina.") % {"d": label})
    return data
