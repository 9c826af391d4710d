"""Bills and numbered statements on demand, and the public "¿cuánto debo?", in Chromium, in
Spanish and English, at 390 px (issue 12).

The district of ``test_phone`` on 15 October 2026: Carmen's P2 owes its July half, 22,950.00, with
two ½% periods begun since 1 September: 22,950.00 × 0.005 × 2 = 229.50 → 23,179.50 today."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pypdf import PdfReader

from billing import documents, public
from billing.models import AccountStatement, Bill
from parcels.models import Parcel
from tests.browser.test_journeys import OCTOBER_15
from tests.browser.test_phone import HEIGHT, SHOTS, WIDTH, _district, _look, _open

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

P2_TODAY = "23,179.50"
BILL_BUTTON = "form[action*='/aviso/'] button"
STATEMENT_BUTTON = "form[action*='/estado-de-cuenta/'] button"


@pytest.fixture
def district(monkeypatch):
    return _district(monkeypatch, OCTOBER_15)


def download_text(visit, selector: str) -> tuple[str, str]:
    with visit.page.expect_download() as info:
        visit.page.locator(selector).first.click()
    download = info.value
    data = Path(download.path()).read_bytes()
    return download.suggested_filename, "".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_the_landowner_downloads_the_bill_and_a_numbered_statement_from_the_portal(visit, district, language):
    _open(visit, language, "carmen")
    _look(visit, "/", "home-on-demand", language)
    # Issue 18: only the July halves of P1 and P2; January's bills are offered from 17 November
    # (BILL_OFFER_DAYS, 45 days before 1 January), and the list says so.
    assert visit.page.locator(BILL_BUTTON).count() == 2
    section = visit.page.locator("section.on-demand").first.inner_text()
    assert ("El aviso de un plazo se ofrece desde 45 días antes de que venza" in section if language == "es-pr"
            else "An installment's bill is offered from 45 days before it falls due" in section)
    _look(visit, f"/colecturia/predio/{district['p2'].pk}/estado/", "statement-on-demand", language)
    # Issue 18, point 6: the estado says until when today's amount holds: July's third period
    # begins 1 November, so 23,179.50 holds through 31 October.
    owed = visit.page.locator("#owed-holds").inner_text()
    assert (owed == "Esta cantidad vale hasta el 31/10/2026, inclusive; después sube por el recargo o porque vence otro plazo."
            if language == "es-pr" else owed.startswith("This amount holds through") and "2026" in owed)
    assert visit.page.locator("#owed-holds").is_visible()
    name, text = download_text(visit, BILL_BUTTON)
    bill = Bill.objects.get()
    assert bill.charge.parcel.parcel_id == "P2" and bill.charge.number == 1 and name == f"aviso-{bill.number}.pdf" and "COPIA" not in text
    # the page now says the bill is on file; the next download is a copy
    visit.page.reload()
    assert bill.number in visit.page.locator("section.on-demand").inner_text()
    name, text = download_text(visit, BILL_BUTTON)
    assert name == f"aviso-{bill.number}-copia.pdf" and ("COPIA" in text or "COPY" in text) and Bill.objects.count() == 1
    visit.page.goto(visit.base + f"/colecturia/predio/{district['p2'].pk}/estado/")
    name, text = download_text(visit, STATEMENT_BUTTON)
    issued = AccountStatement.objects.get()
    assert issued.number == "EC-2026-000001" and name == "estado-de-cuenta-EC-2026-000001.pdf"
    assert "EC-2026-000001" in text and P2_TODAY in text and issued.channel == "portal"


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_the_collector_downloads_the_bill_at_the_counter(visit, district, language):
    _open(visit, language, "u_collector")
    _look(visit, f"/colecturia/predio/{district['p2'].pk}/", "counter-on-demand", language)
    name, text = download_text(visit, BILL_BUTTON)
    bill = Bill.objects.get()
    assert name == f"aviso-{bill.number}.pdf" and bill.issued_by.username == "u_collector" and "P2" in text
    name, text = download_text(visit, STATEMENT_BUTTON)
    assert AccountStatement.objects.get().channel == "counter" and P2_TODAY in text


def _ask(visit, number: str, code: str) -> None:
    visit.page.fill("#id_parcel_id", number)
    visit.page.fill("#id_access_code", code)
    visit.page.locator("main form button[type=submit]").click()
    visit.page.wait_for_load_state()
    visit.check()


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_the_public_page_good_code_bad_code_and_throttled(visit, district, language):
    visit.page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    visit.page.context.clear_cookies()
    visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])
    _look(visit, "/cuenta/entrar/", "login-links-owed", language)
    visit.page.locator("a[href='/cuanto-debo/']").click()
    visit.page.wait_for_load_state()
    _look(visit, "/cuanto-debo/", "owed-form", language)
    p2 = Parcel.objects.select_related("owner").get(parcel_id="P2")
    code = documents.portal_access_code(p2.parcel_id, p2.owner.owner_key)
    # a good code, the number typed without its prefix
    _ask(visit, "2", code.lower())
    body = visit.page.locator("main").inner_text()
    assert P2_TODAY in visit.page.locator("main .summary-box .owed").inner_text()
    assert p2.owner.name not in body and "OW-1" not in body
    assert visit.page.evaluate("() => document.documentElement.scrollWidth") <= WIDTH
    if SHOTS:
        visit.page.screenshot(path=f"{SHOTS}/{language}-owed-result.png", full_page=True)
    name, text = download_text(visit, "main form button[type=submit]")
    issued = AccountStatement.objects.get()
    assert issued.channel == "public" and issued.number in text and P2_TODAY in text and p2.owner.name not in text
    # a bad code: the same refusal whether the parcel exists or not
    visit.page.goto(visit.base + "/cuanto-debo/")
    _ask(visit, "P2", "AAAAA-AAAAA")
    wrong = visit.page.locator("#form_errors").inner_text()
    _ask(visit, "ZZ-999", code)
    assert visit.page.locator("#form_errors").inner_text() == wrong and P2_TODAY not in visit.page.content()
    # throttled: after the limit, even the right code is refused
    for _n in range(public.FAILURE_LIMIT - 1):
        _ask(visit, "P2", "AAAAA-AAAAA")
    _ask(visit, "P2", code)
    assert P2_TODAY not in visit.page.content()
    assert visit.page.locator("#form_errors").inner_text() != wrong
    if language == "en":
        assert "Too many attempts" in visit.page.locator("#form_errors").inner_text()
