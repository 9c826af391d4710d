"""The review pages before irreversible acts (issue 12), in Chromium, in Spanish and English:
certifying the estimates and finalizing the roll show every figure with its ¶ and say that the act
cannot be undone and what can be done instead; the act happens only from the review page's
confirmation. axe-core runs on every page (no serious or critical violation). The day close's
review page is walked in tests/browser/test_counter.py (the $20.00 short day)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from billing.models import Charge, PaymentVoid
from levy.models import Estimate, Levy
from parcels.models import Parcel
from parcels.services import user_create
from tests.browser.test_counter import in_language
from tests.browser.test_journeys import OCTOBER_15, PASSWORD, _finalized_district, _registry_and_certified_estimates
from tests.clock import move_clock_to

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "es": {"undo": "Esto no se puede deshacer.", "certify_review": "Revisar y certificar…",
           "certify": "Certificar estas cifras al Secretario de Hacienda", "back_estimates": "Volver a los estimados sin certificar",
           "replace": "solo reemplazarse por una nueva certificación con una razón", "within": "Está dentro del tope.",
           "finalize_review": "Revisar y finalizar…", "finalize": "Finalizar el padrón y emitir los plazos",
           "back_worksheet": "Volver a la hoja de cálculo sin finalizar", "corrections": "asientos suplementarios",
           "late": "tardío", "void_review": "Revisar y anular…", "void": "Anular el pago",
           "back_receipt": "Volver al recibo sin anular", "stays": "queda como se emitió, marcado ANULADO",
           "reason": "Razón de la anulación"},
    "en": {"undo": "This cannot be undone.", "certify_review": "Review and certify…",
           "certify": "Certify these figures to the Secretary of the Treasury",
           "back_estimates": "Back to the estimates without certifying",
           "replace": "only be replaced by a new certification with a reason", "within": "It is within the cap.",
           "finalize_review": "Review and finalize…", "finalize": "Finalize the roll and issue the installments",
           "back_worksheet": "Back to the worksheet without finalizing", "corrections": "supplementary entries",
           "late": "late", "void_review": "Review and void…", "void": "Void the payment",
           "back_receipt": "Back to the receipt without voiding", "stays": "it stays as issued, marked VOID",
           "reason": "Reason for voiding"},
}


def shot(visit, name: str) -> None:
    visit.page.screenshot(path=f"/tmp/review-{name}.png", full_page=True)


@pytest.mark.parametrize("lang", ["es", "en"])
def test_certifying_the_estimates_goes_through_its_review_page(visit, lang):
    """Worked example 1's estimates: O&M $100,000.00, reserve $1,500.00 = 1.50 % (cap 2 % =
    $2,000.00), surplus $4,000.00, miscellaneous income $7,500.00."""
    from django.contrib.auth import get_user_model

    from levy.services import estimate_enter
    from parcels.services import owner_create

    words = WORDS[lang]
    owner_create(acting_user=None, name="Carmen Irizarry Vélez", owner_key="OW-1")
    user_create(username="u_authority", role="authority", password=PASSWORD)
    authority = get_user_model().objects.get(username="u_authority")
    estimate_enter(acting_user=authority, fiscal_year="2026-2027", om_estimate=Decimal("100000.00"), reserve=Decimal("1500.00"),
                   misc_income=Decimal("7500.00"), surplus=Decimal("4000.00"))
    visit.login("u_authority", PASSWORD)
    in_language(visit, lang)
    page = visit.page
    visit.go("/contribucion/2026-2027/estimados/")
    page.get_by_role("button", name=words["certify_review"]).click()
    page.wait_for_load_state()
    visit.check()
    shot(visit, f"{lang}-certify")
    main = page.inner_text("main")
    assert Estimate.objects.get().status == "entered"  # the review page writes nothing
    assert words["undo"] in main and words["replace"] in main and words["within"] in main
    for figure in ("$100,000.00", "$1,500.00", "$4,000.00", "$7,500.00", "$2,000.00", "1.50", "¶1(1)", "¶1(2)", "¶2", "¶3"):
        assert figure in main, figure
    assert "csrfmiddlewaretoken" not in page.url
    back = page.get_by_role("link", name=words["back_estimates"])
    assert back.get_attribute("href") == "/contribucion/2026-2027/estimados/"
    page.get_by_role("button", name=words["certify"]).click()
    page.wait_for_load_state()
    visit.check()
    assert Estimate.objects.get().status == "certified"
    assert "csrfmiddlewaretoken" not in page.url


@pytest.mark.parametrize("lang", ["es", "en"])
def test_finalizing_the_roll_goes_through_its_review_page(visit, monkeypatch, lang):
    """Worked example 1 on 2026-10-15 (after the ¶11 deadline of July 1: late): $91,800.00 over 5
    lines, 10 installments of 5 × 2."""
    from django.contrib.auth import get_user_model

    from levy.services import levy_compute

    words = WORDS[lang]
    move_clock_to(monkeypatch, OCTOBER_15)
    _registry_and_certified_estimates()
    user_create(username="u_hac_a", role="hacienda", password=PASSWORD)
    user_create(username="u_hacienda", role="hacienda", password=PASSWORD)
    levy_compute(acting_user=get_user_model().objects.get(username="u_hac_a"), fiscal_year="2026-2027")
    visit.login("u_hacienda", PASSWORD)
    in_language(visit, lang)
    page = visit.page
    visit.go("/contribucion/2026-2027/hoja/")
    page.get_by_role("button", name=words["finalize_review"]).click()
    page.wait_for_load_state()
    visit.check()
    shot(visit, f"{lang}-finalize")
    main = page.inner_text("main")
    assert Levy.objects.get().status == "draft" and not Charge.objects.exists()
    assert words["undo"] in main and words["corrections"] in main and words["late"] in main
    assert page.inner_text("#finalize-total") == "$91,800.00"
    summary = page.inner_text("main dl")
    assert "5\n" in summary and "10\n" in summary
    assert "$45,900.00" in main  # each half: 91,800.00 / 2
    assert "¶11" in main and "¶12" in main
    back = page.get_by_role("link", name=words["back_worksheet"])
    assert back.get_attribute("href") == "/contribucion/2026-2027/hoja/"
    page.get_by_role("button", name=words["finalize"]).click()
    page.wait_for_load_state()
    visit.check()
    levy = Levy.objects.get()
    assert levy.status == "final" and levy.finalized_late and levy.finalized_on == date(2026, 10, 15)
    assert Charge.objects.filter(kind="installment").count() == 10


@pytest.mark.parametrize("lang", ["es", "en"])
def test_voiding_a_payment_goes_through_its_review_page(visit, monkeypatch, lang):
    """P3 pays $4,635.90 on 2026-10-15; the supervisor voids it: the review page names the receipt,
    the amount, the date and the reason, and that the receipt stays as issued."""
    from django.contrib.auth import get_user_model

    from billing.services import counter

    words = WORDS[lang]
    move_clock_to(monkeypatch, OCTOBER_15)
    _finalized_district()
    for role in ("collector", "supervisor"):
        user_create(username=f"u_{role}", role=role, password=PASSWORD)
    receipt = counter.payment_record(acting_user=get_user_model().objects.get(username="u_collector"),
                                     parcel=Parcel.objects.get(parcel_id="P3"), amount=Decimal("4635.90"),
                                     paid_on=OCTOBER_15.date())
    visit.login("u_supervisor", PASSWORD)
    in_language(visit, lang)
    page = visit.page
    visit.go(f"/colecturia/recibo/{receipt.pk}/")
    page.get_by_label(words["reason"]).fill("Cheque devuelto por el banco")
    page.get_by_role("button", name=words["void_review"]).click()
    page.wait_for_load_state()
    visit.check()
    shot(visit, f"{lang}-void")
    main = page.inner_text("main")
    assert not PaymentVoid.objects.exists()
    assert words["undo"] in main and words["stays"] in main
    assert page.inner_text("#void-receipt") == receipt.display_number
    assert page.inner_text("#void-amount") == "$4,635.90"
    assert page.inner_text("#void-reason") == "Cheque devuelto por el banco"
    assert page.get_by_role("link", name=words["back_receipt"]).get_attribute("href") == f"/colecturia/recibo/{receipt.pk}/"
    page.get_by_role("button", name=words["void"]).click()
    page.wait_for_load_state()
    visit.check()
    assert PaymentVoid.objects.get().reason == "Cheque devuelto por el banco"
    assert "csrfmiddlewaretoken" not in page.url
