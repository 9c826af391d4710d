"""Write-once file storage: what is stored under a name stays what it was.

``WriteOnceStorage`` is Django's ``FileSystemStorage`` that never overwrites and never renames:
a name that exists already is refused (``FileExistsError``) instead of Django's silent
``name_AbC123.pdf``, so whoever writes learns that the name was taken and nothing is replaced
through the storage API. Files are written read-only (0444). With ``deletable=False`` (the
anchor store) ``delete`` is refused too.

- ``parts_storage()``: the merged bulk-printing parts (``BillBatchPart.pdf``) in ``MEDIA_ROOT``.
- The anchor store is the ``STORAGES["anchors"]`` alias (``billing.anchors``): a
  ``WriteOnceStorage`` rooted at ``ANCHOR_DIR`` by default, or S3 object storage with object lock
  (``ANCHOR_STORAGE=s3``, see the README).

What the operating system's owner of the folder does behind the API is caught elsewhere: the
parts' hashes are in the signed anchors, the anchors are signed.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.files.storage import FileSystemStorage, storages
from django.utils.deconstruct import deconstructible


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
