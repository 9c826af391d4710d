"""Issue 18 point 19: a rejected import's errors are read in the reader's language, although the
worker that parsed the file stored them while Spanish was active; and a file still holding the
template's example rows (cadastre numbers EJEMPLO-…) is refused whole with that reason."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import translation

from parcels.imports import parse_parcel_csv, stored_error_message, template_csv
from parcels.models import ImportUpload, Parcel

from .test_import import GOOD, HEADER, run, snapshot
from .test_import_spanish import _upload

# Three errors: a Spanish-worded value, an address whose ZIP is not Puerto Rico's (a message built
# of two translated pieces) and a decimal comma.
BAD = f"""{HEADER},owner_address
P-1,Ana Pagán,,empresa,10,0,permanente,,0,
P-2,Luis Toro,,privado,"12,5",0,permanente,,0,"Calle 1, Lajas, PR 32801"
"""


def _rows(page: str) -> list[str]:
    """The error table's rows as text: line, column and message, tags and spacing gone."""
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [" ".join(re.sub(r"<[^>]+>", " ", row).split()) for row in body.split("</tr>") if row.strip()]


@pytest.mark.django_db
def test_errors_stored_by_a_spanish_worker_read_in_english_for_an_english_reader(client, users, django_capture_on_commit_callbacks):
    client.force_login(users["authority"])
    upload = _upload(client, BAD.encode(), django_capture_on_commit_callbacks)  # parsed with Spanish active
    assert upload.status == "rejected"
    # stored as msgid and values, with the Spanish text beside them for whoever reads the row
    stored = {(e["line"], e["column"]): e for e in upload.errors}
    assert stored[(2, "owner_kind")]["msgid"] == "tipo de dueño desconocido «%(v)s» (privado o público)"
    assert stored[(2, "owner_kind")]["params"] == {"v": "empresa"}
    assert stored[(2, "owner_kind")]["message"] == "tipo de dueño desconocido «empresa» (privado o público)"

    spanish = _rows(client.get(reverse("parcels:import-detail", args=[upload.pk])).content.decode())
    assert spanish == [
        "2 owner_kind tipo de dueño desconocido «empresa» (privado o público)",
        "3 owner_address «32801»: Los códigos postales (ZIP) de Puerto Rico empiezan con 006, 007 o 009 (por ejemplo 00667 para Lajas).",
        "3 gravity_acres «12,5» tiene coma decimal: use punto decimal: 12.5",
    ]
    client.cookies["django_language"] = "en"
    page = client.get(reverse("parcels:import-detail", args=[upload.pk])).content.decode()
    assert "The file was rejected because of 3 errors. Nothing was saved." in page
    assert _rows(page) == [
        "2 owner_kind unknown owner type “empresa” (privado/private or público/public)",
        "3 owner_address “32801”: Puerto Rico ZIP codes start with 006, 007 or 009 (for example 00667 for Lajas).",
        "3 gravity_acres “12,5” has a decimal comma: use a decimal point: 12.5",
    ]


@pytest.mark.django_db
def test_a_semicolon_file_and_a_plan_error_read_in_each_language():
    """The separator's name is itself translated inside the message; an error found while
    comparing with the registry (``services.import_plan``) is kept the same way."""
    semicolons = parse_parcel_csv(GOOD.replace(",", ";").encode()).errors[0]
    owners = run(f"{HEADER},owner_id\nP-1,Ana,,privado,1,0,permanente,,0,K-1\nP-2,Otra,,privado,1,0,permanente,,0,K-1\n").errors[0]
    for error in (semicolons, owners):
        assert stored_error_message(error.stored()) == error.message  # the active language: Spanish
    with translation.override("en"):
        assert stored_error_message(semicolons.stored()).startswith("the columns are separated by semicolons (;), not by commas")
        assert stored_error_message(owners.stored()) == "owner “K-1” has different data on line 2"
    assert semicolons.stored()["message"].startswith("las columnas están separadas por punto y coma (;)")


@pytest.mark.django_db
def test_an_upload_stored_before_the_msgid_shows_its_spanish_text(client, users):
    """Older uploads kept only the Spanish text: shown as it is, not dropped."""
    client.force_login(users["authority"])
    upload = ImportUpload.objects.create(
        original_name="viejo.csv", status=ImportUpload.Status.REJECTED, uploaded_by=users["authority"],
        errors=[{"line": 2, "column": "parcel_id", "message": "vacío"}],
    )
    client.cookies["django_language"] = "en"
    assert _rows(client.get(reverse("parcels:import-detail", args=[upload.pk])).content.decode()) == ["2 parcel_id vacío"]


@pytest.mark.django_db
def test_the_template_as_downloaded_is_refused_whole_with_its_reason():
    run(GOOD)
    before = snapshot()
    result = run(template_csv())
    assert not result.ok and [(e.line, e.column) for e in result.errors] == [(2, "parcel_id")]
    assert result.errors[0].message == ("el archivo aún tiene las filas de ejemplo de la plantilla (catastro EJEMPLO-…), en las "
                                        "líneas 2, 3, 4: bórrelas y escriba sus predios; el archivo se rechaza entero")
    with translation.override("en"):
        assert run(template_csv()).errors[0].message == (
            "the file still holds the template's example rows (cadastre EJEMPLO-…), on lines 2, 3, 4: delete them and enter "
            "your parcels; the whole file is refused")
    assert snapshot() == before


@pytest.mark.django_db
def test_one_example_row_left_among_real_rows_refuses_the_whole_file_and_comes_first():
    """The clerk typed two real parcels under the template and kept one example row (whatever its
    case): nothing is written, the example row's reason comes first, other errors follow."""
    data = (f"{HEADER}\nP-7,Ana,,privado,1,0,permanente,,0\nejemplo-0002,Municipio de Lajas,,público,0,25.25,prueba,,12.5\n"
            f"P-8,Luis,,privado,-1,0,permanente,,0\n")
    result = run(data)
    assert not result.ok and not Parcel.objects.exists()
    assert [(e.line, e.column) for e in result.errors] == [(3, "parcel_id"), (4, "gravity_acres")]
    assert result.errors[0].message == ("el archivo aún tiene una fila de ejemplo de la plantilla (catastro EJEMPLO-…), en la "
                                        "línea 3: bórrela y escriba sus predios; el archivo se rechaza entero")
    with translation.override("en"):
        assert run(data).errors[0].message.startswith("the file still holds an example row of the template (cadastre EJEMPLO-…), on line 3")
