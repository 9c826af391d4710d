"""Payment dates (issue 11, finding 7; ¶12, ¶13): never after today; a day before today only by a
supervisor, with a reason, marked back-dated on the payment and its receipt, and refused for an
office day already closed or before anything the parcel's account records after that day. The
counter page always pays today; ``billing pay --date`` is the back-dating path of the shell.

Figures from worked example 1 (``district_1``): P4's July half is 6,930.90, last day to pay
2026-08-31; ¶12's ½% a month begun runs from 1 September: 34.65 by 15 September
(6,930.90 × ½% = 34.6545), 69.31 by 15 October (× 1% = 69.309)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse

from billing import accounts, documents
from billing.errors import BillingError
from billing.models import IssuedDocument, LedgerEntry, Office, Payment, PaymentAllocation, Receipt
from billing.services import counter
from billing.snapshots import ReceiptSnapshot
from parcels.models import Parcel
from tests.billing.conftest import billing_cmd
from tests.billing.test_documents import flat, text_of
from tests.clock import on_day

TODAY = date(2026, 10, 15)  # the counter's day in these tests
SEPTEMBER_15 = date(2026, 9, 15)
REASON = "Cheque recibido por correo el 15/09; la colecturía estuvo cerrada por avería"
P4_ON_SEPTEMBER_15 = Decimal("6965.55")  # 6,930.90 + 34.65 of surcharge (one period begun)


def parcel(code: str) -> Parcel:
    return Parcel.objects.get(parcel_id=code)


def written() -> tuple[int, ...]:
    return (Payment.objects.count(), Receipt.objects.count(), LedgerEntry.objects.count(), PaymentAllocation.objects.count(),
            IssuedDocument.objects.count())


@pytest.fixture
def supervisor(make_user):
    return make_user("edwin", "supervisor", full_name="Edwin Figueroa Ramos", title="Supervisor de Colecturía")


def back_date(user, code: str, amount: Decimal, paid_on: date, reason: str = REASON, **kwargs) -> Receipt:
    with on_day(TODAY):
        return counter.payment_record(acting_user=user, parcel=parcel(code), amount=amount, paid_on=paid_on,
                                      backdate_reason=reason, **kwargs)


# --- never after today ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_payment_dated_after_today_is_refused_and_writes_nothing(district_1, staff, supervisor):
    before = written()
    for user in (staff["collector"], supervisor):
        with pytest.raises(BillingError, match=r"La fecha del pago \(16/10/2026\) es posterior a hoy \(15/10/2026\)"):
            back_date(user, "P4", Decimal("100.00"), date(2026, 10, 16))
    assert written() == before


# --- before today: a supervisor, with a reason ----------------------------------------------------------


@pytest.mark.django_db
def test_a_collector_cannot_back_date_a_payment(district_1, staff):
    before = written()
    with pytest.raises(BillingError, match=r"Solo un supervisor registra un pago con fecha anterior a hoy \(15/09/2026\)"):
        back_date(staff["collector"], "P4", P4_ON_SEPTEMBER_15, SEPTEMBER_15)
    assert written() == before


@pytest.mark.django_db
def test_a_supervisor_back_dates_only_with_a_reason(district_1, supervisor):
    before = written()
    for reason in ("", "   "):
        with pytest.raises(BillingError, match=r"fecha anterior a hoy \(15/09/2026\) requiere la razón"):
            back_date(supervisor, "P4", P4_ON_SEPTEMBER_15, SEPTEMBER_15, reason=reason)
    with pytest.raises(BillingError, match="demasiado larga"):
        back_date(supervisor, "P4", P4_ON_SEPTEMBER_15, SEPTEMBER_15, reason="x" * 201)
    assert written() == before


@pytest.mark.django_db
def test_a_back_dated_payment_is_allocated_on_its_day_and_marked_on_the_payment_and_receipt(client, district_1, supervisor):
    receipt = back_date(supervisor, "P4", P4_ON_SEPTEMBER_15, SEPTEMBER_15)
    payment = receipt.payment
    assert (payment.paid_on, payment.backdated, payment.backdate_reason, payment.collector) == (
        SEPTEMBER_15, True, REASON, supervisor)
    # ¶12 as of 15 September: one period begun, 34.65 (on 15 October it would be 69.31)
    (line,) = receipt.snapshot["applications"]
    assert (line["number"], line["surcharge"], line["principal_paid"], line["balance_after"]) == (1, "34.65", "6930.90", "0.00")
    assert sorted(LedgerEntry.objects.filter(payment=payment).values_list("entry_date", "kind")) == [
        (SEPTEMBER_15, "payment"), (SEPTEMBER_15, "surcharge")]
    # The books of 15 September did not hold it (recorded later: issue 17 §1); as known now they do.
    assert accounts.statement(parcel=parcel("P4"), as_of=SEPTEMBER_15).total_due == Decimal("6965.55")  # 6,930.90 + 34.65
    assert accounts.statement(parcel=parcel("P4"), as_of=SEPTEMBER_15, known_by=None).total_due == Decimal("0.00")
    snap = ReceiptSnapshot.from_json(receipt.snapshot)
    assert (snap.paid_on, snap.recorded_on, snap.backdate_reason, snap.received_by, snap.backdated) == (
        SEPTEMBER_15, TODAY, REASON, "Edwin Figueroa Ramos", True)
    # the PDF stored at issue, and the receipt in English
    text = flat(text_of(bytes(receipt.document.pdf)))
    assert "Fecha de pago 15 de septiembre de 2026" in text
    assert f"Pago con fecha retroactiva, registrado el 15 de octubre de 2026 por Edwin Figueroa Ramos: {REASON}" in text
    english = flat(text_of(documents.render_receipt(receipt, lang="en")))
    assert f"Back-dated payment, recorded on 15 October 2026 by Edwin Figueroa Ramos: {REASON}" in english
    # the receipt page
    client.force_login(supervisor)
    page = client.get(reverse("billing:receipt", args=[receipt.pk])).content.decode()
    assert f"Pago con fecha retroactiva, registrado el 15 de octubre de 2026 por Edwin Figueroa Ramos: {REASON}" in page


@pytest.mark.django_db
def test_todays_payment_and_older_receipts_are_not_back_dated(client, district_1, staff):
    with on_day(TODAY):
        receipt = counter.payment_record(acting_user=staff["collector"], parcel=parcel("P4"), amount=Decimal("7000.21"),
                                         backdate_reason="ignored: the payment is today's")
    assert (receipt.payment.paid_on, receipt.payment.backdated, receipt.payment.backdate_reason) == (TODAY, False, "")
    assert receipt.snapshot["applications"][0]["surcharge"] == "69.31"
    assert (receipt.snapshot["recorded_on"], receipt.snapshot["backdate_reason"]) == (None, "")
    assert "retroactiva" not in flat(text_of(bytes(receipt.document.pdf)))
    client.force_login(staff["collector"])
    assert "retroactiva" not in client.get(reverse("billing:receipt", args=[receipt.pk])).content.decode()
    # a receipt frozen before the rule has neither key and reads as not back-dated
    old = {k: v for k, v in receipt.snapshot.items() if k not in ("recorded_on", "backdate_reason")}
    assert not ReceiptSnapshot.from_json(old).backdated


@pytest.mark.django_db
def test_the_database_refuses_a_back_dated_mark_without_its_reason_and_a_reason_without_the_mark(district_1, staff):
    fields = {"parcel": parcel("P1"), "office": Office.objects.get(code="LAJ"), "collector": staff["supervisor"],
              "paid_on": SEPTEMBER_15, "amount": Decimal("1.00"), "method": "cash", "payer_name": "x"}
    for key, (backdated, reason) in enumerate([(True, ""), (False, REASON)]):
        with pytest.raises(IntegrityError, match="payment_backdated_has_reason"), transaction.atomic():
            Payment.objects.create(idempotency_key=f"raw-{key}", backdated=backdated, backdate_reason=reason, **fields)
    assert not Payment.objects.exists()


# --- what a back-dated payment may not come before ---------------------------------------------------


@pytest.mark.django_db
def test_back_dating_into_a_closed_office_day_is_refused(district_1, supervisor):
    with on_day(date(2026, 9, 14)):  # nothing paid that day: it squares at zero
        counter.day_close(acting_user=supervisor, office=Office.objects.get(code="LAJ"), day=date(2026, 9, 14),
                          counted_cash=Decimal("0.00"), counted_checks=Decimal("0.00"))
    before = written()
    with pytest.raises(BillingError, match=r"El día 14/09/2026 de la colecturía LAJ \(Colecturía de Lajas\) está cerrado: lo cerró Edwin Figueroa Ramos"):
        back_date(supervisor, "P4", Decimal("6965.55"), date(2026, 9, 14))
    assert written() == before
    assert back_date(supervisor, "P4", P4_ON_SEPTEMBER_15, SEPTEMBER_15).payment.paid_on == SEPTEMBER_15  # the next day is open


@pytest.mark.django_db
def test_back_dating_before_a_later_payment_of_the_parcel_is_refused(district_1, staff, supervisor):
    with on_day(date(2026, 10, 1)):
        counter.payment_record(acting_user=staff["collector"], parcel=parcel("P4"), amount=Decimal("100.00"),
                               paid_on=date(2026, 10, 1))
    before = written()
    with pytest.raises(BillingError, match="la cuenta del predio P4 ya tiene un pago con fecha 01/10/2026, posterior a ese día"):
        back_date(supervisor, "P4", P4_ON_SEPTEMBER_15, SEPTEMBER_15)
    assert written() == before
    # another parcel's account is its own; the parcel's own later day is not before its payment
    assert back_date(supervisor, "P3", Decimal("4612.95"), SEPTEMBER_15).payment.backdated  # 4,590.00 + 22.95 (½%)
    assert back_date(supervisor, "P4", Decimal("50.00"), date(2026, 10, 1)).payment.paid_on == date(2026, 10, 1)


@pytest.mark.django_db
def test_back_dating_before_a_later_void_is_refused(district_1, staff, supervisor):
    with on_day(date(2026, 9, 10)):
        bounced = counter.payment_record(acting_user=staff["collector"], parcel=parcel("P2"), amount=Decimal("100.00"),
                                         paid_on=date(2026, 9, 10), method="check", reference="CHK-7")
    with on_day(date(2026, 9, 20)):
        counter.payment_void(acting_user=supervisor, payment=bounced.payment, reason="Cheque devuelto")
    before = written()
    with pytest.raises(BillingError, match="ya tiene una anulación de pago con fecha 20/09/2026"):
        back_date(supervisor, "P2", Decimal("100.00"), SEPTEMBER_15)
    assert written() == before


@pytest.mark.django_db
def test_back_dating_before_a_later_refund_is_refused(district_1, staff, supervisor):
    """The reading of docs/interpretations.md: any later dated entry of the account but a charge
    blocks, here a refund of credit (P3 paid 9,200.00 on 5 July for its 9,180.00 levy)."""
    with on_day(date(2026, 7, 5)):
        counter.payment_record(acting_user=staff["collector"], parcel=parcel("P3"), amount=Decimal("9200.00"),
                               paid_on=date(2026, 7, 5))
    with on_day(date(2026, 7, 6)):
        counter.refund_issue(acting_user=supervisor, parcel=parcel("P3"), amount=Decimal("20.00"), reason="Pago de más")
    with pytest.raises(BillingError, match="ya tiene un asiento «Reembolso» con fecha 06/07/2026"):
        back_date(supervisor, "P3", Decimal("10.00"), date(2026, 7, 5))


@pytest.mark.django_db
def test_a_double_submit_after_midnight_returns_the_first_receipt_before_any_date_check(district_1, staff):
    with on_day(SEPTEMBER_15):
        first = counter.payment_record(acting_user=staff["collector"], parcel=parcel("P4"), amount=P4_ON_SEPTEMBER_15,
                                       idempotency_key="form-1")
    with on_day(date(2026, 9, 16)):  # the same form again, the next day: not a back-dated payment, the first receipt
        again = counter.payment_record(acting_user=staff["collector"], parcel=parcel("P4"), amount=P4_ON_SEPTEMBER_15,
                                       paid_on=SEPTEMBER_15, idempotency_key="form-1")
    assert again.pk == first.pk and Payment.objects.count() == 1


# --- the counter page and the shell ------------------------------------------------------------------


@pytest.mark.django_db
def test_the_counter_page_pays_today_whatever_date_is_posted(client, district_1, staff):
    p4 = parcel("P4")
    client.force_login(staff["collector"])
    with on_day(TODAY):
        page = client.get(reverse("billing:counter-parcel", args=[p4.pk]))
        form = page.context["form"]
        data = {name: form[name].value() or "" for name in ("amount", "method", "reference", "idempotency_key",
                                                             "expected_total_due")}
        response = client.post(reverse("billing:counter-parcel", args=[p4.pk]), {
            **data, "paid_on": "2026-09-15", "date": "2026-09-15", "backdate_reason": REASON})
    assert response.status_code == 302
    payment = Payment.objects.get()
    assert (payment.paid_on, payment.backdated, payment.backdate_reason, payment.amount.amount) == (
        TODAY, False, "", Decimal("7000.21"))
    assert payment.receipt.snapshot["applications"][0]["surcharge"] == "69.31"  # as of 15 October, not 15 September


@pytest.mark.django_db
def test_the_pay_command_back_dates_with_date_and_reason(district_1, staff, supervisor):
    common = ["--parcel", "P4", "--amount", "6965.55", "--date", "2026-09-15"]
    with on_day(TODAY):
        refused = [billing_cmd("pay", *common, "--user", "col"), billing_cmd("pay", *common, "--user", "edwin"),
                   billing_cmd("pay", "--parcel", "P4", "--amount", "1.00", "--date", "2026-10-16", "--user", "edwin")]
        assert not Payment.objects.exists()
        code, out, err = billing_cmd("pay", *common, "--user", "edwin", "--reason", REASON)
    assert [(c, e.strip()) for c, _, e in refused] == [
        (1, "error: Solo un supervisor registra un pago con fecha anterior a hoy (15/09/2026)."),
        (1, "error: Un pago con fecha anterior a hoy (15/09/2026) requiere la razón de la fecha retroactiva."),
        (1, "error: La fecha del pago (16/10/2026) es posterior a hoy (15/10/2026): no se registran pagos con fecha futura."),
    ]
    assert code == 0, err
    receipt = Receipt.objects.get()
    assert out.strip() == (f"paid $6,965.55 on 2026-09-15 (back-dated) for P4; due now $0.00; credit $0.00; "
                           f"receipt {receipt.display_number}")
    assert (receipt.payment.backdated, receipt.payment.backdate_reason, receipt.payment.collector.username) == (True, REASON, "edwin")
