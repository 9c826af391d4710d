"""The District's Collector's office in Lajas; more offices are added by staff."""

from django.db import migrations


def seed(apps, schema_editor):
    Office = apps.get_model("billing", "Office")
    Office.objects.get_or_create(code="LAJ", defaults={"name": "Colecturía de Lajas", "address": "Calle Principal, Lajas, PR 00667"})


class Migration(migrations.Migration):
    dependencies = [("billing", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
