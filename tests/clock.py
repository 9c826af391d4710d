"""A known "today" for tests whose figures depend on the date (¶12 surcharges, what is due).

The application reads the time through ``django.utils.timezone.now`` (``localdate()`` calls it), so
moving that clock moves every page, service and live-server thread of the test process; the clock
keeps running from the chosen moment, so timestamps still follow each other."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, time
from unittest import mock

from django.utils import timezone

_real_now = timezone.now


def move_clock_to(monkeypatch, moment: datetime) -> None:
    """From now on (until the test ends) it is ``moment`` (aware), plus the real time elapsed."""
    offset = moment - _real_now()
    monkeypatch.setattr(timezone, "now", lambda: _real_now() + offset)


@contextmanager
def on_day(day: date) -> Iterator[None]:
    """Inside the block it is noon of ``day`` at the office (America/Puerto_Rico), plus the real
    time elapsed; after it, the clock the test had. For a payment at the counter on that day:
    the counter records payments of today only (issue 11, finding 7)."""
    moment = datetime.combine(day, time(12), tzinfo=timezone.get_default_timezone())
    offset = moment - _real_now()
    with mock.patch.object(timezone, "now", lambda: _real_now() + offset):
        yield


@contextmanager
def localdate_on(day: date) -> Iterator[None]:
    """``on_day`` for the modules that pin ``timezone.localdate`` itself rather than the clock:
    inside the block "today" is ``day``; after it, the test's pinned day again."""
    with mock.patch.object(timezone, "localdate", lambda *args, **kwargs: day):
        yield
