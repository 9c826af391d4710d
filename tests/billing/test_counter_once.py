"""A closed day stays closed; one payment is recorded once (issue 17, section 4; ¶13).

- A payment into an office day a supervisor closed is refused, today's or back-dated, by the
  service, the ``billing pay`` command and the database; the message names the close.
- The same parcel, amount and form of payment within 10 minutes of an earlier payment (not
  voided) asks "is it a second payment?", naming the earlier receipt and its time; confirmed, it is
  recorded with the payment it follows.
- A check number the parcel already paid with is refused unless that payment was voided.

Figures: worked example 1 (``district_1``), on 1 December 2026 at the LAJ office. The issue's day:
cash $3,000.00 (P1) + $880.00 (P2) = $3,880.00 counted, and a card payment of $270.00 (P3): the
day's receipts total 3,880.00 + 270.00 = $4,150.00. The late $22.10 card payment would have made
it 4,150.00 + 22.10 = $4,172.10; refused, it stays $4,150.00."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from decimal import Decimal
from unittest import mock

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from billing.errors import BillingError
from billing.models import DayClose, LedgerEntry, Office, Payment, Receipt
from billing.selectors import day_report
from billing.services import counter
from parcels.models import Parcel
from tests.billing.conftest import billing_cmd
from tests.clock import _real_now

pytestmark = pytest.mark.django_db

DECEMBER_1 = date(2026, 12, 1)
CLOSED_AT = datetime(2026, 12, 1, 17, 5, tzinfo=timezone.get_default_timezone())  # 17:05 at the office
CLOSE_MESSAGE = ("El día 01/12/2026 de la colecturía LAJ (Colecturía de Lajas) está cerrado: lo cerró Edwin Figueroa Ramos "
                 "el 01/12/2026 a las 17:05. No se registran pagos en un día cerrado.")


@contextmanager
def at(moment: datetime) -> Iterator[None]:
    """The clock stands at ``moment`` (plus the real time elapsed, well under a minute)."""
    offset = moment - _real_now()
    with mock.patch.object(timezone, "now", lambda: _real_now() + offset):
        yield


def office_time(day: date, hour: int, minute: int, second: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, second, tzinfo=timezone.get_default_timezone())


def parcel(code: str) -> Parcel:
    return Parcel.objects.get(parcel_id=code)


def written() -> tuple[int, int, int]:
    return Payment.objects.count(), Receipt.objects.count(), LedgerEntry.objects.count()


@pytest.fixture
def supervisor(make_user):
    return make_user("edwin", "supervisor", full_name="Edwin Figueroa Ramos", title="Supervisor de Colecturía")


@pytest.fixture
def closed_december_1(district_1, staff, supervisor):
    """The issue's day, closed at 17:05 with $3,880.00 cash counted."""
    collector = staff["collector"]
    with at(office_time(DECEMBER_1, 9, 0)):
        counter.payment_record(acting_user=collector, parcel=parcel("P1"), amount=Decimal("3000.00"))
        counter.payment_record(acting_user=collector, parcel=parcel("P2"), amount=Decimal("880.00"))
        counter.payment_record(acting_user=collector, parcel=parcel("P3"), amount=Decimal("270.00"), method="card",
                               reference="AUT-5521")
    office = Office.objects.get(code="LAJ")
    with at(CLOSED_AT):
        close = counter.day_close(acting_user=supervisor, office=office, day=DECEMBER_1, counted_cash=Decimal("3880.00"),
                                  counted_checks=Decimal("0.00"))
    assert (close.expected_cash.amount, day_report(office=office, day=DECEMBER_1).total) == (Decimal("3880.00"), Decimal("4150.00"))
    return close


# --- a closed day stays closed --------------------------------------------------------------------


def test_a_card_payment_into_the_closed_day_is_refused_naming_the_close(closed_december_1, staff):
    office = Office.objects.get(code="LAJ")
    before = written()
    with at(office_time(DECEMBER_1, 17, 30)), pytest.raises(BillingError) as refused:
        counter.payment_record(acting_user=staff["collector"], parcel=parcel("P5"), amount=Decimal("22.10"), method="card",
                               reference="AUT-7730")
    assert str(refused.value) == CLOSE_MESSAGE
    assert written() == before
    assert day_report(office=office, day=DECEMBER_1).total == Decimal("4150.00")  # not 4,172.10


def test_a_back_dated_payment_into_the_closed_day_is_refused_too(closed_december_1, supervisor):
    """The next morning a supervisor, with a reason, dates the same payment 1 December: refused
    with the same message; dated 2 December it is recorded."""
    before = written()
    with at(office_time(date(2026, 12, 2), 8, 30)):
        with pytest.raises(BillingError) as refused:
            counter.payment_record(acting_user=supervisor, parcel=parcel("P5"), amount=Decimal("22.10"), method="card",
                                   reference="AUT-7730", paid_on=DECEMBER_1, backdate_reason="Tarjeta pasada a las 17:30")
        assert str(refused.value) == CLOSE_MESSAGE
        assert written() == before
        today = counter.payment_record(acting_user=supervisor, parcel=parcel("P5"), amount=Decimal("22.10"), method="card",
                                       reference="AUT-7730")
    assert today.payment.paid_on == date(2026, 12, 2)


def test_the_command_refuses_the_closed_day_whatever_its_date(closed_december_1, staff, supervisor):
    with at(office_time(DECEMBER_1, 17, 30)):
        code, out, err = billing_cmd("pay", "--parcel", "P5", "--amount", "22.10", "--method", "card", "--reference", "AUT-7730",
                                     "--user", staff["collector"].username)
    assert (code, out) == (1, "") and err.strip() == f"error: {CLOSE_MESSAGE}"
    with at(office_time(date(2026, 12, 2), 8, 30)):
        code, out, err = billing_cmd("pay", "--parcel", "P5", "--amount", "22.10", "--method", "card", "--reference", "AUT-7730",
                                     "--user", supervisor.username, "--date", "2026-12-01", "--reason", "Tarjeta de las 17:30")
    assert (code, out) == (1, "") and err.strip() == f"error: {CLOSE_MESSAGE}"
    assert not Payment.objects.filter(parcel__parcel_id="P5").exists()


def test_the_database_refuses_a_payment_row_into_a_closed_day(closed_december_1, staff):
    """Whatever writes it: the trigger ``payment_not_into_closed_day``."""
    earlier = Payment.objects.get(parcel__parcel_id="P1")
    with pytest.raises(IntegrityError, match="payment into the closed day 2026-12-01"), transaction.atomic():
        Payment.objects.create(parcel=parcel("P5"), office=earlier.office, collector=staff["collector"], paid_on=DECEMBER_1,
                               amount=Decimal("22.10"), method="card", reference="AUT-7730", idempotency_key="raw-1",
                               payer_name="x")


def test_a_close_whose_expected_cash_misses_a_committed_payment_is_refused_by_the_database(district_1, staff, supervisor):
    """A close stores the drawer as the committed receipts stand: $100.00 cash recorded, a close
    that read $0.00 (as a close racing that payment would) is refused."""
    with at(office_time(DECEMBER_1, 9, 0)):
        counter.payment_record(acting_user=staff["collector"], parcel=parcel("P1"), amount=Decimal("100.00"))
    office = Office.objects.get(code="LAJ")
    with pytest.raises(Exception, match="was recorded while the day was being closed"), transaction.atomic():
        DayClose.objects.create(office=office, day=DECEMBER_1, counted_cash=Decimal("0.00"), counted_checks=Decimal("0.00"),
                                expected_cash=Decimal("0.00"), expected_checks=Decimal("0.00"), closed_by=supervisor)
    assert not DayClose.objects.exists()


# --- the same payment twice within 10 minutes -------------------------------------------------------


def test_the_same_payment_within_ten_minutes_asks_naming_the_earlier_receipt(district_1, staff):
    """P4 pays $500.00 in cash at 10:02; the same at 10:09 is a question naming receipt 000001 and
    10:02; confirmed, it is recorded as a second payment of that one (receipt 000002)."""
    collector, p4 = staff["collector"], parcel("P4")
    with at(office_time(DECEMBER_1, 10, 2)):
        first = counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("500.00"), ask_if_second=True)
    before = written()
    with at(office_time(DECEMBER_1, 10, 9)):
        with pytest.raises(counter.SecondPaymentQuestion) as question:
            counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("500.00"), ask_if_second=True)
        assert str(question.value) == (
            "El predio P4 ya tiene un pago igual de $500.00 (Efectivo) registrado a las 10:02: recibo LAJ-2026-2027-000001. "
            "¿Es un segundo pago? Si no lo es, no lo cobre otra vez.")
        assert question.value.earlier == first.payment and written() == before
        second = counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("500.00"), second_of=first.payment_id,
                                        ask_if_second=True)
    assert (second.display_number, second.payment.second_of_id) == ("LAJ-2026-2027-000002", first.payment_id)
    assert first.payment.second_of_id is None


def test_a_confirmation_names_the_latest_payment_and_a_stale_one_asks_again(district_1, staff):
    """A third $500.00 at 10:12 confirmed as a second payment of the first (10:02) is asked again,
    now naming the second (10:09, receipt 000002)."""
    collector, p4 = staff["collector"], parcel("P4")
    with at(office_time(DECEMBER_1, 10, 2)):
        first = counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("500.00"), ask_if_second=True)
    with at(office_time(DECEMBER_1, 10, 9)):
        second = counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("500.00"), second_of=first.payment_id,
                                        ask_if_second=True)
    with at(office_time(DECEMBER_1, 10, 12)), pytest.raises(counter.SecondPaymentQuestion, match="a las 10:09: recibo LAJ-2026-2027-000002"):
        counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("500.00"), second_of=first.payment_id,
                                        ask_if_second=True)
    assert Payment.objects.filter(parcel=p4).count() == 2 and second.payment.second_of == first.payment


def test_no_question_after_ten_minutes_for_another_form_or_amount_or_a_voided_payment(district_1, staff, supervisor):
    collector, p4 = staff["collector"], parcel("P4")
    with at(office_time(DECEMBER_1, 10, 2)):
        counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("500.00"), ask_if_second=True)
    with at(office_time(DECEMBER_1, 10, 3)):
        counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("500.00"), method="card", reference="AUT-1",
                               ask_if_second=True)
        counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("500.01"), ask_if_second=True)
        counter.payment_record(acting_user=collector, parcel=parcel("P5"), amount=Decimal("500.00"), ask_if_second=True)
    with at(office_time(DECEMBER_1, 10, 12, 1)):  # 10 minutes and 1 second after 10:02:00
        later = counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("500.00"), ask_if_second=True)
    assert later.payment.second_of is None
    with at(office_time(DECEMBER_1, 10, 13)):
        counter.payment_void(acting_user=supervisor, payment=later.payment, reason="Cobrado por error")
        again = counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("500.00"), ask_if_second=True)
    assert again.payment.second_of is None and Payment.objects.filter(parcel=p4).count() == 5


def test_a_scripted_caller_is_not_asked(district_1, staff):
    """The question is the counter's and the command's (a person who may have pressed Back): the
    demo seed, benchmarks and tests record two equal payments as told."""
    with at(office_time(DECEMBER_1, 10, 2)):
        first = counter.payment_record(acting_user=staff["collector"], parcel=parcel("P4"), amount=Decimal("1.00"))
        second = counter.payment_record(acting_user=staff["collector"], parcel=parcel("P4"), amount=Decimal("1.00"))
    assert (first.payment.second_of, second.payment.second_of) == (None, None)


def test_the_command_asks_and_records_a_confirmed_second_payment(district_1, staff):
    collector = staff["collector"].username
    with at(office_time(DECEMBER_1, 10, 2)):
        code, out, err = billing_cmd("pay", "--parcel", "P4", "--amount", "22.10", "--method", "card", "--reference", "AUT-1",
                                     "--user", collector)
        assert code == 0 and out.strip().endswith("receipt LAJ-2026-2027-000001"), err
    with at(office_time(DECEMBER_1, 10, 5)):
        code, out, err = billing_cmd("pay", "--parcel", "P4", "--amount", "22.10", "--method", "card", "--reference", "AUT-2",
                                     "--user", collector)
        assert (code, out) == (1, "")
        assert err.strip() == (
            "error: El predio P4 ya tiene un pago igual de $22.10 (Tarjeta) registrado a las 10:02: recibo LAJ-2026-2027-000001. "
            "¿Es un segundo pago? Si no lo es, no lo cobre otra vez. (nothing recorded; if it is a second payment, run again "
            "with --second-payment-of LAJ-2026-2027-000001)")
        code, out, err = billing_cmd("pay", "--parcel", "P4", "--amount", "22.10", "--method", "card", "--reference", "AUT-2",
                                     "--user", collector, "--second-payment-of", "LAJ-2026-2027-000001")
    assert code == 0, err
    assert "(a second payment after receipt LAJ-2026-2027-000001)" in out and out.strip().endswith("receipt LAJ-2026-2027-000002")
    first, second = Payment.objects.order_by("pk")
    assert second.second_of == first


# --- one check number per parcel ---------------------------------------------------------------------


def test_the_same_check_number_on_the_same_parcel_is_refused_unless_voided(district_1, staff, supervisor):
    """CHK-4471 for $1,000.00 at 10:02; "chk 4471" for $1,200.00 at 11:30 (not a 10-minute
    double) is refused naming receipt 000001; another parcel may hold its own CHK-4471; once the
    first was voided (it bounced) the number may come back."""
    collector, p4 = staff["collector"], parcel("P4")
    with at(office_time(DECEMBER_1, 10, 2)):
        first = counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("1000.00"), method="check",
                                       reference="CHK-4471")
    before = written()
    with at(office_time(DECEMBER_1, 11, 30)):
        with pytest.raises(BillingError) as refused:
            counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("1200.00"), method="check",
                                   reference="chk-4471 ")
        assert str(refused.value) == (
            "El cheque chk-4471 ya se registró para el predio P4: recibo LAJ-2026-2027-000001 del 01/12/2026 a las 10:02. "
            "Un cheque no se cobra dos veces; solo si ese pago se anula (cheque devuelto) se puede registrar otra vez.")
        assert written() == before
        other = counter.payment_record(acting_user=collector, parcel=parcel("P5"), amount=Decimal("1000.00"), method="check",
                                       reference="CHK-4471")
        counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("1000.00"), method="transfer",
                               reference="CHK-4471")  # a transfer's number is not a check's
    with at(office_time(date(2026, 12, 3), 9, 0)):
        counter.payment_void(acting_user=supervisor, payment=first.payment, reason="Cheque devuelto por el banco")
        again = counter.payment_record(acting_user=collector, parcel=p4, amount=Decimal("1000.00"), method="check",
                                       reference="CHK-4471")
    assert (other.payment.reference, again.payment.reference) == ("CHK-4471", "CHK-4471")


def test_the_database_refuses_a_second_row_with_the_check_number(district_1, staff):
    """The trigger ``one_check_number_per_parcel`` (the void lives in another table, so no partial
    unique index can say "unless voided")."""
    with at(office_time(DECEMBER_1, 10, 2)):
        first = counter.payment_record(acting_user=staff["collector"], parcel=parcel("P4"), amount=Decimal("1000.00"),
                                       method="check", reference="CHK-4471")
    with pytest.raises(IntegrityError, match="check chk-4471  already recorded"), transaction.atomic():
        Payment.objects.create(parcel=parcel("P4"), office=first.office, collector=staff["collector"], paid_on=DECEMBER_1,
                               amount=Decimal("5.00"), method="check", reference="chk-4471 ", idempotency_key="raw-2",
                               payer_name="x")
    with pytest.raises(IntegrityError, match="names an earlier payment of the same parcel"), transaction.atomic():
        Payment.objects.create(parcel=parcel("P5"), office=first.office, collector=staff["collector"], paid_on=DECEMBER_1,
                               amount=Decimal("1000.00"), method="check", reference="CHK-1", idempotency_key="raw-3",
                               payer_name="x", second_of=first.payment)
    assert Payment.objects.count() == 1


def test_a_day_can_still_be_closed_and_paid_the_next_day(closed_december_1, staff):
    """The guards leave an open day alone: 2 December takes the $22.10."""
    with at(office_time(date(2026, 12, 2), 9, 0)):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=parcel("P5"), amount=Decimal("22.10"),
                                         method="card", reference="AUT-7730")
    assert (receipt.payment.paid_on, receipt.payment.amount.amount) == (date(2026, 12, 2), Decimal("22.10"))
    assert counter.SECOND_PAYMENT_WINDOW == timedelta(minutes=10)
