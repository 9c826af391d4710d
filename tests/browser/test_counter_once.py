"""Issue 17, section 4, in Chromium (Spanish and English): the same payment twice within 10 minutes
asks first, naming the earlier receipt and its time, and Back-then-resubmit of a check records it
once; a payment form opened before the supervisor closed the day is refused naming the close, and
the page then shows the close instead of the form. axe-core runs on every state."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from billing.models import Office, Payment
from parcels.models import Parcel
from tests.browser.test_counter import in_language
from tests.browser.test_journeys import OCTOBER_15, PASSWORD, _finalized_district, users
from tests.clock import move_clock_to

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WORDS = {
    "es": {"collect": "Cobrar y emitir recibo", "heading": "Confirmar el pago: es igual a uno de hace unos minutos",
           "paid": "Este predio ya pagó $100.00 (Efectivo) a las {t}: recibo LAJ-2026-2027-000001.",
           "yes": "Sí, es un segundo pago de $100.00", "recorded": "Pago registrado. Recibo LAJ-2026-2027-000002.",
           "check": "El cheque CHK-4471 ya se registró para el predio P4: recibo LAJ-2026-2027-000003",
           "closed": "El día 15/10/2026 de la colecturía LAJ (Colecturía de Lajas) está cerrado: lo cerró Edwin Figueroa Ramos "
                     "el 15/10/2026 a las {t}. No se registran pagos en un día cerrado.",
           "closed_heading": "El día está cerrado"},
    "en": {"collect": "Collect and issue receipt", "heading": "Confirm the payment: it is the same as one a few minutes ago",
           "paid": "This parcel already paid $100.00 (Cash) at {t}: receipt LAJ-2026-2027-000001.",
           "yes": "Yes, it is a second payment of $100.00", "recorded": "Payment recorded. Receipt LAJ-2026-2027-000002.",
           "check": "Check CHK-4471 was already recorded for parcel P4: receipt LAJ-2026-2027-000003",
           "closed": "Day 15/10/2026 of office LAJ (Colecturía de Lajas) is closed: Edwin Figueroa Ramos closed it on "
                     "15/10/2026 at {t}. No payment is recorded in a closed day.",
           "closed_heading": "The day is closed"},
}


def shot(visit, name: str) -> None:
    visit.page.screenshot(path=f"/tmp/counter-once-{name}.png", full_page=True)


def collect(visit, words: dict[str, str]) -> None:
    visit.page.get_by_role("button", name=words["collect"]).click()
    visit.page.wait_for_load_state()
    visit.check()


@pytest.mark.parametrize("lang", ["es", "en"])
def test_the_same_payment_twice_asks_and_a_check_back_and_resubmitted_is_taken_once(visit, monkeypatch, lang):
    """P4 owes $7,000.21 on 2026-10-15. $100.00 in cash, then $100.00 in cash again: the page asks,
    naming receipt 000001 and its time; "yes" records 000002 as a second payment. Then CHK-4471
    for $1,000.00 (000003); Back, and the form sent again: still one payment with that check."""
    words = WORDS[lang]
    move_clock_to(monkeypatch, OCTOBER_15)
    _finalized_district()
    users("collector")
    p4 = Parcel.objects.get(parcel_id="P4")
    visit.login("u_collector", PASSWORD)
    in_language(visit, lang)
    page = visit.page
    for _twice in range(2):
        visit.go(f"/colecturia/predio/{p4.pk}/")
        page.fill("#id_amount", "100.00")
        collect(visit, words)
    first = Payment.objects.get()
    at = timezone.localtime(first.created_at).strftime("%H:%M")
    assert words["heading"] in page.inner_text("main")
    summary = page.inner_text("#second-summary")
    assert words["paid"].format(t=at) in summary, summary
    shot(visit, f"{lang}-1-second-payment")
    page.get_by_role("button", name=words["yes"]).click()
    page.wait_for_load_state()
    visit.check()
    assert words["recorded"] in page.inner_text("main")
    second = Payment.objects.exclude(pk=first.pk).get()
    assert (second.second_of_id, second.amount.amount) == (first.pk, Decimal("100.00"))

    visit.go(f"/colecturia/predio/{p4.pk}/")
    page.fill("#id_amount", "1,000.00")
    page.check("input[name=method][value=check]")
    page.fill("#id_reference", "CHK-4471")
    collect(visit, words)
    assert "LAJ-2026-2027-000003" in page.inner_text("main")
    page.go_back()
    page.wait_for_load_state()
    if page.is_visible("#id_reference"):  # a page rendered again: its form is new, the check is typed again
        page.fill("#id_amount", "1,000.00")
        page.check("input[name=method][value=check]")
        page.fill("#id_reference", "CHK-4471")
    collect(visit, words)
    shot(visit, f"{lang}-2-check-again")
    assert Payment.objects.filter(reference="CHK-4471").count() == 1
    main = page.inner_text("main")
    assert words["check"] in main or "LAJ-2026-2027-000003" in main


@pytest.mark.parametrize("lang", ["es", "en"])
def test_a_payment_into_a_day_closed_meanwhile_is_refused_naming_the_close(visit, monkeypatch, lang):
    """The collector types P5's $2,271.59; meanwhile the supervisor closes the day ($0.00 taken,
    $0.00 counted). Sent, the form is refused naming the close; nothing is recorded."""
    from django.contrib.auth import get_user_model

    from billing.services import counter
    from parcels.services import user_create

    words = WORDS[lang]
    move_clock_to(monkeypatch, OCTOBER_15)
    _finalized_district()
    users("collector")
    supervisor = user_create(username="u_edwin", role="supervisor", password=PASSWORD, full_name="Edwin Figueroa Ramos")
    p5 = Parcel.objects.get(parcel_id="P5")
    visit.login("u_collector", PASSWORD)
    in_language(visit, lang)
    page = visit.page
    visit.go(f"/colecturia/predio/{p5.pk}/")
    page.fill("#id_tendered", "2,300.00")
    close = counter.day_close(acting_user=get_user_model().objects.get(pk=supervisor.pk), office=Office.objects.get(code="LAJ"),
                              day=OCTOBER_15.date(), counted_cash=Decimal("0.00"), counted_checks=Decimal("0.00"))
    collect(visit, words)
    shot(visit, f"{lang}-3-closed-day")
    refusal = page.inner_text("#day-closed")
    assert words["closed"].format(t=timezone.localtime(close.closed_at).strftime("%H:%M")) in refusal, refusal
    assert words["closed_heading"] in page.inner_text("main")
    assert not page.is_visible("#id_amount") and not Payment.objects.exists()
