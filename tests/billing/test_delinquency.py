"""Refunds, the end of day, debt certificates, the delinquent list, the seizure steps (¶14) and
water sold before the levy starts (¶8, sec. 374a)."""

from __future__ import annotations

import io
from datetime import date
from decimal import Decimal

import pytest
from django.db import DatabaseError, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pypdf import PdfReader

from billing import accounts, delinquency
from billing.errors import BillingError
from billing.models import Charge, DebtCertificate, Office, SeizureCase, WaterDelivery
from billing.services import collection, counter, water
from parcels.models import Parcel
from tests.billing import delinquent
from tests.billing.conftest import billing_cmd, statement
from tests.clock import on_day


@pytest.mark.django_db
def test_refund_only_what_is_credit(district_1, staff):
    p3 = Parcel.objects.get(parcel_id="P3")  # net 9180.00
    with on_day(date(2026, 7, 5)):
        counter.payment_record(acting_user=staff["collector"], parcel=p3, amount=Decimal("9200.00"), paid_on=date(2026, 7, 5))
    assert statement("P3", "2026-07-05")["credit_balance"] == "20.00"
    with pytest.raises(BillingError):
        counter.refund_issue(acting_user=staff["supervisor"], parcel=p3, amount=Decimal("20.01"), reason="x", refunded_on=date(2026, 7, 6))
    with pytest.raises(BillingError):
        counter.refund_issue(acting_user=staff["collector"], parcel=p3, amount=Decimal("20.00"), reason="x", refunded_on=date(2026, 7, 6))
    with on_day(date(2026, 7, 6)):
        counter.refund_issue(acting_user=staff["supervisor"], parcel=p3, amount=Decimal("20.00"), reason="Pago de más",
                             refunded_on=date(2026, 7, 6))
    after = statement("P3", "2026-07-06")
    assert after["credit_balance"] == "0.00" and after["total_due"] == "0.00"
    assert accounts.ledger_balance(p3) == Decimal("0.00")


@pytest.mark.django_db
def test_closed_day_needs_a_later_dated_void(district_1, staff):
    office = Office.objects.get(code="LAJ")
    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(date(2026, 7, 7)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("100.00"), paid_on=date(2026, 7, 7), method="check")
        counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("50.00"), paid_on=date(2026, 7, 7))
    from billing.selectors import day_report

    totals = {row.method: row.amount for row in day_report(office=office, day=date(2026, 7, 7)).by_method}
    assert totals["check"] == Decimal("100.00") and totals["cash"] == Decimal("50.00")
    close = counter.day_close(acting_user=staff["supervisor"], office=office, day=date(2026, 7, 7),
                              counted_cash=Decimal("45.00"), counted_checks=Decimal("100.00"),
                              explanation="Faltan $5.00: cambio mal dado")
    assert close.counted_cash.amount - close.expected_cash.amount == Decimal("-5.00")  # short by five dollars
    with pytest.raises(BillingError):
        counter.day_close(acting_user=staff["supervisor"], office=office, day=date(2026, 7, 7), counted_cash=Decimal("0"), counted_checks=Decimal("0"))
    with pytest.raises(BillingError, match="posterior"):
        counter.payment_void(acting_user=staff["supervisor"], payment=receipt.payment, reason="Cheque devuelto", voided_on=date(2026, 7, 7))
    counter.payment_void(acting_user=staff["supervisor"], payment=receipt.payment, reason="Cheque devuelto", voided_on=date(2026, 7, 9))


@pytest.mark.django_db
def test_debt_certificate_is_numbered_and_superseded(district_1, staff):
    p4 = Parcel.objects.get(parcel_id="P4")
    first = collection.certificate_issue(acting_user=staff["hacienda"], parcel=p4, as_of=date(2026, 10, 15))
    assert first.snapshot["total_due"] == "7000.21" and first.number.startswith("CD-")
    second = collection.certificate_issue(acting_user=staff["hacienda"], parcel=p4, as_of=date(2026, 10, 16))
    assert second.supersedes == first and second.number != first.number
    with pytest.raises(DatabaseError), transaction.atomic():
        DebtCertificate.objects.filter(pk=first.pk).update(as_of=date(2020, 1, 1))


@pytest.mark.django_db
def test_delinquent_list_and_csv(district_1, staff):
    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(date(2026, 8, 1)):
        counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("9180.00"), paid_on=date(2026, 8, 1))
    items = delinquent(as_of=date(2026, 9, 1))
    assert sorted(i.parcel.parcel_id for i in items) == ["P2", "P3", "P4", "P5"]
    assert all(i.days_late == 1 and i.charge.number == 1 for i in items)
    assert delinquent(as_of=date(2026, 8, 31)) == []  # the last day to pay is not late
    big = delinquent(as_of=date(2026, 9, 1), min_balance=Decimal("10000"))
    assert [i.parcel.parcel_id for i in big] == ["P2"]
    code, out, _ = billing_cmd("delinquent", "--as-of", "2026-10-15", "--format", "csv")
    assert code == 0
    p4 = next(line for line in out.splitlines() if line.startswith("P4,"))
    assert p4.split(",")[-4:] == ["6930.90", "69.31", "0.00", "7000.21"]


@pytest.mark.django_db
def test_seizure_steps_in_order_with_the_30_day_term_and_stop_when_paid(district_1, staff):
    p2 = Parcel.objects.get(parcel_id="P2")
    with pytest.raises(BillingError):
        collection.seizure_step_issue(acting_user=staff["hacienda"], parcel=p2, kind="certificate", on=date(2026, 9, 10))
    notice = collection.seizure_step_issue(acting_user=staff["hacienda"], parcel=p2, kind="notice", on=date(2026, 9, 10))
    assert notice.term_ends == date(2026, 10, 10) and notice.number.startswith("NE-2026-")
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(bytes(notice.pdf))).pages)
    assert "P2" in text and notice.number in text and "22,950.00" in text
    with pytest.raises(BillingError, match="30"):
        collection.seizure_step_issue(acting_user=staff["hacienda"], parcel=p2, kind="certificate", on=date(2026, 10, 10))
    collection.seizure_step_issue(acting_user=staff["hacienda"], parcel=p2, kind="certificate", on=date(2026, 10, 11))
    owed = Decimal(statement("P2", "2026-10-20")["total_due"])
    with on_day(date(2026, 10, 20)):
        counter.payment_record(acting_user=staff["collector"], parcel=p2, amount=owed, paid_on=date(2026, 10, 20))
    with pytest.raises(BillingError, match="detiene"):
        collection.seizure_step_issue(acting_user=staff["hacienda"], parcel=p2, kind="auction", on=date(2026, 10, 21))
    assert SeizureCase.objects.get(parcel=p2).status == "paid"


@pytest.mark.django_db
def test_water_before_the_levy_starts(make_parcel, owner_a, staff):
    new = make_parcel("W1", owner_a, gravity="10", water_since=date(2026, 3, 10))
    pumped = make_parcel("W2", owner_a, gravity="0", pumped="10", water_since=date(2025, 9, 15))
    paying = make_parcel("W3", owner_a, gravity="10", water_since=date(2020, 1, 1))
    first = water.water_delivery_record(acting_user=staff["authority"], parcel=new, delivered_on=date(2026, 10, 5), acre_feet=Decimal("12.5"))
    assert (first.rate, first.amount) == (Decimal("2.00"), Decimal("25.00"))  # first 12 months: $2.00
    second = water.water_delivery_record(acting_user=staff["authority"], parcel=pumped, delivered_on=date(2026, 10, 6), acre_feet=Decimal("4"))
    assert second.rate == Decimal("3.00")  # owner's pumps after the first year
    with pytest.raises(BillingError, match="ya paga"):
        water.water_delivery_record(acting_user=staff["authority"], parcel=paying, delivered_on=date(2026, 10, 5), acre_feet=Decimal("1"))
    assert water.water_charges_issue(acting_user=staff["authority"], year=2026, month=10) == 2
    assert water.water_charges_issue(acting_user=staff["authority"], year=2026, month=10) == 0
    charge = Charge.objects.get(parcel=new, kind="water")
    assert charge.principal.amount == Decimal("25.00") and charge.due_date == date(2026, 11, 1)
    data = statement("W1", "2026-12-31")
    assert data["other_charges"][0]["balance"] == "25.00" and data["other_charges"][0]["surcharge"] == "0.00"
    assert data["total_due"] == "25.00"
    with on_day(date(2026, 12, 31)):
        counter.payment_record(acting_user=staff["collector"], parcel=new, amount=Decimal("25.00"), paid_on=date(2026, 12, 31))
    assert statement("W1", "2026-12-31")["total_due"] == "0.00"
    assert WaterDelivery.objects.filter(charge__isnull=True).count() == 0


@pytest.mark.django_db
def test_water_csv_is_all_or_nothing(make_parcel, owner_a, staff, tmp_path):
    make_parcel("W1", owner_a, gravity="10", water_since=date(2026, 3, 10))
    bad = tmp_path / "bad.csv"
    bad.write_text("parcel_id,delivered_on,acre_feet\nW1,2026-10-01,3\nNOPE,2026-10-01,1\n", encoding="utf-8")
    code, _, err = billing_cmd("water-import", str(bad), "--user", "aut")
    assert code == 1 and "línea 3" in err and not WaterDelivery.objects.exists()
    good = tmp_path / "good.csv"
    good.write_text("parcel_id,delivered_on,acre_feet\nW1,2026-10-01,3\nW1,2026-10-02,1.5\n", encoding="utf-8")
    assert billing_cmd("water-import", str(good), "--user", "aut")[0] == 0
    assert WaterDelivery.objects.count() == 2


@pytest.mark.django_db
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(min_value=1, max_value=500_000), st.integers(min_value=0, max_value=300)), min_size=1, max_size=6))
def test_ledger_balance_matches_the_replay(district_1, staff, payments):
    """Hypothesis: for any payments, ledger = charges + realized surcharges − payments, and the
    replay's balance = ledger balance + surcharge not yet paid − credit; no payment applied twice."""
    parcel = Parcel.objects.get(parcel_id="P4")
    with transaction.atomic():
        day = date(2026, 7, 1)
        for cents, gap in sorted(payments, key=lambda item: item[1]):
            day = max(day, date.fromordinal(date(2026, 7, 1).toordinal() + gap))
            with on_day(day):
                counter.payment_record(acting_user=staff["collector"], parcel=parcel, amount=Decimal(cents) / 100, paid_on=day)
        account = accounts.account_state(parcel=parcel, as_of=day).state
        paid_in = sum((Decimal(c) / 100 for c, _ in payments), Decimal("0"))
        applied = sum((a.amount for a in account.applications), Decimal("0"))
        assert applied + account.credit_balance == paid_in
        unpaid_surcharge = sum((c.surcharge - c.surcharge_paid for c in account.charges), Decimal("0"))
        assert account.total_balance - account.credit_balance == accounts.ledger_balance(parcel) + unpaid_surcharge
        transaction.set_rollback(True)


@pytest.mark.django_db
def test_corrections_are_billed_and_reconciled_on_their_own(district_1, staff):
    from django.utils import timezone

    from levy.models import RollLine

    levy_total_before = district_1.total_levy.amount
    code, out, err = billing_cmd_levy("correct", "--fiscal-year", "2026-2027", "--parcel", "P1", "--om-charge-delta", "120.00",
                                      "--reason", "Área mal medida", "--user", "hac")
    assert code == 0, err
    # ¶12: +120.00 of net (P1 has no credit) splits +60.00 / +60.00, one correction charge per half;
    # July's is due the day it is made, January's not before January 1.
    today = timezone.localdate()
    july, january = Charge.objects.filter(kind="correction").order_by("number")
    assert (july.principal.amount, january.principal.amount) == (Decimal("60.00"), Decimal("60.00"))
    assert july.due_date == max(today, date(2026, 7, 1)) and january.due_date == max(today, date(2027, 1, 1))
    assert "net +120.00" in out
    # the original roll is untouched
    district_1.refresh_from_db()
    assert district_1.total_levy.amount == levy_total_before
    assert sum(line.om_charge for line in RollLine.objects.filter(levy=district_1)) == levy_total_before
    assert billing_cmd_levy("correct", "--fiscal-year", "2026-2027", "--parcel", "P1", "--reason", "x",
                            "--om-charge-delta", "1.00", "--user", "aut")[0] == 1


def billing_cmd_levy(*args: str):
    from django.core.management import call_command

    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("levy", *args, stdout=out, stderr=err)
        return 0, out.getvalue(), err.getvalue()
    except SystemExit as exc:
        return exc.code, out.getvalue(), err.getvalue()


@pytest.mark.django_db
def test_a_closure_recorded_after_issue_moves_the_last_day(district_1, staff):
    from billing.models import OfficeClosure

    with on_day(date(2026, 9, 1)):
        assert statement("P4", "2026-09-01")["installments"][0]["surcharge"] == "34.65"  # delinquent from 09-01
        # recorded that same day: the statement of 09-01 knows it (one of a past day never changes)
        OfficeClosure.objects.create(day=date(2026, 8, 31), reason="Huracán", created_by=staff["hacienda"])
    moved = statement("P4", "2026-09-01")["installments"][0]
    assert moved["last_day_to_pay"] == "2026-09-01" and moved["surcharge"] == "0.00"
    # Labor Day (2026-09-07) is not in the way; the next day after the closure is open
    assert statement("P4", "2026-09-02")["installments"][0]["surcharge"] == "34.65"


def test_the_delinquent_list_is_kept_only_while_nothing_it_depends_on_changes(
    seed_rows, district_1, staff, django_assert_num_queries,
):
    """The list is computed again after a payment, a renamed owner or an office closure, and is
    served as kept while none of them happened: four queries (the version of the books, the shared
    cache's row, the parcels with their owners, the charges), not a replay of every account."""
    as_of = date(2026, 9, 2)
    first = delinquent(as_of=as_of)
    assert sorted(i.parcel.parcel_id for i in first) == ["P1", "P2", "P3", "P4", "P5"]
    with django_assert_num_queries(4):
        again = delinquent(as_of=as_of)
        assert [(i.parcel.owner.name, i.charge.fiscal_year.label) for i in again] == [
            (i.parcel.owner.name, i.charge.fiscal_year.label) for i in first]
    assert [(i.parcel.pk, i.charge.pk, i.state, i.days_late) for i in again] == [
        (i.parcel.pk, i.charge.pk, i.state, i.days_late) for i in first]

    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(as_of):
        counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("9300.00"), paid_on=as_of)
    after_payment = delinquent(as_of=as_of)
    assert sorted(i.parcel.parcel_id for i in after_payment) == ["P2", "P3", "P4", "P5"]

    from parcels.services import owner_update

    owner_update(acting_user=staff["authority"], owner=p1.owner, name="Carmen Irizarry de Toro")
    assert {i.parcel.owner.name for i in delinquent(as_of=as_of)} == {"Carmen Irizarry de Toro"}

    p2 = next(i for i in after_payment if i.parcel.parcel_id == "P2")
    with on_day(date(2026, 9, 1)):  # recorded on 1 September: the list of that day knows it
        collection.office_closure_add(acting_user=staff["hacienda"], day=date(2026, 8, 31), reason="Tormenta")
    closed = delinquent(as_of=date(2026, 9, 1))  # the last day moved to 1 September
    assert closed == [] and p2.state.last_day == date(2026, 8, 31)


def test_the_delinquent_page_pages_the_kept_list_until_a_payment(seed_rows, district_1, staff, django_assert_max_num_queries):
    """Issue 20: the page's list is computed once per version of the books; the next pages come from
    the kept list in two queries (the books' version, the cache's row), and a payment gives a new
    version, so the page shows the list without the paid parcel and totals that add up."""

    filters = delinquency.Filters(as_of=date(2026, 9, 2))
    first, totals, number = delinquency.page(filters, number=1, size=2)
    assert (number, totals.count, totals.parcels) == (1, 5, 5)
    with django_assert_max_num_queries(2):
        second, again, _ = delinquency.page(filters, number=2, size=2)
    with django_assert_max_num_queries(2):
        last, _, last_number = delinquency.page(filters, number=99, size=2)
    assert again == totals and last_number == 3
    shown = first + second + last
    assert sorted(line.parcel_code for line in shown) == ["P1", "P2", "P3", "P4", "P5"]
    assert sum((line.state.balance for line in shown), Decimal("0")) == totals.balance > 0

    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(date(2026, 9, 2)):
        counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("9300.00"), paid_on=date(2026, 9, 2))
    after, paid_totals, _ = delinquency.page(filters, number=1, size=10)
    assert sorted(line.parcel_code for line in after) == ["P2", "P3", "P4", "P5"]
    assert paid_totals.count == 4 and paid_totals.balance < totals.balance


def test_the_dashboard_is_kept_until_a_payment(seed_rows, district_1, staff, django_assert_max_num_queries):
    """Issue 20: the collection dashboard is computed once per version of the books (two queries
    when kept: the version and the cache's row) and a payment gives new figures."""
    from billing import charts

    as_of = date(2026, 9, 2)
    first = charts.dashboard_kept(as_of=as_of)
    assert first == charts.dashboard(as_of=as_of) and first.totals.delinquent > 0
    with django_assert_max_num_queries(2):
        assert charts.dashboard_kept(as_of=as_of) == first
    with on_day(as_of):
        counter.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id="P1"),
                               amount=Decimal("9300.00"), paid_on=as_of)
    after = charts.dashboard_kept(as_of=as_of)
    assert after == charts.dashboard(as_of=as_of)  # principal collected, and the ¶12 surcharge apart
    assert after.totals.collected + after.totals.surcharges == first.totals.collected + first.totals.surcharges + Decimal("9300.00")


def test_the_kept_delinquent_list_is_shared_with_another_process(seed_rows, district_1, staff):
    """Kept in the shared cache, not in a process: a second process (another worker or app server
    on the same database) is served the list this one computed, in the same four queries."""
    import json
    import subprocess
    import sys

    from tests.workers import ROOT, database_url

    as_of = date(2026, 9, 2)
    first = delinquent(as_of=as_of)
    code = (
        "import json, datetime\n"
        "from django.db import connection\n"
        "from django.test.utils import CaptureQueriesContext\n"
        "from billing import delinquency\n"
        "with CaptureQueriesContext(connection) as queries:\n"
        "    found = delinquency.with_records(delinquency.kept_lines(delinquency.Filters(as_of=datetime.date(2026, 9, 2))))\n"
        "print(json.dumps({'queries': len(queries), 'lines': [[i.parcel.parcel_id, i.charge.pk, str(i.state.balance)] for i in found]}))\n"
    )
    env = {**__import__("os").environ, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "lajas_portal.settings_test"}
    child = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=120)
    assert child.returncode == 0, child.stderr
    answer = json.loads(child.stdout.strip().splitlines()[-1])
    assert answer["lines"] == [[i.parcel.parcel_id, i.charge.pk, str(i.state.balance)] for i in first]
    assert answer["queries"] == 4  # a replay of the five accounts would take far more
