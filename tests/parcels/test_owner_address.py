"""An owner's document language and mailing address in parts: ZIP checks, the USPS block, the
form and the database constraints, the migration that reads the old free text."""

import importlib

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import translation

from parcels import selectors
from parcels.addresses import Address, parse_address, usps_block, usps_text, zip_problem
from parcels.models import Owner
from parcels.services import owner_create, owner_update


@pytest.fixture(autouse=True)
def spanish():
    """The messages are compared in Spanish, whatever language an earlier test left active."""
    with translation.override("es-pr"):
        yield


@pytest.mark.parametrize(("zip_code", "state", "ok"), [
    ("00667", "PR", True),
    ("00667-1234", "PR", True),
    ("00936", "PR", True),
    ("00795", "PR", True),
    ("", "PR", True),  # no ZIP: checked by "whole or absent", not here
    ("0667", "PR", False),
    ("00667-12", "PR", False),
    ("006671234", "PR", False),  # the form and the import add the hyphen; the stored value has it
    ("00667 1234", "PR", False),
    ("3280l", "FL", False),
    ("32801", "PR", False),  # a Florida ZIP with state PR
    ("10001", "NY", True),
    ("00501", "NY", True),  # Holtsville NY: not PR, so no 006–009 rule
])
def test_zip_is_five_digits_or_zip_plus_four_and_pr_zips_start_006_to_009(zip_code, state, ok):
    assert (zip_problem(zip_code, state) == "") is ok


def test_zip_messages_are_spanish_and_say_what_to_write():
    assert zip_problem("667", "PR") == "El código postal (ZIP) se escribe con 5 dígitos (00667) o con 9, así: 00667-1234."
    assert zip_problem("32801", "PR").startswith("Los códigos postales (ZIP) de Puerto Rico empiezan con 006, 007 o 009")


def test_the_block_is_upper_case_without_punctuation_or_accents():
    address = Address(line1="Urb. Santa Rosa, Calle 3 #12", line2="Bo. Maguayo", town="San Germán", state="PR",
                      zip_code="00683-4321")
    assert usps_block(address, care_of="a/c Iris Pagán", name="José Vélez O'Neill") == (
        "JOSE VELEZ ONEILL", "C/O IRIS PAGAN", "URB SANTA ROSA CALLE 3 #12", "BO MAGUAYO", "SAN GERMAN PR 00683-4321",
    )
    assert usps_block(Address(line1="P.O. Box 1001", town="Cataño", zip_code="00963")) == ("PO BOX 1001", "CATANO PR 00963")
    assert usps_block(Address()) == ()
    assert usps_text("  HC-01  Box 5,  Km. 3.4 ") == "HC-01 BOX 5 KM 34"


@pytest.mark.parametrize(("text", "parts"), [
    ("HC 1 Box 123, Lajas, PR 00667", ("HC 1 Box 123", "", "Lajas", "PR", "00667")),
    ("HC 1 Box 123, Bo. Palmarejo, Lajas PR 00667-1234", ("HC 1 Box 123", "Bo. Palmarejo", "Lajas", "PR", "00667-1234")),
    ("Apartado 1001, San Juan, P.R. 00936", ("Apartado 1001", "", "San Juan", "PR", "00936")),
    ("Calle 5 #20\nCabo Rojo, Puerto Rico 006231234", ("Calle 5 #20", "", "Cabo Rojo", "PR", "00623-1234")),
    ("Carr. 116 Km 5.2, Lajas 00667", ("Carr. 116 Km 5.2", "", "Lajas", "PR", "00667")),
    ("125 Main St, Apt 4, Orlando, FL 32801", ("125 Main St", "Apt 4", "Orlando", "FL", "32801")),
])
def test_one_cell_addresses_are_read_into_parts(text, parts):
    address = parse_address(text)
    assert (address.line1, address.line2, address.town, address.state, address.zip_code) == parts


@pytest.mark.parametrize("text", ["HC 1 Box 1, Lajas", "Lajas PR 00667", "00667", ""])
def test_an_address_without_zip_or_town_is_not_guessed(text):
    assert parse_address(text) is None


@pytest.mark.django_db
def test_owner_block_and_language(users):
    owner = owner_create(acting_user=users["authority"], name="Rosa Pagán Cruz", preferred_language="en",
                         care_of="a/c Banco Popular", address_line1="HC 2 Box 7123", address_town="Lajas",
                         address_zip="00667-9701")
    owner.refresh_from_db()
    assert owner.preferred_language == "en" and owner.address_state == "PR" and owner.has_mailing_address
    assert owner.address_block == ("C/O BANCO POPULAR", "HC 2 BOX 7123", "LAJAS PR 00667-9701")
    assert owner.mailing_block() == ("ROSA PAGAN CRUZ", "C/O BANCO POPULAR", "HC 2 BOX 7123", "LAJAS PR 00667-9701")
    bare = owner_create(acting_user=users["authority"], name="Sin Dirección")
    assert (bare.preferred_language, bare.address_block, bare.has_mailing_address) == ("es", (), False)


@pytest.mark.django_db
def test_a_started_address_names_each_missing_part_in_spanish(users):
    with pytest.raises(ValidationError) as caught:
        owner_create(acting_user=users["authority"], name="Ana", address_line2="Bo. Costa", address_zip="32801")
    assert caught.value.message_dict == {
        "address_zip": ["Los códigos postales (ZIP) de Puerto Rico empiezan con 006, 007 o 009 (por ejemplo 00667 para Lajas)."],
        "address_line1": ["Escriba la línea 1 de la dirección (calle y número, HC o apartado)."],
        "address_town": ["Escriba el pueblo."],
    }
    with pytest.raises(ValidationError) as caught:
        owner_create(acting_user=users["authority"], name="Ana", care_of="Luis")
    assert set(caught.value.message_dict) == {"address_line1", "address_town", "address_zip"}
    with pytest.raises(ValidationError) as caught:
        owner_create(acting_user=users["authority"], name="Ana", address_line1="1 Main", address_town="Miami",
                     address_state="ZZ", address_zip="33101")
    assert list(caught.value.message_dict) == ["address_state"]
    assert not Owner.objects.filter(name="Ana").exists()


@pytest.mark.django_db
def test_the_database_refuses_a_bad_zip_a_half_address_or_an_unknown_language(owner_a):
    refused = [
        {"address_line1": "HC 1 Box 1", "address_town": "Lajas", "address_zip": "667"},
        {"address_line1": "HC 1 Box 1", "address_town": "Lajas", "address_zip": "10001"},  # state PR
        {"address_line1": "HC 1 Box 1", "address_town": "", "address_zip": "00667"},
        {"care_of": "Luis"},
        {"address_state": "XX"},
        {"preferred_language": "fr"},
    ]
    for values in refused:
        with pytest.raises(IntegrityError), transaction.atomic():
            Owner.objects.filter(pk=owner_a.pk).update(**values)
    Owner.objects.filter(pk=owner_a.pk).update(address_line1="1 Main St", address_town="New York", address_state="NY",
                                               address_zip="10001")
    owner_a.refresh_from_db()
    assert owner_a.address_block == ("1 MAIN ST", "NEW YORK NY 10001")


@pytest.mark.django_db
def test_the_history_records_the_address_change_and_who_made_it(owner_a, users):
    owner_update(acting_user=users["authority"], owner=owner_a, address_line1="HC 1 Box 5", address_town="Lajas",
                 address_zip="00667", preferred_language="en")
    event = selectors.audit_events().filter(pgh_obj_model="parcels.Owner", pgh_obj_id=str(owner_a.pk),
                                            pgh_label="update").get()
    assert event.pgh_context["username"] == users["authority"].username
    assert event.pgh_diff["address_zip"] == ["", "00667"] and event.pgh_diff["preferred_language"] == ["es", "en"]


@pytest.mark.django_db
def test_authority_edits_the_address_on_the_owner_page_and_sees_the_block(client, users, owner_a):
    client.force_login(users["authority"])
    url = reverse("parcels:owner-edit", args=[owner_a.pk])
    data = {"name": owner_a.name, "kind": "private", "email": "", "preferred_language": "en", "care_of": "a/c Luis Toro",
            "address_line1": "Calle Luna 12", "address_line2": "Urb. Villa Real", "address_town": "Cabo Rojo",
            "address_state": "PR", "address_zip": "006231234"}
    response = client.post(url, data)
    assert response.status_code == 302
    owner_a.refresh_from_db()
    assert (owner_a.address_zip, owner_a.preferred_language) == ("00623-1234", "en")
    page = client.get(reverse("parcels:owner-detail", args=[owner_a.pk])).content.decode()
    assert "C/O LUIS TORO<br>CALLE LUNA 12<br>URB VILLA REAL<br>CABO ROJO PR 00623-1234" in page

    bad = client.post(url, {**data, "address_zip": "32801", "address_town": ""})
    page = bad.content.decode()
    assert bad.status_code == 200
    assert "Los códigos postales (ZIP) de Puerto Rico empiezan con 006, 007 o 009" in page and "Escriba el pueblo." in page
    owner_a.refresh_from_db()
    assert owner_a.address_town == "Cabo Rojo"


@pytest.mark.django_db
def test_only_authority_edits_an_owner(client, users, owner_a):
    client.force_login(users["collector"])
    assert client.get(reverse("parcels:owner-edit", args=[owner_a.pk])).status_code == 403


def test_the_migration_reads_old_text_it_can_and_leaves_the_rest():
    migration = importlib.import_module("parcels.migrations.0009_owner_language_address_staff_profile")
    assert migration.parts_of("HC 2 Box 7123, Lajas, PR 00667") == {
        "address_line1": "HC 2 Box 7123", "address_line2": "", "address_town": "Lajas", "address_state": "PR",
        "address_zip": "00667",
    }
    assert migration.parts_of("Apartado 1004, San Juan, PR 00936")["address_line1"] == "Apartado 1004"
    assert migration.parts_of("HC 1 Box 1, Lajas") is None  # no ZIP
    assert migration.parts_of("1 Main St, Lajas, PR 10001") is None  # the PR ZIP rule would refuse it


@pytest.mark.django_db
def test_the_migration_backfill_fills_parts_and_keeps_the_text(owner_a, owner_b):
    from django.apps import apps

    migration = importlib.import_module("parcels.migrations.0009_owner_language_address_staff_profile")
    Owner.objects.filter(pk=owner_a.pk).update(mailing_address="HC 3 Box 40, Bo. Llanos, Lajas PR 00667-2210")
    Owner.objects.filter(pk=owner_b.pk).update(mailing_address="Finca La Plata, Lajas")
    migration.address_parts_from_text(apps, None)
    owner_a.refresh_from_db()
    owner_b.refresh_from_db()
    assert owner_a.address_block == ("HC 3 BOX 40", "BO LLANOS", "LAJAS PR 00667-2210")
    assert owner_a.mailing_address == "HC 3 Box 40, Bo. Llanos, Lajas PR 00667-2210"
    assert (owner_b.address_line1, owner_b.mailing_address) == ("", "Finca La Plata, Lajas")
