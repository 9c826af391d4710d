"""Tasks of the parcel registry (procrastinate, found by ``procrastinate.contrib.django``'s autodiscovery).

The periodic ``retry_stalled_jobs`` is registered with ``parcels.jobs``, imported here."""

from __future__ import annotations

from django.db import transaction

from .imports import parse_parcel_csv
from .jobs import JobProgress, job_task
from .models import ImportUpload, Job
from .services import import_plan


@job_task("parcel_import_parse")
def parse_upload(job: Job, progress: JobProgress) -> dict:
    """Parse an uploaded CSV and store the preview (or every error) on the upload."""
    upload = ImportUpload.objects.get(pk=job.payload["upload_id"])
    with upload.file.open("rb") as handle:
        data = handle.read()
    progress.set(0, 3)
    parsed = parse_parcel_csv(data)
    progress.set(1, 3)
    if parsed.errors:
        upload.status = ImportUpload.Status.REJECTED
        upload.errors = [e.stored() for e in parsed.errors]
        upload.save(update_fields=["status", "errors"])
        progress.set(3, 3)
        return {"errors": len(parsed.errors)}
    plan = import_plan(parsed.rows)
    progress.set(2, 3)
    if plan.errors:
        upload.status = ImportUpload.Status.REJECTED
        upload.errors = [e.stored() for e in plan.errors]
    else:
        upload.status = ImportUpload.Status.READY
        upload.summary = plan.summary()
    upload.save(update_fields=["status", "errors", "summary"])
    progress.set(3, 3)
    return {"status": upload.status}


@job_task("parcel_import_apply")
def apply_upload(job: Job, progress: JobProgress) -> dict:
    """Write a confirmed upload. A file that no longer passes (the registry changed) is rejected whole."""
    from .services import parcels_import

    upload = ImportUpload.objects.get(pk=job.payload["upload_id"])
    if upload.status == ImportUpload.Status.APPLIED:
        return upload.summary  # already written by an earlier attempt
    with upload.file.open("rb") as handle:
        data = handle.read()
    progress.set(0, 1)
    with transaction.atomic():  # the parcels and the upload's "applied" together: a retry never imports twice
        result = parcels_import(acting_user=job.created_by, data=data, source=f"upload {upload.pk} {upload.original_name}")
        if result.ok:
            upload.status = ImportUpload.Status.APPLIED
            upload.summary = result.summary
        else:
            upload.status = ImportUpload.Status.REJECTED
            upload.errors = [e.stored() for e in result.errors]
        upload.save(update_fields=["status", "summary", "errors"])
    progress.set(1, 1)
    return {"status": upload.status}
