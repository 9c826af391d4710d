"""End-to-end journeys through the pages only, in Chromium, on a fresh database."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from billing.models import Charge, Payment
from billing.services import counter
from levy.models import Levy
from parcels.models import Parcel
from parcels.services import owner_create, parcel_create, user_create
from tests.clock import move_clock_to, on_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "Una-Clave-Muy-Larga-2026"
OCTOBER_15 = datetime(2026, 10, 15, 10, 0, tzinfo=ZoneInfo("America/Puerto_Rico"))  # a known "today"
GOOD_CSV = """parcel_id,owner_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since,credit_percent
P1,OW-1,Carmen Irizarry Vélez,carmen@example.pr,private,100,0,permanent,2000-01-01,25
P2,OW-1,Carmen Irizarry Vélez,carmen@example.pr,private,250,0,permanent,2000-01-01,0
P3,OW-2,Municipio de Lajas,,public,50,0,permanent,2000-01-01,0
P4,OW-3,Luis Toro Ramos,,private,75.5,0,permanent,2000-01-01,0
P5,OW-3,Luis Toro Ramos,,private,24.5,0,permanent,2000-01-01,0
"""
BAD_CSV = GOOD_CSV.replace("P3,OW-2,Municipio de Lajas,,public,50,", "P3,OW-2,Municipio de Lajas,,public,-50,")


def users(*roles: str) -> None:
    for role in roles:
        user_create(username=f"u_{role}", role=role, password=PASSWORD)


def upload(visit, tmp_path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    visit.go("/importar/")
    visit.page.set_input_files("input[type=file]", str(path))
    visit.page.click("main form button[type=submit]")
    visit.page.wait_for_load_state()
    visit.check()


def test_authority_imports_parcels_and_certifies_estimates(visit, tmp_path):
    users("authority")
    visit.login("u_authority", PASSWORD)
    upload(visit, tmp_path, "malo.csv", BAD_CSV)
    text = visit.page.inner_text("main")
    assert "rechazado" in text and "gravity_acres" in text
    assert Parcel.objects.count() == 0
    upload(visit, tmp_path, "bueno.csv", GOOD_CSV)
    assert "Predios nuevos" in visit.page.inner_text("main")
    visit.page.get_by_role("button", name="Confirmar e importar").click()
    visit.page.wait_for_load_state()
    visit.check()
    assert "se aplicó" in visit.page.inner_text("main")
    assert Parcel.objects.count() == 5
    visit.go("/contribucion/nuevo/?year=2026-2027")
    visit.page.fill("#id_om_estimate", "100000.00")
    visit.page.fill("#id_reserve", "1500.00")
    visit.page.fill("#id_surplus", "4000.00")
    visit.page.fill("#id_misc_income", "7500.00")
    visit.page.get_by_role("button", name="Guardar sin certificar").click()
    visit.page.wait_for_load_state()
    visit.check()
    visit.page.get_by_role("button", name="Revisar y certificar…").click()
    visit.page.wait_for_load_state()
    visit.check()
    assert "Esto no se puede deshacer." in visit.page.inner_text("main")  # the review page (parcels.review)
    visit.page.get_by_role("button", name="Certificar estas cifras al Secretario de Hacienda").click()
    visit.page.wait_for_load_state()
    visit.check()
    assert "Certificado" in visit.page.inner_text("main") or "certificad" in visit.page.inner_text("main")


def _registry_and_certified_estimates() -> None:
    from levy.services import estimate_certify, estimate_enter

    owner = owner_create(acting_user=None, name="Carmen Irizarry Vélez", owner_key="OW-1")
    other = owner_create(acting_user=None, name="Luis Toro Ramos", owner_key="OW-3")
    for parcel_id, gravity, who, credit in [("P1", "100", owner, "0"), ("P2", "250", owner, "0"), ("P3", "50", other, "0"),
                                            ("P4", "75.5", other, "0"), ("P5", "24.5", other, "0")]:
        parcel_create(acting_user=None, parcel_id=parcel_id, owner=who, area_unit="acre", gravity_area=Decimal(gravity),
                      pumped_area=Decimal("0"), inclusion="permanent", water_since=date(2000, 1, 1), credit_percent=Decimal(credit))
    user_create(username="u_authority", role="authority", password=PASSWORD)
    from django.contrib.auth import get_user_model

    authority = get_user_model().objects.get(username="u_authority")
    estimate_enter(acting_user=authority, fiscal_year="2026-2027", om_estimate=Decimal("100000.00"), reserve=Decimal("1500.00"),
                   misc_income=Decimal("7500.00"), surplus=Decimal("4000.00"))
    estimate_certify(acting_user=authority, fiscal_year="2026-2027")


def test_hacienda_computes_reads_the_worksheet_and_finalizes(visit):
    _registry_and_certified_estimates()
    users("hacienda")
    visit.login("u_hacienda", PASSWORD)
    visit.go("/contribucion/2026-2027/hoja/")
    visit.page.get_by_role("button", name="Calcular el padrón borrador").click()
    visit.page.get_by_text("calculado").first.wait_for(timeout=30000)  # the job's page hands back to the worksheet
    visit.check()
    text = visit.page.inner_text("main")
    assert "$91,800.00" in text and "183.600000" in text
    assert visit.page.locator("svg[role=img]").count() >= 1
    visit.page.get_by_role("button", name="Revisar y finalizar…").click()
    visit.page.wait_for_load_state()
    visit.check()
    assert Levy.objects.get().status == "draft"  # the review page first
    visit.page.get_by_role("button", name="Finalizar el padrón y emitir los plazos").click()
    visit.page.wait_for_load_state()
    visit.check()
    assert Levy.objects.get().status == "final"
    assert Charge.objects.filter(kind="installment").count() == 10
    # a second finalize is impossible: the button is gone and the service refuses
    visit.go("/contribucion/2026-2027/hoja/")
    assert visit.page.get_by_role("button", name="Revisar y finalizar…").count() == 0


def _finalized_district() -> None:
    """Worked example 1, finalized on time for 2026-2027 (installments issued)."""
    from django.contrib.auth import get_user_model

    from billing.services.installments import roll_finalize
    from levy.services import levy_compute

    _registry_and_certified_estimates()
    user_create(username="u_hac_a", role="hacienda", password=PASSWORD, full_name="Gladys Montalvo Seda", title="Directora de Recaudaciones")
    user_create(username="u_hac_b", role="hacienda", password=PASSWORD, full_name="Héctor Nazario Bonilla", title="Subdirector de Recaudaciones")
    users_by_name = {u.username: u for u in get_user_model().objects.all()}
    levy_compute(acting_user=users_by_name["u_hac_a"], fiscal_year="2026-2027")
    roll_finalize(acting_user=users_by_name["u_hac_b"], fiscal_year="2026-2027", today=date(2026, 6, 30))


def _pay_at_counter(visit, parcel_id: str, amount: str | None) -> None:
    visit.go("/colecturia/?q=" + parcel_id)
    visit.page.get_by_role("link", name="Cobrar").first.click()
    visit.page.wait_for_load_state()
    visit.check()
    if amount is not None:
        visit.page.fill("#id_amount", amount)
    visit.page.get_by_role("button", name="Cobrar y emitir recibo").click()
    visit.page.wait_for_load_state()
    visit.check()


def test_collector_takes_a_partial_and_a_full_payment_and_the_day_report_matches(visit, monkeypatch):
    # Worked example 1's late payment: on 15 October 2026 P4 owes its July half 6,930.90 (75.5 ac ×
    # 183.60 $/ac / 2), delinquent since 1 September (last day 31 August), two ½% periods begun:
    # 6,930.90 × 0.005 × 2 = 69.309 → 69.31, due 7,000.21; the January half is not due yet.
    move_clock_to(monkeypatch, OCTOBER_15)
    _finalized_district()
    users("collector")
    p4 = Parcel.objects.get(parcel_id="P4")
    visit.login("u_collector", PASSWORD)
    _pay_at_counter(visit, "P4", "1000.00")
    receipt_text = visit.page.inner_text("main")
    assert "LAJ-" in receipt_text and "$1,000.00" in receipt_text
    assert "$6,000.21" in receipt_text  # what remains due: 7,000.21 − 1,000.00
    _pay_at_counter(visit, "P4", None)  # the form is prefilled with the full amount due
    assert "$6,000.21" in visit.page.inner_text("main")
    assert sorted(p.amount.amount for p in Payment.objects.filter(parcel=p4)) == [Decimal("1000.00"), Decimal("6000.21")]
    visit.go("/colecturia/cuadre/")
    report = visit.page.inner_text("main")
    assert "$7,000.21" in report and report.count("LAJ-2026-2027-") >= 2


def test_a_late_payment_shows_the_surcharge_on_statement_and_receipt(visit, monkeypatch):
    # On 15 October 2026 P5's July half, 2,249.10 (24.5 ac × 183.60 $/ac / 2), is past its last day
    # (31 August) with two ½% periods begun: 2,249.10 × 0.005 × 2 = 22.491 → 22.49; due 2,271.59.
    move_clock_to(monkeypatch, OCTOBER_15)
    _finalized_district()
    users("collector")
    p5 = Parcel.objects.get(parcel_id="P5")
    visit.login("u_collector", PASSWORD)
    visit.go(f"/colecturia/predio/{p5.pk}/estado/")
    statement = visit.page.inner_text("main")
    assert "$22.49" in statement and "½%" in statement
    _pay_at_counter(visit, "P5", None)
    receipt = visit.page.inner_text("main")
    assert "$22.49" in receipt and "½%" in receipt and "$2,271.59" in receipt
    assert [p.amount.amount for p in Payment.objects.filter(parcel=p5)] == [Decimal("2271.59")]


def test_landowner_sees_only_their_two_parcels_and_downloads_a_receipt_pdf(visit, tmp_path):
    import io

    from django.contrib.auth import get_user_model
    from pypdf import PdfReader

    from parcels.models import Owner

    _finalized_district()
    carmen = Owner.objects.get(owner_key="OW-1")  # P1 (credit 25% set below) and P2
    Parcel.objects.filter(parcel_id="P1").update(credit_percent=Decimal("25"))  # for the credit line of a later roll
    user_create(username="carmen", role="landowner", password=PASSWORD, owner=carmen)
    users("collector")
    collector = get_user_model().objects.get(username="u_collector")
    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(date(2026, 7, 10)):
        counter.payment_record(acting_user=collector, parcel=p1, amount=Decimal("500.00"), paid_on=date(2026, 7, 10))
    visit.login("carmen", PASSWORD)
    home = visit.page.inner_text("main")
    assert "P1" in home and "P2" in home and "P3" not in home and "P4" not in home
    visit.page.get_by_role("link", name="Recibo LAJ-2026-2027-000001").click()
    visit.page.wait_for_load_state()
    visit.check()
    with visit.page.expect_download() as download_info:
        visit.page.get_by_role("link", name="Descargar el recibo (PDF)").click()
    path = tmp_path / "recibo.pdf"
    download_info.value.save_as(path)
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(path.read_bytes())).pages)
    assert "LAJ-2026-2027-000001" in text and "$18,360.00" in text  # P1's O&M charge (¶9)
    assert "Crédito por derechos de agua cedidos" in text or "crédito" in text.lower()
    # another owner's parcel is a 404, even by guessing its address
    p3 = Parcel.objects.get(parcel_id="P3")
    response = visit.page.goto(visit.base + f"/predios/{p3.pk}/")
    assert response.status == 404
