"""Issue 19, registers for auditors, in Chromium at 390 px (a phone), in Spanish and English: an
auditor picks the register of day closes and a period, reads the close of 15 July 2026 short by
$10.00 with its explanation and the control totals, and downloads it as CSV and as PDF.
Worked example 1 (tests/browser/test_journeys.py): P3 50 ac, halves of $4,590.00."""

from __future__ import annotations

import io
from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pdfplumber
import pytest

from billing.models import Office
from parcels.models import Parcel
from parcels.services import user_create
from tests.browser.test_counter import in_language
from tests.browser.test_journeys import PASSWORD, _finalized_district
from tests.clock import move_clock_to

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PR = ZoneInfo("America/Puerto_Rico")
WORDS = {
    "es": {"title": "Registro de cierres del día", "show": "Ver el registro", "csv": "Descargar CSV", "pdf": "Descargar PDF",
           "from": "Desde", "to": "Hasta", "short": "Sobrante o faltante de efectivo", "unmatched": "Cierres que no cuadraron",
           "bad": "antes de empezar"},
    "en": {"title": "Register of day closes", "show": "Show the register", "csv": "Download CSV", "pdf": "Download PDF",
           "from": "From", "to": "To", "short": "Cash over or short", "unmatched": "Closes that did not match",
           "bad": "before it starts"},
}


@pytest.mark.parametrize("lang", ["es", "en"])
def test_an_auditor_reads_the_register_of_day_closes_and_downloads_it(visit, monkeypatch, lang):
    from django.contrib.auth import get_user_model

    from billing.services import counter

    words = WORDS[lang]
    _finalized_district()
    for username, role in (("u_col", "collector"), ("u_sup", "supervisor"), ("u_aud", "auditor")):
        user_create(username=username, role=role, password=PASSWORD, full_name="Marta Ortiz Cruz", title="Auditora")
    users = {u.username: u for u in get_user_model().objects.all()}
    move_clock_to(monkeypatch, datetime(2026, 7, 15, 10, 0, tzinfo=PR))
    counter.payment_record(acting_user=users["u_col"], parcel=Parcel.objects.get(parcel_id="P3"), amount=Decimal("4590.00"))
    counter.day_close(acting_user=users["u_sup"], office=Office.objects.get(code="LAJ"), day=datetime(2026, 7, 15).date(),
                      counted_cash=Decimal("4580.00"), counted_checks=Decimal("0.00"), explanation="Faltan $10.00: cambio mal dado")
    move_clock_to(monkeypatch, datetime(2026, 8, 2, 10, 0, tzinfo=PR))

    visit.login("u_aud", PASSWORD)
    in_language(visit, lang)
    page = visit.page
    page.set_viewport_size({"width": 390, "height": 844})
    page.locator("details.nav-fold summary").click()  # the menu folds at phone width
    page.locator("details.nav-fold").get_by_role("link", name="Registros" if lang == "es" else "Registers").click()
    page.wait_for_load_state()
    visit.check()
    page.select_option("#id_kind", "day-closes")
    page.get_by_label(words["from"]).fill("31/07/2026")
    page.get_by_label(words["to"]).fill("01/07/2026")
    page.get_by_role("button", name=words["show"]).click()
    page.wait_for_load_state()
    visit.check()
    assert words["bad"] in page.locator("form .alert-error").inner_text()  # the period is said wrong, nothing shown
    assert page.locator("#register-rows").count() == 0
    page.get_by_label(words["from"]).fill("01/07/2026")
    page.get_by_label(words["to"]).fill("31/07/2026")
    page.get_by_role("button", name=words["show"]).click()
    page.wait_for_load_state()
    visit.check()
    page.screenshot(path=f"/tmp/issue19-registers-{lang}.png", full_page=True)
    assert words["title"] in page.locator("main h2").inner_text()
    row = page.locator("#register-rows tbody tr").first.inner_text()
    assert "15/07/2026" in row and "LAJ" in row and "-$10.00" in row and "Faltan $10.00: cambio mal dado" in row and "u_sup" in row
    totals = page.locator("#register-totals").inner_text()
    assert words["short"] in totals and "-$10.00" in totals and words["unmatched"] in totals
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing runs off a phone's screen

    with page.expect_download() as info:
        page.get_by_role("link", name=words["csv"]).click()
    csv_text = open(info.value.path(), encoding="utf-8").read()
    assert info.value.suggested_filename == "registro-day-closes-2026-07-01-2026-07-31.csv"
    assert csv_text.splitlines()[0].startswith("day,office,expected_cash,counted_cash,cash_over_short")
    assert "2026-07-15,LAJ,4590.00,4580.00,-10.00" in csv_text and "total,unmatched,1" in csv_text
    with page.expect_download() as info:
        page.get_by_role("link", name=words["pdf"]).click()
    with pdfplumber.open(io.BytesIO(open(info.value.path(), "rb").read())) as document:
        text = "\n".join(p.extract_text() for p in document.pages)
    assert words["title"] in text and f"{words['short']} -$10.00" in text and f"{words['unmatched']} 1" in text
    if lang == "es":
        import shutil

        shutil.copy(info.value.path(), "/tmp/issue19-register.pdf")
