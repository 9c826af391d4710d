"""Issue 20, query budgets: a list page costs the same number of queries with 10 rows as with
1,000, and at most 10 of its own beyond the ones every signed-in request makes.

Every signed-in request reads its session and saves it again (the 30-minute idle timeout:
``SESSION_SAVE_EVERY_REQUEST``), reads the user,
its second factor and roles (``per_request``); a page's own queries are the rest.

The delinquent list is computed in SQL (``billing.delinquency``, issue 20): the legal rows, the
closures, the distinct last days, one query for the page and its totals, and the page's parcels
and charges; it is held to the budget like every list (it made 17 when it replayed accounts).
The landowner's home replays his accounts from their stored entries, one query per kind of entry
(charges, allocations, payments and voids, give-backs, credits applied, refunds, last-day moves,
principal adjustments, void reversals, legal parameters, office closures: 21 with his bills,
receipts and seizure steps), the same for 10 accounts or 1,000; it is held to "constant in the
rows" only, and its figures printed."""

from datetime import date
from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from billing.services.counter import payment_record
from billing.services.installments import roll_finalize
from levy.services import estimate_certify, estimate_enter, levy_compute
from parcels.models import AccessEvent, Owner, Parcel
from tests.clock import on_day

OWN_BUDGET = 10
# (url name, args, query, role)
PAGES = [
    ("parcels:parcel-list", [], {}, "authority"),
    ("parcels:parcel-list", [], {"q": "LAJ-0"}, "authority"),
    ("parcels:owner-list", [], {}, "authority"),
    ("parcels:audit", [], {}, "auditor"),
    ("levy:year-list", [], {}, "hacienda"),
    ("levy:roll", ["2026-2027"], {}, "hacienda"),
    ("collections:dashboard", [], {}, "hacienda"),
    ("collections:offices", [], {}, "hacienda"),
    ("collections:bill-batches", [], {}, "hacienda"),
    ("collections:closures", [], {}, "hacienda"),
    ("books:checks", [], {}, "auditor"),
    ("billing:counter", [], {"q": "LAJ-0"}, "collector"),
    ("home", [], {}, "landowner"),
    ("collections:delinquent", [], {"as_of": "02/09/2026"}, "hacienda"),
]
REPLAYS_ACCOUNTS = {"home"}


def district(size: int, users, owner) -> None:
    """``size`` parcels (half of them ``owner``'s, the landowner's), a finalized roll, one payment,
    and an access event per parcel: every list has ``size``-many rows to show or page through."""
    owners = Owner.objects.bulk_create([Owner(owner_key=f"QB-{n:05d}", name=f"Dueño {n}") for n in range(size // 2)])
    Parcel.objects.bulk_create([
        Parcel(parcel_id=f"LAJ-{n:06d}", owner=owner if n % 2 else owners[n // 2], gravity_acres=Decimal("10"),
               pumped_acres=Decimal("0"), area_unit="acre", gravity_area_entered=Decimal("10"),
               pumped_area_entered=Decimal("0"), inclusion="permanent", water_since=date(2000, 1, 1),
               credit_percent=Decimal("0"))
        for n in range(size)
    ])
    AccessEvent.objects.bulk_create([AccessEvent(kind=AccessEvent.Kind.LOGIN, username=f"u{n}", path="/entrar/")
                                     for n in range(size)])
    with on_day(date(2026, 6, 30)):
        estimate_enter(acting_user=users["authority"], fiscal_year="2026-2027", om_estimate=Decimal("100000.00"),
                       reserve=Decimal("1500.00"), misc_income=Decimal("7500.00"), surplus=Decimal("4000.00"))
        estimate_certify(acting_user=users["authority"], fiscal_year="2026-2027")
        levy_compute(acting_user=users["hacienda"], fiscal_year="2026-2027")
        roll_finalize(acting_user=users["hacienda"], fiscal_year="2026-2027", today=date(2026, 6, 30))
    with on_day(date(2026, 8, 3)):
        payment_record(acting_user=users["collector"], parcel=Parcel.objects.get(parcel_id="LAJ-000001"), amount=Decimal("10.00"))


def per_request(sql: str, user) -> bool:
    """One of the queries every signed-in request makes, whatever the page."""
    return (
        '"django_session"' in sql or sql.startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))
        or 'FROM "otp_' in sql or 'INNER JOIN "auth_user_groups"' in sql
        or (sql.startswith('SELECT "auth_user"."id"') and f'WHERE "auth_user"."id" = {user.pk} LIMIT 21' in sql)
    )


def page_costs(client, users) -> dict[tuple, tuple[int, int]]:
    """(total, own) queries of every page."""
    costs = {}
    for name, args, data, role in PAGES:
        client.force_login(users[role])
        client.get(reverse("home"))  # the first request after signing in sets the session up
        with CaptureQueriesContext(connection) as captured:
            response = client.get(reverse(name, args=args), data)
        assert response.status_code == 200, (name, response.status_code)
        own = [q for q in captured.captured_queries if not per_request(q["sql"], users[role])]
        costs[(name, tuple(sorted(data.items())))] = (len(captured.captured_queries), len(own))
    return costs


@pytest.mark.django_db
def test_list_pages_cost_the_same_queries_for_10_rows_as_for_1000(client, users, owner_a):
    measured = {}
    for size in (10, 1000):
        with transaction.atomic():  # each district on its own, rolled back after measuring
            district(size, users, owner_a)
            measured[size] = page_costs(client, users)
            transaction.set_rollback(True)
    for page, (total, own) in measured[1000].items():
        print(f"{page[0]} {dict(page[1])}: {measured[10][page][0]} → {total} queries, {own} of its own")
    for page, (total, own) in measured[1000].items():
        assert total <= measured[10][page][0], f"{page} grows with its rows: {measured[10][page][0]} → {total} queries"
        if page[0] not in REPLAYS_ACCOUNTS:
            assert own <= OWN_BUDGET, f"{page} makes {own} queries of its own"
