"""¶9: a parcel at 100 % credit has no installment to pay, but once a year, at finalization, it
gets a notice that shows its levy imposed and its credit, with nothing to pay."""

from __future__ import annotations

import io
import re
from datetime import date
from decimal import Decimal

import pytest
from pypdf import PdfReader

from billing import bulk, documents
from billing.models import Bill, BillBatch, Charge, IssuedDocument
from billing.services import bills
from billing.services.installments import roll_finalize
from levy.services import estimate_certify, estimate_enter, levy_compute

YEAR = "2026-2027"


def text_of(data: bytes) -> str:
    return re.sub(r"\s+", " ", "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages))


@pytest.fixture
def finalized(make_parcel, owner_a, owner_b, staff):
    # O&M 10,000.00 + certified credits 1,000.00 = 11,000.00; + 2% (220.00) = 11,220.00 over 100 acres.
    # Z1 (10 acres, 100 % credit): 1,122.00 charged, 1,122.00 credit, net 0.00. P1 (90 acres): 10,098.00.
    make_parcel("Z1", owner_a, gravity="10", credit="100")
    make_parcel("P1", owner_b, gravity="90")
    estimate_enter(acting_user=staff["authority"], fiscal_year=YEAR, om_estimate=Decimal("10000.00"), reserve=Decimal("0.00"),
                   misc_income=Decimal("0.00"), certified_credits=Decimal("1000.00"))
    estimate_certify(acting_user=staff["authority"], fiscal_year=YEAR)
    levy_compute(acting_user=staff["hacienda"], fiscal_year=YEAR)
    return roll_finalize(acting_user=staff["hacienda"], fiscal_year=YEAR, today=date(2026, 6, 30))


@pytest.mark.django_db
def test_finalization_issues_a_zero_notice_for_a_line_at_full_credit(finalized, staff, client):
    assert finalized.total_levy.amount == Decimal("11220.00")
    assert not Charge.objects.filter(parcel__parcel_id="Z1").exists()  # nothing to bill
    assert Charge.objects.filter(parcel__parcel_id="P1").count() == 2
    notice = Bill.objects.get()
    assert notice.charge is None and notice.roll_line.parcel_code == "Z1"
    assert notice.number == "AV-2026-000001" and notice.issued_on == date(2026, 6, 30)
    # issue 20: numbered and frozen at finalization, printed afterwards by the bulk printing
    assert not IssuedDocument.objects.filter(bill=notice).exists()
    assert notice.batch.number == BillBatch.ZERO_NOTICES and notice.batch.job.kind == "bill_batch"
    bulk.bill_batch_run(batch=notice.batch)
    notice = Bill.objects.get()
    assert {key: notice.snapshot[key] for key in ("nothing_to_pay", "om_charge", "credit_percent", "credit", "net")} == {
        "nothing_to_pay": True, "om_charge": "1122.00", "credit_percent": "100.00", "credit": "1122.00", "net": "0.00"}
    document = notice.document
    assert document.kind == IssuedDocument.Kind.BILL and document.parcel.parcel_id == "Z1"
    text = text_of(bytes(document.pdf))
    for expected in [
        "Aviso de contribución", "AV-2026-000001", "Aviso anual: nada que pagar", "Número de catastro Z1",
        "Contribución de operación y mantenimiento impuesta, año fiscal 2026-20275 $1,122.00",
        "Crédito por derechos de agua cedidos: 100.00 % de la contribución -$1,122.00",
        "el crédito cubre toda la contribución $0.00", "Nada que pagar en el año fiscal 2026-2027",
        "Este aviso hace constar la contribución impuesta",
    ]:
        assert expected in text, expected
    assert "Importe del plazo" not in text and "Último día para pagar" not in text
    page = client.get(f"/verificar/{document.verification_code}/").content.decode()
    assert "nada que pagar" in page and "$1,122.00" in page and "DOCUMENTO VÁLIDO" in page


@pytest.mark.django_db
def test_a_zero_notice_is_issued_once(finalized, staff):
    assert bills.zero_notices_issue(acting_user=staff["hacienda"], levy=finalized) == 0
    assert Bill.objects.count() == 1
    with pytest.raises(documents.BillingError, match="no puede emitir"):
        bills.zero_notices_issue(acting_user=staff["authority"], levy=finalized)


@pytest.mark.django_db
def test_a_bill_is_for_a_charge_or_a_line_never_both(finalized, staff):
    from django.db import IntegrityError, transaction

    notice = Bill.objects.get()
    charge = Charge.objects.filter(parcel__parcel_id="P1").first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Bill.objects.create(number="AV-X-1", charge=charge, roll_line=notice.roll_line, parcel_id=charge.parcel_id,
                            issued_on=date(2026, 7, 1), snapshot={}, issued_by=staff["hacienda"])
    with pytest.raises(IntegrityError), transaction.atomic():
        Bill.objects.create(number="AV-X-2", parcel_id=charge.parcel_id, issued_on=date(2026, 7, 1), snapshot={},
                            issued_by=staff["hacienda"])
