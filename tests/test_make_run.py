"""`make run` as a newcomer sees it: no warning line per rendered PDF, and the demo's documents
link to the address it serves."""

from __future__ import annotations

import logging
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_weasyprints_fonttools_subset_notice_is_dropped_and_its_other_warnings_kept(caplog):
    # The exact call of weasyprint/pdf/fonts.py (70.0) where the HarfBuzz-Subset library is missing.
    weasyprint = logging.getLogger("weasyprint")
    with caplog.at_level(logging.WARNING):
        weasyprint.warning(
            'Using fontTools instead of HarfBuzz-Subset for font "%s". This will '
            'be unsupported in future versions of WeasyPrint. Please install '
            'HarfBuzz-Subset >= 4.1.0 with your package manager.', "Source Sans Pro")
        weasyprint.warning('Ignored `%s` at %d:%d, unknown property.', "colour: red", 3, 5)
    assert [record.getMessage() for record in caplog.records] == ["Ignored `colour: red` at 3:5, unknown property."]


def test_make_run_points_site_url_at_the_address_it_serves():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    run_url = re.search(r"^RUN_URL := (\S+)$", makefile, re.M).group(1)
    assert re.search(r"^run: export SITE_URL := \$\(RUN_URL\)$", makefile, re.M)
    served = re.findall(r"manage\.py runserver (\S+)", makefile)
    checked = re.search(r"s\.bind\(\('([\d.]+)', (\d+)\)\)", makefile).groups()
    assert served == [run_url.removeprefix("http://")] == [":".join(checked)]


def test_the_stalled_jobs_sweep_is_quiet_and_every_other_job_is_logged():
    """The workers sweep for dead workers' jobs every ten seconds (parcels.jobs.retry_stalled_jobs):
    the console drops its start and success lines, keeps its warnings and every other job's lines,
    whichever worker's child logger (procrastinate.worker.<name>) writes them."""
    (console,) = [h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler]

    def shown(level: int, message: str, task: str) -> bool:
        record = logging.LogRecord("procrastinate.worker.worker-1", level, __file__, 1, message, None, None)
        record.job = {"task_name": task}
        return bool(console.filter(record))

    assert not shown(logging.INFO, "Starting job retry_stalled_jobs[1]", "retry_stalled_jobs")
    assert not shown(logging.INFO, "Job retry_stalled_jobs[1] ended with status: Success", "retry_stalled_jobs")
    assert shown(logging.WARNING, "job 7 (levy_compute): its worker w stopped; queued again", "retry_stalled_jobs")
    assert shown(logging.INFO, "Starting job levy_compute[3]", "levy_compute")
