"""The parcel CSV for Spanish-speaking clerks: Spanish values, the template, files saved by Excel in
Spanish (semicolons, decimal commas) and a preview that lists what changes, field by field."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import translation

from parcels.models import ImportUpload, Owner, Parcel
from parcels.services import PREVIEW_LIMIT, parcels_import

from .test_import import GOOD, HEADER, run, snapshot


@pytest.mark.django_db
def test_spanish_values_import_whatever_their_case_and_accents():
    data = f"""{HEADER}
S-1,Ana Pagán,,privado,10,0,Permanente,2000-01-01,0
S-2,Municipio de Lajas,,Público,0,4,PRUEBA,,0
S-3,Autoridad de Tierras,,PUBLICO,1,1,excluído,,0
S-4,Luis Toro,,  Privado ,2,0,  permanente ,,0
S-5,Finca Mixta,,public,3,0,trial,,0
"""
    result = run(data)
    assert result.ok, result.errors
    stored = dict(Parcel.objects.values_list("parcel_id", "inclusion"))
    assert stored == {"S-1": "permanent", "S-2": "trial", "S-3": "excluded", "S-4": "permanent", "S-5": "trial"}
    kinds = dict(Parcel.objects.values_list("parcel_id", "owner__kind"))
    assert kinds == {"S-1": "private", "S-2": "public", "S-3": "public", "S-4": "private", "S-5": "public"}


@pytest.mark.django_db
def test_an_unknown_value_names_the_spanish_choices():
    result = run(f"{HEADER}\nS-1,Ana,,empresa,1,0,permanente,,0\nS-2,Ana,,privado,1,0,siempre,,0\n")
    assert not result.ok
    messages = {e.column: e.message for e in result.errors}
    assert "privado o público" in messages["owner_kind"] and "«empresa»" in messages["owner_kind"]
    assert "permanente, prueba o excluido" in messages["inclusion"]


@pytest.mark.django_db
def test_a_semicolon_file_gets_one_hint_and_writes_nothing():
    run(GOOD)
    before = snapshot()
    semicolons = GOOD.replace(",", ";").replace("80.5", "80,5").replace("12.5", "12,5")
    result = run(semicolons.encode("utf-8-sig"))
    assert not result.ok
    assert len(result.errors) == 1, result.errors
    error = result.errors[0]
    assert error.line == 1 and "punto y coma (;)" in error.message and "punto decimal" in error.message
    assert snapshot() == before
    with translation.override("en"):
        assert "separated by semicolons (;), not by commas" in run(semicolons).errors[0].message


@pytest.mark.django_db
def test_a_tab_separated_file_gets_the_same_single_hint():
    result = run(GOOD.replace(",", "\t"))
    assert [(e.line, e.column) for e in result.errors] == [(1, "")] and "tabulador" in result.errors[0].message


@pytest.mark.django_db
def test_a_decimal_comma_is_refused_with_the_point_to_use_and_nothing_is_written():
    run(GOOD)
    before = snapshot()
    data = f"""{HEADER}
P-1,Ana Pagán,ana@example.pr,private,"12,5",0,permanent,2000-01-01,0
P-2,Municipio de Lajas,,public,0,"1,250",permanent,2010-07-01,"7,25"
P-8,Nuevo,,private,1,0,permanent,,0
"""
    result = run(data)
    assert not result.ok
    errors = {(e.line, e.column): e.message for e in result.errors}
    assert set(errors) == {(2, "gravity_acres"), (3, "pumped_acres"), (3, "credit_percent")}
    assert "use punto decimal: 12.5" in errors[(2, "gravity_acres")]
    assert "use punto decimal: 7.25" in errors[(3, "credit_percent")]
    # three digits after the comma could be thousands: both readings are offered, neither is chosen
    assert "escriba 1250 o 1.250" in errors[(3, "pumped_acres")]
    assert snapshot() == before
    assert Parcel.objects.get(parcel_id="P-1").gravity_acres == Decimal("100.0000")
    assert not Parcel.objects.filter(parcel_id="P-8").exists()


@pytest.mark.django_db
def test_an_unquoted_decimal_comma_splits_the_row_and_the_error_says_why():
    result = run(f"{HEADER}\nP-1,Ana,,private,12,5,0,permanent,,0\n")
    assert not result.ok and len(result.errors) == 1
    assert result.errors[0].line == 2 and "tiene 10 columnas; el encabezado tiene 9" in result.errors[0].message
    assert "use punto decimal: 12.5" in result.errors[0].message
    assert not Parcel.objects.exists()


CHANGED = f"""{HEADER},owner_id
P-1,Ana Pagán,ana@example.pr,private,120.5,0,permanent,2000-01-01,0,
P-2,Luis Toro,,private,0,80.5,trial,2010-07-01,12.5,LT-1
P-3,Ana Pagán Ruiz,,private,10.1234,5,trial,,0,
P-4,Municipio de Lajas,,público,3,0,prueba,,0,
"""


@pytest.mark.django_db
def test_the_plan_lists_created_rows_and_each_changed_field_old_and_new():
    run(GOOD)
    p2_owner = Parcel.objects.get(parcel_id="P-2").owner
    p3_owner = Parcel.objects.get(parcel_id="P-3").owner
    result = parcels_import(acting_user=None, data=CHANGED.encode(), dry_run=True)
    assert result.ok, result.errors
    summary = result.summary
    assert (summary["created"], summary["updated"], summary["unchanged"]) == (1, 2, 1)
    assert summary["changes"] == [
        {"parcel_id": "P-1", "fields": [["gravity_acres", "100.0000", "120.5000"]]},
        {"parcel_id": "P-2", "fields": [
            ["inclusion", "permanent", "trial"],
            ["owner", f"Municipio de Lajas ({p2_owner.owner_key})", "Luis Toro (LT-1)"],
        ]},
    ]
    # P-3's only change is its owner's name: the parcel is unchanged in itself, the owner is listed
    assert summary["owner_changes"] == [
        {"owner_key": p3_owner.owner_key, "name": "Ana Pagán", "fields": [["name", "Ana Pagán", "Ana Pagán Ruiz"]]},
    ]
    assert summary["created_rows"] == [{
        "parcel_id": "P-4", "owner": "Municipio de Lajas", "owner_kind": "public", "owner_address": "",
        "owner_language": "es", "gravity_acres": "3.0000",
        "pumped_acres": "0.0000", "inclusion": "trial", "water_since": "", "credit_percent": "0.00",
    }]


@pytest.mark.django_db
def test_the_stored_preview_is_capped_and_the_counts_stay_whole():
    rows = "".join(f"N-{n:04d},Dueño {n},,privado,1,0,permanente,,0\n" for n in range(PREVIEW_LIMIT + 25))
    result = parcels_import(acting_user=None, data=f"{HEADER}\n{rows}".encode(), dry_run=True)
    assert result.ok
    assert result.summary["created"] == PREVIEW_LIMIT + 25 and len(result.summary["created_rows"]) == PREVIEW_LIMIT
    assert result.summary["created_rows"][-1]["parcel_id"] == f"N-{PREVIEW_LIMIT - 1:04d}"


def _upload(client, data: bytes, capture) -> ImportUpload:
    with capture(execute=True):
        response = client.post(reverse("parcels:import-upload"), {"file": SimpleUploadedFile("predios.csv", data, "text/csv")})
    assert response.status_code == 302
    return ImportUpload.objects.order_by("-pk").first()


@pytest.mark.django_db
def test_the_preview_page_shows_new_rows_and_old_to_new_changes(client, users, django_capture_on_commit_callbacks):
    run(GOOD)
    client.force_login(users["authority"])
    upload = _upload(client, CHANGED.encode(), django_capture_on_commit_callbacks)
    assert upload.status == "ready", upload.errors
    page = client.get(reverse("parcels:import-detail", args=[upload.pk])).content.decode()
    assert "<caption>Predios que cambian" in page and "<caption>Predios nuevos" in page
    assert "<caption>Dueños que cambian" in page
    cells = " ".join(page.split())
    assert ('<th scope="rowgroup" rowspan="1">P-1</th><td>acres por gravedad</td><td>100.0000</td><td>120.5000</td>'
            in cells)
    assert "<td>inclusión</td><td>Permanente</td><td>Período de prueba</td>" in cells
    assert "Luis Toro (LT-1)" in cells and "<td>nombre</td><td>Ana Pagán</td><td>Ana Pagán Ruiz</td>" in cells
    assert '<th scope="row">P-4</th><td>Municipio de Lajas</td><td>Público (ELA o instrumentalidad)</td>' in cells
    assert not Parcel.objects.filter(parcel_id="P-4").exists()
    client.cookies["django_language"] = "en"
    english = " ".join(client.get(reverse("parcels:import-detail", args=[upload.pk])).content.decode().split())
    assert "<td>Permanent</td><td>Trial period</td>" in english and "<caption>Parcels that change" in english


@pytest.mark.django_db
def test_the_unchanged_rows_are_counted_not_listed(client, users, django_capture_on_commit_callbacks):
    run(GOOD)
    client.force_login(users["authority"])
    upload = _upload(client, GOOD.encode(), django_capture_on_commit_callbacks)
    assert upload.summary["unchanged"] == 3 and upload.summary["changes"] == [] and upload.summary["created_rows"] == []
    page = client.get(reverse("parcels:import-detail", args=[upload.pk])).content.decode()
    assert "3 predios quedan igual y no se listan." in page and "P-1" not in page


@pytest.mark.django_db
def test_the_template_downloads_and_its_rows_import_once_renumbered(client, users, django_capture_on_commit_callbacks):
    """The template's example rows are valid rows (each column as the page describes it), but the
    template itself is refused whole while they keep their EJEMPLO- numbers (issue 18 point 19):
    a clerk who uploads it untouched would otherwise add three made-up parcels to the registry."""
    client.force_login(users["authority"])
    upload_page = client.get(reverse("parcels:import-upload")).content.decode()
    assert reverse("parcels:import-template") in upload_page and "<code>permanente</code>" in upload_page
    response = client.get(reverse("parcels:import-template"))
    assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
    assert "plantilla_predios.csv" in response["Content-Disposition"]
    body = response.content
    assert body.startswith(b"\xef\xbb\xbfparcel_id,owner_id,owner_name,") and "público".encode() in body
    untouched = _upload(client, body, django_capture_on_commit_callbacks)
    assert untouched.status == "rejected" and [(e["line"], e["column"]) for e in untouched.errors] == [(2, "parcel_id")]
    assert not Parcel.objects.filter(parcel_id__startswith="EJEMPLO-").exists()
    upload = _upload(client, body.replace(b"EJEMPLO-", b"LAJ-"), django_capture_on_commit_callbacks)
    assert upload.status == "ready", upload.errors
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("parcels:import-confirm", args=[upload.pk]))
    upload.refresh_from_db()
    assert upload.status == "applied" and upload.summary["created"] == 3
    first, second, third = Parcel.objects.select_related("owner").order_by("parcel_id")
    assert (first.parcel_id, first.owner.name, first.owner.kind, first.owner.preferred_language) == (
        "LAJ-0001", "Carmen Irizarry", "private", "es")
    assert first.owner.address_block == ("HC 1 BOX 123", "BO PALMAREJO", "LAJAS PR 00667-1234")
    assert second.owner.address_block == ("C/O OFICINA DE FINANZAS", "APARTADO 910", "LAJAS PR 00667")
    assert (third.owner.preferred_language, third.owner.address_block) == ("en", ("125 MAIN ST", "APT 4", "ORLANDO FL 32801"))
    assert (first.gravity_acres, first.inclusion, first.water_since) == (Decimal("10.5000"), "permanent", date(2015, 7, 1))
    assert (second.owner.kind, second.pumped_acres, second.inclusion, second.credit_percent) == (
        "public", Decimal("25.2500"), "trial", Decimal("12.50"))
    assert Owner.objects.exclude(owner_key="OWN-A").count() == 3  # OWN-A is the landowner fixture's


@pytest.mark.django_db
def test_only_authority_downloads_the_template(client, users):
    client.force_login(users["collector"])
    assert client.get(reverse("parcels:import-template")).status_code == 403


@pytest.mark.django_db
def test_the_command_dry_run_prints_the_preview_lines(tmp_path, capsys):
    from django.core.management import call_command

    run(GOOD)
    p3_key = Parcel.objects.get(parcel_id="P-3").owner.owner_key
    changed = tmp_path / "cambios.csv"
    changed.write_text(CHANGED, encoding="utf-8")
    call_command("import_parcels", str(changed), "--dry-run")
    lines = capsys.readouterr().out.splitlines()
    p2_key = Parcel.objects.get(parcel_id="P-2").owner.owner_key
    assert lines == [
        "dry run, nothing written: created 1, updated 2, unchanged 1 (owners created 2, updated 1)",  # LT-1 and P-4's owner
        "new P-4 · owner Municipio de Lajas",
        "parcel P-1 · gravity_acres: 100.0000 → 120.5000",
        f"parcel P-2 · inclusion: permanent → trial; owner: Municipio de Lajas ({p2_key}) → Luis Toro (LT-1)",
        f"owner {p3_key} · name: Ana Pagán → Ana Pagán Ruiz",
    ]
    assert Parcel.objects.get(parcel_id="P-1").gravity_acres == Decimal("100.0000")
