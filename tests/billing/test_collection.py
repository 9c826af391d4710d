"""Installments, payments at the counter, receipts and statements, on districts built by hand."""

from __future__ import annotations

import threading
from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.db import DatabaseError, connection, transaction

from billing import accounts
from billing.errors import BillingError
from billing.models import Charge, LedgerEntry, Payment, Receipt
from billing.services import counter, installments
from parcels.models import Parcel
from tests.billing.conftest import billing_cmd, statement
from tests.clock import move_clock_to, on_day
from tests.conftest import EXAMPLE_1

# Worked example 1's July 1 column: half of each O&M charge at 183.60 $ per gravity acre, what each
# parcel owes from 1 July to its last day to pay (31 August 2026), before any ¶12 surcharge.
JULY_HALVES = {
    "P1": Decimal("9180.00"),   # 100 ac × 183.60 = 18,360.00; / 2
    "P2": Decimal("22950.00"),  # 250 ac × 183.60 = 45,900.00; / 2
    "P3": Decimal("4590.00"),   # 50 ac × 183.60 = 9,180.00; / 2
    "P4": Decimal("6930.90"),   # 75.5 ac × 183.60 = 13,861.80; / 2
    "P5": Decimal("2249.10"),   # 24.5 ac × 183.60 = 4,498.20; / 2
}


@pytest.mark.django_db
def test_finalizing_issues_two_installments_per_paying_parcel_once(district_1, staff):
    charges = Charge.objects.filter(parcel__parcel_id="P4").order_by("number")
    assert [(c.number, c.principal.amount, c.due_date, c.last_day_to_pay) for c in charges] == [
        (1, Decimal("6930.90"), date(2026, 7, 1), date(2026, 8, 31)),  # 2026-08-30 is a Sunday
        (2, Decimal("6930.90"), date(2027, 1, 1), date(2027, 3, 2)),
    ]
    assert Charge.objects.count() == 10
    assert installments.installments_issue(acting_user=staff["hacienda"], levy=district_1) == 0
    assert Charge.objects.count() == 10 and LedgerEntry.objects.filter(kind="charge").count() == 10


@pytest.mark.django_db
def test_worked_example_1_late_july_half(district_1, staff):
    before = statement("P4", "2026-10-15")
    july = before["installments"][0]
    assert (july["number"], july["due_date"], july["last_day_to_pay"], july["principal"], july["surcharge"], july["balance"]) == (
        1, "2026-07-01", "2026-08-31", "6930.90", "69.31", "7000.21")
    assert july["surcharge_basis"] == "½% × 2 meses sobre $6,930.90"
    assert before["total_due"] == "7000.21"  # the January half is not due yet
    with on_day(date(2026, 10, 15)):  # at the counter that day: without --date the payment is today's
        code, out, err = billing_cmd("pay", "--parcel", "P4", "--amount", "7000.21", "--user", "col")
    assert code == 0, err
    number = out.split()[-1]
    receipt = Receipt.objects.get()
    assert number == receipt.display_number == "LAJ-2026-2027-000001"
    line = receipt.snapshot["applications"][0]
    assert (line["surcharge"], line["principal_paid"], line["om_charge"], line["credit"]) == ("69.31", "6930.90", "13861.80", "0.00")
    after = statement("P4", "2026-10-15")
    assert after["installments"][0]["paid"] == "7000.21" and after["installments"][0]["balance"] == "0.00"
    assert after["total_due"] == "0.00"
    # the ledger: charges + realized surcharge − payments
    assert accounts.ledger_balance(Parcel.objects.get(parcel_id="P4")) == Decimal("6930.90")


@pytest.mark.django_db
def test_partial_payments_across_periods_and_payment_order(district_1, staff):
    parcel = Parcel.objects.get(parcel_id="P5")  # halves 2249.10 / 2249.10, D = 2026-09-01
    with on_day(date(2026, 9, 15)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=parcel, amount=Decimal("1000.00"), paid_on=date(2026, 9, 15))
    # period 1 began on 09-01 with 2249.10 unpaid: ½% = 11.2455 → 11.25 paid first, then 988.75 principal
    assert receipt.snapshot["applications"][0]["surcharge"] == "11.25"
    assert receipt.snapshot["applications"][0]["principal_paid"] == "988.75"
    # period 2 (10-01) accrues on 1260.35 unpaid: total ½% × (2249.10 + 1260.35) = 17.547… → 17.55
    july = statement("P5", "2026-10-20")["installments"][0]
    assert (july["surcharge"], july["paid"], july["balance"]) == ("17.55", "1000.00", "1266.65")
    assert july["surcharge_basis"] == "½% × 1 mes sobre $2,249.10 + ½% × 1 mes sobre $1,260.35"
    # an overpayment pays the oldest first, then the January half early, and the rest is credit
    with on_day(date(2026, 10, 20)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=parcel, amount=Decimal("4000.00"), paid_on=date(2026, 10, 20))
    paid = [(a["number"], a["surcharge"], a["principal_paid"]) for a in receipt.snapshot["applications"]]
    assert paid == [(1, "6.30", "1260.35"), (2, "0.00", "2249.10")]
    assert receipt.snapshot["credit_balance"] == "484.25"
    final = statement("P5", "2027-06-30")
    assert final["total_due"] == "0.00" and final["credit_balance"] == "484.25"


@pytest.mark.django_db
def test_pay_command_refusals(district_1, staff):
    cases = [
        (["--parcel", "NOPE", "--amount", "1", "--date", "2026-10-15", "--user", "col"], "NOPE"),
        (["--parcel", "P1", "--amount", "0", "--date", "2026-10-15", "--user", "col"], ""),
        (["--parcel", "P1", "--amount", "-5", "--date", "2026-10-15", "--user", "col"], ""),
        (["--parcel", "P1", "--amount", "10", "--date", "15/10/2026", "--user", "col"], "date"),
        (["--parcel", "P1", "--amount", "10", "--date", "2026-10-15", "--user", "hac"], "hac"),
    ]
    for args, word in cases:
        code, out, err = billing_cmd("pay", *args)
        assert code == 1 and word in err and len(err.strip().splitlines()) == 1, (args, err)
    assert not Payment.objects.exists()


@pytest.mark.django_db
def test_receipts_are_numbered_per_office_and_fiscal_year_and_never_change(district_1, staff):
    p1 = Parcel.objects.get(parcel_id="P1")
    numbers = []
    for day in (date(2026, 8, 1), date(2026, 8, 2), date(2027, 7, 1)):
        with on_day(day):
            numbers.append(counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("10.00"), paid_on=day).display_number)
    assert numbers == ["LAJ-2026-2027-000001", "LAJ-2026-2027-000002", "LAJ-2027-2028-000001"]
    receipt = Receipt.objects.first()
    with pytest.raises(DatabaseError), transaction.atomic():
        Receipt.objects.filter(pk=receipt.pk).update(number=99)
    with pytest.raises(DatabaseError), transaction.atomic():
        Payment.objects.filter(pk=receipt.payment_id).delete()
    with pytest.raises(PermissionError):
        receipt.delete()


@pytest.mark.django_db
def test_double_submitted_form_records_one_payment(district_1, staff):
    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(date(2026, 7, 2)):
        first = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("9180.00"), paid_on=date(2026, 7, 2), idempotency_key="form-1")
        again = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("9180.00"), paid_on=date(2026, 7, 2), idempotency_key="form-1")
    assert first.pk == again.pk and Payment.objects.count() == 1
    with pytest.raises(BillingError), on_day(date(2026, 7, 2)):
        counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("9180.00"), paid_on=date(2026, 7, 2),
                                expected_total_due=Decimal("9180.00"))


@pytest.mark.django_db
def test_void_is_a_new_dated_entry_and_restores_the_debt(district_1, staff):
    p2 = Parcel.objects.get(parcel_id="P2")
    with on_day(date(2026, 7, 10)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=p2, amount=Decimal("22950.00"), paid_on=date(2026, 7, 10), method="check")
    assert statement("P2", "2026-07-20")["total_due"] == "0.00"
    with pytest.raises(BillingError):
        counter.payment_void(acting_user=staff["collector"], payment=receipt.payment, reason="cheque devuelto")
    with on_day(date(2026, 7, 20)):  # recorded that day: the statement of 20/07 knows it
        counter.payment_void(acting_user=staff["supervisor"], payment=receipt.payment, reason="Cheque devuelto",
                             voided_on=date(2026, 7, 20))
    assert statement("P2", "2026-07-19")["total_due"] == "0.00"  # before the void the payment counted
    assert statement("P2", "2026-07-20")["total_due"] == "22950.00"
    assert Receipt.objects.get(pk=receipt.pk).snapshot["amount"] == "22950.00"
    assert accounts.ledger_balance(p2) == Decimal("45900.00")


def race(users_and_keys, parcel, amount, expected) -> list[str]:
    """Each user pays from its own database connection; all are released together at a barrier,
    on 15 July 2026 at the counter."""
    barrier = threading.Barrier(len(users_and_keys))
    outcomes: list[str] = []

    def pay(user, key):
        try:
            barrier.wait(timeout=10)
            receipt = counter.payment_record(acting_user=user, parcel=parcel, amount=amount, paid_on=date(2026, 7, 15),
                                              idempotency_key=key, expected_total_due=expected)
            outcomes.append(f"receipt {receipt.pk}")
        except BillingError:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=pay, args=pair) for pair in users_and_keys]
    with on_day(date(2026, 7, 15)):  # the clock is the process's: the threads read it too
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return outcomes


@pytest.mark.django_db(transaction=True)
def test_two_collectors_paying_the_same_installment_at_once_record_one_payment(seed_rows, district_1, staff):
    """Separate database connections released together at a barrier, repeated on every parcel."""
    for parcel_id, _gravity in EXAMPLE_1:
        parcel = Parcel.objects.get(parcel_id=parcel_id)
        expected = JULY_HALVES[parcel_id]  # due on 2026-07-15: the July half, no surcharge yet
        outcomes = race([(staff["collector"], f"{parcel_id}-a"), (staff["collector2"], f"{parcel_id}-b")], parcel, expected, expected)
        assert sorted(o.split()[0] for o in outcomes) == ["receipt", "refused"], outcomes
        assert Payment.objects.filter(parcel=parcel).count() == 1
        data = statement(parcel_id, "2026-07-15")
        assert data["total_due"] == "0.00" and data["credit_balance"] == "0.00"


@pytest.mark.django_db(transaction=True)
def test_a_double_submit_racing_itself_records_one_payment(seed_rows, district_1, staff):
    for attempt, (parcel_id, _gravity) in enumerate(EXAMPLE_1):
        parcel = Parcel.objects.get(parcel_id=parcel_id)
        key = f"same-form-{attempt}"
        outcomes = race([(staff["collector"], key), (staff["collector"], key)], parcel, Decimal("100.00"), None)
        assert len(set(outcomes)) == 1 and outcomes[0].startswith("receipt"), outcomes
        assert Payment.objects.filter(parcel=parcel).count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_counter_requests_at_once_record_one_payment(seed_rows, district_1, staff, monkeypatch):
    """Two collectors submit the counter form for the same account at the same moment: real
    requests through the whole view stack, each on its own database connection, repeated."""
    from django.urls import reverse

    from tests.otp import Client

    # 15 July 2026: only the July halves are due, within their 60 days, so no ¶12 surcharge
    move_clock_to(monkeypatch, datetime(2026, 7, 15, 10, 0, tzinfo=ZoneInfo("America/Puerto_Rico")))
    for parcel_id, _gravity in EXAMPLE_1:
        parcel = Parcel.objects.get(parcel_id=parcel_id)
        due = JULY_HALVES[parcel_id]
        clients = []
        for name in ("collector", "collector2"):
            client = Client()
            client.force_login(staff[name])
            clients.append(client)
        barrier = threading.Barrier(2)
        statuses: list[int] = []

        def submit(client, key, barrier=barrier, parcel=parcel, due=due, statuses=statuses):
            try:
                barrier.wait(timeout=10)
                response = client.post(reverse("billing:counter-parcel", args=[parcel.pk]), {
                    "amount": str(due), "method": "cash", "reference": "", "idempotency_key": key,
                    "expected_total_due": str(due),
                })
                statuses.append(response.status_code)
            finally:
                connection.close()

        threads = [threading.Thread(target=submit, args=(client, f"{parcel_id}-{i}")) for i, client in enumerate(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(statuses) == [200, 302], statuses  # one receipt, one page saying the account changed
        assert [p.amount.amount for p in Payment.objects.filter(parcel=parcel)] == [due]
