"""Issue 18 points 9 and 19, as a person sees them.

Point 9: on a 390 px phone the registry's search results started 1,044 px down, under eight filter
fields. Now one search field comes first, then the count (which takes the focus after a search)
and the results; the other filters fold below the results (beside them at 1280 px). The counter's
search likewise: the count, focused, and the results right under the search field.

Point 19: a rejected import's errors are read in the reader's language (the worker stored them
while Spanish was active), and the template as downloaded, still holding its example rows
(EJEMPLO-…), is refused whole with that reason, in Spanish and in English.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from parcels.models import ImportUpload, Parcel
from tests.browser.test_journeys import PASSWORD, _registry_and_certified_estimates, users

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH, HEIGHT = 390, 844
SHOTS = os.environ.get("ISSUE18_SCREENSHOTS", "/tmp/issue18-registry")  # each page looked at, as a PNG
FOCUSED_ID = "() => document.activeElement && document.activeElement.id"


def _open(visit, language: str, username: str, width: int = WIDTH) -> None:
    visit.page.set_viewport_size({"width": width, "height": HEIGHT})
    visit.page.context.clear_cookies()
    visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])
    visit.login(username, PASSWORD)


def _shot(visit, name: str) -> None:
    os.makedirs(SHOTS, exist_ok=True)
    visit.page.screenshot(path=os.path.join(SHOTS, f"{name}.png"))


def _search(visit, words: str, button: str) -> None:
    visit.page.fill("main form[role=search] input[type=search]", words)
    visit.page.get_by_role("button", name=button, exact=True).click()
    visit.page.wait_for_load_state()
    visit.check()


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_registry_search_results_come_first_on_a_phone_with_the_focus_on_the_count(visit, language):
    english = language == "en"
    _registry_and_certified_estimates()  # Luis Toro Ramos owns P3, P4 and P5
    _open(visit, language, "u_authority")
    visit.go("/predios/")
    assert visit.page.get_attribute("html", "lang") == ("en" if english else "es-PR")
    assert visit.page.evaluate(FOCUSED_ID) != "result-count"  # nothing searched yet: the focus stays where it was
    _search(visit, "toro", "Search" if english else "Buscar")

    count = visit.page.locator("#result-count")
    assert count.inner_text() == ("3 parcels" if english else "3 predios")
    assert visit.page.evaluate(FOCUSED_ID) == "result-count"
    rows = visit.page.locator("main table tbody tr")
    assert [rows.nth(i).locator("th").inner_text() for i in range(rows.count())] == ["P3", "P4", "P5"]
    last = rows.nth(2).bounding_box()
    assert count.bounding_box()["y"] < last["y"] and last["y"] + last["height"] <= HEIGHT, last  # all three on the first screen
    # the filters are folded, after the results
    filters = visit.page.locator("main details.registry-filters")
    assert filters.get_attribute("open") is None
    assert not visit.page.locator("#id_inclusion").is_visible()
    summary = filters.locator("summary")
    assert summary.inner_text() == ("Filters and order" if english else "Filtros y orden")
    assert summary.bounding_box()["y"] > last["y"] + last["height"]
    assert visit.page.evaluate("() => document.documentElement.scrollWidth") <= WIDTH
    _shot(visit, f"{language}-registry-search-390")

    # the link beside the count opens them; a filter and an order keep the search words
    visit.page.get_by_role("link", name="Filters and order" if english else "Filtros y orden").click()
    assert filters.get_attribute("open") is not None and visit.page.locator("#id_inclusion").is_visible()
    visit.check()
    _shot(visit, f"{language}-registry-filters-open-390")
    visit.page.select_option("#id_inclusion", "permanent")
    visit.page.select_option("#id_o", "-parcel_id")
    visit.page.get_by_role("button", name="Filter" if english else "Filtrar", exact=True).click()
    visit.page.wait_for_load_state()
    visit.check()
    assert visit.page.input_value("#id_q") == "toro"
    assert count.inner_text() == ("3 parcels · 1 filter applied" if english else "3 predios · 1 filtro aplicado")
    assert visit.page.evaluate(FOCUSED_ID) == "result-count"
    assert [rows.nth(i).locator("th").inner_text() for i in range(rows.count())] == ["P5", "P4", "P3"]


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_at_1280_px_the_filters_sit_open_beside_the_results(visit, language):
    _registry_and_certified_estimates()
    _open(visit, language, "u_authority", width=1280)
    visit.go("/predios/?q=P1")
    assert visit.page.evaluate(FOCUSED_ID) == "result-count"
    filters = visit.page.locator("main details.registry-filters")
    assert filters.get_attribute("open") is not None
    table = visit.page.locator("main table").bounding_box()
    inclusion = visit.page.locator("#id_inclusion").bounding_box()
    assert inclusion["x"] > table["x"] + table["width"] and inclusion["y"] < HEIGHT, (table, inclusion)
    assert not visit.page.locator(".to-filters").is_visible()  # no link to what is already beside the results
    _shot(visit, f"{language}-registry-search-1280")


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_the_counter_search_shows_its_count_focused_and_the_results_on_the_first_screen(visit, language):
    english = language == "en"
    _registry_and_certified_estimates()
    users("collector")
    _open(visit, language, "u_collector")
    visit.go("/colecturia/")
    assert visit.page.evaluate(FOCUSED_ID) == "id_q"  # before a search: the search field
    _search(visit, "toro", "Search" if english else "Buscar")
    _shot(visit, f"{language}-counter-search-390")
    count = visit.page.locator("#result-count")
    assert count.inner_text() == ("3 parcels" if english else "3 predios")
    assert visit.page.evaluate(FOCUSED_ID) == "result-count"
    rows = visit.page.locator("main table tbody tr")
    assert rows.count() == 3
    first = rows.first.bounding_box()
    assert count.bounding_box()["y"] < first["y"] and first["y"] + first["height"] <= HEIGHT, first
    # the ¶13 explanation follows the results instead of pushing them down
    explanation = visit.page.locator("main p", has_text="¶13").bounding_box()
    assert explanation["y"] > rows.last.bounding_box()["y"]
    assert visit.page.input_value("#id_q") == "toro"


def test_the_template_as_downloaded_is_refused_and_the_errors_read_in_each_language(visit, tmp_path: Path):
    _registry_and_certified_estimates()
    _open(visit, "es-pr", "u_authority")
    visit.go("/importar/")
    with visit.page.expect_download() as download_info:
        visit.page.get_by_role("link", name="Descargar la plantilla (CSV)").click()
    template = tmp_path / "plantilla_predios.csv"
    template.write_bytes(Path(download_info.value.path()).read_bytes())
    visit.page.set_input_files("#id_file", str(template))
    visit.page.get_by_role("button", name="Subir y revisar").click()
    errors = visit.page.get_by_role("table", name="Errores")
    errors.wait_for()
    visit.check()
    assert "El archivo fue rechazado por 1 error. No se guardó nada." in visit.page.inner_text("main [role=alert]")
    reason = errors.locator("tbody tr").first
    assert reason.inner_text().split("\t") == [
        "2", "parcel_id", "el archivo aún tiene las filas de ejemplo de la plantilla (catastro EJEMPLO-…), en las líneas 2, 3, 4: "
        "bórrelas y escriba sus predios; el archivo se rechaza entero"]
    box = reason.bounding_box()
    assert box["y"] + box["height"] <= HEIGHT  # read without scrolling
    _shot(visit, "es-pr-import-template-refused-390")
    assert not Parcel.objects.filter(parcel_id__startswith="EJEMPLO-").exists()

    # a file with a Spanish-worded mistake, parsed while Spanish was active
    bad = tmp_path / "predios.csv"
    bad.write_text("parcel_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since,credit_percent\n"
                   "P9,Ana Pagán,,empresa,1,0,permanente,,0\n", encoding="utf-8")
    visit.go("/importar/")
    visit.page.set_input_files("#id_file", str(bad))
    visit.page.get_by_role("button", name="Subir y revisar").click()
    visit.page.get_by_role("table", name="Errores").wait_for()
    assert "tipo de dueño desconocido «empresa» (privado o público)" in visit.page.inner_text("main table")

    # the same uploads, read by an English reader
    template_upload, bad_upload = ImportUpload.objects.order_by("pk")
    visit.page.context.add_cookies([{"name": "django_language", "value": "en", "url": visit.base}])
    visit.go(f"/importar/{template_upload.pk}/")
    assert visit.page.get_attribute("html", "lang") == "en"
    assert visit.page.get_by_role("table", name="Errors").locator("tbody tr").first.inner_text().split("\t") == [
        "2", "parcel_id", "the file still holds the template's example rows (cadastre EJEMPLO-…), on lines 2, 3, 4: delete them "
        "and enter your parcels; the whole file is refused"]
    _shot(visit, "en-import-template-refused-390")
    visit.go(f"/importar/{bad_upload.pk}/")
    text = visit.page.inner_text("main table")
    assert "unknown owner type “empresa” (privado/private or público/public)" in text and "desconocido" not in text
    _shot(visit, "en-import-error-390")
