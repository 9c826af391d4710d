"""The statutory constants in force since the levy section was enacted (Ley 65 of 10 June 1953)."""

from datetime import date
from decimal import Decimal

from django.db import migrations


def seed(apps, schema_editor):
    LegalParameterSet = apps.get_model("levy", "LegalParameterSet")
    LegalParameterSet.objects.get_or_create(
        effective_from=date(1953, 6, 10),
        defaults={
            "source": "22 LPRA, Lajas Valley levy section ¶1–¶12; sec. 374a (Ley Núm. 65 de 10 de junio de 1953)",
            "reserve_cap_rate": Decimal("0.02"),
            "safety_margin_rate": Decimal("0.02"),
            "pumped_weight": Decimal("0.5"),
            "water_months": 12,
            "month_convention": "calendar",
            "grace_days": 60,
            "surcharge_rate": Decimal("0.005"),
            "saturdays_move_last_day": False,
            "late_roll_due_on_finalization": True,
            "water_first_year_rate": Decimal("2.00"),
            "water_max_authority_rate": Decimal("6.00"),
            "water_pumped_rate": Decimal("3.00"),
        },
    )


class Migration(migrations.Migration):
    dependencies = [("levy", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
