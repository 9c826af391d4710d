"""The Authority downloads the template, uploads a file and reads the preview: axe-core on the
preview's tables (new rows, changes before → after) in Spanish and in English."""

from __future__ import annotations

from pathlib import Path

import pytest

from parcels.models import ImportUpload, Parcel
from tests.browser.test_journeys import PASSWORD, _registry_and_certified_estimates

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHANGES = """parcel_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since,credit_percent
P1,Carmen Irizarry Vélez,,privado,120.5,0,Permanente,2000-01-01,0
P3,Luis Toro,,privado,50,0,permanente,2000-01-01,0
N-1,Municipio de Lajas,,público,3,0,prueba,,0
"""


def test_the_authority_downloads_the_template_and_reads_the_preview_of_changes(visit, tmp_path: Path):
    _registry_and_certified_estimates()
    visit.login("u_authority", PASSWORD)
    visit.go("/importar/")
    with visit.page.expect_download() as download_info:
        visit.page.get_by_role("link", name="Descargar la plantilla (CSV)").click()
    template = Path(download_info.value.path()).read_bytes()
    assert download_info.value.suggested_filename == "plantilla_predios.csv" and template.startswith(b"\xef\xbb\xbfparcel_id,")

    csv_file = tmp_path / "cambios.csv"
    csv_file.write_text(CHANGES, encoding="utf-8")
    visit.page.set_input_files("#id_file", str(csv_file))
    visit.page.get_by_role("button", name="Subir y revisar").click()
    visit.page.get_by_role("table", name="Predios que cambian").wait_for()
    visit.check()
    changes = visit.page.get_by_role("table", name="Predios que cambian").inner_text()
    assert "P1\tacres por gravedad\t100.0000\t120.5000" in changes
    owners = visit.page.get_by_role("table", name="Dueños que cambian").inner_text()
    assert "Luis Toro Ramos (OW-3)\tnombre\tLuis Toro Ramos\tLuis Toro" in owners
    assert "N-1\tMunicipio de Lajas" in visit.page.get_by_role("table", name="Predios nuevos").inner_text()
    assert "1 predio queda igual y no se lista." in visit.page.inner_text("main")

    visit.page.context.add_cookies([{"name": "django_language", "value": "en", "url": visit.base}])
    visit.page.reload()
    visit.check()
    assert "P1\tgravity acres\t100.0000\t120.5000" in visit.page.get_by_role("table", name="Parcels that change").inner_text()
    assert ImportUpload.objects.get().status == "ready"
    assert Parcel.objects.get(parcel_id="P1").gravity_acres == 100 and not Parcel.objects.filter(parcel_id="N-1").exists()
