"""Job becomes the progress record of a procrastinate job (parcels/jobs.py).

Records still queued or running were rows of the old home-made queue, which no procrastinate
worker will ever take: they are failed, so no page waits on them."""

from django.conf import settings
from django.db import migrations, models


def fail_old_queue(apps, schema_editor):
    apps.get_model("parcels", "Job").objects.filter(status__in=["queued", "running"]).update(
        status="failed", finished_at=models.functions.Now(), error="left by the job queue procrastinate replaced",
    )


class Migration(migrations.Migration):

    dependencies = [
        ('parcels', '0006_history_no_truncate_guard'),
        ('procrastinate', '0041_post_retry_failed_job'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(fail_old_queue, migrations.RunPython.noop),
        migrations.AddField(
            model_name='job',
            name='key',
            field=models.CharField(blank=True, max_length=80, null=True),
        ),
        migrations.AddField(
            model_name='job',
            name='procrastinate_job_id',
            field=models.BigIntegerField(blank=True, db_index=True, null=True),
        ),
        migrations.AddConstraint(
            model_name='job',
            constraint=models.UniqueConstraint(condition=models.Q(('key__isnull', False), ('status__in', ['queued', 'running'])), fields=('kind', 'key'), name='one_active_job_per_kind_and_key'),
        ),
    ]
