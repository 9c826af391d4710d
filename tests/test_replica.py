"""Issue 20: reports from a replica. With a ``replica`` alias (here Django's test mirror of the test
database: one server, two connections), the report views read through it and nothing else does:
writes, pages that lead to an action, and reads inside a transaction of the primary stay on it."""

from datetime import date

import pytest
from django.db import connections, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from billing.models import Charge
from levy.models import FiscalYear
from parcels.models import Parcel
from parcels.replica import REPLICA, ReplicaRouter

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", REPLICA])


@pytest.fixture
def replica_on(settings, seed_rows):
    settings.REPORTS_FROM_REPLICA = True


def app_tables(queries):
    """The application tables a captured list of queries read."""
    tables = ("billing_charge", "billing_ledgerentry", "billing_office", "levy_levy", "levy_fiscalyear", "parcels_parcel")
    return {table for q in queries for table in tables if f'"{table}"' in q["sql"]}


def visit(client, url, method="get", **data):
    with CaptureQueriesContext(connections["default"]) as primary, CaptureQueriesContext(connections[REPLICA]) as replica:
        response = getattr(client, method)(url, data)
    return response, primary.captured_queries, replica.captured_queries


@pytest.mark.parametrize("name, args", [("collections:delinquent", []), ("collections:dashboard", []),
                                        ("levy:roll", ["2026-2027"])])
def test_a_report_view_reads_the_replica(replica_on, client, users, parcel_a, name, args):
    FiscalYear.objects.create(label="2026-2027", start=date(2026, 7, 1))
    client.force_login(users["hacienda"])
    response, primary, replica = visit(client, reverse(name, args=args))
    assert response.status_code == 200
    assert app_tables(replica), "the report read none of the application's tables from the replica"
    assert not app_tables(replica) & app_tables(primary), "the report read the same tables from both"
    # sessions, users' second factors and the cache stay on the primary
    assert not any('"django_session"' in q["sql"] for q in replica)


def test_pages_that_lead_to_an_action_read_the_primary(replica_on, client, users, parcel_a):
    client.force_login(users["collector"])
    for url in (reverse("billing:counter"), reverse("billing:counter-parcel", args=[parcel_a.pk])):
        response, primary, replica = visit(client, url)
        assert response.status_code == 200
        assert replica == [] and app_tables(primary)


def test_without_the_setting_nothing_reads_the_replica(settings, seed_rows, client, users, parcel_a):
    settings.REPORTS_FROM_REPLICA = False
    client.force_login(users["hacienda"])
    response, primary, replica = visit(client, reverse("collections:delinquent"))
    assert response.status_code == 200 and replica == [] and app_tables(primary)


def test_writes_and_reads_in_a_transaction_go_to_the_primary(replica_on, parcel_a):
    from parcels import replica as module

    router = ReplicaRouter()
    token = module._reading_replica.set(True)
    try:
        assert router.db_for_read(Charge) == REPLICA
        assert router.db_for_write(Charge) == "default"
        with transaction.atomic():
            assert router.db_for_read(Parcel) is None  # what is read in a transaction is about to be acted on
        assert router.allow_migrate(REPLICA, "billing") is False
    finally:
        module._reading_replica.reset(token)
    assert router.db_for_read(Charge) is None  # outside a marked request
