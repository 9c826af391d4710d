"""Shared fixtures: one user per role, parcels and owners built through the services (by the
factories of ``tests/factories.py``)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from parcels.models import Owner, Parcel
from parcels.roles import ROLES
from tests.factories import PASSWORD as PASSWORD  # the password of every fixture user; tests import it from here
from tests.factories import OwnerFactory, ParcelFactory, UserFactory
from tests.otp import Client

# Worked example 1 (../shared/statute/worked-examples.md): parcel, gravity acres; no pumping, no credit.
EXAMPLE_1 = [("P1", "100"), ("P2", "250"), ("P3", "50"), ("P4", "75.5"), ("P5", "24.5")]


def seed_migration_rows() -> None:
    """The rows the data migrations create (roles, legal parameters, the Lajas office), put back
    after a transactional test's flush emptied every table. The suite runs in parallel
    (pytest-xdist), so a worker may run a database test after a transactional one: it finds the
    database as migrations left it, as in a single process where pytest-django runs those last."""
    import importlib

    from django.apps import apps

    for module, function in [
        ("parcels.migrations.0002_roles_and_owner_key_sequence", "create_roles"),
        ("levy.migrations.0002_statute_parameters", "seed"),
        ("billing.migrations.0002_default_office", "seed"),
    ]:
        getattr(importlib.import_module(module), function)(apps, None)


@pytest.fixture(scope="session", autouse=True)
def flush_past_the_truncate_guard():
    """Transactional tests end with Django's flush, one ``TRUNCATE … CASCADE`` of every table, which
    the append-only tables' BEFORE TRUNCATE triggers refuse (parcels.database.NO_TRUNCATE). The
    test suite's flush runs with ``session_replication_role = replica`` for its own transaction,
    which fires no ordinary trigger. Only a superuser may set it (the test database's user is
    one); the application's role in production cannot (tests/test_database_guard.py). After the
    flush, the data migrations' rows are put back (``seed_migration_rows``)."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    execute_sql_flush = DatabaseOperations.execute_sql_flush

    def flush_without_triggers(self, sql_list):
        # execute_sql_flush runs the list in one transaction, so SET LOCAL ends with the flush.
        execute_sql_flush(self, ["SET LOCAL session_replication_role = replica", *sql_list])
        seed_migration_rows()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DatabaseOperations, "execute_sql_flush", flush_without_triggers)
        yield


@pytest.fixture
def make_user(db):
    def make(username: str, role: str, owner: Owner | None = None, **signature: str):  # full_name=, title=
        return UserFactory(username=username, role=role, owner=owner, **signature)

    return make


@pytest.fixture
def users(make_user, owner_a):
    """One user per role; the landowner is linked to ``owner_a``."""
    return {role: make_user(f"u_{role}", role, owner_a if role == "landowner" else None) for role in ROLES}


@pytest.fixture
def system_user(make_user):
    return make_user("u_system", "authority")


@pytest.fixture
def owner_a(db):
    return OwnerFactory(name="Carmen Irizarry Vélez", email="carmen@example.pr", owner_key="OWN-A")


@pytest.fixture
def owner_b(db):
    return OwnerFactory(name="Luis Toro Ramos", owner_key="OWN-B")


@pytest.fixture
def make_parcel(db):
    def make(parcel_id: str, owner: Owner, gravity: str = "10", pumped: str = "0", inclusion: str = "permanent",
             water_since: date | None = date(2000, 1, 1), credit: str = "0", unit: str = "acre") -> Parcel:
        return ParcelFactory(
            parcel_id=parcel_id, owner=owner, area_unit=unit, gravity_area=Decimal(gravity), pumped_area=Decimal(pumped),
            inclusion=inclusion, water_since=water_since, credit_percent=Decimal(credit),
        )

    return make


@pytest.fixture
def parcel_a(make_parcel, owner_a):
    return make_parcel("LAJ-A1", owner_a, gravity="42.5", credit="25")


@pytest.fixture
def parcel_b(make_parcel, owner_b):
    return make_parcel("LAJ-B1", owner_b, gravity="0", pumped="80")


@pytest.fixture
def client():
    """pytest-django's client, with a ``force_login`` that also passes the second factor (staff,
    and landowners who enrolled) with a real device: see ``tests/otp.py``."""
    return Client()


@pytest.fixture
def login(client):
    def do(user):
        client.force_login(user)
        return client

    return do


@pytest.fixture
def seed_rows(transactional_db):
    """Rows the data migrations create (roles, legal parameters, the Lajas office) for a transactional
    test: every flush puts them back (``seed_migration_rows``), so this only asks for the database."""


@pytest.fixture(autouse=True)
def shared_cache_emptied(request):
    """The shared cache (throttles, the delinquent list) is a table the rollback of a database test
    empties, but the flush of a transactional test (or of a live server's) does not: emptied after
    those. Outside the database (CACHE_URL=redis://...) it is emptied after every test."""
    from django.conf import settings

    in_database = settings.CACHES["default"]["BACKEND"].endswith("DatabaseCache")
    marker = request.node.get_closest_marker("django_db")
    transactional = bool({"transactional_db", "live_server", "seed_rows"} & set(request.fixturenames)) or bool(
        marker and (marker.kwargs.get("transaction") or (marker.args and marker.args[0]))
    )
    if in_database and not transactional:
        yield
        return
    if in_database:
        request.getfixturevalue("_django_db_helper")
    yield
    from django.core.cache import cache

    cache.clear()


# --- The books' invariants after every database test (billing.books) ----------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.books_call_passed = report.passed
    return report


@pytest.fixture(autouse=True)
def books_balance_after_test(request):
    """After a passing test that used the database, ``billing.books.verify()`` must find nothing.
    A test that breaks the books on purpose is marked ``books_unchecked``."""
    node = request.node
    if node.get_closest_marker("books_unchecked") or not (
        "_django_db_helper" in request.fixturenames or node.get_closest_marker("django_db")
    ):
        yield
        return
    # Set the database up before this fixture, so the check runs before its rollback or flush.
    request.getfixturevalue("_django_db_helper")
    if "document_store" in request.fixturenames:  # and the test's own document store, so the check reads it
        request.getfixturevalue("document_store")
    yield
    from django.db import connection
    from psycopg.pq import TransactionStatus

    if not getattr(node, "books_call_passed", False) or connection.needs_rollback or (
        connection.connection is not None and connection.connection.info.transaction_status == TransactionStatus.INERROR
    ):
        return
    from billing import books

    findings = books.verify()
    if findings:
        pytest.fail("the books do not balance after this test:\n" + "\n".join(str(f) for f in findings), pytrace=False)


# --- Background jobs in the test's own process ---------------------------------------------------


def run_async(coroutine):
    """Await ``coroutine`` on an event loop of its own, in another thread: the browser tests'
    Playwright keeps a loop running in the main thread, where asgiref's async_to_sync refuses."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def _in_memory_connector():
    from procrastinate.testing import InMemoryConnector

    class Connector(InMemoryConnector):
        """Its synchronous calls (a defer from a service) go through ``run_async``."""

        def execute_query(self, query, **arguments):
            return run_async(self.execute_query_async(query, **arguments))

        def execute_query_one(self, query, **arguments):
            return run_async(self.execute_query_one_async(query, **arguments))

        def execute_query_all(self, query, **arguments):
            return run_async(self.execute_query_all_async(query, **arguments))

    return Connector()


class InlineJobs:
    """procrastinate's ``InMemoryConnector`` stands in for the job tables, and what is deferred runs
    here, in this thread (so inside the test's transaction), when the transaction that deferred it
    commits: ``django_capture_on_commit_callbacks(execute=True)``, or a real commit in transactional
    and live-server tests. ``run()`` runs what is queued now, as a worker would: a job that fails
    with an error its task retries goes back to the queue and runs again."""

    def __init__(self) -> None:
        self.connector = _in_memory_connector()

    def _next(self) -> dict | None:
        locks = set(self.connector.current_locks)
        return next((row for _id, row in sorted(self.connector.jobs.items())
                     if row["status"] == "todo" and (row["lock"] is None or row["lock"] not in locks)), None)

    def run(self) -> int:
        from procrastinate import jobs
        from procrastinate.contrib.django import app

        ran = 0
        while (row := self._next()) is not None:
            row["status"] = "doing"
            task = app.tasks[row["task_name"]]
            ran += 1
            try:
                task(**row["args"])
            except Exception as exc:
                if task.get_retry_exception(exception=exc, job=jobs.Job.from_row(row)) is not None:
                    row.update(status="todo", attempts=row["attempts"] + 1)
                else:
                    row["status"] = "failed"
            else:
                row["status"] = "succeeded"
        return ran

    def statuses(self) -> list[str]:
        return [row["status"] for _id, row in sorted(self.connector.jobs.items())]


@pytest.fixture(autouse=True)
def inline_jobs(request, monkeypatch):
    """Every test but those that start real workers (``jobs_in_database``) runs its jobs inline,
    and code that is a worker for a while in its own process (``parcels.jobs.worker_run``, e.g.
    ``billing bulk-bills``) runs them with ``InlineJobs.run`` too."""
    if "jobs_in_database" in request.fixturenames:
        yield None
        return
    from django.db import transaction
    from procrastinate import manager
    from procrastinate.contrib.django import app

    from parcels import jobs as parcels_jobs

    jobs = InlineJobs()
    defer_job = manager.JobManager.defer_job

    def defer_then_run_on_commit(self, *args, **kwargs):
        job = defer_job(self, *args, **kwargs)
        transaction.on_commit(jobs.run)
        return job

    monkeypatch.setattr(manager.JobManager, "defer_job", defer_then_run_on_commit)
    monkeypatch.setattr(parcels_jobs, "worker_run", lambda **options: jobs.run())
    with app.replace_connector(jobs.connector):
        yield jobs


@pytest.fixture
def jobs_in_database(seed_rows):
    """Jobs go to procrastinate's tables, for worker processes (tests/workers.py) to take; those
    tables are not Django's to flush, so they are emptied before and after the test."""
    from django.db import connection

    def empty() -> None:
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE procrastinate_jobs, procrastinate_events, procrastinate_periodic_defers, "
                           "procrastinate_workers RESTART IDENTITY CASCADE")

    empty()
    yield
    empty()


@pytest.fixture(autouse=True)
def language_reset():
    """Every test starts in the site's language (Spanish): a request or a document rendered in
    English earlier in the same thread must not leave English active for the next test."""
    from django.conf import settings
    from django.utils import translation

    translation.activate(settings.LANGUAGE_CODE)
    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture
def document_store(settings, tmp_path):
    """Issue 20: this test's own document store (``STORAGES["documents"]`` in ``tmp_path``), for
    tests that change or delete stored files behind the API: the files of other tests of the
    worker (its ``MEDIA_ROOT``) are never touched, and a PDF issued again with the same bytes by a
    later test does not meet a forged file. The folder is returned."""
    folder = tmp_path / "documents-store"
    settings.STORAGES = {**settings.STORAGES, "documents": {"BACKEND": "billing.storage.WriteOnceStorage",
                                                            "OPTIONS": {"location": str(folder), "deletable": False}}}
    return folder
