"""The counter cannot be misread (issue 12): cash tendered and change, a second step for an
amount above what is due today that says where the excess goes, what became of the last payment
form after a session timeout, a written explanation for a day closed over or short, and no CSRF
token in any URL.

Figures are worked example 1 on 2026-10-15: each parcel's July half is two ½% periods late (last
day 2026-08-31) and its January half (due 2027-01-01) is issued and not yet due."""

from __future__ import annotations

import io
import re
from decimal import Decimal

import pytest
from django.contrib.sessions.models import Session
from django.urls import reverse
from pypdf import PdfReader

from billing import accounts
from billing.errors import BillingError
from billing.models import DayClose, Office, Payment, Receipt
from billing.services import counter
from tests.billing import test_pages
from tests.billing.test_pages import TODAY, counter_post, messages_of, pay, text, url
from tests.review import post_reviewed

# The fixtures of the counter's page tests: example 1 with P5 of owner B, on a pinned 2026-10-15.
district_1 = test_pages.district_1
frozen_today = test_pages.frozen_today

pytestmark = pytest.mark.django_db


def form_data(page) -> dict[str, str]:
    form = page.context["form"]
    names = ("amount", "method", "reference", "tendered", "idempotency_key", "expected_total_due", "confirm_excess")
    return {name: "" if form[name].value() is None else str(form[name].value()) for name in names}


# ---------------------------------------------------------------------------------------------
# Cash tendered and change
# ---------------------------------------------------------------------------------------------


def test_cash_tendered_gives_the_change_stored_and_printed_on_the_receipt(client, district_1, users):
    """P5 owes $2,271.59 (2,249.10 + 22.49 surcharge); $2,300.00 handed over: $28.41 change."""
    client.force_login(users["collector"])
    response, _data = counter_post(client, district_1["P5"], tendered="2,300.00")
    assert response.status_code == 302
    payment = Payment.objects.get()
    assert (payment.amount.amount, payment.tendered.amount, payment.change.amount) == (
        Decimal("2271.59"), Decimal("2300.00"), Decimal("28.41"))
    receipt = payment.receipt
    assert (receipt.snapshot["tendered"], receipt.snapshot["change"]) == ("2300.00", "28.41")
    page = client.get(response.url)
    assert "Pago registrado. Recibo LAJ-2026-2027-000001. Cambio a devolver: $28.41." in messages_of(page)
    body = text(page)
    assert "Efectivo recibido" in body and "$2,300.00" in body and "Cambio devuelto" in body and "$28.41" in body
    pdf = "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(bytes(receipt.document.pdf))).pages)  # the stored PDF, rendered once at the payment
    assert "Efectivo recibido" in pdf and "$2,300.00" in pdf and "Cambio devuelto" in pdf and "$28.41" in pdf


def test_tendered_less_than_the_amount_is_refused_and_nothing_recorded(client, district_1, users):
    client.force_login(users["collector"])
    response, _data = counter_post(client, district_1["P5"], tendered="2,000.00")
    assert response.status_code == 200 and not Payment.objects.exists()
    assert "El efectivo recibido ($2,000.00) es menos que la cantidad a cobrar ($2,271.59)." in text(response)
    with pytest.raises(BillingError, match="es menos que la cantidad"):
        counter.payment_record(acting_user=users["collector"], parcel=district_1["P5"], amount=Decimal("100.00"),
                                paid_on=TODAY, tendered=Decimal("99.99"))
    with pytest.raises(BillingError, match="solo se anota en los pagos en efectivo"):
        counter.payment_record(acting_user=users["collector"], parcel=district_1["P5"], amount=Decimal("100.00"),
                                paid_on=TODAY, method="check", reference="CHK-1", tendered=Decimal("100.00"))
    assert not Payment.objects.exists()


def test_tendered_is_dropped_for_a_check_and_left_empty_when_not_typed(client, district_1, users):
    client.force_login(users["collector"])
    counter_post(client, district_1["P1"], amount="100.00", method="check", reference="CHK-5", tendered="500.00")
    counter_post(client, district_1["P2"], amount="100.00")
    assert [(p.method, p.tendered, p.change) for p in Payment.objects.order_by("pk")] == [
        ("check", None, None), ("cash", None, None)]
    assert "Cambio devuelto" not in text(client.get(url("receipt", Receipt.objects.order_by("pk").last().pk)))


# ---------------------------------------------------------------------------------------------
# An amount above what is due today: a second step that says where the excess goes
# ---------------------------------------------------------------------------------------------


def test_where_an_excess_goes_next_installment_early_then_credit(district_1):
    """P4 owes $7,000.21 today; $15,000.00 pays that, the January half early ($6,930.90) and
    leaves 15,000.00 − 7,000.21 − 6,930.90 = $1,068.89 as credit; the excess is $7,999.79."""
    destination = accounts.payment_destination(parcel=district_1["P4"], amount=Decimal("15000.00"), on=TODAY)
    assert (destination.total_due, destination.to_due, destination.excess, destination.credit) == (
        Decimal("7000.21"), Decimal("7000.21"), Decimal("7999.79"), Decimal("1068.89"))
    assert [(item.description, item.due_date.isoformat(), item.amount) for item in destination.early] == [
        ("2026-2027 plazo 2 (enero)", "2027-01-01", Decimal("6930.90"))]
    assert not Payment.objects.exists()  # a replay, nothing written


def test_an_amount_above_what_is_due_asks_first_naming_the_destination(client, district_1, users):
    """The issue's case: P1 owes $0.00 today (its July half, 9,180.00 + 91.80 surcharge, was paid);
    $10,000.00 typed is not taken at once: $9,180.00 would pay the January half early and
    $820.00 would stay as credit. Only the confirmation records it."""
    p1 = district_1["P1"]
    pay(users, p1, "9271.80")
    client.force_login(users["collector"])
    response, data = counter_post(client, p1, amount="10,000.00")
    assert response.status_code == 200 and Payment.objects.count() == 1  # only the July payment
    body = text(response)
    for shown in ("Se van a cobrar <strong>$10,000.00</strong>, pero hoy se deben <strong>$0.00</strong>. "
                  "Sobran <strong>$10,000.00</strong>",
                  "<strong>$9,180.00</strong> al próximo plazo, 2026-2027 plazo 2 (enero) (vence el 01/01/2027), pagado por adelantado",
                  "<strong>$820.00</strong> como crédito a favor de la cuenta", "Sí, cobrar $10,000.00"):
        assert shown in body, shown
    confirm = form_data(response)
    assert confirm["confirm_excess"] == "10000.00" and confirm["amount"] == "10000.00"
    assert confirm["idempotency_key"] != data["idempotency_key"]
    done = client.post(url("counter-parcel", p1.pk), confirm)
    assert done.status_code == 302
    receipt = Receipt.objects.get(pk=re.search(r"/recibo/(\d+)/", done.url).group(1))
    assert receipt.payment.amount.amount == Decimal("10000.00")
    assert (receipt.snapshot["credit_balance"], receipt.snapshot["applications"][0]["principal_paid"]) == ("820.00", "9180.00")


def test_the_server_refuses_an_unconfirmed_excess_whatever_the_browser_sends(client, district_1, users):
    p4 = district_1["P4"]
    client.force_login(users["collector"])
    # a confirmation of another amount does not confirm this one
    response, _data = counter_post(client, p4, amount="15,000.00", confirm_excess="14000.00")
    assert response.status_code == 200 and not Payment.objects.exists()
    assert "Sobran <strong>$7,999.79</strong>" in text(response) and "<strong>$1,068.89</strong> como crédito" in text(response)
    # "No, corregir la cantidad": the typed form comes back, with nothing recorded
    again = client.post(url("counter-parcel", p4.pk), {**form_data(response), "action": "revise"})
    assert again.status_code == 200 and not Payment.objects.exists()
    assert again.context["destination"] is None and again.context["form"]["amount"].value() == "15000.00"
    assert again.context["form"]["confirm_excess"].value() == ""
    # exactly what is due needs no second step
    response, _data = counter_post(client, p4)
    assert response.status_code == 302 and Payment.objects.get().amount.amount == Decimal("7000.21")


def test_the_confirmation_shows_the_change_and_records_it(client, district_1, users):
    """P3 owes $4,635.90 today (4,590.00 + 45.90); $5,000.00 in cash from a $5,000.00 bill... the
    collector types 5,000.00 with 5,020.00 tendered: $20.00 change; $364.10 goes to the January half."""
    p3 = district_1["P3"]
    client.force_login(users["collector"])
    response, _data = counter_post(client, p3, amount="5,000.00", tendered="5,020.00")
    body = text(response)
    assert "Efectivo recibido $5,020.00; cambio a devolver <strong>$20.00</strong>." in body
    assert "<strong>$364.10</strong> al próximo plazo, 2026-2027 plazo 2 (enero)" in body and "como crédito" not in body
    done = client.post(url("counter-parcel", p3.pk), form_data(response))
    assert done.status_code == 302
    assert Payment.objects.get().change.amount == Decimal("20.00")


# ---------------------------------------------------------------------------------------------
# After a session timeout: was the last payment recorded?
# ---------------------------------------------------------------------------------------------


def expire_sessions() -> None:
    """What SESSION_COOKIE_AGE does to an idle collector: the browser keeps its cookie, the
    server no longer knows the session."""
    Session.objects.all().delete()


def test_a_payment_sent_after_the_session_expired_is_said_not_recorded_and_put_back(client, district_1, users):
    p4 = district_1["P4"]
    client.force_login(users["collector"])
    page = client.get(url("counter-parcel", p4.pk))
    data = {**form_data(page), "amount": "7,000.21", "tendered": "7,020.00"}
    expire_sessions()
    response = client.post(url("counter-parcel", p4.pk), data)
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
    assert not Payment.objects.exists()
    client.force_login(users["collector"])  # signs in again (the session's data survives it)
    page = client.get(url("counter-parcel", p4.pk))
    body = text(page)
    assert "No se registró." in body and "(predio P4, $7,000.21)" in body and "La sesión había vencido" in body
    assert "Lo que se envió está otra vez en el formulario" in body
    assert page.context["form"]["tendered"].value() == "7,020.00"
    assert page.context["form"]["idempotency_key"].value() != data["idempotency_key"]
    # the counter's first page says it too
    assert "No se registró." in text(client.get(url("counter")))


def test_a_payment_recorded_just_before_the_timeout_is_said_recorded_with_its_receipt(client, district_1, users):
    p4 = district_1["P4"]
    client.force_login(users["collector"])
    response, _data = counter_post(client, p4)
    receipt = Receipt.objects.get()
    assert response.status_code == 302
    expire_sessions()  # the receipt page never showed: the collector cannot tell
    client.force_login(users["collector"])
    body = text(client.get(url("counter")))
    assert "Sí se registró." in body and "Predio P4, $7,000.21: recibo LAJ-2026-2027-000001" in body
    assert url("receipt", receipt.pk) in body
    page = client.get(url("counter-parcel", p4.pk))
    assert "Sí se registró." in text(page) and page.context["refilled"] is False
    # a new payment in this sign-in is answered by its own page, and is not "the last before"
    counter_post(client, district_1["P5"])
    assert "Sí se registró." in text(client.get(url("counter")))  # still P4's, the one before signing in
    client.force_login(users["collector"])
    assert "Predio P5, $2,271.59: recibo LAJ-2026-2027-000002" in text(client.get(url("counter")))


def test_nothing_is_said_when_nothing_was_sent(client, district_1, users):
    client.force_login(users["collector"])
    assert client.get(url("counter")).context["last_attempt"] is None
    assert "Su último cobro" not in text(client.get(url("counter-parcel", district_1["P4"].pk)))


def test_session_extend_renews_the_session(client, district_1, users, settings):
    client.force_login(users["collector"])
    session = Session.objects.get()
    before = session.expire_date
    response = client.post(url("session-extend"))
    assert response.status_code == 200 and response.json() == {"seconds": settings.SESSION_COOKIE_AGE}
    assert Session.objects.get().expire_date >= before
    assert client.get(url("session-extend")).status_code == 405
    client.force_login(users["landowner"])
    assert client.post(url("session-extend")).status_code == 403
    client.logout()
    assert client.post(url("session-extend"))["Location"].startswith(reverse("login"))
    client.force_login(users["collector"])
    page = text(client.get(url("counter")))
    assert f'data-session-seconds="{settings.SESSION_COOKIE_AGE}"' in page and "Seguir trabajando" in page


# ---------------------------------------------------------------------------------------------
# Closing a day over or short needs a written explanation
# ---------------------------------------------------------------------------------------------


def test_a_day_over_or_short_is_closed_only_with_an_explanation_shown_on_the_report(client, district_1, users):
    """Cash receipts $350.50 (100.00 + 250.50), checks $1,000.00; counted $330.50: $20.00 short."""
    pay(users, district_1["P1"], "100.00")
    pay(users, district_1["P2"], "250.50")
    pay(users, district_1["P3"], "1000.00", method="check", reference="CHK-1")
    office = Office.objects.get(code="LAJ")
    with pytest.raises(BillingError, match="escriba qué pasó"):
        counter.day_close(acting_user=users["supervisor"], office=office, day=TODAY, counted_cash=Decimal("330.50"),
                           counted_checks=Decimal("1000.00"), explanation="   ")
    assert not DayClose.objects.exists()
    client.force_login(users["supervisor"])
    report = client.get(url("day-report"), {"counted_cash": "330.50", "counted_checks": "1,000.00"})
    assert report.context["does_not_match"] is True
    assert "Explicación del sobrante o faltante" in text(report) and 'name="explanation"' in text(report)
    response = client.post(url("day-close"), {"office": "LAJ", "day": TODAY.isoformat(), "counted_cash": "330.50",
                                              "counted_checks": "1000.00", "explanation": "",
                                              "csrfmiddlewaretoken": "not-for-the-url"})
    assert response.status_code == 302 and "csrfmiddlewaretoken" not in response["Location"]
    assert not DayClose.objects.exists()
    refused = client.get(response.url)
    assert any("escriba qué pasó con el sobrante o faltante" in m for m in messages_of(refused))
    response = post_reviewed(client, url("day-close"), {"office": "LAJ", "day": TODAY.isoformat(), "counted_cash": "330.50",
                                              "counted_checks": "1000.00",
                                              "explanation": "Se dio $20.00 de más de cambio a las 11:40; el colector lo repone.",
                                              "csrfmiddlewaretoken": "not-for-the-url"})
    assert response.status_code == 302
    assert response["Location"] == url("day-report") + "?day=15%2F10%2F2026&office=LAJ&counted_cash=330.50&counted_checks=1000.00"
    close = DayClose.objects.get()
    assert close.explanation == "Se dio $20.00 de más de cambio a las 11:40; el colector lo repone."
    assert close.counted_cash.amount - close.expected_cash.amount == Decimal("-20.00")
    body = text(client.get(response.url))
    assert "Se dio $20.00 de más de cambio a las 11:40; el colector lo repone." in body
    assert "$330.50" in body and "$350.50" in body


def test_a_day_that_matches_closes_without_explanation(users, district_1):
    pay(users, district_1["P1"], "100.00")
    close = counter.day_close(acting_user=users["supervisor"], office=Office.objects.get(code="LAJ"), day=TODAY,
                               counted_cash=Decimal("100.00"), counted_checks=Decimal("0.00"))
    assert close.explanation == ""


# ---------------------------------------------------------------------------------------------
# No token in any URL
# ---------------------------------------------------------------------------------------------

LINK = re.compile(r'(?:href|action|src)="([^"]*)"')


def test_no_redirect_or_link_of_billing_carries_the_csrf_token(client, district_1, users):
    token = {"csrfmiddlewaretoken": "tok"}
    receipt = pay(users, district_1["P2"], "100.00", method="check", reference="CHK-2")
    pay(users, district_1["P3"], "9300.00")  # a credit to refund (9,180.00 and 45.90 of surcharge owed)
    client.force_login(users["supervisor"])
    redirects = [
        counter_post(client, district_1["P4"], **token)[0],  # before the day is closed: then it takes no payment (issue 17)
        post_reviewed(client, url("void", receipt.payment.pk), {"reason": "Cheque devuelto", **token}),  # before the day is closed
        post_reviewed(client, url("day-close"), {"office": "LAJ", "day": TODAY.isoformat(), "counted_cash": "0", "counted_checks": "0",
                                       "explanation": "Prueba", **token}),
        client.post(url("day-close"), {"day": "mal", **token}),
        # issue 18: through its review page (the day is closed by now: a check refund, no cash from the drawer)
        post_reviewed(client, url("refund", district_1["P3"].pk), {"amount": "20.00", "method": "check", "check_number": "9",
                                                                   "reason": "Pagó de más", **token}),
    ]
    refund_form = client.post(url("refund", district_1["P3"].pk), {**token})  # issue 18: the form again, with its errors
    assert refund_form.status_code == 200
    assert not [link for link in LINK.findall(text(refund_form)) if "csrfmiddlewaretoken" in link]
    for response in redirects:
        assert response.status_code == 302, response
        assert "csrfmiddlewaretoken" not in response["Location"], response["Location"]
    pages = [url("counter") + "?q=P", url("counter-parcel", district_1["P4"].pk), url("statement", district_1["P4"].pk),
             url("receipt", receipt.pk), url("day-report") + "?counted_cash=1&counted_checks=2",
             *(response["Location"] for response in redirects)]
    for page in pages:
        body = text(client.get(page))
        links = LINK.findall(body)
        assert links, page
        assert not [link for link in links if "csrfmiddlewaretoken" in link], page
