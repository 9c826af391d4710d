"""Issue 18, points 4, 14 and 15 below the browser: refunds say how the money went back (cash
from the drawer or a check), are numbered, go through a review page and sit on their office's
day report, where cash refunds leave the drawer; the day close and verify_books still balance
with both kinds. Issue 19: the page and the command ask for a refund; a second supervisor
approves it (tests/billing/test_issue19_refund_requests.py has the rest). Worked example 1: P3 (50 ac, no credit) owes 9,180.00 in two halves of 4,590.00."""

from __future__ import annotations

import re
from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse

from billing import books, selectors
from billing.errors import BillingError
from billing.models import DayClose, Office, Payment, Refund, RefundRequest
from billing.services import counter
from parcels.models import Parcel
from tests.clock import move_clock_to, on_day
from tests.review import fingerprint_in, post_reviewed

D = Decimal
DAY = date(2026, 7, 15)  # the July half is within its 60 days: no ¶12 surcharge


@pytest.fixture
def p3_with_credit(district_1, staff, monkeypatch):
    """P3 paid 9,300.00 in cash against 9,180.00 owed: 120.00 of credit (¶13: money beyond every issued charge)."""
    move_clock_to(monkeypatch, datetime(2026, 7, 15, 10, 0, tzinfo=ZoneInfo("America/Puerto_Rico")))
    p3 = Parcel.objects.get(parcel_id="P3")
    counter.payment_record(acting_user=staff["collector"], parcel=p3, amount=D("9300.00"), paid_on=DAY)
    return p3


@pytest.mark.django_db
def test_cash_and_check_refunds_are_numbered_and_on_the_day_report_and_the_day_closes_and_the_books_balance(
    p3_with_credit, staff,
):
    p3 = p3_with_credit
    cash = counter.refund_issue(acting_user=staff["supervisor"], parcel=p3, amount=D("50.00"), reason="Pagó de más",
                                method="cash")
    check = counter.refund_issue(acting_user=staff["supervisor"], parcel=p3, amount=D("70.00"), reason="Pagó de más",
                                 method="check", check_number=" 5521 ")
    assert (cash.number, cash.method, cash.check_number) == ("RE-2026-000001", "cash", "")
    assert (check.number, check.method, check.check_number) == ("RE-2026-000002", "check", "5521")
    office = Office.objects.get(code="LAJ")
    assert cash.office == check.office == office
    report = selectors.day_report(office=office, day=DAY)
    assert [r.number for r in report.refunds] == ["RE-2026-000001", "RE-2026-000002"]
    # 9,300.00 received in cash, 50.00 of it handed back: the drawer holds 9,250.00; the check is not in it
    assert report.cash_refunds == D("50.00")
    assert report.expected(Payment.Method.CASH) == D("9250.00")
    assert report.expected(Payment.Method.CHECK) == D("0.00")
    assert report.total == D("9300.00")  # the receipts' total is what was received
    # counted as the drawer stands: closes with no explanation (the database trigger agrees)
    close = counter.day_close(acting_user=staff["supervisor"], office=office, day=DAY, counted_cash=D("9250.00"),
                              counted_checks=D("0.00"))
    assert (close.expected_cash.amount, close.expected_checks.amount, close.explanation) == (D("9250.00"), D("0.00"), "")
    assert books.verify() == []


@pytest.mark.django_db
def test_a_drawer_counted_without_the_cash_refund_is_short_by_it(p3_with_credit, staff):
    counter.refund_issue(acting_user=staff["supervisor"], parcel=p3_with_credit, amount=D("50.00"), reason="x", method="cash")
    with pytest.raises(BillingError, match="no cuadra"):
        counter.day_close(acting_user=staff["supervisor"], office=Office.objects.get(code="LAJ"), day=DAY,
                          counted_cash=D("9300.00"), counted_checks=D("0.00"))
    assert not DayClose.objects.exists()


@pytest.mark.django_db
def test_no_cash_leaves_a_closed_days_drawer_but_a_check_refund_is_recorded(p3_with_credit, staff):
    office = Office.objects.get(code="LAJ")
    counter.day_close(acting_user=staff["supervisor"], office=office, day=DAY, counted_cash=D("9300.00"),
                      counted_checks=D("0.00"))
    with pytest.raises(BillingError, match="ya está cerrado"):
        counter.refund_issue(acting_user=staff["supervisor"], parcel=p3_with_credit, amount=D("20.00"), reason="x", method="cash")
    refund = counter.refund_issue(acting_user=staff["supervisor"], parcel=p3_with_credit, amount=D("20.00"), reason="x",
                                  method="check", check_number="88")
    assert [r.pk for r in selectors.day_report(office=office, day=DAY).refunds] == [refund.pk]
    assert books.verify() == []


@pytest.mark.django_db
def test_a_refund_needs_its_way_and_a_check_its_number(p3_with_credit, staff):
    for method, number, words in (("", "", "efectivo de la caja, cheque o transferencia"), ("check", " ", "número del cheque"),
                                  ("cash", "12", "no lleva número de cheque")):
        with pytest.raises(BillingError, match=words):
            counter.refund_issue(acting_user=staff["supervisor"], parcel=p3_with_credit, amount=D("20.00"), reason="x",
                                 method=method, check_number=number)
    assert not Refund.objects.exists()


def approve_on_page(client, supervisor2, request_pk: int, **numbers: str):
    """Issue 19: the second supervisor approves the request on the pending list's form."""
    client.force_login(supervisor2)
    return client.post(reverse("billing:refund-decide", args=[request_pk]), {"action": "approve", **numbers}, follow=True)


@pytest.mark.django_db
def test_the_refund_page_reviews_first_then_asks_and_a_second_supervisor_records_it(p3_with_credit, staff, client, supervisor2):
    client.force_login(staff["supervisor"])
    url = reverse("billing:refund", args=[p3_with_credit.pk])
    form = {"amount": "120.00", "method": "check", "reason": "Pagó de más"}
    shown = client.post(url, form)
    page = shown.content.decode()
    assert shown.status_code == 200 and not RefundRequest.objects.exists()  # the review page, nothing recorded
    assert "Revisar la solicitud de reembolso" in page and "otro supervisor aprueba" in page and "$120.00 / $0.00" in page
    done = client.post(url, {**form, "reviewed": fingerprint_in(shown)}, follow=True)
    request = RefundRequest.objects.get()
    assert (request.status, request.method, request.amount.amount) == ("requested", "check", D("120.00"))
    assert f"Solicitud de reembolso n.º {request.pk} registrada: $120.00 (Cheque)" in done.content.decode()
    assert not Refund.objects.exists()  # nothing paid until another supervisor approves
    approved = approve_on_page(client, supervisor2, request.pk, check_number="5521").content.decode()
    refund = Refund.objects.get()
    assert (refund.method, refund.check_number, refund.amount.amount, refund.refunded_by) == ("check", "5521", D("120.00"),
                                                                                              supervisor2)
    assert "Reembolso RE-2026-000001 registrado: $120.00 con el cheque núm. 5521" in approved


@pytest.mark.django_db
def test_a_review_of_figures_that_changed_records_nothing(p3_with_credit, staff, client):
    client.force_login(staff["supervisor"])
    url = reverse("billing:refund", args=[p3_with_credit.pk])
    form = {"amount": "20.00", "method": "cash", "reason": "Pagó de más"}
    reviewed = fingerprint_in(client.post(url, form))
    counter.refund_issue(acting_user=staff["supervisor"], parcel=p3_with_credit, amount=D("10.00"), reason="otro", method="cash")
    again = client.post(url, {**form, "reviewed": reviewed})
    assert again.status_code == 409 and not RefundRequest.objects.exists()  # the credit changed: reviewed again, not asked


@pytest.mark.django_db
def test_a_request_above_the_credit_stays_on_the_form(p3_with_credit, staff, client):
    client.force_login(staff["supervisor"])
    response = client.post(reverse("billing:refund", args=[p3_with_credit.pk]),
                           {"amount": "120.01", "method": "check", "reason": "x"})
    assert response.status_code == 200 and "El crédito de la cuenta es $120.00; no se puede reembolsar $120.01." in \
        response.content.decode()
    assert not RefundRequest.objects.exists()


@pytest.mark.django_db
def test_post_reviewed_cash_refund_is_on_the_day_report_page(p3_with_credit, staff, client, supervisor2):
    client.force_login(staff["supervisor"])
    post_reviewed(client, reverse("billing:refund", args=[p3_with_credit.pk]),
                  {"amount": "50.00", "method": "cash", "reason": "Pagó de más"})
    approve_on_page(client, supervisor2, RefundRequest.objects.get().pk)
    page = client.get(reverse("billing:day-report"), {"day": "15/07/2026", "office": "LAJ", "counted_cash": "9250.00",
                                                      "counted_checks": "0"}).content.decode()
    assert "RE-2026-000001" in page and "Efectivo de la caja" in page
    assert "Los reembolsos en efectivo ($50.00) salieron de la caja: el efectivo esperado es $9,250.00." in page
    assert "Cuadra" in page


@pytest.mark.django_db
def test_the_closure_message_counts_the_moves_and_the_surcharge_given_back(district_1, staff, client):
    """¶12, README (Hacienda 10): P4's July half (6,930.90, last day 31 Aug 2026) paid on 1 Sep with
    34.65 of surcharge; closing 31 Aug moves the five July halves and gives the 34.65 back."""
    p4 = Parcel.objects.get(parcel_id="P4")
    with on_day(date(2026, 9, 1)):
        counter.payment_record(acting_user=staff["collector"], parcel=p4, amount=D("7000.21"), paid_on=date(2026, 9, 1))
        client.force_login(staff["hacienda"])
        page = client.post(reverse("collections:closures"), {"day": "2026-08-31", "reason": "Huracán"}, follow=True)
    html = page.content.decode()
    assert ("Cierre del 31/08/2026 registrado: 5 últimos días para pagar pasaron al siguiente día laborable; se "
            "devolvieron $34.65 de recargo") in html
    assert "cuenta para los cargos que se emitan después" not in html
    assert "todo cargo ya emitido cuyo último día para pagar cae en ese día pasa al siguiente día laborable" in html
    # a second closure that moves nothing says so
    with on_day(date(2026, 9, 1)):
        html = client.post(reverse("collections:closures"), {"day": "2026-08-15", "reason": "Apagón"}, follow=True).content.decode()
    assert "Ningún cargo emitido tenía ese día como último día para pagar" in html


@pytest.mark.django_db
def test_no_correct_it_brings_back_the_form_with_what_was_typed_and_the_pages_are_valid_html(p3_with_credit, staff, client,
                                                                                              tmp_path):
    from tests.test_html_valid import need_java, nu_errors

    client.force_login(staff["supervisor"])
    url = reverse("billing:refund", args=[p3_with_credit.pk])
    form = {"amount": "20.00", "method": "transfer", "reason": "Pagó de más"}
    review_page = client.post(url, form)
    back = client.post(url, {**form, "reviewed": fingerprint_in(review_page), "action": "revise"})
    html = back.content.decode()
    assert back.status_code == 200 and not RefundRequest.objects.exists()
    assert re.search(r'<input[^>]*value="transfer"[^>]*checked', html)  # the way chosen is still chosen
    assert 'value="20.00"' in html and 'value="Pagó de más"' in html and "autofocus" in html
    need_java()
    (tmp_path / "review.html").write_text(review_page.content.decode(), encoding="utf-8")
    (tmp_path / "form.html").write_text(html, encoding="utf-8")
    statement = client.get(reverse("billing:statement", args=[p3_with_credit.pk])).content.decode()
    assert 'name="method" value="transfer"' in statement  # the statement's refund form asks the way
    assert "lo aprueba otro supervisor" in statement  # and says it is a request
    (tmp_path / "statement.html").write_text(statement, encoding="utf-8")
    # issue 19: the pending requests page, with a request of each way
    for method in ("cash", "check", "transfer"):
        counter.refund_request(acting_user=staff["supervisor"], parcel=p3_with_credit, amount=D("10.00"), reason="x", method=method)
    pending = client.get(reverse("billing:refund-requests")).content.decode()
    assert pending.count('class="card refund-request"') == 3
    (tmp_path / "pending.html").write_text(pending, encoding="utf-8")
    assert nu_errors(tmp_path) == []


@pytest.mark.django_db
def test_the_commands_say_the_refunds_number_and_way_and_what_a_closure_gave_back(p3_with_credit, staff, supervisor2):
    from tests.commands import run_command

    code, out, err = run_command("billing", "refund", "--parcel", "P3", "--amount", "20.00", "--user", staff["supervisor"].username,
                                 "--method", "check")
    assert code == 0, err
    request = RefundRequest.objects.get()
    assert out.strip().startswith(f"refund request {request.pk}: $20.00 to P3 (check), awaiting another supervisor")
    assert not Refund.objects.exists()
    code, out, err = run_command("billing", "refund-approve", str(request.pk), "--user", supervisor2.username,
                                 "--check-number", "314")
    assert code == 0, err
    assert out.strip().endswith("(check 314) RE-2026-000001")
    assert Refund.objects.get().check_number == "314"
    code, out, err = run_command("billing", "closure", "--date", "2026-08-31", "--reason", "Huracán", "--user",
                                 staff["hacienda"].username)
    assert code == 0, err
    # nothing was paid late on 15 July: five July halves move, no surcharge to give back
    assert "5 last day(s) to pay moved, $0.00 of surcharge given back" in out
