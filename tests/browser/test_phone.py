"""The landowner's pages and the counter on a phone (390 × 844 CSS pixels), in Spanish and English.

Worked example 1, finalized for 2026-2027, on 15 October 2026. Carmen owns P1 (100 acres) and P2
(250 acres); each July half is 183.60 $/ac × acres / 2, last day to pay 31 August, delinquent since
1 September, so two ½% periods have begun by 15 October (¶12):
- P1: 9,180.00, of which 500.00 paid on 10 July → 8,680.00 × 0.005 × 2 = 86.80 → owes 8,766.80;
- P2: 22,950.00 × 0.005 × 2 = 229.50 → owes 23,179.50.
The January halves (same principal) are not due yet. Pages must not scroll sideways, their tables
stack into labelled rows that keep every amount on screen, and on the home page and the statement
the summary box (what is owed and by when) comes right after the page's heading, inside the first
screen.
"""

from __future__ import annotations

import os
import re
from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth import get_user_model

from billing.services import counter
from parcels.models import Owner, Parcel
from parcels.services import user_create
from tests.browser.test_journeys import OCTOBER_15, PASSWORD, _finalized_district
from tests.clock import move_clock_to, on_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH, HEIGHT = 390, 844
SHOTS = os.environ.get("PHONE_SCREENSHOTS")  # a folder: each page's full-length screenshot goes there
MONEY = re.compile(r"^\$[\d,]+\.\d\d$")

OVERFLOW = "() => document.documentElement.scrollWidth"
# main's children before the content: messages and an error summary may come first
MAIN_CHILDREN = """() => [...document.querySelector('main').children]
    .filter((e) => !e.matches('.messages, .error-summary, script'))
    .slice(0, 2).map((e) => e.className || e.tagName.toLowerCase())"""
STACKED_CELLS = """(table) => [...table.querySelectorAll('tbody td[data-label], tfoot td[data-label]')].map((td) => {
    const box = td.getBoundingClientRect();
    const before = getComputedStyle(td, '::before').content;
    return {label: td.dataset.label, before: before, text: td.innerText.trim(), left: box.left, right: box.right,
            width: box.width, height: box.height, money: td.classList.contains('num')};
})"""


JULY_15 = datetime(2026, 7, 15, 10, 0, tzinfo=ZoneInfo("America/Puerto_Rico"))  # within July's 60 days


def _district(monkeypatch, moment: datetime) -> dict:
    move_clock_to(monkeypatch, moment)
    _finalized_district()
    carmen = Owner.objects.get(owner_key="OW-1")
    user_create(username="carmen", role="landowner", password=PASSWORD, owner=carmen)
    user_create(username="u_collector", role="collector", password=PASSWORD)
    collector = get_user_model().objects.get(username="u_collector")
    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(date(2026, 7, 10)):
        receipt = counter.payment_record(acting_user=collector, parcel=p1, amount=Decimal("500.00"), paid_on=date(2026, 7, 10))
    return {"p1": p1, "p2": Parcel.objects.get(parcel_id="P2"), "receipt": receipt}


@pytest.fixture
def district(monkeypatch):
    return _district(monkeypatch, OCTOBER_15)


def _open(visit, language: str, username: str) -> None:
    visit.page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    visit.page.context.clear_cookies()
    visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])
    visit.login(username, PASSWORD)


def _look(visit, path: str, name: str, language: str) -> None:
    """The page at ``path``: answered, no sideways scrolling, axe-clean; a screenshot if asked."""
    response = visit.page.goto(visit.base + path)
    assert response.status == 200, (path, response.status)
    assert visit.page.get_attribute("html", "lang") == ("en" if language == "en" else "es-PR")
    width = visit.page.evaluate(OVERFLOW)
    if SHOTS:
        os.makedirs(SHOTS, exist_ok=True)
        visit.page.screenshot(path=os.path.join(SHOTS, f"{language}-{name}.png"), full_page=True)
        visit.page.screenshot(path=os.path.join(SHOTS, f"{language}-{name}-screen.png"))
    assert width <= WIDTH, f"{path} is {width}px wide at a {WIDTH}px viewport"
    # nothing (but a visually hidden header row) reaches past the right edge
    wide = visit.page.evaluate("""(w) => [...document.querySelectorAll('main *, header *')]
        .filter((e) => { const r = e.getBoundingClientRect(); return !e.closest('thead, .sr-only') && r.width > 1 && r.right > w + 0.5; })
        .map((e) => e.tagName.toLowerCase() + '.' + e.className).slice(0, 5)""", WIDTH)
    assert not wide, f"{path}: past the right edge: {wide}"
    visit.check()


def _summary_box_first(visit, amount: str) -> None:
    """Right after the heading comes the summary box; its amount is inside the first screen."""
    first, second = visit.page.evaluate(MAIN_CHILDREN)
    assert first in ("h1", "page-head"), first
    assert "summary-box" in second, second
    owed = visit.page.locator("main .summary-box .owed").first
    assert owed.inner_text() == amount
    box = owed.bounding_box()
    assert box["y"] + box["height"] <= HEIGHT, box
    assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH, box


def _stacked_cells(visit, selector: str) -> list[dict]:
    """Each cell of the table stacked: its column's header shown as its label, the whole cell
    (amounts included) visible and within the screen's width."""
    cells = visit.page.locator(selector).first.evaluate(STACKED_CELLS)
    assert cells
    for cell in cells:
        assert cell["label"] in cell["before"], cell  # e.g. '"Balance" / ""'
        assert cell["width"] > 0 and cell["height"] > 0, cell
        assert cell["left"] >= 0 and cell["right"] <= WIDTH + 0.5, cell
    return cells


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_landowner_pages_fit_a_phone_and_say_first_what_is_owed(visit, district, language):
    english = language == "en"
    p1, receipt = district["p1"], district["receipt"]
    _open(visit, language, "carmen")

    _look(visit, "/", "home", language)
    _summary_box_first(visit, "$31,946.30")  # the total of both parcels: 8,766.80 + 23,179.50
    box = visit.page.inner_text("main .summary-box")
    assert "$8,766.80" in box and "$23,179.50" in box  # P1, P2
    total = "You owe today for your 2 parcels" if english else "Usted debe hoy por sus 2 predios"
    earliest = ("The earliest last day to pay has passed: it was 31/08/2026." if english
                else "El primer último día para pagar ya pasó: fue el 31/08/2026.")
    assert total in box and earliest in box, box
    late = "last day to pay was 31/08/2026" if english else "el último día para pagar fue el 31/08/2026"
    assert box.count(late) == 2, box
    home_cells = _stacked_cells(visit, "main table.table-stack")
    # still announced as a table with its rows and cells once its display changed (js/responsive-tables.js)
    assert visit.page.get_by_role("table", name="Mis predios" if not english else "My parcels").get_by_role("cell").count() == 10
    owed = [c["text"] for c in home_cells if c["label"] == ("Owed today" if english else "Debe hoy")]
    assert owed == ["$8,766.80", "$23,179.50"]
    # the receipts list, a link each
    visit.page.get_by_role("link", name=f"{'Receipt' if english else 'Recibo'} LAJ-2026-2027-000001").is_visible()

    _look(visit, f"/predios/{p1.pk}/", "parcel", language)
    _summary_box_first(visit, "$8,766.80")  # what P1 owes today, before the parcel's particulars
    late = "last day to pay was 31/08/2026" if english else "el último día para pagar fue el 31/08/2026"
    assert late in visit.page.inner_text("main .summary-box")

    _look(visit, f"/colecturia/predio/{p1.pk}/estado/", "statement", language)
    _summary_box_first(visit, "$8,766.80")
    box = visit.page.inner_text("main .summary-box")
    assert "$8,766.80" in box and "$9,180.00" in box  # today, and January's half (not yet due)
    cells = _stacked_cells(visit, "main table.table-stack")
    by_label: dict[str, list[str]] = {}
    for cell in cells:
        by_label.setdefault(cell["label"], []).append(cell["text"])
    assert by_label["Balance"] == ["$8,766.80", "$9,180.00", "$17,946.80"]  # July, January, total
    assert by_label["Principal"] == ["$9,180.00", "$9,180.00", "$18,360.00"]
    assert by_label["Surcharge (¶12)" if english else "Recargo (¶12)"][0].startswith("$86.80")
    assert by_label["Paid" if english else "Pagado"] == ["$500.00", "$0.00", "$500.00"]
    for cell in cells:
        if cell["money"]:
            assert MONEY.match(cell["text"].splitlines()[0]), cell
    payments = _stacked_cells(visit, "main table.table-stack >> nth=1")
    assert [c["text"] for c in payments if c["money"]] == ["$500.00"]

    _look(visit, f"/colecturia/recibo/{receipt.pk}/", "receipt", language)
    applied = _stacked_cells(visit, "main table.table-stack >> nth=1")
    assert "$500.00" in [c["text"] for c in applied if c["money"]]

    # the landowner's one-item menu stays open; the language switch and sign-out stay on screen
    assert visit.page.locator("header nav details").count() == 0
    assert visit.page.locator("header nav a[href='/']").is_visible()
    switch = visit.page.locator("header .lang-switch button")
    assert switch.is_visible() and switch.bounding_box()["x"] + switch.bounding_box()["width"] <= WIDTH
    sign_out = visit.page.locator("header form[action$='/cuenta/salir/'] button")
    assert sign_out.is_visible() and sign_out.bounding_box()["x"] + sign_out.bounding_box()["width"] <= WIDTH


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_within_the_sixty_days_the_summary_box_says_the_last_day_to_pay(visit, monkeypatch, language):
    # 15 July 2026: the July halves are due, their last day to pay is 31 August, no surcharge yet;
    # P1 owes 9,180.00 − 500.00 = 8,680.00, P2 22,950.00; the January halves fall due on
    # 1 January 2027, last day 2 March 2027 (60 days, ¶12).
    english = language == "en"
    p1 = _district(monkeypatch, JULY_15)["p1"]
    _open(visit, language, "carmen")
    _look(visit, "/", "home-in-time", language)
    _summary_box_first(visit, "$31,630.00")  # 8,680.00 + 22,950.00
    box = visit.page.inner_text("main .summary-box")
    by = "Pay by 31/08/2026, with no surcharge." if english else "Pague a más tardar el 31/08/2026, sin recargo."
    assert box.count(by) == 2 and "$8,680.00" in box and "$22,950.00" in box, box
    earliest = "The earliest last day to pay is 31/08/2026." if english else "El primer último día para pagar es el 31/08/2026."
    assert earliest in box, box
    _look(visit, f"/colecturia/predio/{p1.pk}/estado/", "statement-in-time", language)
    _summary_box_first(visit, "$8,680.00")
    box = visit.page.inner_text("main .summary-box")
    if english:
        assert "$8,680.00, pay by 31/08/2026 with no surcharge." in box, box
        assert "$9,180.00, due 01/01/2027; no surcharge until 02/03/2027." in box, box
    else:
        assert "$8,680.00, pague a más tardar el 31/08/2026, sin recargo." in box, box
        assert "$9,180.00, vence el 01/01/2027; sin recargo hasta el 02/03/2027." in box, box


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_the_counter_fits_a_phone(visit, district, language):
    p1 = district["p1"]
    _open(visit, language, "u_collector")
    _look(visit, "/colecturia/", "counter", language)
    # the staff's long menu folds behind one button; it opens, and the language switch and
    # sign-out stay on screen beside it
    toggle = visit.page.locator("header nav details summary")
    counter_link = visit.page.locator("header nav a[href='/colecturia/']:visible")
    assert toggle.is_visible() and counter_link.count() == 0
    toggle.click()
    assert counter_link.count() == 1 and visit.page.locator("header nav details").get_attribute("open") is not None
    visit.check()
    if SHOTS:
        visit.page.screenshot(path=os.path.join(SHOTS, f"{language}-counter-menu-open.png"))
    for control in ("header .lang-switch button", "header form[action$='/cuenta/salir/'] button"):
        box = visit.page.locator(control).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH and box["y"] < HEIGHT, control
    _look(visit, f"/colecturia/predio/{p1.pk}/", "counter-parcel", language)
    _summary_box_first(visit, "$8,766.80")  # what is owed today, before the parcel's particulars and the table
    visit.page.get_by_role("link", name="Go to the payment" if language == "en" else "Ir al cobro").click()
    assert visit.page.locator("#id_amount").bounding_box()["y"] < HEIGHT  # the form, one tap away
    cells = _stacked_cells(visit, "main table.table-stack")
    assert "$8,766.80" in [c["text"] for c in cells if c["money"]]
    amount = visit.page.locator("#id_amount")
    box = amount.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_the_counter_search_results_fit_a_phone(visit, district, language):
    _open(visit, language, "u_collector")
    _look(visit, "/colecturia/?q=P1", "counter-search", language)
    _stacked_cells(visit, "main table.table-stack")


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_the_day_report_fits_a_phone(visit, district, language):
    """15 October 2026 at LAJ: no payment yet that day; P2 pays $100.00 in cash, then the supervisor
    types $90.00 counted: $10.00 short, each table stacked with its amounts on screen."""
    english = language == "en"
    collector = get_user_model().objects.get(username="u_collector")
    counter.payment_record(acting_user=collector, parcel=district["p2"], amount=Decimal("100.00"), paid_on=date(2026, 10, 15))
    user_create(username="u_supervisor", role="supervisor", password=PASSWORD)
    _open(visit, language, "u_supervisor")
    _look(visit, "/colecturia/cuadre/?counted_cash=90.00&counted_checks=0", "day-report", language)
    tables = visit.page.locator("main table.table-stack")
    assert tables.count() == 3  # totals by method, over/short, the day's receipts
    totals = _stacked_cells(visit, "main table.table-stack >> nth=0")
    assert "$100.00" in [c["text"] for c in totals if c["money"]]
    over_short = _stacked_cells(visit, "main table.table-stack >> nth=1")
    assert [c["text"] for c in over_short if c["money"]][:3] == ["$100.00", "$90.00", "-$10.00"]
    receipts = _stacked_cells(visit, "main table.table-stack >> nth=2")
    amount = "Amount" if english else "Cantidad"
    assert [c["text"] for c in receipts if c["label"] == amount] == ["$100.00"]


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_a_corrections_entries_stay_with_their_charge_on_a_phone(visit, district, language):
    """On 15 October 2026 correction n.º 1 takes 1,000.00 off P1's O&M charge (no credit on the
    roll): each half falls 500.00, July to 8,680.00. Its surcharge for the two periods begun (Sep 1,
    Oct 1) on 8,680.00 − 500.00 paid is ½% × 2 × 8,180.00 = 81.80 instead of ½% × 2 × 8,680.00 =
    86.80: 5.00 recalculated away. Under each half the statement shows the dated entry, in the
    reader's language; on a phone it stays in the same card as its charge, within the screen."""
    from billing.services.corrections import roll_correction_create
    from levy.models import RollLine

    english = language == "en"
    p1 = district["p1"]
    hacienda = get_user_model().objects.get(username="u_hac_a")
    roll_correction_create(acting_user=hacienda, roll_line=RollLine.objects.get(parcel=p1), om_charge_delta=Decimal("-1000.00"),
                           reason="Cabida medida de nuevo", made_on=date(2026, 10, 15))
    _open(visit, language, "carmen")
    _look(visit, f"/colecturia/predio/{p1.pk}/estado/", "statement-correction", language)
    entries = visit.page.locator("main table.table-stack tr.line-events")
    assert entries.count() == 2  # under July and under January
    july = entries.first.inner_text()
    wanted = ("Correction no. 1 of the 2026-2027 roll (¶9), 15/10/2026: −$500.00; surcharge recalculated: −$5.00" if english
              else "Corrección n.º 1 del padrón 2026-2027 (¶9), 15/10/2026: −$500.00; recargo recalculado: −$5.00")
    assert wanted in " ".join(july.split()), july
    charge_row = visit.page.locator("main table.table-stack tbody tr.has-events").first.bounding_box()
    box = entries.first.bounding_box()
    assert abs(box["y"] - (charge_row["y"] + charge_row["height"])) < 1, (charge_row, box)  # one card: no gap between them
    assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH + 0.5, box
    _stacked_cells(visit, "main table.table-stack")  # the charge's own cells still stack with their labels


def test_headings_keep_a_cadastre_number_whole(visit, district):
    """Issue 18 point 12: at 390 px the counter's heading broke "LAJ-" / "000004" at the hyphen; the
    number now moves to the next line whole (the heading itself may wrap before it)."""
    from tests.factories import ParcelFactory

    parcel = ParcelFactory(parcel_id="LAJ-000004", owner=Owner.objects.get(owner_key="OW-1"), gravity_area=Decimal("12"))
    _open(visit, "es-pr", "u_collector")
    for path in (f"/colecturia/predio/{parcel.pk}/", f"/colecturia/predio/{parcel.pk}/estado/"):
        _look(visit, path, "heading", "es-pr")
        number = visit.page.locator("h1 .nowrap")
        assert number.inner_text() == "LAJ-000004"
        assert number.evaluate("(e) => e.getClientRects().length") == 1, path  # one piece, on one line
        box = number.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH
