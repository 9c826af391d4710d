"""¶9: a receipt or bill issued after roll corrections states the year's levy as corrected (the
roll line itself never changes). Worked example 1's P1: charge 18,360.00, no credit, net 18,360.00,
halves 9,180.00. Correction n.º 1 +1,000.01 → 19,360.01; n.º 2 −500.00 → 18,860.01, split by ¶12 into
9,430.01 (July, the odd cent) and 9,430.00."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from billing.accounts import line_as_corrected
from billing.models import Charge, IssuedDocument
from billing.services import bills, corrections, counter
from levy.models import RollLine
from parcels.models import Parcel
from tests.billing.test_bill_total import text_of
from tests.billing.test_documents import flat
from tests.billing.test_documents import text_of as pdf_text
from tests.clock import move_clock_to

D = Decimal


@pytest.fixture
def corrected_p1(district_1, staff):
    line = RollLine.objects.get(parcel__parcel_id="P1", levy__status="final")
    for delta, reason in ((D("1000.01"), "Mensura nueva"), (D("-500.00"), "Error de mensura")):
        corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line, om_charge_delta=delta, reason=reason,
                                           made_on=date(2026, 11, 1))
    return line


@pytest.mark.django_db
def test_the_line_as_corrected_adds_every_correction_and_splits_the_net_again(corrected_p1):
    corrected = line_as_corrected(corrected_p1)
    assert (corrected.standing.charge, corrected.standing.credit, corrected.standing.net) == (D("18860.01"), D("0.00"), D("18860.01"))
    assert (corrected.first_installment, corrected.second_installment, corrected.corrections) == (D("9430.01"), D("9430.00"), (1, 2))
    assert (corrected_p1.om_charge, corrected_p1.net) == (D("18360.00"), D("18360.00"))  # the roll stays as finalized


@pytest.mark.django_db
def test_a_receipt_after_corrections_states_the_corrected_levy(corrected_p1, staff, monkeypatch):
    move_clock_to(monkeypatch, datetime(2026, 11, 16, 10, tzinfo=ZoneInfo("America/Puerto_Rico")))
    receipt = counter.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id="P1"),
                                     amount=D("100.00"), paid_on=date(2026, 11, 16))
    levy_line = receipt.snapshot["applications"][0]
    assert (levy_line["om_charge"], levy_line["net"], levy_line["corrections"]) == ("18860.01", "18860.01", [1, 2])
    text = flat(pdf_text(bytes(IssuedDocument.objects.get(receipt=receipt).pdf)))
    assert "$18,860.01" in text and "$18,360.00" not in text
    assert "Con las correcciones n.º 1, 2 del padrón." in text


@pytest.mark.django_db
def test_a_bill_after_corrections_states_the_corrected_levy_and_halves(corrected_p1, staff):
    january = Charge.objects.get(parcel__parcel_id="P1", number=2, kind=Charge.Kind.INSTALLMENT)
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=january, issued_on=date(2026, 12, 15))
    snap = bill.snapshot
    assert (snap["om_charge"], snap["first_installment"], snap["second_installment"]) == ("18860.01", "9430.01", "9430.00")
    text = text_of(bytes(bill.document.pdf))
    assert "Con las correcciones n.º 1, 2 del padrón." in text and "$18,860.01" in text


@pytest.mark.django_db
def test_a_receipt_names_the_correction_it_paid_from_its_number_in_both_languages(district_1, staff, monkeypatch):
    """P1's July half paid in July; correction n.º 1 (+1,000.01 on 2026-11-01) raises July by 500.01
    (19,360.01 split 9,680.01 / 9,680.00), due that day; paying it names it by its number."""
    from django.utils import translation

    from billing.selectors import receipt_display

    p1 = Parcel.objects.get(parcel_id="P1")
    move_clock_to(monkeypatch, datetime(2026, 7, 10, 10, tzinfo=ZoneInfo("America/Puerto_Rico")))
    counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=D("9180.00"), paid_on=date(2026, 7, 10))
    line = RollLine.objects.get(parcel=p1, levy__status="final")
    corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line, om_charge_delta=D("1000.01"),
                                       reason="Mensura nueva", made_on=date(2026, 11, 1))
    move_clock_to(monkeypatch, datetime(2026, 11, 16, 10, tzinfo=ZoneInfo("America/Puerto_Rico")))
    receipt = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=D("500.01"), paid_on=date(2026, 11, 16))
    paid = receipt.snapshot["applications"]
    assert [(a["kind"], a["correction"], a["principal_paid"]) for a in paid] == [("correction", 1, "500.01")]
    display = receipt_display(receipt)
    with translation.override("en"):
        assert display.lines[0].label == "Correction no. 1 of the 2026-2027 roll (¶9): installment 1 (July)"
    with translation.override("es"):
        assert display.lines[0].label == "Corrección n.º 1 del padrón 2026-2027 (¶9): plazo 1 (julio)"
