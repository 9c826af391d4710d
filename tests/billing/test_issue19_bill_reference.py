"""Issue 19, "Payments that do not come through the counter": every bill freezes its charge's ISO
11649 RF payment reference and the bank account a transfer goes to (settings.PAYMENT_TRANSFER_*),
and prints them in a "how to pay by bank transfer" box (¶13); bills frozen before them still
render and verify; ``verify_books``' issued check re-reads the reference of the newer ones."""

from __future__ import annotations

import io
import re
from datetime import date

import pdfplumber
import pytest

from billing import documents, issued, pdf
from billing.models import Bill, Charge
from billing.references import charge_id_from_reference
from billing.services import bills


def page_text(data: bytes) -> str:
    with pdfplumber.open(io.BytesIO(data)) as document:
        assert len(document.pages) == 1  # the box fits: the bill is still one page
        return re.sub(r"\s+", " ", document.pages[0].extract_text())


@pytest.mark.django_db
def test_the_bill_prints_the_reference_of_its_charge_and_the_transfer_account(district_1, staff, settings):
    settings.PAYMENT_TRANSFER_BANK, settings.PAYMENT_TRANSFER_ACCOUNT = "Banco Cooperativo", "555-000111-2"
    settings.PAYMENT_TRANSFER_ROUTING = "021606674"
    july = Charge.objects.get(parcel__parcel_id="P4", number=1)
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=july, issued_on=date(2026, 7, 1))
    assert charge_id_from_reference(bill.snapshot["payment_reference"]) == july.pk
    assert bill.snapshot["transfer"] == {"bank": "Banco Cooperativo", "account": "555-000111-2", "routing": "021606674"}
    text = page_text(bytes(bill.document.pdf))
    printed = re.search(r"En el memo escriba la referencia (RF\d\d(?: \d{4})+)\.", text)
    assert printed, text
    assert charge_id_from_reference(printed.group(1)) == july.pk  # what the landowner types decodes to this charge
    assert "Por transferencia bancaria: Banco Cooperativo, cuenta 555-000111-2, ruta 021606674." in text
    # frozen: the account changes later, the bill's stored and re-rendered words do not
    settings.PAYMENT_TRANSFER_ACCOUNT = "999-999999-9"
    assert "555-000111-2" in page_text(documents.render_bill(bill)) and "999-999999-9" not in page_text(documents.render_bill(bill))


@pytest.mark.django_db
def test_an_english_bill_says_how_to_pay_by_transfer_in_english(district_1, staff, owner_a):
    owner_a.preferred_language = "en"
    owner_a.save()
    january = Charge.objects.get(parcel__parcel_id="P4", number=2)
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=january, issued_on=date(2026, 12, 15))
    text = page_text(bytes(bill.document.pdf))
    printed = re.search(r"In the memo write the reference (RF\d\d(?: \d{4})+)\.", text)
    assert printed, text
    assert charge_id_from_reference(printed.group(1)) == january.pk
    assert "By bank transfer: " in text and "transferencia" not in text


@pytest.mark.django_db
def test_bills_old_and_new_verify_clean_and_a_wrong_reference_is_found(district_1, staff):
    july = Charge.objects.get(parcel__parcel_id="P4", number=1)
    new = bills.bill_issue(acting_user=staff["hacienda"], charge=july, issued_on=date(2026, 7, 1))
    new = Bill.objects.select_related("charge__fiscal_year", "charge__roll_line", "parcel__owner").get(pk=new.pk)
    assert issued.check_issued(sample=None) == []
    # a bill frozen before issue 19 has no reference: it verifies and renders as before, with no transfer box
    old_snapshot = {k: v for k, v in new.snapshot.items() if k not in ("payment_reference", "transfer")}
    old = Bill(number="AV-2026-000099", charge=new.charge, parcel=new.parcel, issued_on=new.issued_on, snapshot=old_snapshot,
               issued_at=new.issued_at)
    assert issued._bill_difference(old) is None
    text = page_text(pdf.html_to_fitting_pdf(documents.bill_html(number=old.number, snapshot=old_snapshot,
                                                                 issued_on=old.issued_on, code="")))
    assert "Total a pagar" in text and "transferencia bancaria" not in text and "RF" not in text
    # a reference that is not its charge's is a finding (what the check re-reads)
    other = Charge.objects.get(parcel__parcel_id="P4", number=2)
    from billing.references import payment_reference

    wrong = Bill(number="AV-2026-000098", charge=new.charge, parcel=new.parcel, issued_on=new.issued_on, issued_at=new.issued_at,
                 snapshot={**new.snapshot, "payment_reference": payment_reference(other.pk)})
    assert issued._bill_difference(wrong).startswith("payment_reference: stored RF")
