"""A known "today" for tests whose figures depend on the date (¶12 surcharges, what is due).

The application reads the time through ``django.utils.timezone.now`` (``localdate()`` calls it), so
moving that clock moves every page, service and live-server thread of the test process; the clock
keeps running from the chosen moment, so timestamps still follow each other."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

_real_now = timezone.now


def move_clock_to(monkeypatch, moment: datetime) -> None:
    """From now on (until the test ends) it is ``moment`` (aware), plus the real time elapsed."""
    offset = moment - _real_now()
    monkeypatch.setattr(timezone, "now", lambda: _real_now() + offset)
