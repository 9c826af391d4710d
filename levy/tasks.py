"""Tasks of the levy (procrastinate, found by ``procrastinate.contrib.django``'s autodiscovery)."""

from __future__ import annotations

from parcels.jobs import JobProgress, job_task
from parcels.models import Job

from . import services, whatif
from .services import LEVY_COMPUTE


@job_task(LEVY_COMPUTE)
def compute_levy(job: Job, progress: JobProgress) -> dict:
    """¶1–¶10: compute the year's draft levy and roll for the officer who asked.

    ``levy_compute`` replaces any earlier draft in one transaction, so a retried job computes
    again from scratch without duplicating lines. A refusal (``LevyError``) is a finished job
    whose result carries the reason for the page; anything else fails the job.

    Progress (roll lines written) goes through ``JobProgress``'s own connection, so the waiting
    page sees it while the compute transaction is still copying lines."""
    progress.set(0, 1)
    try:
        levy = services.levy_compute(acting_user=job.created_by, fiscal_year=job.payload["fiscal_year"], progress=progress.set)
    except services.LevyError as exc:
        return {"refused": str(exc)}
    return {"levy_id": levy.pk, "lines": levy.parcels_in_roll, "total_levy": str(levy.total_levy.amount)}


@job_task(whatif.LEVY_WHATIF)
def simulate_levy(job: Job, progress: JobProgress) -> dict:
    """¶1–¶12: the what-if of the officer who asked (``levy.whatif.simulate``): writes no
    estimate, levy or roll, only this job's result, which the what-if page renders."""
    return whatif.simulate(fiscal_year=job.payload["fiscal_year"], amounts=job.payload["amounts"], progress=progress.set)
