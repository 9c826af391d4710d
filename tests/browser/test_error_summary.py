"""After a form error the page opens on a summary of what to correct, and the focus is on it
(USWDS error summary, issue 12)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("language, heading", [("es-pr", "Revise lo siguiente antes de seguir"),
                                               ("en", "Please correct the following before you go on")])
def test_a_form_error_opens_on_the_summary_with_the_focus(visit, language, heading):
    visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])
    visit.go("/portal/crear-cuenta/")
    visit.page.click("main form button[type=submit]")  # everything left empty
    visit.page.wait_for_load_state()
    summary = visit.page.locator("#error-summary")
    assert summary.get_by_role("heading").inner_text() == heading
    links = summary.locator("a")
    assert links.count() >= 3  # parcel number, access code, e-mail, passwords: each links to its field
    assert visit.page.evaluate("document.activeElement.id") == "error-summary"
    target = links.first.get_attribute("href")
    links.first.click()
    assert visit.page.evaluate("'#' + document.activeElement.id") == target
    visit.check()
