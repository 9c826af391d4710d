"""Hashes for the issued documents that had none: seizure notices (bytes in the database) and
bulk-printing parts (files in MEDIA_ROOT), so ``verify_books`` can tell they are unchanged."""

import hashlib

from django.conf import settings
from django.db import migrations, models


def hash_part_files(apps, schema_editor):
    from django.core.files.storage import default_storage

    for part in apps.get_model("billing", "BillBatchPart").objects.all():
        if part.pdf and default_storage.exists(part.pdf.name):
            with default_storage.open(part.pdf.name, "rb") as handle:
                part.sha256 = hashlib.file_digest(handle, "sha256").hexdigest()
            part.save(update_fields=["sha256"])


class Migration(migrations.Migration):

    dependencies = [
        ('billing', '0006_receipt_owner_key_index'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='billbatchpart',
            name='sha256',
            field=models.CharField(default='', max_length=64),
        ),
        migrations.AddField(
            model_name='seizurestep',
            name='sha256',
            field=models.CharField(default='', max_length=64),
        ),
        # Seizure steps are append-only (a trigger refuses UPDATE): it stands aside for the backfill.
        migrations.RunSQL(
            "ALTER TABLE billing_seizurestep DISABLE TRIGGER USER;"
            " UPDATE billing_seizurestep SET sha256 = encode(sha256(pdf), 'hex');"
            " ALTER TABLE billing_seizurestep ENABLE TRIGGER USER;",
            migrations.RunSQL.noop,
        ),
        migrations.RunPython(hash_part_files, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='seizurestep',
            constraint=models.CheckConstraint(condition=models.Q(('sha256__regex', '^[0-9a-f]{64}$')), name='seizure_step_has_its_hash'),
        ),
    ]
