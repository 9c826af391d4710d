"""Issue 17 §1: a statement of day D is the account as the books stood at the end of D (office
time, America/Puerto_Rico). What is recorded later, whatever its date, never reaches back into it;
a statement of today or a later day reads everything recorded so far.

Figures (worked example 1's parcels, only fiscal year 2027-2028, estimates chosen to give the
issue's figures): O&M 47,815.80 + reserve 900.00 − miscellaneous income 7,500.00 − surplus
4,000.00 = 37,215.80; + 2 % safety margin = 37,960.12 over 500 acres. P4 (75.5 acres): net
5,731.98, halves 2,865.99 due 2027-07-01 and 2028-01-01; the July half's last day to pay is
2027-07-01 + 60 days = Monday 2027-08-30. P1 (100 acres): net 7,592.02, halves 3,796.01."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from billing import accounts, books
from billing.models import Charge, Receipt
from billing.services import collection, corrections, counter, statements
from billing.services.installments import roll_finalize
from levy.models import RollLine
from levy.services import estimate_certify, estimate_enter, levy_compute
from parcels.models import Parcel
from tests.billing.conftest import statement as cli_statement
from tests.clock import on_day
from tests.conftest import EXAMPLE_1

D = Decimal


@pytest.fixture
def year_2027(make_parcel, owner_a, staff):
    """2027-2028's roll finalized on time, on 2027-06-30 (recorded that day)."""
    with on_day(date(2027, 6, 30)):
        for parcel_id, gravity in EXAMPLE_1:
            make_parcel(parcel_id, owner_a, gravity=gravity)
        estimate_enter(acting_user=staff["authority"], fiscal_year="2027-2028", om_estimate=D("47815.80"),
                       reserve=D("900.00"), misc_income=D("7500.00"), surplus=D("4000.00"))
        estimate_certify(acting_user=staff["authority"], fiscal_year="2027-2028")
        levy_compute(acting_user=staff["hacienda"], fiscal_year="2027-2028")
        roll_finalize(acting_user=staff["hacienda"], fiscal_year="2027-2028", today=date(2027, 6, 30))
    return {parcel.parcel_id: parcel for parcel in Parcel.objects.all()}


def read(parcel: Parcel, as_of: date) -> dict:
    return accounts.statement(parcel=parcel, as_of=as_of).to_json()


@pytest.mark.django_db
def test_a_closure_recorded_later_leaves_the_statement_of_the_day_paid_as_it_was(year_2027, staff):
    """Issue 17 §1, first reproduction. 2,880.32 paid on 2027-08-31 (the first delinquent day):
    the July half 2,865.99 + ½ % × 2,865.99 = 14.32995 → 14.33 of surcharge. On 2027-09-02 a closure
    of 2027-08-30 is recorded: the last day moves to 08-31, so no surcharge was owed and 14.33 is
    given back and applied to January. The statement as of 08-31 stays as it was that day."""
    p4 = year_2027["P4"]
    july = Charge.objects.get(parcel=p4, number=1)
    assert (july.principal.amount, july.last_day_to_pay) == (D("2865.99"), date(2027, 8, 30))
    with on_day(date(2027, 8, 31)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=p4, amount=D("2880.32"),
                                         paid_on=date(2027, 8, 31))
        estado = statements.statement_issue(parcel=p4, channel="counter", acting_user=staff["collector"])
    (allocation,) = receipt.payment.allocations.all()
    assert (allocation.surcharge.amount, allocation.principal.amount) == (D("14.33"), D("2865.99"))
    with on_day(date(2027, 9, 1)):
        before = read(p4, date(2027, 8, 31))
    first = before["installments"][0]
    assert (first["surcharge"], first["paid"], first["balance"]) == ("14.33", "2880.32", "0.00")
    assert (before["total_due"], before["total_balance"], before["credit_balance"]) == ("0.00", "2865.99", "0.00")
    assert estado.snapshot == before  # the estado issued that day is the statement of that day

    with on_day(date(2027, 9, 2)):
        _closure, moved = collection.office_closure_record(acting_user=staff["hacienda"], day=date(2027, 8, 30),
                                                           reason="Huracán")
        assert moved == 5  # every parcel's July half had its last day on 08-30
        now = accounts.statement(parcel=p4, as_of=date(2027, 9, 2))
    # Today's statement knows the closure: no surcharge on July, 14.33 given back and applied to January.
    july_now, january_now = now.lines
    assert (july_now.last_day_to_pay, july_now.surcharge, july_now.paid, july_now.balance) == (
        date(2027, 8, 31), D("0.00"), D("2865.99"), D("0.00"))
    assert (january_now.paid, january_now.balance) == (D("14.33"), D("2851.66"))  # 2,865.99 − 14.33
    assert (now.total_due, now.total_balance, now.credit_balance) == (D("0.00"), D("2851.66"), D("0.00"))

    # The statement as of 08-31, read after the closure and a year later: identical, every field.
    for reading_day in (date(2027, 9, 3), date(2028, 9, 3)):
        with on_day(reading_day):
            assert read(p4, date(2027, 8, 31)) == before
            assert cli_statement("P4", "2027-08-31") == before  # the command line reads the same
    assert Receipt.objects.get(pk=receipt.pk).snapshot == receipt.snapshot
    with on_day(date(2027, 9, 3)):
        assert books.verify() == []


@pytest.mark.django_db
def test_a_correction_made_later_is_not_in_the_statement_of_an_earlier_day(year_2027, staff):
    """Issue 17 §1, second reproduction, on P1 (nothing paid). As of 2027-10-01 two surcharge
    periods have begun (08-31, 09-30): 2 × ½ % × 3,796.01 = 37.96; total balance 3,796.01 + 37.96 +
    3,796.01 = 7,629.98. A +100.00 correction made on 2027-10-05 adds two charges of 50.00 (one due
    that day, one on 2028-01-01): the statement of today shows 7,729.98, the one as of 10-01 does not
    move."""
    p1 = year_2027["P1"]
    with on_day(date(2027, 10, 2)):
        before = read(p1, date(2027, 10, 1))
    assert (before["total_due"], before["total_balance"]) == ("3833.97", "7629.98")
    assert before["installments"][0]["surcharge"] == "37.96"
    assert before["other_charges"] == []
    line = RollLine.objects.get(parcel__parcel_id="P1", levy__status="final")
    with on_day(date(2027, 10, 5)):
        corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line, om_charge_delta=D("100.00"),
                                           reason="Área mal medida")
        today = accounts.statement(parcel=p1, as_of=date(2027, 10, 5))
        assert read(p1, date(2027, 10, 1)) == before
    assert (today.total_due, today.total_balance) == (D("3883.97"), D("7729.98"))  # + 50.00 due 10-05, + 50.00 in January
    assert sorted(line.principal for line in today.lines if line.kind == Charge.Kind.CORRECTION) == [D("50.00"), D("50.00")]
    with on_day(date(2028, 10, 5)):
        assert read(p1, date(2027, 10, 1)) == before
        assert books.verify() == []


@pytest.mark.django_db
def test_a_back_dated_payment_and_a_void_recorded_later_do_not_reach_back(year_2027, staff):
    """P5's July half is 930.03. A payment of 30.03 dated 2027-08-22 but recorded on 2027-08-25 is
    not in the statement as of 08-22 (read before it was recorded, and after); nor is the void,
    recorded on 08-26, of the 100.00 paid on 08-21 (it still counted at the end of 08-22). At the
    end of 08-25 both payments count (800.00 due); today, 08-26, the void counts too (900.00)."""
    p5 = year_2027["P5"]
    with on_day(date(2027, 8, 21)):
        paid = counter.payment_record(acting_user=staff["collector"], parcel=p5, amount=D("100.00"), paid_on=date(2027, 8, 21))
    with on_day(date(2027, 8, 23)):
        before = read(p5, date(2027, 8, 22))
    assert (before["installments"][0]["paid"], before["total_due"]) == ("100.00", "830.03")  # 930.03 − 100.00
    with on_day(date(2027, 8, 25)):
        counter.payment_record(acting_user=staff["supervisor"], parcel=p5, amount=D("30.03"), paid_on=date(2027, 8, 22),
                               backdate_reason="Cheque recibido por correo el 22/08")
    with on_day(date(2027, 8, 26)):
        counter.payment_void(acting_user=staff["supervisor"], payment=paid.payment, reason="Cheque devuelto")
        assert read(p5, date(2027, 8, 22)) == before
        assert read(p5, date(2027, 8, 25))["total_due"] == "800.00"  # both payments counted at the end of 08-25
        assert accounts.statement(parcel=p5, as_of=date(2027, 8, 26)).total_due == D("900.00")  # the void counts today


@pytest.mark.django_db
def test_a_bill_of_a_day_before_its_charge_was_recorded_is_refused_with_a_reason(year_2027):
    """A bill reads the books as they stood on its day (§1); a day before the roll was finalized
    holds no installment, and the bill is refused in words, not with a StopIteration."""
    from billing.errors import BillingError
    from billing.services.bills import accounts_facts

    charge = Charge.objects.filter(parcel=year_2027["P1"], number=1).get()
    with on_day(date(2027, 7, 5)), pytest.raises(BillingError, match="no estaba en los libros el 29/06/2027"):
        accounts_facts(charges=[charge], issued_on=date(2027, 6, 29))
    with on_day(date(2027, 7, 5)):
        assert accounts_facts(charges=[charge], issued_on=date(2027, 6, 30))[charge.pk].state.key == accounts.charge_key(charge.pk)


@pytest.mark.django_db
def test_an_english_estado_with_a_closure_entry_reads_again_as_issued(year_2027, staff):
    """An English estado words its entries' dates long ("31 August 2027", ``pdf.document_language``);
    the books' ``issued`` check reads it again the same way, so the estado of a day with a
    closure entry is no finding (it was one: the check read English with the pages' d/m/Y)."""
    from billing import issued

    p4 = year_2027["P4"]
    with on_day(date(2027, 9, 2)):
        collection.office_closure_record(acting_user=staff["hacienda"], day=date(2027, 8, 30), reason="Huracán")
        estado = statements.statement_issue(parcel=p4, channel="counter", acting_user=staff["collector"], lang="en")
    events = [event["text"] for line in estado.snapshot["installments"] for event in line["events"]]
    assert any("Office closure of 30 August 2027" in text for text in events), events
    with on_day(date(2027, 9, 3)):
        assert issued.check_issued(sample=None) == []
