"""Issue 20: the issued PDFs move out of the database into the document store (``STORAGES["documents"]``,
``billing.storage``): each row's bytes are written once as ``documents/<kind>/<number>-<hash>.pdf`` and the
row gets the file's name; ``0032`` then drops the bytea column.

- Batched: the ids are read first, then ``BATCH`` rows' bytes at a time, so the PDFs are never all in
  memory; each batch's names are set by one UPDATE (the append-only trigger is ignored for it only).
- The name carries the SHA-256 of the bytes as they are in the row (not the stored hash): a row whose
  bytes were changed behind the API keeps that evidence, and ``verify_books`` names it as before.
- Rerunnable: a file already there with the same bytes is kept (a run that failed half-way), one with
  other bytes stops the migration.
- Reversible: backwards, the bytes are read back from the files into the column (``0032`` reversed has
  put it back); the files stay (the store never deletes).
"""

import hashlib

import pgtrigger
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import migrations
from django.utils.text import get_valid_filename

BATCH = 200
TABLES = (("IssuedDocument", "billing_issueddocument", "billing.IssuedDocument:append_only"),
          ("SeizureStep", "billing_seizurestep", "billing.SeizureStep:append_only"))


def stored_name(*, kind: str, number: str, data: bytes) -> str:
    """Write ``data`` once to the document store and return its name (``billing.storage.document_name``)."""
    storage = storages["documents"]
    digest = hashlib.sha256(data).hexdigest()
    name = f"documents/{kind}/{get_valid_filename(number)}-{digest[:16]}.pdf"
    if storage.exists(name):
        with storage.open(name, "rb") as handle:
            if hashlib.sha256(handle.read()).hexdigest() != digest:
                raise RuntimeError(f"{name} is stored already with other bytes")
        return name
    saved = storage.save(name, ContentFile(data))
    if saved != name:
        raise RuntimeError(f"{name} was stored as {saved}")
    return name


def documents_to_storage(apps, schema_editor):
    connection = schema_editor.connection
    for model_name, table, trigger in TABLES:
        model = apps.get_model("billing", model_name)
        ids = list(model.objects.using(connection.alias).filter(file="").order_by("pk").values_list("pk", flat=True))
        for start in range(0, len(ids), BATCH):
            chunk = ids[start:start + BATCH]
            names = []
            rows = model.objects.using(connection.alias).filter(pk__in=chunk).order_by("pk")
            fields = ("pk", "kind", "number", "pdf") if model_name == "IssuedDocument" else ("pk", "number", "pdf")
            for row in rows.values_list(*fields):
                kind = row[1] if model_name == "IssuedDocument" else "seizure"
                names.append((row[0], stored_name(kind=kind, number=row[-2], data=bytes(row[-1]))))
            with pgtrigger.ignore(trigger), connection.cursor() as cursor:
                cursor.execute(f"""
                    UPDATE {table} t SET file = v.name
                      FROM (SELECT unnest(%s::bigint[]) AS id, unnest(%s::text[]) AS name) v WHERE t.id = v.id
                """, [[pk for pk, _ in names], [name for _, name in names]])


def documents_back_to_the_database(apps, schema_editor):
    connection = schema_editor.connection
    storage = storages["documents"]
    for model_name, table, trigger in TABLES:
        model = apps.get_model("billing", model_name)
        rows = list(model.objects.using(connection.alias).exclude(file="").order_by("pk").values_list("pk", "file"))
        for start in range(0, len(rows), BATCH):
            chunk = rows[start:start + BATCH]
            data = []
            for _pk, name in chunk:
                with storage.open(name, "rb") as handle:
                    data.append(handle.read())
            with pgtrigger.ignore(trigger), connection.cursor() as cursor:
                cursor.execute(f"""
                    UPDATE {table} t SET pdf = v.pdf, file = ''
                      FROM (SELECT unnest(%s::bigint[]) AS id, unnest(%s::bytea[]) AS pdf) v WHERE t.id = v.id
                """, [[pk for pk, _ in chunk], data])


class Migration(migrations.Migration):

    dependencies = [
        ('billing', '0030_issueddocument_file_seizurestep_file'),
    ]

    operations = [
        migrations.RunPython(documents_to_storage, documents_back_to_the_database),
    ]
