"""Issue 20: with the PDFs in the document store (``0031``), the bytea column goes; the file column takes
its name ``pdf`` and every row must name its file. Reversible (with ``0031``: the bytes go back into the column)."""

import billing.storage
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('billing', '0031_documents_to_storage'),
    ]

    operations = [
        # a database default first, so that backwards the column comes back filled ('') for 0031 to fill
        migrations.AlterField(model_name='issueddocument', name='pdf', field=models.BinaryField(db_default=b'')),
        migrations.AlterField(model_name='seizurestep', name='pdf', field=models.BinaryField(db_default=b'')),
        migrations.RemoveField(model_name='issueddocument', name='pdf'),
        migrations.RemoveField(model_name='seizurestep', name='pdf'),
        migrations.RenameField(model_name='issueddocument', old_name='file', new_name='pdf'),
        migrations.RenameField(model_name='seizurestep', old_name='file', new_name='pdf'),
        migrations.AlterField(model_name='issueddocument', name='pdf', field=billing.storage.DocumentFileField(upload_to='')),
        migrations.AlterField(model_name='seizurestep', name='pdf', field=billing.storage.DocumentFileField(upload_to='')),
        migrations.AddConstraint(
            model_name='issueddocument',
            constraint=models.CheckConstraint(condition=models.Q(('pdf', ''), _negated=True), name='document_has_its_file'),
        ),
        migrations.AddConstraint(
            model_name='seizurestep',
            constraint=models.CheckConstraint(condition=models.Q(('pdf', ''), _negated=True), name='seizure_step_has_its_file'),
        ),
    ]
