"""Issue 18, points 4, 14 and 15, in Chromium at 390 px (a phone), in Spanish and English: what the
office-closures page says a closure does and what recording one did; a refund through its review
page, saying how the money went back, with its number in the message and on the day report; and
success messages that say what happens next (finalizing the roll, certifying the estimates).
Worked example 1 (tests/browser/test_journeys.py): $183.60 per acre, P3 50 ac (halves $4,590.00),
P4 75.5 ac (halves $6,930.90), five parcels, July halves due 1 July 2026, last day 31 August."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from billing.models import Charge, GiveBack, LastDayMove, Refund
from levy.models import Estimate, Levy
from parcels.models import Parcel
from parcels.services import user_create
from tests.browser.test_counter import in_language
from tests.browser.test_journeys import PASSWORD, _finalized_district, _registry_and_certified_estimates
from tests.clock import move_clock_to

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH, HEIGHT = 390, 844
PR = ZoneInfo("America/Puerto_Rico")


def phone(visit) -> None:
    visit.page.set_viewport_size({"width": WIDTH, "height": HEIGHT})


def shot(visit, name: str) -> None:
    visit.page.screenshot(path=f"/tmp/issue18-office-{name}.png", full_page=True)


def on_first_screen(locator) -> None:
    box = locator.bounding_box()
    assert box is not None and 0 <= box["y"] and box["y"] + min(box["height"], 80) <= HEIGHT, box


def submit(visit, name: str) -> None:
    visit.page.get_by_role("button", name=name).click()
    visit.page.wait_for_load_state()
    visit.check()


def _user(username: str, role: str) -> object:
    from django.contrib.auth import get_user_model

    user_create(username=username, role=role, password=PASSWORD, full_name="Marta Ortiz Cruz", title="Supervisora")
    return get_user_model().objects.get(username=username)


# --- 4. Office closures ------------------------------------------------------------------------------

CLOSURE = {
    "es": {"effect": "todo cargo ya emitido cuyo último día para pagar cae en ese día pasa al siguiente día laborable",
           "given": "El recargo que ya se pagó y que con el nuevo día no se debía se devuelve a la cuenta",
           "button": "Registrar cierre", "day": "Día cerrado", "reason": "Razón",
           "message": "Cierre del 31/08/2026 registrado: 5 últimos días para pagar pasaron al siguiente día laborable; "
                      "se devolvieron $34.65 de recargo"},
    "en": {"effect": "moves the last day to pay of every charge already issued that falls on that day to the next working day",
           "given": "Surcharge already paid that the new day means was not owed is given back to the account",
           "button": "Record closure", "day": "Closed day", "reason": "Reason",
           "message": "Closure on 31/08/2026 recorded: 5 last days to pay moved to the next working day; $34.65 of "
                      "surcharge already paid, not owed with the new day, was given back"},
}


@pytest.mark.parametrize("lang", ["es", "en"])
def test_the_closures_page_says_a_closure_moves_issued_last_days_and_the_message_counts_what_it_did(visit, monkeypatch, lang):
    """¶12: P4 pays $7,000.21 on 1 September 2026, the first day its July half ($6,930.90, last day
    31 August) is delinquent: ½ % = $34.65 of surcharge. A hurricane closure of 31 August recorded
    afterwards moves the five July halves' last day to 1 September and gives the $34.65 back."""
    from billing.services import counter

    words = CLOSURE[lang]
    _finalized_district()
    move_clock_to(monkeypatch, datetime(2026, 9, 1, 10, 0, tzinfo=PR))
    collector = _user("u_collector", "collector")
    counter.payment_record(acting_user=collector, parcel=Parcel.objects.get(parcel_id="P4"), amount=Decimal("7000.21"))
    visit.login("u_hac_a", PASSWORD)
    in_language(visit, lang)
    phone(visit)
    visit.go("/cobros/cierres/")
    page = visit.page
    note = page.locator("#closure-effect")
    assert words["effect"] in note.inner_text() and words["given"] in note.inner_text()
    assert "afterwards" not in note.inner_text() and "después, no cambia" not in note.inner_text()
    on_first_screen(note)
    page.get_by_label(words["day"]).fill("31/08/2026")
    page.fill("#id_reason", "Huracán")
    submit(visit, words["button"])
    shot(visit, f"closure-{lang}")
    message = page.locator(".messages .alert-success")
    assert words["message"] in message.inner_text()
    on_first_screen(message)
    # what the message says is what was posted
    assert LastDayMove.objects.count() == 5
    assert sum(g.surcharge.amount for g in GiveBack.objects.all()) == Decimal("34.65")
    row = page.locator("main table tbody tr").first
    assert "5" in row.inner_text() and "$34.65" in row.inner_text()


# --- 14. Refunds (issue 19: a request one supervisor makes and another approves) ----------------------

REFUND = {
    "es": {"method": "Cómo se devuelve el dinero", "check": "Cheque", "cash": "Efectivo de la caja",
           "amount": "Cantidad a reembolsar", "reason": "Razón", "two": "lo aprueba otro supervisor",
           "review": "Revisar la solicitud…", "title": "Revisar la solicitud de reembolso del predio P3",
           "record": "Pedir el reembolso", "request": "Esto crea una solicitud que otro supervisor aprueba.",
           "asked": "Espera la aprobación de otro supervisor",
           "own": "Usted pidió este reembolso: lo aprueba o rechaza otro supervisor.",
           "approve": "Aprobar y reembolsar", "check_number": "Número del cheque",
           "cash_done": "Reembolso RE-2026-000001 registrado: $50.00 en efectivo de la caja.",
           "check_done": "Reembolso RE-2026-000002 registrado: $70.00 con el cheque núm. 5521.",
           "check_shown": "Cheque núm. 5521", "refunds": "Reembolsos del día",
           "drawer": "Los reembolsos en efectivo ($50.00) salieron de la caja: el efectivo esperado es $9,250.00.",
           "match": "Cuadra", "none": "No hay solicitudes pendientes."},
    "en": {"method": "How the money is returned", "check": "Check", "cash": "Cash from the drawer",
           "amount": "Amount to refund", "reason": "Reason", "two": "another supervisor approves it",
           "review": "Review the request…", "title": "Review the refund request of parcel P3",
           "record": "Request the refund", "request": "This creates a request that another supervisor approves.",
           "asked": "It awaits another supervisor's approval",
           "own": "You requested this refund: another supervisor approves or rejects it.",
           "approve": "Approve and refund", "check_number": "Check number",
           "cash_done": "Refund RE-2026-000001 recorded: $50.00 in cash from the drawer.",
           "check_done": "Refund RE-2026-000002 recorded: $70.00 by check no. 5521.",
           "check_shown": "Check no. 5521", "refunds": "Refunds of the day",
           "drawer": "The cash refunds ($50.00) left the drawer: the expected cash is $9,250.00.",
           "match": "Balances", "none": "No pending requests."},
}


def _request_on_statement(visit, words: dict[str, str], *, amount: str, check: bool = False) -> None:
    page = visit.page
    p3 = Parcel.objects.get(parcel_id="P3")
    visit.go(f"/colecturia/predio/{p3.pk}/estado/")
    assert words["two"] in page.inner_text("#refund-two-people")
    page.get_by_label(words["amount"]).fill(amount)
    if not check:
        page.locator("#refund-reason").scroll_into_view_if_needed()
        page.screenshot(path="/tmp/issue18-office-statement-refund-form.png")
    else:
        page.get_by_label(words["check"], exact=True).check()
    page.locator("#refund-reason").fill("Pagó de más")
    submit(visit, words["review"])
    assert page.get_by_role("heading", level=1).inner_text() == words["title"]
    assert words["request"] in page.inner_text("main")
    submit(visit, words["record"])
    assert words["asked"] in page.locator(".messages .alert-success").inner_text()


def _approve_first_pending(visit, words: dict[str, str], *, check: str = "") -> None:
    page = visit.page
    visit.go("/colecturia/reembolsos/")
    item = page.locator(".refund-request").first
    if check:
        item.get_by_label(words["check_number"]).fill(check)
    item.get_by_role("button", name=words["approve"]).click()
    page.wait_for_load_state()
    visit.check()


@pytest.mark.parametrize("lang", ["es", "en"])
def test_a_refund_is_requested_by_one_supervisor_approved_by_another_and_is_on_the_day_report(visit, monkeypatch, lang):
    """P3 pays $9,300.00 in cash on 15 July 2026 against $9,180.00 owed: $120.00 of credit. One
    supervisor asks to refund $50.00 in cash and $70.00 by check; he cannot approve his own request
    (a clear message); a second supervisor approves both, the check with its number 5521; the day
    report lists both and expects $9,300.00 − $50.00 = $9,250.00 in the drawer (issue 18, 19)."""
    from billing.services import counter

    words = REFUND[lang]
    _finalized_district()
    move_clock_to(monkeypatch, datetime(2026, 7, 15, 10, 0, tzinfo=PR))
    collector = _user("u_collector", "collector")
    _user("u_supervisor", "supervisor")
    user_create(username="u_supervisor2", role="supervisor", password=PASSWORD, full_name="Luis Pagán Rivera", title="Supervisor")
    p3 = Parcel.objects.get(parcel_id="P3")
    counter.payment_record(acting_user=collector, parcel=p3, amount=Decimal("9300.00"))
    visit.login("u_supervisor", PASSWORD)
    in_language(visit, lang)
    phone(visit)
    page = visit.page

    _request_on_statement(visit, words, amount="50.00")
    shot(visit, f"refund-requested-{lang}")
    _request_on_statement(visit, words, amount="70.00", check=True)
    assert not Refund.objects.exists()  # asked, not paid
    # the same supervisor cannot approve his own request
    _approve_first_pending(visit, words, check="")
    assert words["own"] in page.locator(".messages .alert-error").inner_text()
    on_first_screen(page.locator(".messages .alert-error"))
    shot(visit, f"refund-own-refused-{lang}")
    assert not Refund.objects.exists()

    visit.logout()
    visit.login("u_supervisor2", PASSWORD)  # the language chosen before signing out stays (its cookie)
    phone(visit)
    visit.go("/colecturia/reembolsos/")
    shot(visit, f"refund-pending-{lang}")
    _approve_first_pending(visit, words)
    assert words["cash_done"] in page.locator(".messages .alert-success").inner_text()
    _approve_first_pending(visit, words, check="5521")
    message = page.locator(".messages .alert-success")
    assert words["check_done"] in message.inner_text()
    on_first_screen(message)
    assert words["none"] in page.inner_text("main")
    shot(visit, f"refund-done-{lang}")
    assert [(r.number, r.method, r.check_number, r.refunded_by.username) for r in Refund.objects.order_by("number")] == [
        ("RE-2026-000001", "cash", "", "u_supervisor2"), ("RE-2026-000002", "check", "5521", "u_supervisor2")]

    visit.go("/colecturia/cuadre/?day=15/07/2026&counted_cash=9250.00&counted_checks=0")
    shot(visit, f"refund-day-report-{lang}")
    table = page.get_by_role("table", name=words["refunds"])
    rows = table.locator("tbody tr")
    assert rows.count() == 2
    assert "RE-2026-000001" in rows.nth(0).inner_text() and words["cash"] in rows.nth(0).inner_text()
    assert "RE-2026-000002" in rows.nth(1).inner_text() and words["check_shown"] in rows.nth(1).inner_text()
    assert words["drawer"] in page.inner_text("#day-cash-refunds")
    assert words["match"] in page.inner_text("main")


# --- 15. What happens next --------------------------------------------------------------------------------

NEXT = {
    "es": {"certify_review": "Revisar y certificar…", "certify": "Certificar estas cifras al Secretario de Hacienda",
           "certified": "Hacienda ya puede calcular la contribución de 2026-2027",
           "finalize_review": "Revisar y finalizar…", "finalize": "Finalizar el padrón y emitir los plazos",
           "issued": "Se emitieron 10 plazos (¶12); sus avisos se imprimen por lotes en Avisos.", "link": "Avisos",
           "batches": "Imprimir los avisos de un semestre"},
    "en": {"certify_review": "Review and certify…", "certify": "Certify these figures to the Secretary of the Treasury",
           "certified": "Hacienda can now compute the 2026-2027 levy",
           "finalize_review": "Review and finalize…", "finalize": "Finalize the roll and issue the installments",
           "issued": "10 installments were issued (¶12); their bills are printed in batches under Bills.", "link": "Bills",
           "batches": "Print a semester’s tax bills"},
}


@pytest.mark.parametrize("lang", ["es", "en"])
def test_certifying_says_hacienda_can_now_compute(visit, monkeypatch, lang):
    from django.contrib.auth import get_user_model

    from levy.services import estimate_enter
    from parcels.services import owner_create

    words = NEXT[lang]
    move_clock_to(monkeypatch, datetime(2026, 5, 15, 10, 0, tzinfo=PR))
    owner_create(acting_user=None, name="Carmen Irizarry Vélez", owner_key="OW-1")
    user_create(username="u_authority", role="authority", password=PASSWORD)
    estimate_enter(acting_user=get_user_model().objects.get(username="u_authority"), fiscal_year="2026-2027",
                   om_estimate=Decimal("100000.00"), reserve=Decimal("1500.00"), misc_income=Decimal("7500.00"),
                   surplus=Decimal("4000.00"))
    visit.login("u_authority", PASSWORD)
    in_language(visit, lang)
    phone(visit)
    visit.go("/contribucion/2026-2027/estimados/")
    submit(visit, words["certify_review"])
    submit(visit, words["certify"])
    assert Estimate.objects.get().status == "certified"
    shot(visit, f"certified-{lang}")
    message = visit.page.locator(".messages .alert-success")
    assert words["certified"] in message.inner_text()
    on_first_screen(message)


@pytest.mark.parametrize("lang", ["es", "en"])
def test_finalizing_counts_the_installments_issued_and_links_to_the_bills(visit, monkeypatch, lang):
    from django.contrib.auth import get_user_model

    from levy.services import levy_compute

    words = NEXT[lang]
    move_clock_to(monkeypatch, datetime(2026, 6, 20, 10, 0, tzinfo=PR))  # before the ¶11 deadline of 1 July
    _registry_and_certified_estimates()
    user_create(username="u_hac_a", role="hacienda", password=PASSWORD)
    user_create(username="u_hacienda", role="hacienda", password=PASSWORD)
    levy_compute(acting_user=get_user_model().objects.get(username="u_hac_a"), fiscal_year="2026-2027")
    visit.login("u_hacienda", PASSWORD)
    in_language(visit, lang)
    phone(visit)
    visit.go("/contribucion/2026-2027/hoja/")
    submit(visit, words["finalize_review"])
    submit(visit, words["finalize"])
    assert Levy.objects.get().status == "final" and Charge.objects.filter(kind="installment").count() == 10
    shot(visit, f"finalized-{lang}")
    page = visit.page
    message = page.locator(".messages .alert-success")
    assert words["issued"] in message.inner_text()
    on_first_screen(message)
    link = message.get_by_role("link", name=words["link"])
    assert link.get_attribute("href") == "/cobros/avisos/"
    link.click()
    page.wait_for_load_state()
    visit.check()
    assert page.url.endswith("/cobros/avisos/")
    assert words["batches"] in page.get_by_role("heading", level=1).inner_text()
