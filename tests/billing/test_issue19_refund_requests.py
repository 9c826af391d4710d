"""Issue 19, "Refunds with two people": a refund is a request one supervisor makes and a DIFFERENT
supervisor approves (posting the numbered refund, its ledger entry, chain link and day report as
before) or rejects with a reason; while pending, its amount is held from other requests. The
database refuses the same person deciding, a decided request changing, and a request deleted.
P3 paid 9,300.00 against 9,180.00 owed: 120.00 of credit (worked example 1, ¶13)."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.db import IntegrityError, InternalError, transaction
from django.db.utils import DatabaseError
from django.urls import reverse
from django.utils import timezone

from billing import books, selectors
from billing.errors import BillingError
from billing.models import LedgerEntry, Office, Refund, RefundRequest
from billing.services import counter
from parcels.models import Parcel
from tests.clock import move_clock_to

D = Decimal
DAY = date(2026, 7, 15)


@pytest.fixture
def p3(district_1, staff, monkeypatch):
    move_clock_to(monkeypatch, datetime(2026, 7, 15, 10, 0, tzinfo=ZoneInfo("America/Puerto_Rico")))
    parcel = Parcel.objects.get(parcel_id="P3")
    counter.payment_record(acting_user=staff["collector"], parcel=parcel, amount=D("9300.00"), paid_on=DAY)
    return parcel


def ask(staff, parcel, amount="50.00", method="cash"):
    return counter.refund_request(acting_user=staff["supervisor"], parcel=parcel, amount=D(amount), reason="Pagó de más",
                                  method=method)


@pytest.mark.django_db
def test_a_request_pays_nothing_until_a_second_supervisor_approves_it(p3, staff, supervisor2):
    request = ask(staff, p3, method="transfer")
    assert (request.status, request.office.code, request.requested_by) == ("requested", "LAJ", staff["supervisor"])
    assert not Refund.objects.exists() and not LedgerEntry.objects.filter(kind="refund").exists()
    refund = counter.refund_approve(acting_user=supervisor2, request=request, transfer_reference=" TRF-0042 ")
    request.refresh_from_db()
    assert (request.status, request.decided_by, request.refund) == ("approved", supervisor2, refund)
    assert (refund.number, refund.method, refund.transfer_reference, refund.check_number) == ("RE-2026-000001", "transfer",
                                                                                               "TRF-0042", "")
    assert (refund.amount.amount, refund.refunded_by, refund.office.code) == (D("50.00"), supervisor2, "LAJ")
    entry = LedgerEntry.objects.get(kind="refund")
    assert (entry.refund_id, entry.debit.amount, entry.entry_date) == (refund.pk, D("50.00"), DAY)
    assert [r.pk for r in selectors.day_report(office=Office.objects.get(code="LAJ"), day=DAY).refunds] == [refund.pk]
    assert selectors.day_report(office=Office.objects.get(code="LAJ"), day=DAY).cash_refunds == D("0.00")  # not the drawer
    assert books.verify() == []


@pytest.mark.django_db
def test_the_supervisor_who_asked_cannot_decide(p3, staff):
    request = ask(staff, p3)
    with pytest.raises(BillingError, match="lo aprueba o rechaza otro supervisor"):
        counter.refund_approve(acting_user=staff["supervisor"], request=request)
    with pytest.raises(BillingError, match="lo aprueba o rechaza otro supervisor"):
        counter.refund_reject(acting_user=staff["supervisor"], request=request, reason="me equivoqué")
    with pytest.raises(BillingError, match="Solo un supervisor"):
        counter.refund_approve(acting_user=staff["collector"], request=request)
    request.refresh_from_db()
    assert request.status == "requested" and not Refund.objects.exists()


@pytest.mark.django_db
def test_the_database_refuses_the_same_person_deciding_and_a_decided_request_changing(p3, staff, supervisor2):
    request = ask(staff, p3)
    with pytest.raises(IntegrityError), transaction.atomic():  # two people, even written by hand
        RefundRequest.objects.filter(pk=request.pk).update(status="rejected", decided_by=staff["supervisor"],
                                                           decided_at=timezone.now(), decision_reason="x")
    with pytest.raises(DatabaseError), transaction.atomic():  # what was asked never changes
        RefundRequest.objects.filter(pk=request.pk).update(amount=D("60.00"))
    counter.refund_reject(acting_user=supervisor2, request=request, reason="No hay constancia del pago doble")
    with pytest.raises((DatabaseError, InternalError)), transaction.atomic():  # decided once, for good
        RefundRequest.objects.filter(pk=request.pk).update(status="requested", decided_by=None, decided_at=None,
                                                           decision_reason="")
    with pytest.raises(DatabaseError), transaction.atomic():
        RefundRequest.objects.filter(pk=request.pk).delete()
    with pytest.raises(BillingError, match="ya se decidió"):
        counter.refund_approve(acting_user=supervisor2, request=request)


@pytest.mark.django_db
def test_a_pending_request_holds_its_amount_and_a_rejection_frees_it(p3, staff, supervisor2, make_user):
    first = ask(staff, p3, "100.00")
    third = make_user("sup3", "supervisor")
    with pytest.raises(BillingError, match=r"de los que \$100.00 esperan la aprobación"):
        counter.refund_request(acting_user=third, parcel=p3, amount=D("20.01"), reason="otro", method="cash")
    second = counter.refund_request(acting_user=third, parcel=p3, amount=D("20.00"), reason="otro", method="check")
    # approving the first does not count its own hold against it; the second's 20.00 stays held
    counter.refund_approve(acting_user=supervisor2, request=first)
    counter.refund_reject(acting_user=supervisor2, request=second, reason="Ya se devolvió en el primero")
    assert counter.refund_held(parcel=p3) == D("0.00")
    again = ask(staff, p3, "20.00")  # the rejected hold is free again
    assert again.status == "requested"
    assert books.verify() == []


@pytest.mark.django_db
def test_approval_needs_the_check_number_of_a_check_request(p3, staff, supervisor2):
    request = ask(staff, p3, method="check")
    with pytest.raises(BillingError, match="número del cheque"):
        counter.refund_approve(acting_user=supervisor2, request=request)
    with pytest.raises(BillingError, match="no lleva número de cheque"):
        counter.refund_approve(acting_user=supervisor2, request=ask(staff, p3, "10.00", method="transfer"), check_number="9",
                               transfer_reference="T1")
    refund = counter.refund_approve(acting_user=supervisor2, request=request, check_number="777")
    assert (refund.method, refund.check_number) == ("check", "777")


@pytest.mark.django_db
def test_the_pending_list_shows_requests_and_decides_them(p3, staff, supervisor2, client):
    request = ask(staff, p3, "30.00", method="check")
    client.force_login(staff["supervisor"])
    page = client.get(reverse("billing:refund-requests")).content.decode()
    assert f'Solicitud n.º {request.pk}: predio <span class="nowrap">P3</span>' in page and "$30.00" in page
    assert "Usted pidió este reembolso: lo aprueba o rechaza otro supervisor." in page
    refused = client.post(reverse("billing:refund-decide", args=[request.pk]), {"action": "approve", "check_number": "1"},
                          follow=True).content.decode()
    assert "Usted pidió este reembolso: lo aprueba o rechaza otro supervisor." in refused and not Refund.objects.exists()
    client.force_login(supervisor2)
    done = client.post(reverse("billing:refund-decide", args=[request.pk]), {"action": "approve", "check_number": "4410"},
                       follow=True).content.decode()
    assert "Reembolso RE-2026-000001 registrado: $30.00 con el cheque núm. 4410" in done
    assert "No hay solicitudes pendientes." in done and "cheque núm. 4410" in done  # in the decided list
    client.force_login(staff["collector"])
    assert client.get(reverse("billing:refund-requests")).status_code == 403


@pytest.mark.django_db
def test_the_commands_request_approve_and_reject_and_exit_1_with_a_reason(p3, staff, supervisor2):
    from tests.commands import run_command

    code, out, err = run_command("billing", "refund", "--parcel", "P3", "--amount", "40.00", "--user", staff["supervisor"].username,
                                 "--method", "transfer")
    assert code == 0, err
    pk = RefundRequest.objects.get().pk
    code, out, err = run_command("billing", "refund-approve", str(pk), "--user", staff["supervisor"].username,
                                 "--transfer-reference", "T-9")
    assert code == 1 and "otro supervisor" in err and len(err.strip().splitlines()) == 1
    code, out, err = run_command("billing", "refund-approve", str(pk), "--user", supervisor2.username, "--transfer-reference", "T-9")
    assert code == 0, err
    assert out.strip().endswith("(transfer T-9) RE-2026-000001")
    code, out, err = run_command("billing", "refund", "--parcel", "P3", "--amount", "10.00", "--user", staff["supervisor"].username)
    second = RefundRequest.objects.get(status="requested").pk
    code, out, err = run_command("billing", "refund-reject", str(second), "--user", supervisor2.username, "--reason", "No procede")
    assert code == 0 and out.strip() == f"refund request {second} rejected: nothing paid"
    code, out, err = run_command("billing", "refund-reject", "999999", "--user", supervisor2.username, "--reason", "x")
    assert code == 1 and "No existe la solicitud de reembolso 999999" in err


@pytest.mark.django_db
def test_the_statement_says_what_pending_requests_hold_and_offers_the_rest(p3, staff, client):
    ask(staff, p3, "100.00")
    client.force_login(staff["supervisor"])
    page = client.get(reverse("billing:statement", args=[p3.pk])).content.decode()
    assert "Hay $100.00 del crédito reservados por solicitudes de reembolso" in page
    assert 'id="refund-amount" name="amount" type="text" inputmode="decimal" value="20.00"' in page  # 120.00 − 100.00
    ask(staff, p3, "20.00")
    page = client.get(reverse("billing:statement", args=[p3.pk])).content.decode()
    assert "Hay $120.00 del crédito reservados" in page and 'id="refund-form"' not in page  # nothing left to ask for
