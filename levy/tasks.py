"""Job handlers of the levy (registered when ``levy.views`` is imported; see ``levy.urls``)."""

from __future__ import annotations

from parcels.jobs import JobProgress, job_handler
from parcels.models import Job

from . import services

LEVY_COMPUTE = "levy_compute"


@job_handler(LEVY_COMPUTE)
def compute_levy(job: Job, progress: JobProgress) -> dict:
    """¶1–¶10: compute the year's draft levy and roll for the officer who asked.

    ``levy_compute`` replaces any earlier draft in one transaction, so a retried job computes
    again from scratch without duplicating lines. A refusal (``LevyError``) is a finished job
    whose result carries the reason for the page; anything else fails the job.

    No progress callback is passed: ``levy_compute`` would call it inside its transaction (while
    the roll lines are being copied), where a progress write can neither be seen by the waiting
    page before the commit nor share the connection with the running COPY."""
    progress.set(0, 1)
    try:
        levy = services.levy_compute(acting_user=job.created_by, fiscal_year=job.payload["fiscal_year"])
    except services.LevyError as exc:
        return {"refused": str(exc)}
    progress.set(1, 1)
    return {"levy_id": levy.pk, "lines": levy.parcels_in_roll, "total_levy": str(levy.total_levy.amount)}
