"""Reports from a replica (issue 20): with ``DATABASE_REPLICA_URL`` set, the read-only pages that
only look (the delinquent list, the collection dashboard, the roll, registers, exports) read from a
streaming replica through ``ReplicaRouter``; everything else reads the primary.

- A view opts in with ``@reads_replica`` (a function view, above or below ``role_required``: the
  attribute travels with ``functools.wraps``). ``ReplicaMiddleware`` sees the attribute in
  ``process_view`` and, for a GET or HEAD only, routes that request's ORM reads to the ``replica``
  alias; a streamed response keeps reading it while it streams.
- Writes never go to the replica (``db_for_write`` is always ``default``), nor does a read made
  inside a transaction of the primary (``atomic``: what is read there is about to be acted on),
  nor a read of anything but the application's own tables and users (sessions, the cache table,
  the sign-in throttles and second factors stay on the primary).
- Pages that lead to an action (the counter, certificates, seizure steps, finalization) never opt
  in: what they show must be what the action will find.
- Without ``DATABASE_REPLICA_URL`` there is no ``replica`` alias and the router routes nothing.
  A replica lags its primary by a moment; the pages that read it say what day they are as of.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, HttpResponse

REPLICA = "replica"
# The application's own tables (and users, which its lists join): what a report reads.
REPORT_APPS = frozenset({"parcels", "levy", "billing", "auth"})
_reading_replica: ContextVar[bool] = ContextVar("reading_replica", default=False)


def reads_replica(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Marks a read-only report view: its GET requests read the replica when one is configured."""
    view.reads_replica = True  # type: ignore[attr-defined]
    return view


def replica_configured() -> bool:
    """``REPORTS_FROM_REPLICA`` (true when ``DATABASE_REPLICA_URL`` is set) and the alias exists."""
    return settings.REPORTS_FROM_REPLICA and REPLICA in settings.DATABASES


class ReplicaRouter:
    """Reads of a marked request go to the replica; every write and migration to ``default``."""

    def db_for_read(self, model: type, **hints: Any) -> str | None:
        if not _reading_replica.get() or not replica_configured():
            return None
        if model._meta.app_label not in REPORT_APPS or connections["default"].in_atomic_block:
            return None
        return REPLICA

    def db_for_write(self, model: type, **hints: Any) -> str:
        return "default"

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # one database, two doors

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db != REPLICA


def _streamed_from_replica(content: Iterator[bytes]) -> Iterator[bytes]:
    token = _reading_replica.set(True)
    try:
        yield from content
    finally:
        _reading_replica.reset(token)


class ReplicaMiddleware:
    """Routes the reads of a ``@reads_replica`` view's GET to the replica (``ReplicaRouter``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        _reading_replica.set(False)
        try:
            response = self.get_response(request)
        finally:
            marked = _reading_replica.get()
            _reading_replica.set(False)
        if marked and getattr(response, "streaming", False):
            response.streaming_content = _streamed_from_replica(iter(response.streaming_content))
        return response

    def process_view(self, request: HttpRequest, view_func: Callable, view_args: Any, view_kwargs: Any) -> None:
        if getattr(view_func, "reads_replica", False) and request.method in ("GET", "HEAD") and replica_configured():
            _reading_replica.set(True)
        return None
