"""Each existing levy gets the legal-parameter row it was computed with: the row whose date its
``parameters`` snapshot records, else the row in force on its fiscal year's July 1 (the rule
``levy_compute`` has always used). Final levies are append-only, so their guard is skipped for
this one update, which only fills the new column."""

from datetime import date

import pgtrigger
from django.db import migrations


def backfill(apps, schema_editor):
    Levy = apps.get_model("levy", "Levy")
    LegalParameterSet = apps.get_model("levy", "LegalParameterSet")
    rows = list(LegalParameterSet.objects.order_by("effective_from"))
    by_date = {row.effective_from: row for row in rows}
    with pgtrigger.ignore("levy.Levy:final_levy_unchanged"):
        for levy in Levy.objects.using(schema_editor.connection.alias).filter(parameter_set__isnull=True).select_related(
            "fiscal_year"
        ):
            recorded = (levy.parameters or {}).get("effective_from")
            found = by_date.get(date.fromisoformat(recorded)) if recorded else None
            if found is None:
                in_force = [row for row in rows if row.effective_from <= levy.fiscal_year.start]
                if not in_force:
                    raise RuntimeError(f"no legal parameters in force on {levy.fiscal_year.start} for levy {levy.pk}")
                found = in_force[-1]
            Levy.objects.filter(pk=levy.pk).update(parameter_set=found)


class Migration(migrations.Migration):
    dependencies = [("levy", "0006_legal_parameters_who_why_and_levy_row")]
    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
