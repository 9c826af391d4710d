"""Issue 18, points 2 and 13, in Chromium at 390 px (a phone), in Spanish and English.

Worked example 1, finalized for 2026-2027 (P2, Carmen's, 250 acres: July half 22,950.00, last
day 31 August; on 15 October two ½ % periods have begun, ¶12: 22,950.00 + 229.50 = 23,179.50).

- Point 13, seizure: Hacienda's "next step" leads to a review page (the debt the notice freezes,
  its 30-day term, who signs, nothing issued yet); the notice is issued only from it; then the
  certificate is not offered before its day, the page says from when (the day after the term).
- Point 13, correction: on P4 (paid in full, late, on 15 September: 6,930.90 + 34.65 surcharge
  + 34.66 ahead) a fall of 1,000.00 in the O&M charge is reviewed first: each half 6,930.90 →
  6,430.90, July gives back 500.00 of principal and 2.50 of surcharge (34.65 − ½ % × 6,430.90),
  and the crédito aplicado of 502.50 goes to January (¶9, ¶12, ¶13); recorded only from there.
- Point 2: once the notice is issued, Carmen's home and P2's statement show it first (what it
  means, until when she may pay, what stops it) and the statement lists the notice among the
  issued documents; its PDF opens.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from billing.models import CreditApplication, GiveBack, SeizureStep
from billing.services import collection, counter
from levy.models import RollCorrection
from parcels.models import Owner, Parcel
from parcels.services import user_create
from tests.browser.test_journeys import OCTOBER_15, PASSWORD, _finalized_district
from tests.clock import move_clock_to, on_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH, HEIGHT = 390, 844

WORDS = {
    "es-pr": {
        "review_notice": "Revisar y emitir: Notificación de embargo (plazo de 30 días)…",
        "issue_notice": "Emitir: Notificación de embargo (plazo de 30 días)",
        "undo": "Esto no se puede deshacer.", "term": "30 días, hasta el 14 de noviembre de 2026",
        "available": "Certificación de embargo: disponible desde el 15 de noviembre de 2026.",
        "issued": "emitida", "review_correction": "Revisar y registrar…", "record": "Registrar la corrección",
        "give_back": "Devolución: recargo recalculado y principal pagado de más (¶12)", "applied": "Crédito aplicado (¶13)",
        "january": "2026-2027 plazo 2 (enero)", "recorded": "Corrección registrada",
        "alert": "Embargo en curso: predio P2", "deadline": "Plazo para pagar: hasta el 14 de noviembre de 2026.",
        "stop": "Lo detiene pagar todo lo adeudado en la Oficina del Colector: hoy, $23,179.50.",
        "means": "si no se paga, el predio puede venderse en pública subasta", "documents": "Documentos emitidos",
        "notice_doc": "Notificación de embargo (plazo de 30 días)",
    },
    "en": {
        "review_notice": "Review and issue: Notice of seizure (30-day period)…",
        "issue_notice": "Issue: Notice of seizure (30-day period)",
        "undo": "This cannot be undone.", "term": "30 days, until 14 November 2026",
        "available": "Seizure certificate: available from 15 November 2026.",
        "issued": "issued", "review_correction": "Review and record…", "record": "Record the correction",
        "give_back": "Give-back: surcharge recomputed and principal overpaid (¶12)", "applied": "Credit applied (¶13)",
        "january": "2026-2027 installment 2 (January)", "recorded": "Correction recorded",
        "alert": "Seizure under way: parcel P2", "deadline": "Period to pay: until 14 November 2026.",
        "stop": "Paying everything owed at the Collector's office stops it: today, $23,179.50.",
        "means": "if it is not paid, the parcel may be sold at public auction", "documents": "Issued documents",
        "notice_doc": "Notice of seizure (30-day period)",
    },
}


def _phone(visit, language: str, username: str) -> None:
    visit.page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    visit.page.context.clear_cookies()
    visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])
    visit.login(username, PASSWORD)


def _shot(visit, name: str) -> None:
    visit.page.screenshot(path=f"/tmp/issue18-seizure-{name}.png", full_page=True)
    visit.page.screenshot(path=f"/tmp/issue18-seizure-{name}-screen.png")


def _fits(visit) -> None:
    assert visit.page.evaluate("() => document.documentElement.scrollWidth") <= WIDTH


def _on_first_screen(visit, selector: str) -> dict:
    box = visit.page.locator(selector).first.bounding_box()
    assert box is not None, selector
    assert 0 <= box["y"] and box["y"] + min(box["height"], 120) <= HEIGHT, (selector, box)
    return box


def _click(visit, name: str, *, role: str = "button") -> None:
    visit.page.get_by_role(role, name=name).click()
    visit.page.wait_for_load_state()
    visit.check()


def _district(monkeypatch) -> dict:
    move_clock_to(monkeypatch, OCTOBER_15)
    _finalized_district()
    carmen = Owner.objects.get(owner_key="OW-1")
    user_create(username="carmen", role="landowner", password=PASSWORD, owner=carmen)
    user_create(username="u_collector", role="collector", password=PASSWORD)
    return {"p2": Parcel.objects.get(parcel_id="P2"), "p4": Parcel.objects.get(parcel_id="P4"),
            "hacienda": get_user_model().objects.get(username="u_hac_a"),
            "collector": get_user_model().objects.get(username="u_collector")}


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_a_seizure_notice_is_reviewed_before_it_is_issued_and_the_next_step_says_when(visit, monkeypatch, language):
    words = WORDS[language]
    p2 = _district(monkeypatch)["p2"]
    _phone(visit, language, "u_hac_a")
    visit.go(f"/cobros/predio/{p2.pk}/embargo/")
    _click(visit, words["review_notice"])
    _shot(visit, f"{language}-notice-review")
    _fits(visit)
    assert not SeizureStep.objects.exists()  # the review page issues nothing
    main = visit.page.inner_text("main")
    assert words["undo"] in main and words["term"] in main and "$23,179.50" in main
    assert "Gladys Montalvo Seda, Directora de Recaudaciones" in main  # who signs
    _on_first_screen(visit, "main h1")
    _on_first_screen(visit, "main .alert-warning")  # "cannot be undone" and what the notice does, on the first screen
    _click(visit, words["issue_notice"])
    notice = SeizureStep.objects.get(kind="notice")
    assert notice.term_ends == date(2026, 11, 14) and notice.debt["total_due"] == "23179.50"
    _shot(visit, f"{language}-after-notice")
    main = visit.page.inner_text("main")
    assert notice.number in main and words["issued"] in main
    # the certificate is not offered before its day: the page says from when, and has no button for it
    assert words["available"] in visit.page.inner_text("#next-step-available")
    assert visit.page.locator("form input[name=kind]").count() == 0
    _fits(visit)


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_a_correction_is_reviewed_with_its_halves_give_back_and_credit_applied(visit, monkeypatch, language):
    words = WORDS[language]
    district = _district(monkeypatch)
    with on_day(date(2026, 9, 15)):
        counter.payment_record(acting_user=district["collector"], parcel=district["p4"], amount=Decimal("7000.21"),
                               paid_on=date(2026, 9, 15))
    _phone(visit, language, "u_hac_a")
    visit.go("/contribucion/2026-2027/correcciones/")
    visit.page.fill("#id_parcel_id", "P4")
    visit.page.fill("#id_om_charge_delta", "-1000.00")
    visit.page.fill("#id_credit_delta", "0")
    visit.page.fill("#id_reason", "Mensura nueva")
    _click(visit, words["review_correction"])
    _shot(visit, f"{language}-correction-review")
    _fits(visit)
    assert not RollCorrection.objects.exists()  # the review page records nothing
    _on_first_screen(visit, "main h1")
    halves = visit.page.inner_text("#correction-halves")
    assert halves.count("$6,930.90") == 2 and halves.count("$6,430.90") == 2 and halves.count("-$500.00") == 2
    give_back = visit.page.inner_text("#correction-entries tr.correction-give-back")
    assert words["give_back"] in give_back and "$2.50" in give_back and "$500.00" in give_back
    applied = visit.page.inner_text("#correction-entries tr.correction-credit-applied")
    assert words["applied"] in applied and words["january"] in applied and "$502.50" in applied
    _click(visit, words["record"])
    assert words["recorded"] in visit.page.inner_text("main")
    (back,) = GiveBack.objects.all()
    (credit,) = CreditApplication.objects.all()
    assert (back.surcharge.amount, back.principal.amount) == (Decimal("2.50"), Decimal("500.00"))
    assert (credit.charge.number, credit.surcharge.amount + credit.principal.amount) == (2, Decimal("502.50"))


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_the_landowner_sees_the_seizure_notice_first_and_among_the_issued_documents(visit, monkeypatch, language):
    words = WORDS[language]
    district = _district(monkeypatch)
    notice = collection.seizure_step_issue(acting_user=district["hacienda"], parcel=district["p2"], kind="notice")
    _phone(visit, language, "carmen")
    visit.go("/")
    _shot(visit, f"{language}-home")
    _fits(visit)
    first = visit.page.evaluate("""() => [...document.querySelector('main').children]
        .filter((e) => !e.matches('.messages, script')).slice(0, 2).map((e) => e.className || e.tagName.toLowerCase())""")
    assert first[0] == "h1" and "seizure-alert" in first[1], first  # right after the heading, before the amounts
    alert = visit.page.inner_text("main .seizure-alert")
    for text in (words["alert"], notice.number, words["deadline"], words["stop"], words["means"]):
        assert text in alert, text
    _on_first_screen(visit, "main .seizure-alert h2")
    _on_first_screen(visit, "main .seizure-alert .seizure-deadline")

    visit.go(f"/colecturia/predio/{district['p2'].pk}/estado/")
    _shot(visit, f"{language}-statement")
    _fits(visit)
    first = visit.page.evaluate("""() => [...document.querySelector('main').children]
        .filter((e) => !e.matches('.messages, script')).slice(0, 2).map((e) => e.className || e.tagName.toLowerCase())""")
    assert first[0] == "page-head" and "seizure-alert" in first[1], first
    assert words["deadline"] in visit.page.inner_text("main .seizure-alert")
    _on_first_screen(visit, "main .seizure-alert .seizure-deadline")
    listed = visit.page.locator("li.seizure-document")
    assert listed.count() == 1 and notice.number in listed.inner_text() and words["notice_doc"] in listed.inner_text()
    heading = visit.page.get_by_role("heading", name=words["documents"])
    assert heading.count() == 1
    with visit.page.expect_download() as download_info:
        listed.get_by_role("link").click()
    path = download_info.value.path()
    with open(path, "rb") as pdf:
        assert pdf.read() == bytes(SeizureStep.objects.get(pk=notice.pk).pdf)  # the stored bytes

    # paying what is owed today stops the procedure: the alert is gone, the document stays listed
    counter.payment_record(acting_user=district["collector"], parcel=district["p2"], amount=Decimal("23179.50"))
    visit.go(f"/colecturia/predio/{district['p2'].pk}/estado/")
    assert visit.page.locator("main .seizure-alert").count() == 0
    assert visit.page.locator("li.seizure-document").count() == 1
