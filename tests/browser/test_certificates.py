"""Debt certificates from the page, in Chromium: the same table as the paper (status column, the
two totals), the refusal of an officer without a title, and the signer's name once issued."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from billing.models import DebtCertificate
from billing.services.installments import roll_finalize
from levy.services import estimate_certify, estimate_enter, levy_compute
from parcels.models import Parcel
from parcels.services import user_create
from tests.clock import move_clock_to
from tests.conftest import EXAMPLE_1

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "Una-Clave-Muy-Larga-2026"
OCTOBER_15 = datetime(2026, 10, 15, 10, 0, tzinfo=ZoneInfo("America/Puerto_Rico"))


def test_certificate_page_refuses_without_a_title_then_issues_signed(visit, make_parcel, owner_a, monkeypatch):
    authority = user_create(username="u_authority", role="authority", password=PASSWORD, full_name="Ramón Acosta Lugo",
                            title="Director del Registro de Predios")
    gladys = user_create(username="gladys", role="hacienda", password=PASSWORD, full_name="Gladys Montalvo Seda",
                         title="Directora de Recaudaciones")
    user_create(username="sincargo", role="hacienda", password=PASSWORD, full_name="Pedro Ruiz Colón")
    for parcel_id, gravity in EXAMPLE_1:
        make_parcel(parcel_id, owner_a, gravity=gravity)
    estimate_enter(acting_user=authority, fiscal_year="2026-2027", om_estimate=Decimal("100000.00"), reserve=Decimal("1500.00"),
                   misc_income=Decimal("7500.00"), surplus=Decimal("4000.00"))
    estimate_certify(acting_user=authority, fiscal_year="2026-2027")
    levy_compute(acting_user=gladys, fiscal_year="2026-2027")
    roll_finalize(acting_user=gladys, fiscal_year="2026-2027", today=date(2026, 6, 30))
    move_clock_to(monkeypatch, OCTOBER_15)
    p4 = Parcel.objects.get(parcel_id="P4")
    url = f"/cobros/predio/{p4.pk}/certificaciones/"

    visit.login("sincargo", PASSWORD)
    visit.go(url)
    table = visit.page.inner_text("main table")
    # the July half is delinquent (7,000.21 with its ½ % × 2 months), the January half not yet due
    assert "moroso" in table and "por vencer" in table and "$7,000.21" in table and "$13,931.11" in table
    visit.page.get_by_role("button", name="Emitir certificación").click()
    visit.page.wait_for_load_state()
    visit.check()
    assert "No se puede emitir: al usuario «sincargo» le falta el cargo para firmar" in visit.page.inner_text("main")
    assert not DebtCertificate.objects.exists()
    visit.logout()

    visit.login("gladys", PASSWORD)
    for width in (1280, 390):
        visit.page.set_viewport_size({"width": width, "height": 900})
        visit.go(url)
        visit.page.screenshot(path=f"/tmp/certificates-{width}.png", full_page=True)
    visit.page.get_by_role("button", name="Emitir certificación").click()
    visit.page.wait_for_load_state()
    visit.check()
    text = visit.page.inner_text("main")
    certificate = DebtCertificate.objects.get()
    assert f"Certificación de deuda {certificate.number} emitida." in text
    assert "Gladys Montalvo Seda, Directora de Recaudaciones" in text
    assert (certificate.snapshot["total_due"], certificate.snapshot["total_balance"]) == ("7000.21", "13931.11")
