"""The bill (*aviso*, ¶12, ¶13) read back from its stored PDF: one *Total a pagar* (what is due
on the bill's date plus this installment if not yet due) and the last day it holds, its
breakdown, the owner's mailing address inside the #10 envelope's window area, the Collector's
office (address, phone, hours, ways to pay) and the owner's language."""

from __future__ import annotations

import io
import re
from datetime import date
from decimal import Decimal

import pdfplumber
import pytest
from pypdf import PdfReader

from billing import documents
from billing.models import Charge, Office
from billing.services import bills

INCH = 72  # PDF points per inch
# The window area on the sheet (templates/billing/pdf/bill.html): 7/8"–4 3/8" from the left edge,
# 2"–3 1/8" from the top.
WINDOW = (0.875 * INCH, 2.0 * INCH, 4.375 * INCH, 3.125 * INCH)


def text_of(data: bytes) -> str:
    return re.sub(r"\s+", " ", "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages))


@pytest.fixture
def lajas_office(db):
    office = Office.objects.get(code="LAJ")
    office.address_line1, office.town, office.zip_code = "Calle Principal 12", "Lajas", "00667"
    office.phone, office.on_bills = "(787) 555-0100", True
    office.hours_es, office.hours_en = "Lunes a viernes, 8:00 a. m. a 4:30 p. m.", "Monday to Friday, 8:00 a.m. to 4:30 p.m."
    office.ways_to_pay_es, office.ways_to_pay_en = "Efectivo, cheque o giro.", "Cash, check or money order."
    office.save()
    return office


@pytest.fixture
def addressed(owner_a):
    owner_a.address_line1, owner_a.address_line2 = "HC 1 Box 123", "Bo. Palmarejo"
    owner_a.address_town, owner_a.address_zip = "Lajas", "00667-1234"
    owner_a.save()
    return owner_a


@pytest.mark.django_db
def test_scratch_render(district_1, staff, lajas_office, addressed):
    january = Charge.objects.get(parcel__parcel_id="P4", number=2)
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=january, issued_on=date(2026, 12, 15))
    import pathlib; pathlib.Path("/tmp/billpng/jan.pdf").write_bytes(bytes(bill.document.pdf))
    print(bill.snapshot)
