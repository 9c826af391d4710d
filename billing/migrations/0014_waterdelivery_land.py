"""Each water delivery says which land it went to (sec. 374a): nullable, backfilled, then required.

Deliveries recorded before this were priced as pumped only when the parcel had no gravity acres,
so that is what they went to."""

from django.db import migrations, models


def backfill(apps, schema_editor):
    WaterDelivery = apps.get_model("billing", "WaterDelivery")
    WaterDelivery.objects.filter(parcel__gravity_acres=0, parcel__pumped_acres__gt=0).update(land="pumped")
    WaterDelivery.objects.filter(land__isnull=True).update(land="gravity")


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0013_counter_tendered_change_and_close_explanation"),
    ]

    operations = [
        migrations.AddField(
            model_name="waterdelivery",
            name="land",
            field=models.CharField(
                choices=[("gravity", "por gravedad"), ("pumped", "por bombeo del dueño")],
                max_length=7, null=True, verbose_name="tierra",
            ),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="waterdelivery",
            name="land",
            field=models.CharField(
                choices=[("gravity", "por gravedad"), ("pumped", "por bombeo del dueño")],
                max_length=7, verbose_name="tierra",
            ),
        ),
    ]
