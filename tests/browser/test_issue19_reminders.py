"""Issue 19, reminders: the log of e-mail reminders on a parcel's statement page, as Hacienda
reads it on a phone (390 px), in Spanish and English: one refused by the mail server (the error
shown) and its retry the next day, sent; the same log on the registry's parcel page; the
landowner does not see it. Worked example 1
(tests/browser/test_journeys.py): P1 100 ac, July half $9,180.00, last day 31 August 2026."""

from __future__ import annotations

from datetime import date

import pytest
from django.core import mail
from django.test import override_settings
from django.utils import timezone

from billing.services import reminders
from parcels.models import Owner, Parcel
from parcels.services import user_create
from tests.browser.test_counter import in_language
from tests.browser.test_journeys import PASSWORD, _finalized_district
from tests.clock import on_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH, HEIGHT = 390, 844


@pytest.mark.parametrize("lang", ["es", "en"])
def test_the_statement_page_shows_the_reminders_sent_and_failed(visit, lang):
    with on_day(date(2026, 6, 30)):  # recorded on the day, so the books of 16 August hold the halves
        _finalized_district()
    owner = Owner.objects.get(owner_key="OW-1")
    owner.email, owner.email_confirmed_at = "carmen@example.pr", timezone.now()
    owner.save(update_fields=["email", "email_confirmed_at"])
    with override_settings(EMAIL_BACKEND="tests.billing.test_reminders.RefusingBackend"):
        assert reminders.reminders_send(as_of=date(2026, 8, 16)).count("failed") == 2  # P1 and P2
    assert reminders.reminders_send(as_of=date(2026, 8, 17)).count("sent") == 2 and len(mail.outbox) == 2
    p1 = Parcel.objects.get(parcel_id="P1")

    visit.page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    visit.login("u_hac_a", PASSWORD)
    in_language(visit, lang)
    visit.go(f"/colecturia/predio/{p1.pk}/estado/")
    visit.check()
    heading = {"es": "Recordatorios por correo electrónico", "en": "E-mail reminders"}[lang]
    assert visit.page.get_by_role("heading", name=heading).is_visible()
    table = visit.page.locator("#reminder-log")
    table.scroll_into_view_if_needed()
    rows = table.locator("tbody tr")
    assert rows.count() == 2  # the failure and the retry, newest first
    sent, failed = rows.nth(0).inner_text(), rows.nth(1).inner_text()
    words = {"es": ("Enviado", "Falló", "15 días antes del último día para pagar", "plazo 1 (julio)"),
             "en": ("Sent", "Failed", "15 days before the last day to pay", "installment 1 (July)")}[lang]
    assert words[0] in sent and words[2] in sent and words[3] in sent and "carmen@example.pr (ES)" in sent
    assert "$9,180.00" in sent
    assert words[1] in failed and "SMTPRecipientsRefused" in failed and "mailbox unavailable" in failed
    # stacked rows on a phone: nothing wider than the screen
    assert visit.page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    visit.page.screenshot(path=f"/tmp/issue19-reminder-log-{lang}-390.png", full_page=True)
    # the registry's parcel page shows the same log to staff
    visit.go(f"/predios/{p1.pk}/")
    visit.check()
    assert visit.page.locator("#reminder-log tbody tr").count() == 2
    assert "SMTPRecipientsRefused" in visit.page.locator("#reminder-log").inner_text()
    assert visit.page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    visit.page.screenshot(path=f"/tmp/issue19-registry-reminder-log-{lang}-390.png", full_page=True)
    visit.logout()

    user_create(username="u_owner", role="landowner", password=PASSWORD, owner=owner)
    visit.login("u_owner", PASSWORD)
    visit.go(f"/colecturia/predio/{p1.pk}/estado/")
    assert visit.page.locator("#reminder-log").count() == 0
