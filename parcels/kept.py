"""What a page computed, kept for a while in the shared cache (``CACHES["default"]``: the database's
cache table, or Redis) so that every worker and machine serves it without computing it again.

The caller says what the result depends on (``parts``); the key is a hash of those parts and the
database's name, so two databases on one cache never share an entry. Inside a transaction of the
database, whose view may still roll back, nothing is read or kept: the result is computed.
``billing.accounts.kept_under_books_version`` (the delinquent list, the dashboard: kept until the
books change) and ``levy.selectors.roll_totals_kept`` (a roll's sums: kept as long as its levy)
are built on it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from django.core.cache import cache
from django.db import connections


def kept(name: str, parts: Callable[[], tuple], compute: Callable[[], Any], *, timeout: int,
         using: str = "default") -> Any:
    """``compute()``, or what it gave earlier for the same ``parts()`` on the same database, kept
    ``timeout`` seconds under ``name``. ``parts`` is asked only outside a transaction (it may
    query: the books' version)."""
    if connections[using].in_atomic_block:
        return compute()
    whole = (connections[using].settings_dict["NAME"], *parts())
    key = f"{name}:" + hashlib.sha256(repr(whole).encode()).hexdigest()
    found = cache.get(key)
    if found is None:
        found = compute()
        cache.set(key, found, timeout=timeout)
    return found
