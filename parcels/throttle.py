"""Counting attempts in the shared cache (settings.CACHES), so every worker and every app server
sees the same count: the landowner claim (parcels.portal) and the password reset
(parcels.portal_forms) use it.

An attempt takes the first free one of ``limit`` numbered slots with ``cache.add``, which only
one process can win for a slot (a primary key in the database cache, SET NX in Redis): a read,
then a write, of one counter would lose attempts made at the same moment by two workers. Each slot
expires ``window`` seconds after it was taken, so the limit is on attempts in the last window.

The database cache writes through the request's own connection: an attempt must be recorded
outside any transaction that is then rolled back (the callers record before they fail).
"""

from __future__ import annotations

import hashlib

from django.core.cache import cache


def _slots(scope: str, subject: str, limit: int) -> list[str]:
    digest = hashlib.sha256(subject.encode()).hexdigest()  # any subject, a fixed-length key
    return [f"throttle:{scope}:{digest}:{n}" for n in range(limit)]


def attempts(*, scope: str, subject: str, limit: int) -> int:
    """How many of the last window's attempts are counted (at most ``limit``)."""
    return len(cache.get_many(_slots(scope, subject, limit)))


def attempt_record(*, scope: str, subject: str, limit: int, window: int) -> bool:
    """Counts one attempt; False when ``limit`` attempts were already counted in the window."""
    return any(cache.add(slot, 1, timeout=window) for slot in _slots(scope, subject, limit))
