"""Issue 19, bank payment files, in Chromium at 390 px (a phone): a supervisor uploads a bank file,
reads the preview (nothing recorded yet), confirms, then resolves an exception from the queue by
applying it to a parcel. Worked example 1 (tests/browser/test_journeys.py): P1 100 ac (halves
$9,180.00), P4 75.5 ac (halves $6,930.90), July halves due 1 July 2026."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from billing.models import BankFile, BankFileLine, BankLineResolution, Charge, Office, Payment
from billing.references import payment_reference
from tests.browser.test_counter import in_language
from tests.browser.test_issue18_office import _user
from tests.browser.test_journeys import PASSWORD, _finalized_district
from tests.clock import move_clock_to

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH, HEIGHT = 390, 844
PR = ZoneInfo("America/Puerto_Rico")

WORDS = {
    "es": {"upload": "Subir y revisar", "confirm": "Confirmar e importar", "resolve": "Resolver", "preview": "Revisar el archivo del banco",
           "applied": "Se aplicarán: 2", "exceptions": "Irán a excepciones: 1", "done": "Archivo importado: 2 aplicados, 1 excepciones, 0 ya aplicados.",
           "queue": "Excepciones por resolver: 1", "resolution": "Resolución", "parcel": "Predio (catastro)",
           "apply": "Aplicada a un predio", "resolved": "Línea 4 (rastreo T3): Aplicada a un predio. Recibo BPPR-2026-2027-000003.",
           "none": "No hay excepciones por resolver."},
    "en": {"upload": "Upload and review", "confirm": "Confirm and import", "resolve": "Resolve", "preview": "Review the bank file",
           "applied": "To be applied: 2", "exceptions": "To exceptions: 1", "done": "File imported: 2 applied, 1 exceptions, 0 already applied.",
           "queue": "Exceptions to resolve: 1", "resolution": "Resolution", "parcel": "Parcel (cadastre)",
           "apply": "Applied to a parcel", "resolved": "Line 4 (trace T3): Applied to a parcel. Receipt BPPR-2026-2027-000003.",
           "none": "No exceptions to resolve."},
}


def shot(visit, name: str) -> None:
    visit.page.screenshot(path=f"/tmp/issue19-bank-{name}.png", full_page=True)


def submit(visit, name: str) -> None:
    visit.page.get_by_role("button", name=name).click()
    visit.page.wait_for_load_state()
    visit.check()


@pytest.mark.parametrize("lang", ["es", "en"])
def test_a_supervisor_uploads_previews_confirms_and_resolves_an_exception(visit, monkeypatch, lang):
    words = WORDS[lang]
    _finalized_district()
    Office.objects.create(code="BPPR", name="Banco Popular — agente recaudador", kind=Office.Kind.BANK)
    move_clock_to(monkeypatch, datetime(2026, 7, 20, 10, 0, tzinfo=PR))
    _user("u_supervisor", "supervisor")
    rf1 = payment_reference(Charge.objects.get(parcel__parcel_id="P1", kind="installment", number=1).pk)
    data = ("trace_number,value_date,amount,reference,payer_name\n"
            f"T1,2026-07-15,9180.00,{rf1},Carmen Irizarry\n"
            "T2,2026-07-16,500.00,P4,Carmen Irizarry\n"
            "T3,2026-07-17,300.00,LAJ-424242,Pedro Rivera\n").encode()
    visit.login("u_supervisor", PASSWORD)
    in_language(visit, lang)
    visit.page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    page = visit.page
    visit.go("/cobros/banco/")
    page.set_input_files("#id_file", files=[{"name": "bppr-20260720.csv", "mimeType": "text/csv", "buffer": data}])
    submit(visit, words["upload"])
    assert page.get_by_role("heading", level=1).inner_text() == words["preview"]
    main = page.inner_text("main")
    assert words["applied"] in main and words["exceptions"] in main and "LAJ-424242" in main
    assert not BankFile.objects.exists() and not Payment.objects.exists()  # the preview records nothing
    shot(visit, f"preview-{lang}")
    submit(visit, words["confirm"])
    assert words["done"] in page.locator(".messages .alert-success").inner_text()
    (bank_file,) = BankFile.objects.all()
    assert page.url.endswith(f"/cobros/banco/archivo/{bank_file.pk}/")
    assert "BPPR-2026-2027-000001" in page.inner_text("main") and "BPPR-2026-2027-000002" in page.inner_text("main")
    shot(visit, f"file-{lang}")

    visit.go("/cobros/banco/")
    page.get_by_role("link", name=words["queue"]).click()
    page.wait_for_load_state()
    visit.check()
    shot(visit, f"exceptions-{lang}")
    page.get_by_label(words["resolution"]).select_option("apply")
    page.get_by_label(words["parcel"]).fill("P4")
    submit(visit, words["resolve"])
    assert words["resolved"] in page.locator(".messages .alert-success").inner_text()
    assert words["none"] in page.inner_text("main")
    shot(visit, f"resolved-{lang}")
    (resolution,) = BankLineResolution.objects.all()
    assert (resolution.action, resolution.parcel.parcel_id, resolution.payment.amount.amount) == ("apply", "P4", Decimal("300.00"))
    assert resolution.resolved_by.username == "u_supervisor"
    assert BankFileLine.objects.get(trace_number="T3").resolution == resolution
