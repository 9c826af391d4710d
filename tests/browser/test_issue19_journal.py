"""Issue 19, "A fund journal for accounting", in Chromium at 390 px (a phone), in Spanish and
English: a Hacienda officer opens the journal page on the day an office closed, reads the
collections journal (cash against levy receivable by fund and surcharge income, each line with
its receipts) and downloads the CSV, whose lines are the ones on the page.
Worked example 1 (tests/browser/test_journeys.py), finalized on 30/06/2026: P4 pays $7,000.21 on
1 September 2026, the first delinquent day of its July half ($6,930.90): $34.65 of surcharge."""

from __future__ import annotations

import csv
import io
from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from billing import selectors
from billing.models import Journal, Office, Payment
from parcels.models import Parcel
from parcels.services import user_create
from tests.browser.test_counter import in_language
from tests.browser.test_journeys import PASSWORD, _finalized_district
from tests.clock import move_clock_to

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH, HEIGHT = 390, 844
PR = ZoneInfo("America/Puerto_Rico")
DAY = date(2026, 9, 1)

WORDS = {
    "es": {"title": "Diario contable", "heading": "Asientos del 01/09/2026", "kind": "Recaudaciones",
           "reserve": "Fondo de reserva ¶1(2)", "operating": "Fondo de Explotación ¶2", "csv": "Descargar CSV",
           "none": "No hay asientos con esa fecha.", "date": "Fecha contable", "show": "Ver"},
    "en": {"title": "Accounting journal", "heading": "Journal entries of 01/09/2026", "kind": "Collections",
           "reserve": "Reserve fund ¶1(2)", "operating": "Operating Fund ¶2", "csv": "Download CSV",
           "none": "No journal entries on that date.", "date": "Posting date", "show": "View"},
}


def _closed_day() -> Journal:
    from django.contrib.auth import get_user_model

    from billing.services import counter

    _finalized_district()
    user_create(username="u_col", role="collector", password=PASSWORD, full_name="Luis Pagán", title="Colector")
    user_create(username="u_sup", role="supervisor", password=PASSWORD, full_name="Marta Ortiz Cruz", title="Supervisora")
    users = {u.username: u for u in get_user_model().objects.all()}
    counter.payment_record(acting_user=users["u_col"], parcel=Parcel.objects.get(parcel_id="P4"), amount=Decimal("7000.21"))
    office = Office.objects.get(code="LAJ")
    report = selectors.day_report(office=office, day=DAY)
    close = counter.day_close(acting_user=users["u_sup"], office=office, day=DAY, counted_cash=report.expected(Payment.Method.CASH),
                              counted_checks=report.expected(Payment.Method.CHECK))
    return Journal.objects.get(source="day_close", source_id=close.pk)


@pytest.mark.parametrize("lang", ["es", "en"])
def test_hacienda_reads_a_closed_days_journal_and_downloads_its_csv(visit, monkeypatch, lang):
    words = WORDS[lang]
    move_clock_to(monkeypatch, datetime(2026, 9, 1, 16, 0, tzinfo=PR))
    journal = _closed_day()
    visit.login("u_hac_a", PASSWORD)
    in_language(visit, lang)
    visit.page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    visit.go("/cobros/diario/")  # today: the day just closed
    page = visit.page
    assert page.locator("h1").inner_text() == words["title"]
    assert page.locator("#day").inner_text() == words["heading"]
    section = page.locator(f"#journal-{journal.pk}")
    assert section.inner_text() == f"{journal.number} · {words['kind']}"
    table = page.locator("main table").first
    text = table.inner_text()
    receipt = Payment.objects.get().receipt.display_number
    assert words["reserve"] in text and words["operating"] in text and receipt in text
    assert "1210-2026-2027" in text and "4120" in text and "$34.65" in text and "$7,000.21" in text
    # the page is not wider than the phone
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    page.screenshot(path=f"/tmp/issue19-journal-{lang}.png", full_page=True)
    with page.expect_download() as download:
        page.get_by_role("link", name=words["csv"]).click()
    data = open(download.value.path(), encoding="utf-8").read()
    rows = list(csv.reader(io.StringIO(data)))
    assert rows[0] == ["journal", "posted_on", "account", "fund", "debit", "credit", "receipts"]
    assert len(rows) - 1 == journal.lines.count() == table.locator("tbody tr").count()
    assert ["4120", "operating", "0.00", "34.65", receipt] == rows[-1][2:]
    assert sum(Decimal(r[4]) for r in rows[1:]) == sum(Decimal(r[5]) for r in rows[1:]) == Decimal("7000.21")
    # another date through the form: nothing posted then
    page.get_by_label(words["date"]).fill("31/08/2026")
    page.get_by_role("button", name=words["show"]).click()
    page.wait_for_load_state()
    visit.check()
    assert page.locator("#no-journals").inner_text() == words["none"]
