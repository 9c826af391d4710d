"""The counter page of issue 17, section 4: a closed day takes no payment and says whose close it
is; the same payment twice within 10 minutes asks first, naming the earlier receipt; the same
check twice is refused; after signing in again, only a payment whose answer was never shown is
told, and a voided one is told as voided.

Figures: worked example 1 on 2026-10-15 (``test_pages``): P4 owes $7,000.21 (6,930.90 + 69.31)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from billing.models import Office, Payment, Receipt
from billing.services import counter
from tests.billing import test_pages
from tests.billing.test_counter import expire_sessions, form_data
from tests.billing.test_counter_once import at, office_time
from tests.billing.test_pages import TODAY, counter_post, text, url

district_1 = test_pages.district_1
frozen_today = test_pages.frozen_today

pytestmark = pytest.mark.django_db


def test_a_closed_day_shows_the_close_instead_of_the_form_and_refuses_a_form_opened_before(client, district_1, users):
    """The collector opened P4's page at 16:40; the supervisor closed the day (nothing taken,
    $0.00 counted) at 16:45; the form sent at 16:50 is refused naming the close."""
    p4 = district_1["P4"]
    client.force_login(users["collector"])
    with at(office_time(TODAY, 16, 40)):
        page = client.get(url("counter-parcel", p4.pk))
    with at(office_time(TODAY, 16, 45)):
        counter.day_close(acting_user=users["supervisor"], office=Office.objects.get(code="LAJ"), day=TODAY,
                          counted_cash=Decimal("0.00"), counted_checks=Decimal("0.00"))
    message = ("El día 15/10/2026 de la colecturía LAJ (Colecturía de Lajas) está cerrado: lo cerró Oficial U Supervisor Prueba "
               "el 15/10/2026 a las 16:45. No se registran pagos en un día cerrado.")
    with at(office_time(TODAY, 16, 50)):
        refused = client.post(url("counter-parcel", p4.pk), form_data(page))
    assert refused.status_code == 200 and not Payment.objects.exists()
    body = text(refused)
    assert message in body and 'id="day-closed"' in body and "Cobrar y emitir recibo" not in body
    with at(office_time(TODAY, 16, 55)):
        assert message in text(client.get(url("counter-parcel", p4.pk)))


def test_the_same_payment_again_asks_naming_the_receipt_and_records_the_confirmation(client, district_1, users):
    """$100.00 in cash on P4 at 10:02 (receipt 000001); the same typed again at 10:05 asks; "yes, a
    second payment" records receipt 000002 as a second payment of the first."""
    p4 = district_1["P4"]
    client.force_login(users["collector"])
    with at(office_time(TODAY, 10, 2)):
        first, _data = counter_post(client, p4, amount="100.00")
    assert first.status_code == 302
    with at(office_time(TODAY, 10, 5)):
        asked, _data = counter_post(client, p4, amount="100.00")
    assert asked.status_code == 200 and Payment.objects.count() == 1
    body = text(asked)
    assert "Confirmar el pago: es igual a uno de hace unos minutos" in body
    assert ("Este predio ya pagó <strong>$100.00</strong> (Efectivo) a las <strong>10:02</strong>: recibo "
            "<strong>LAJ-2026-2027-000001</strong>.") in body
    earlier = Payment.objects.get()
    confirm = form_data(asked)
    assert asked.context["form"]["confirm_second"].value() == str(earlier.pk) and confirm["amount"] == "100.00"
    with at(office_time(TODAY, 10, 6)):
        done = client.post(url("counter-parcel", p4.pk), {**confirm, "confirm_second": str(earlier.pk)})
    assert done.status_code == 302
    second = Payment.objects.exclude(pk=earlier.pk).get()
    assert (second.receipt.display_number, second.second_of_id, second.amount.amount) == (
        "LAJ-2026-2027-000002", earlier.pk, Decimal("100.00"))


def test_back_and_resubmit_of_a_check_records_it_once(client, district_1, users):
    """CHK-4471 for $3,000.00 of P4's $7,000.21: the same form sent again returns the first receipt;
    a fresh form with the same check (after Back and a reload) is refused naming receipt 000001."""
    p4 = district_1["P4"]
    client.force_login(users["collector"])
    with at(office_time(TODAY, 10, 2)):
        first, data = counter_post(client, p4, amount="3,000.00", method="check", reference="CHK-4471")
        assert first.status_code == 302
        again = client.post(url("counter-parcel", p4.pk), data)  # the same rendering: its idempotency key
    assert again.status_code == 302 and again.url == first.url and Receipt.objects.count() == 1
    with at(office_time(TODAY, 10, 4)):
        refused, _data = counter_post(client, p4, amount="3,000.00", method="check", reference="CHK-4471")
    assert refused.status_code == 200 and Receipt.objects.count() == 1
    assert ("El cheque CHK-4471 ya se registró para el predio P4: recibo LAJ-2026-2027-000001 del 15/10/2026 a las 10:02."
            in text(refused))


def test_a_payment_whose_receipt_was_shown_is_not_told_after_signing_in_again(client, district_1, users):
    p4 = district_1["P4"]
    client.force_login(users["collector"])
    response, _data = counter_post(client, p4)
    client.get(response.url)  # the receipt page: the collector saw the answer
    expire_sessions()
    client.force_login(users["collector"])
    assert client.get(url("counter")).context["last_attempt"] is None
    assert "Su último cobro" not in text(client.get(url("counter-parcel", p4.pk)))


def test_a_recorded_payment_voided_since_is_told_as_voided(client, district_1, users):
    """The session ended before the receipt showed; a supervisor voided the payment meanwhile."""
    p4 = district_1["P4"]
    client.force_login(users["collector"])
    response, _data = counter_post(client, p4)
    assert response.status_code == 302
    expire_sessions()
    payment = Payment.objects.get()
    counter.payment_void(acting_user=users["supervisor"], payment=payment, reason="Cobrado al predio equivocado")
    client.force_login(users["collector"])
    body = text(client.get(url("counter")))
    assert ("<strong>Se registró y después se anuló.</strong> Predio P4, $7,000.21: el recibo LAJ-2026-2027-000001 lo anuló "
            "Oficial U Supervisor Prueba, Oficial de Pruebas el 15/10/2026 («Cobrado al predio equivocado»).") in body
    assert "No lo cobre otra vez" not in body and "Sí se registró" not in body
