"""The audit page (issue 18, point 16): found by owner or parcel as the registry search finds them
(accents, case, a cadastre number's prefix and dashes do not matter), and each change read in the
reader's language: the field's label, the choice's label, dates d/m/Y, an owner by name."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import translation

from parcels.models import Owner
from parcels.selectors import audit_events
from parcels.services import owner_create, owner_update, parcel_create, parcel_transfer, parcel_update
from parcels.templatetags.audit_history import history_changes, history_fields

pytestmark = pytest.mark.django_db


def _parcel(parcel_id: str, owner: Owner):
    return parcel_create(acting_user=None, parcel_id=parcel_id, owner=owner, area_unit="acre", gravity_area=Decimal("10"),
                         pumped_area=Decimal("0"), inclusion="permanent", water_since=date(2000, 1, 1),
                         credit_percent=Decimal("0"))


@pytest.fixture
def registry(users):
    munoz = owner_create(acting_user=None, name="José Muñoz Ortiz", owner_key="OW-M")
    toro = owner_create(acting_user=None, name="Luis Toro Ramos", owner_key="OW-T")
    mine, other = _parcel("LAJ-000006", munoz), _parcel("LAJ-000007", toro)
    owner_update(acting_user=users["authority"], owner=munoz, preferred_language="en")
    owner_update(acting_user=users["authority"], owner=toro, preferred_language="en")
    parcel_update(acting_user=users["authority"], parcel=mine, area_unit="acre", gravity_area=Decimal("10"),
                  pumped_area=Decimal("0"), inclusion="permanent", water_since=date(2026, 3, 2), credit_percent=Decimal("0"))
    return {"munoz": munoz, "toro": toro, "mine": mine, "other": other}


def _about(events) -> set[tuple[str, str]]:
    return {(event.pgh_obj_model, event.pgh_obj_id) for event in events}


def test_the_history_is_found_by_owner_without_accents_and_by_parcel_without_prefix(registry):
    munoz, toro, mine, other = registry["munoz"], registry["toro"], registry["mine"], registry["other"]
    by_owner = _about(audit_events(query="munoz"))
    assert by_owner == {("parcels.Owner", str(munoz.pk)), ("parcels.Parcel", str(mine.pk))}
    assert _about(audit_events(query="MUÑOZ ortiz")) == by_owner
    assert _about(audit_events(query="000006")) == {("parcels.Parcel", str(mine.pk))}
    assert _about(audit_events(query="laj000007")) == {("parcels.Parcel", str(other.pk))}
    assert ("parcels.Owner", str(toro.pk)) in _about(audit_events(query="Toro"))
    assert not list(audit_events(query="Zayas"))
    everything = _about(audit_events())  # nothing typed: every row, Toro's and the staff profiles' too
    assert by_owner < everything and ("parcels.Owner", str(toro.pk)) in everything


def test_a_sale_is_found_by_the_parcel_and_by_either_owner(registry, users):
    toro, mine = registry["toro"], registry["mine"]
    parcel_transfer(acting_user=users["authority"], parcel=mine, to_owner=toro, effective_on=date(2026, 11, 2))
    for query in ("Munoz", "Toro", "LAJ-000006"):
        assert "parcels.OwnershipTransfer" in {model for model, _ in _about(audit_events(query=query))}, query
    assert "parcels.OwnershipTransfer" not in {model for model, _ in _about(audit_events(query="000007"))}


def test_a_change_reads_with_the_field_label_and_the_choice_label_in_the_readers_language(registry):
    language_change = next(e for e in audit_events(query="Munoz") if e.pgh_obj_model == "parcels.Owner" and e.pgh_diff)
    with translation.override("en"):
        [change] = history_changes(language_change)
        assert (change.label, change.before, change.after) == ("Language of documents", "Spanish", "English")
    with translation.override("es"):
        [change] = history_changes(language_change)
        assert (change.label, change.before, change.after) == ("Idioma de los documentos", "Español", "Inglés")
    water = next(e for e in audit_events(query="000006") if e.pgh_diff)
    with translation.override("es"):
        [change] = history_changes(water)
        assert (change.before, change.after) == ("01/01/2000", "02/03/2026")
    insert = next(e for e in audit_events(query="000006") if not e.pgh_diff)
    with translation.override("en"):
        fields = {f.label: f.value for f in history_fields(insert)}
    assert fields["Owner"] == "José Muñoz Ortiz (OW-M)" and fields["Inclusion"] == "Permanent", fields
    assert not any("_" in label for label in fields), fields


def test_the_audit_page_searches_and_shows_labels_not_column_names(client, users, registry):
    client.force_login(users["auditor"])
    page = client.get(reverse("parcels:audit"), {"q": "Munoz"}).content.decode()
    assert 'id="q"' in page and 'value="Munoz"' in page
    assert "OW-M" in page and "LAJ-000006" in page and "OW-T" not in page and "LAJ-000007" not in page
    assert "Idioma de los documentos</span>: Español → Inglés" in page
    assert "preferred_language" not in page and "<code>" not in page
    assert "access-events" not in page  # a search by owner or parcel is about changes, not sign-ins
