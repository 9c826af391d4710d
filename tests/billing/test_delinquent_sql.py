"""Issue 20: the delinquent list computed in SQL (``billing.delinquency``) is the rules' list
(``delinquency.delinquent_charges_replayed``: every candidate account replayed through
``rules.ledger_state``), line by line: parcel, charge, last day, principal, surcharge and its
basis period by period (¶12), paid, balance, days late.

The books are random walks through the services over two fiscal years (the steps of
``test_ledger_sequences``): payments whole, partial, beyond what is owed and late; voids (with the
reversals of the give-backs and *crédito aplicado* their money paid, ¶13); refunds; roll
corrections up and down (¶9, lowerings with their give-backs); office closures that move last
days (¶12); and new legal-parameter rows (a surcharge rate and grace days from a date, ¶12).
The list is compared as of today, days past (the books as they stood at their end) and days
ahead, with and without its filters, in every sort order the page offers."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.db import transaction
from django.urls import reverse
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from billing import accounts, charts, delinquency
from billing.models import Charge, OfficeClosure
from levy.models import Levy
from levy.services import legal_parameters_add
from tests.billing.test_ledger_sequences import (
    FIRST_DAY,
    GAPS,
    KINDS,
    LAST_DAY,
    STEPS,
    Walk,
    finalize_second_year,
    two_years,  # noqa: F401  (the fixture)
)
from tests.clock import on_day


def line(item: delinquency.DelinquentCharge) -> tuple:
    return (item.parcel.parcel_id, item.charge.pk, item.state, item.days_late)


def assert_sql_is_the_rules(as_of: date, **filters) -> list[delinquency.DelinquentCharge]:
    replayed = delinquency.delinquent_charges_replayed(as_of=as_of, **filters)
    found = delinquency.with_records(delinquency.lines(delinquency.Filters(as_of=as_of, **filters)))
    assert [line(item) for item in found] == [line(item) for item in replayed], f"as of {as_of} {filters}"
    return replayed


def assert_dashboard_is_the_rules(as_of: date, parcels) -> None:
    """The collection dashboard's SQL (``billing.charts``) per semester is the rules' accounts
    summed: billed (principal as lowered), collected (principal paid) and delinquent (principal
    unpaid on charges past their last day)."""
    expected: dict[tuple[str, int | None], list[Decimal]] = {}
    for account in accounts.account_states(parcels=parcels, as_of=as_of, roll_lines=False).values():
        for state in account.state.charges:
            charge = account.charges[state.key]
            if charge.kind not in charts.LEVY_KINDS:
                continue
            row = expected.setdefault((charge.fiscal_year.label, charge.number), [Decimal("0.00")] * 3)
            row[0] += state.principal
            row[1] += state.principal_paid
            if state.accrues_surcharge and state.last_day < as_of and state.principal > state.principal_paid:
                row[2] += state.principal - state.principal_paid
    found = {(row.fiscal_year, row.number): [row.billed, row.collected, row.delinquent]
             for row in charts.dashboard(as_of=as_of).rows
             if (row.fiscal_year, row.number) in expected or row.billed or row.collected or row.delinquent}
    # (a semester with surcharges collected and no charge of its own has a row of zeros)
    assert found == expected, f"dashboard as of {as_of}"


def _sorted(items: list[delinquency.DelinquentCharge], order: str) -> list[delinquency.DelinquentCharge]:
    """The page's orders (``delinquency.ORDERS``) in Python: oldest last day first as listed, or
    by days late or balance either way, ties by cadastre number the same way."""
    if order.lstrip("-") == "days_late":
        return sorted(items, key=lambda item: (item.days_late, item.parcel.parcel_id), reverse=order.startswith("-"))
    if order.lstrip("-") == "balance":
        return sorted(items, key=lambda item: (item.state.balance, item.parcel.parcel_id), reverse=order.startswith("-"))
    return items


def assert_pages_are_the_rules(as_of: date, replayed: list[delinquency.DelinquentCharge]) -> None:
    """The page's sort orders and paging in SQL are the Python sort of the rules' list (stable)."""
    for order in ("", "days_late", "-days_late", "balance", "-balance"):
        expected = [(item.charge.pk, item.state.balance) for item in _sorted(replayed, order)]
        size = 2
        for number in range(1, len(expected) // size + 2):
            lines, totals, shown = delinquency.page(delinquency.Filters(as_of=as_of), order=order, number=number, size=size)
            start = (shown - 1) * size
            assert [(found.charge_id, found.state.balance) for found in lines] == expected[start:start + size], order
            assert totals.count == len(replayed)
            assert totals.balance == sum((item.state.balance for item in replayed), Decimal("0.00"))
            assert totals.parcels == len({item.parcel.pk for item in replayed})


@pytest.mark.django_db
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_the_sql_delinquent_list_is_the_rules_list_on_random_books(two_years, staff, monkeypatch, data):  # noqa: F811
    world = Walk(staff=staff, parcels=two_years, monkeypatch=monkeypatch)
    second_year_on = data.draw(st.dates(min_value=date(2027, 6, 1), max_value=date(2027, 10, 31)), label="2027-2028 final on")
    start = FIRST_DAY + timedelta(days=data.draw(st.integers(min_value=60, max_value=330), label="first day"))
    with transaction.atomic():
        world.move_to(start)
        visited = [start]
        for _ in range(data.draw(st.integers(min_value=2, max_value=9), label="steps")):
            day = min(LAST_DAY, world.today + timedelta(days=data.draw(GAPS, label="days later")))
            if world.today <= second_year_on <= day and not Levy.objects.filter(
                fiscal_year__label="2027-2028", status=Levy.Status.FINAL
            ).exists():
                world.move_to(second_year_on)
                finalize_second_year(world)
            world.move_to(day)
            STEPS[data.draw(KINDS, label="step")](world, data)
            visited.append(day)
            assert_sql_is_the_rules(world.today)
        ahead = world.today + timedelta(days=data.draw(st.integers(min_value=1, max_value=400), label="days ahead"))
        for as_of in sorted({visited[0], data.draw(st.sampled_from(visited), label="past day"), world.today, ahead}):
            replayed = assert_sql_is_the_rules(as_of)
            note(f"as of {as_of}: {len(replayed)} late charges")
            assert_dashboard_is_the_rules(as_of, world.parcels.values())
            if as_of == world.today:
                assert_pages_are_the_rules(as_of, replayed)
        assert_sql_is_the_rules(ahead, fiscal_year=data.draw(st.sampled_from(["", "2026-2027", "2027-2028"]), label="year"),
                                number=data.draw(st.sampled_from([None, 1, 2]), label="half"),
                                min_balance=data.draw(st.sampled_from([None, Decimal("0.01"), Decimal("500.00")]), label="min"),
                                min_days_late=data.draw(st.sampled_from([0, 1, 45, 200]), label="days late"))
        transaction.set_rollback(True)


@pytest.mark.django_db
def test_a_rate_row_and_a_closure_change_the_sql_list_as_they_change_the_rules(two_years, staff):  # noqa: F811
    """¶12 by hand: 2026-2027's July installments are late from 2026-09-01 (last day Monday
    2026-08-31); a 1 % rate from 2027-01-01 charges the periods that begin on or after it at 1 %;
    a closure recorded on 2026-08-31 itself moves that last day to 2026-09-01."""
    as_of = date(2027, 2, 15)
    with on_day(date(2026, 12, 1)):
        legal_parameters_add(acting_user=staff["hacienda"], effective_from=date(2027, 1, 1),
                             changes={"surcharge_rate": Decimal("0.01")}, reason="Ley de prueba")
    replayed = assert_sql_is_the_rules(as_of)
    july = [item for item in replayed if item.charge.number == 1 and item.charge.fiscal_year.label == "2026-2027"]
    assert {item.parcel.parcel_id for item in july} == set(two_years)
    for item in july:
        assert item.state.last_day == date(2026, 8, 31)
        # periods from 2026-09-01 … 2027-02-01: four at ½ %, two at 1 %
        assert item.state.surcharge_rates == (Decimal("0.005"),) * 4 + (Decimal("0.01"),) * 2
        expected = (item.state.principal * (4 * Decimal("0.005") + 2 * Decimal("0.01"))).quantize(Decimal("0.01"))
        assert item.state.surcharge == expected
    with on_day(date(2026, 8, 31)):
        OfficeClosure.objects.create(day=date(2026, 8, 31), reason="Huracán", created_by=staff["hacienda"])
    moved = assert_sql_is_the_rules(as_of)
    assert {item.state.last_day for item in moved if item.charge.number == 1 and item.charge.fiscal_year.label == "2026-2027"} \
        == {date(2026, 9, 1)}
    # On 2026-09-01 itself, the new last day, nothing is late yet; the day after, the three are
    assert assert_sql_is_the_rules(date(2026, 9, 1)) == []
    assert len(assert_sql_is_the_rules(date(2026, 9, 2))) == Charge.objects.filter(
        number=1, fiscal_year__label="2026-2027").count() == 3


@pytest.mark.django_db
def test_the_page_searches_sorts_and_totals_in_sql(two_years, staff, client, make_user):  # noqa: F811
    client.force_login(make_user("hac-page", "hacienda"))
    url = reverse("collections:delinquent")
    page = client.get(url, {"as_of": "15/10/2026", "q": "Q2", "o": "-balance"})
    assert page.status_code == 200
    items = page.context["page"].object_list
    assert [item.parcel.parcel_id for item in items] == ["Q2"]
    assert page.context["count"] == 1
    assert page.context["totals"]["balance"] == items[0].state.balance > 0
    everything = client.get(url, {"as_of": "15/10/2026", "page": "99"})  # past the end: the last page
    assert everything.context["page"].number == 1 and everything.context["count"] == 3


@pytest.mark.django_db
def test_a_payment_on_the_first_day_of_a_period_lowers_only_the_next_periods(district_1, staff):
    """¶12: a period is charged on the principal unpaid at its start, paid *strictly before* it.
    P1's July installment is late from 2026-09-01; 3,000.00 paid on 2026-10-01, the first day of
    its second period, lowers the third period's basis, not the second's."""
    from billing.services import counter
    from parcels.models import Parcel

    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(date(2026, 10, 1)):
        counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("3000.00"), paid_on=date(2026, 10, 1))
    late = [item for item in assert_sql_is_the_rules(date(2026, 11, 15)) if item.parcel.parcel_id == "P1"]
    assert len(late) == 1
    basis = late[0].state.surcharge_basis
    assert [start for start, _unpaid in basis] == [date(2026, 9, 1), date(2026, 10, 1), date(2026, 11, 1)]
    assert basis[0][1] == basis[1][1] == late[0].state.principal
    assert basis[2][1] == late[0].state.principal - late[0].state.principal_paid < basis[1][1]
