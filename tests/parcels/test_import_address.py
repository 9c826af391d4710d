"""The import fills the owner's address parts, c/o and language; the preview lists each change old → new."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import translation

from parcels.models import ImportUpload, Owner
from parcels.services import owner_update, parcels_import


@pytest.fixture(autouse=True)
def spanish():
    """The messages are compared in Spanish, whatever language an earlier test left active."""
    with translation.override("es-pr"):
        yield


HEADER = "parcel_id,owner_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since,credit_percent"


def run(data: str, dry_run: bool = False):
    return parcels_import(acting_user=None, data=data.encode(), dry_run=dry_run)


def errors_of(result) -> list[tuple[int, str, str]]:
    return [(e.line, e.column, e.message) for e in result.errors]


@pytest.mark.django_db
def test_one_cell_address_care_of_and_spanish_language_fill_the_parts():
    data = (f"{HEADER},owner_address,owner_care_of,owner_language\n"
            'P-1,O-1,Ana Pagán,,privado,10,0,permanente,,0,"HC 1 Box 123, Bo. Palmarejo, Lajas, PR 00667-1234",a/c Luis Pagán,Inglés\n'
            'P-2,O-2,Luis Toro,,privado,10,0,permanente,,0,"Calle 3 #4, Cabo Rojo PR 00623",,español\n'
            "P-3,O-3,Sin Dirección,,privado,10,0,permanente,,0,,,\n")
    result = run(data)
    assert result.ok, result.errors
    ana, luis, bare = (Owner.objects.get(owner_key=k) for k in ("O-1", "O-2", "O-3"))
    assert (ana.preferred_language, ana.care_of, ana.address_line1, ana.address_line2, ana.address_town,
            ana.address_state, ana.address_zip) == ("en", "a/c Luis Pagán", "HC 1 Box 123", "Bo. Palmarejo", "Lajas",
                                                    "PR", "00667-1234")
    assert ana.mailing_block() == ("ANA PAGAN", "C/O LUIS PAGAN", "HC 1 BOX 123", "BO PALMAREJO", "LAJAS PR 00667-1234")
    assert luis.address_block == ("CALLE 3 #4", "CABO ROJO PR 00623") and luis.preferred_language == "es"
    assert (bare.address_block, bare.preferred_language, bare.mailing_address) == ((), "es", "")


@pytest.mark.django_db
def test_separate_columns_fill_the_parts_for_an_absentee_owner():
    data = (f"{HEADER},owner_address_line1,owner_address_line2,owner_town,owner_state,owner_zip,owner_language\n"
            "P-1,O-1,John Rivera,,private,10,0,permanent,,0,125 Main St,Apt 4,Orlando,fl,328011234,english\n"
            "P-2,O-2,Ana Pagán,,private,10,0,permanent,,0,HC 2 Box 9,,Lajas,,00667,\n")
    result = run(data)
    assert result.ok, result.errors
    john = Owner.objects.get(owner_key="O-1")
    assert john.address_block == ("125 MAIN ST", "APT 4", "ORLANDO FL 32801-1234") and john.preferred_language == "en"
    assert Owner.objects.get(owner_key="O-2").address_block == ("HC 2 BOX 9", "LAJAS PR 00667")


@pytest.mark.django_db
def test_bad_addresses_are_refused_by_line_and_column_in_spanish():
    data = (f"{HEADER},owner_address,owner_language\n"
            'P-1,O-1,Ana,,privado,10,0,permanente,,0,"HC 1 Box 1, Lajas",\n'
            'P-2,O-2,Luis,,privado,10,0,permanente,,0,"HC 1 Box 1, Lajas, PR 10001",\n'
            'P-3,O-3,Rosa,,privado,10,0,permanente,,0,"HC 1 Box 1, Lajas, PR 00667",francés\n')
    result = run(data)
    assert not result.ok
    assert [(line, column) for line, column, _ in errors_of(result)] == [
        (2, "owner_address"), (3, "owner_address"), (4, "owner_language")]
    messages = [message for _, _, message in errors_of(result)]
    assert messages[0].startswith("no se entiende la dirección «HC 1 Box 1, Lajas»: escríbala «línea 1, línea 2, pueblo, PR 00667»")
    assert messages[1] == ("«10001»: Los códigos postales (ZIP) de Puerto Rico empiezan con 006, 007 o 009 "
                           "(por ejemplo 00667 para Lajas).")
    assert messages[2] == "idioma desconocido «francés» (español o inglés)"
    assert not Owner.objects.exists()

    parts = (f"{HEADER},owner_address_line1,owner_town,owner_zip,owner_care_of\n"
             "P-1,O-1,Ana,,privado,10,0,permanente,,0,HC 1 Box 1,,0667,\n"
             "P-2,O-2,Luis,,privado,10,0,permanente,,0,,,,a/c Rosa\n")
    assert errors_of(run(parts)) == [
        (2, "owner_town", "falta el pueblo"),
        (3, "owner_care_of", "un a/c necesita la dirección del dueño en la misma fila"),
    ]
    # Without address columns, a c/o for an owner who has no address is refused when the file is compared.
    care_of_only = f"{HEADER},owner_care_of\nP-1,O-1,Ana,,privado,10,0,permanente,,0,a/c Rosa\n"
    assert errors_of(run(care_of_only)) == [(2, "owner_care_of", (
        "el dueño quedaría con una dirección incompleta (a/c sin dirección, o sin línea 1, pueblo o código postal)"))]
    both = f"{HEADER},owner_address,owner_zip\nP-1,O-1,Ana,,privado,10,0,permanente,,0,x,00667\n"
    assert errors_of(run(both))[0][:2] == (1, "owner_zip")


@pytest.mark.django_db
def test_the_preview_lists_each_address_part_old_and_new(client, users, django_capture_on_commit_callbacks):
    assert run(f"{HEADER}\nP-1,O-1,Ana Pagán,,privado,10,0,permanente,,0\n").ok
    owner = Owner.objects.get(owner_key="O-1")
    owner_update(acting_user=None, owner=owner, address_line1="HC 1 Box 5", address_town="Lajas", address_zip="00667")
    data = (f"{HEADER},owner_address,owner_language\n"
            'P-1,O-1,Ana Pagán,,privado,10,0,permanente,,0,"HC 1 Box 5, Bo. Costa, Cabo Rojo, PR 00623-1234",inglés\n'
            'P-2,,Luis Toro,,privado,4,0,permanente,,0,"Apartado 7, Lajas, PR 00667",\n')
    preview = run(data, dry_run=True)
    assert preview.ok, preview.errors
    assert preview.summary["owner_changes"] == [{"owner_key": "O-1", "name": "Ana Pagán", "fields": [
        ["preferred_language", "es", "en"],
        ["address_line2", "", "Bo. Costa"],
        ["address_town", "Lajas", "Cabo Rojo"],
        ["address_zip", "00667", "00623-1234"],
    ]}]
    assert preview.summary["created_rows"][0]["owner_address"] == "APARTADO 7 / LAJAS PR 00667"
    owner.refresh_from_db()
    assert owner.address_town == "Lajas"  # a dry run writes nothing

    client.force_login(users["authority"])
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("parcels:import-upload"), {"file": SimpleUploadedFile("d.csv", data.encode(), "text/csv")})
    upload = ImportUpload.objects.get()
    assert upload.status == "ready", upload.errors
    page = client.get(reverse("parcels:import-detail", args=[upload.pk])).content.decode()
    assert "<td>pueblo (municipio)</td><td>Lajas</td><td>Cabo Rojo</td>" in page
    assert "<td>idioma de los documentos</td><td>Español</td><td>Inglés</td>" in page
    assert "<td>APARTADO 7 / LAJAS PR 00667</td><td>Español</td>" in page


@pytest.mark.django_db
def test_without_address_columns_the_owner_keeps_its_address_and_language():
    assert run(f"{HEADER},owner_address,owner_language\nP-1,O-1,Ana,,privado,10,0,permanente,,0,\"HC 1 Box 5, Lajas, PR 00667\",en\n").ok
    result = run(f"{HEADER}\nP-1,O-1,Ana Pagán,,privado,10,0,permanente,,0\n")
    assert result.ok and result.summary["owner_changes"][0]["fields"] == [["name", "Ana", "Ana Pagán"]]
    owner = Owner.objects.get(owner_key="O-1")
    assert (owner.address_block, owner.preferred_language) == (("HC 1 BOX 5", "LAJAS PR 00667"), "en")


def test_the_template_has_the_new_columns():
    from parcels.imports import parse_parcel_csv, template_csv

    body = template_csv().decode("utf-8-sig")
    assert body.splitlines()[0] == ("parcel_id,owner_id,owner_name,owner_email,owner_kind,owner_address,owner_care_of,"
                                    "owner_language,gravity_acres,pumped_acres,inclusion,water_since,credit_percent")
    rows = parse_parcel_csv(template_csv().replace(b"EJEMPLO-", b"LAJ-")).rows  # the example rows, renumbered
    assert [(r.owner_address.town, r.owner_address.zip_code, r.owner_language) for r in rows] == [
        ("Lajas", "00667-1234", "es"), ("Lajas", "00667", "es"), ("Orlando", "32801", "en")]


@pytest.mark.django_db
def test_the_preview_shows_dates_day_first(client, users, django_capture_on_commit_callbacks):
    """One date order on pages (d/m/Y): the file's ISO dates are shown as the clerk reads them."""
    assert run(f"{HEADER}\nP-1,O-1,Ana Pagán,,privado,10,0,permanente,,0\n").ok
    data = f"{HEADER}\nP-1,O-1,Ana Pagán,,privado,10,0,permanente,2015-07-01,0\nP-2,O-1,Ana Pagán,,privado,4,0,prueba,2020-01-15,0\n"
    client.force_login(users["authority"])
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("parcels:import-upload"), {"file": SimpleUploadedFile("d.csv", data.encode(), "text/csv")})
    upload = ImportUpload.objects.get(original_name="d.csv")
    page = client.get(reverse("parcels:import-detail", args=[upload.pk])).content.decode()
    assert "<td>—</td><td>01/07/2015</td>" in page  # P-1's date of water, old → new
    assert "<td>15/01/2020</td>" in page and "2020-01-15" not in page  # the new parcel
