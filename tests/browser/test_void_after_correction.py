"""Issue 17 §2, "done when": a supervisor voids a bounced check after a correction, in Chromium.

Worked example 1 finalized on time: P4 (75.5 acres, no credit) owes two halves of 6,930.90. Its
July half is paid by check on 2026-07-10. On 2026-11-16 a correction lowers its O&M charge by
100.00: each half falls 50.00, so July was paid 50.00 beyond its 6,880.90 and those 50.00 went as
a *crédito aplicado* to January. On 2026-11-20 the check bounces. The review page lists every
entry the void will post (the crédito aplicado reversed, the give-back reversed, the payment's own
row) before the confirmation; afterwards the statement, the voided receipt's PDF (ANULADO) and the
parcel's ledger agree: July 6,880.90 unpaid since 2026-08-31 with 3 periods × ½% = 103.21 of
surcharge, January 6,880.90 unpaid, ledger 13,861.80 − 100.00 = 13,761.80."""

from __future__ import annotations

import io
from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from pypdf import PdfReader

from billing.models import CreditApplication, GiveBack, PaymentVoid, VoidReversal
from levy.models import RollLine
from parcels.models import Parcel
from parcels.services import user_create
from tests.browser.test_journeys import PASSWORD, _finalized_district
from tests.clock import move_clock_to

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PR = ZoneInfo("America/Puerto_Rico")


def test_a_supervisor_voids_a_bounced_check_after_a_correction(visit, monkeypatch, tmp_path):
    from django.contrib.auth import get_user_model

    from billing.services import corrections, counter

    move_clock_to(monkeypatch, datetime(2026, 7, 10, 10, tzinfo=PR))
    _finalized_district()
    for role in ("collector", "supervisor"):
        user_create(username=f"u_{role}", role=role, password=PASSWORD)
    users = {u.username: u for u in get_user_model().objects.all()}
    p4 = Parcel.objects.get(parcel_id="P4")
    receipt = counter.payment_record(acting_user=users["u_collector"], parcel=p4, amount=Decimal("6930.90"),
                                     method="check", reference="CHK-4471")
    move_clock_to(monkeypatch, datetime(2026, 11, 16, 9, tzinfo=PR))
    corrections.roll_correction_create(acting_user=users["u_hac_a"], roll_line=RollLine.objects.get(parcel=p4, levy__status="final"),
                                       om_charge_delta=Decimal("-100.00"), reason="Mensura nueva")
    assert GiveBack.objects.get().principal.amount == Decimal("50.00")
    assert CreditApplication.objects.get().principal.amount == Decimal("50.00")

    move_clock_to(monkeypatch, datetime(2026, 11, 20, 10, tzinfo=PR))
    visit.login("u_supervisor", PASSWORD)
    page = visit.page
    visit.go(f"/colecturia/recibo/{receipt.pk}/")
    page.get_by_label("Razón de la anulación").fill("Cheque devuelto por el banco: fondos insuficientes")
    page.get_by_role("button", name="Revisar y anular…").click()
    page.wait_for_load_state()
    visit.check()
    page.screenshot(path="/tmp/void-after-correction-review.png", full_page=True)
    assert not PaymentVoid.objects.exists()  # nothing recorded before the confirmation
    rows = [page.locator("#void-entries tbody tr").nth(i).inner_text() for i in range(page.locator("#void-entries tbody tr").count())]
    assert len(rows) == 3, rows
    assert "Se revierte el crédito aplicado del 16/11/2026 a «2026-2027 plazo 2 (enero)»" in rows[0] and rows[0].endswith("$50.00")
    assert "Se revierte la devolución del 16/11/2026 en «2026-2027 plazo 1 (julio)»" in rows[1] and rows[1].endswith("$50.00")
    assert "Se anula lo que el pago pagó a «2026-2027 plazo 1 (julio)»" in rows[2] and rows[2].endswith("$6,930.90")
    page.get_by_role("button", name="Anular el pago").click()
    page.wait_for_load_state()
    visit.check()
    void = PaymentVoid.objects.get()
    assert sorted((r.kind, r.principal.amount) for r in VoidReversal.objects.filter(void=void)) == [
        ("credit_applied", Decimal("50.00")), ("give_back", Decimal("50.00"))]
    assert "ANULADO" in page.inner_text("main")

    # the voided receipt: its stored PDF, as issued, marked ANULADO when downloaded
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Descargar el recibo (PDF)").click()
    path = tmp_path / "recibo.pdf"
    download_info.value.save_as(path)
    download_info.value.save_as("/tmp/void-after-correction-receipt.pdf")
    text = "".join(p.extract_text() for p in PdfReader(io.BytesIO(path.read_bytes())).pages)
    assert "ANULADO" in text and receipt.display_number in text and "$6,930.90" in text

    # the statement: July unpaid with 3 periods of surcharge, January unpaid, the reversal listed
    visit.go(f"/colecturia/predio/{p4.pk}/estado/")
    statement = page.inner_text("main")
    page.screenshot(path="/tmp/void-after-correction-statement.png", full_page=True)
    assert "$103.21" in statement and "$6,984.11" in statement  # 6,880.90 + 103.21
    assert "Crédito aplicado revertido por la anulación del pago del 10/07/2026, 20/11/2026: −$50.00" in statement
    assert "Devolución revertida por la anulación del pago del 10/07/2026, 20/11/2026" in statement

    # the ledger: its rows end at 13,761.80, which is what the statement says
    page.get_by_role("link", name="Libro de la cuenta").click()
    page.wait_for_load_state()
    visit.check()
    page.screenshot(path="/tmp/void-after-correction-ledger.png", full_page=True)
    assert page.inner_text("#ledger-balance") == "$13,761.80"
    assert page.inner_text("#ledger-statement") == (
        "saldo total $13,865.01 − recargo sin pagar $103.21 − crédito $0.00 = $13,761.80")
    ledger = page.inner_text("#ledger")
    assert "Anulación: Cheque devuelto por el banco: fondos insuficientes" in ledger and "$6,930.90" in ledger
    # on a phone the ledger's rows stack into cards: nothing runs off the 390 px screen
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(100)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path="/tmp/void-after-correction-ledger-390.png", full_page=True)
