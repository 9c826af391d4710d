"""The parcel CSV import: upsert by parcel_id, all or nothing, every error by line and column."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from django.core.management import call_command

from parcels.models import Owner, Parcel
from parcels.services import parcels_import

HEADER = "parcel_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since,credit_percent"
GOOD = f"""{HEADER}
P-1,Ana Pagán,ana@example.pr,private,100,0,permanent,2000-01-01,0
P-2,Municipio de Lajas,,public,0,80.5,permanent,2010-07-01,12.5
P-3,Ana Pagán,,private,10.1234,5,trial,,0
"""


def run(data: str | bytes, dry_run: bool = False):
    raw = data.encode() if isinstance(data, str) else data
    return parcels_import(acting_user=None, data=raw, dry_run=dry_run)


def snapshot():
    return sorted(Parcel.objects.values_list("parcel_id", "owner__owner_key", "gravity_acres", "pumped_acres", "inclusion", "water_since", "credit_percent"))


@pytest.mark.django_db
def test_import_creates_parcels_and_one_owner_per_parcel_without_owner_id():
    result = run(GOOD)
    assert result.ok, result.errors
    assert result.summary["created"] == 3 and result.summary["updated"] == 0
    p2 = Parcel.objects.get(parcel_id="P-2")
    assert p2.pumped_acres == Decimal("80.5000") and p2.credit_percent == Decimal("12.50")
    assert p2.owner.kind == "public" and p2.water_since == date(2010, 7, 1)
    # Same name, no owner_id: never matched by name, so two different owners.
    assert Owner.objects.filter(name="Ana Pagán").count() == 2


@pytest.mark.django_db
def test_import_upserts_by_parcel_id_and_counts_unchanged():
    run(GOOD)
    owner_before = Parcel.objects.get(parcel_id="P-1").owner_id
    changed = GOOD.replace("P-1,Ana Pagán,ana@example.pr,private,100,", "P-1,Ana Pagán,ana@example.pr,private,120,")
    result = run(changed)
    assert result.ok
    assert (result.summary["created"], result.summary["updated"], result.summary["unchanged"]) == (0, 1, 2)
    p1 = Parcel.objects.get(parcel_id="P-1")
    assert p1.gravity_acres == Decimal("120") and p1.owner_id == owner_before
    assert Parcel.objects.count() == 3


@pytest.mark.django_db
def test_rows_with_the_same_owner_id_share_one_owner():
    data = HEADER + ",owner_id,owner_address\nX-1,Finca Candelaria Inc.,,private,5,0,permanent,2001-01-01,0,F-9,\"HC 1 Box 1, Lajas, PR 00667\"\nX-2,Finca Candelaria Inc.,,private,0,7,permanent,2001-01-01,0,F-9,\"HC 1 Box 1, Lajas, PR 00667\"\n"
    result = run(data)
    assert result.ok, result.errors
    owner = Owner.objects.get(owner_key="F-9")
    assert owner.parcels.count() == 2
    assert (owner.address_line1, owner.address_town, owner.address_state, owner.address_zip) == ("HC 1 Box 1", "Lajas", "PR", "00667")


@pytest.mark.django_db
def test_dry_run_writes_nothing():
    result = run(GOOD, dry_run=True)
    assert result.ok and result.summary["created"] == 3
    assert Parcel.objects.count() == 0 and Owner.objects.count() == 0


BAD_CASES = [
    ("bad number", f"{HEADER}\nP-1,A,,private,abc,0,permanent,2000-01-01,0\n", 2, "gravity_acres"),
    ("negative acres", f"{HEADER}\nP-1,A,,private,-1,0,permanent,2000-01-01,0\n", 2, "gravity_acres"),
    ("both acres zero", f"{HEADER}\nP-1,A,,private,0,0,permanent,2000-01-01,0\n", 2, "gravity_acres"),
    ("unknown inclusion", f"{HEADER}\nP-1,A,,private,1,0,forever,2000-01-01,0\n", 2, "inclusion"),
    ("credit over 100", f"{HEADER}\nP-1,A,,private,1,0,permanent,2000-01-01,100.01\n", 2, "credit_percent"),
    ("credit negative", f"{HEADER}\nP-1,A,,private,1,0,permanent,2000-01-01,-1\n", 2, "credit_percent"),
    ("bad date", f"{HEADER}\nP-1,A,,private,1,0,permanent,2000-02-30,0\n", 2, "water_since"),
    ("duplicate parcel_id", f"{HEADER}\nP-1,A,,private,1,0,permanent,2000-01-01,0\nP-1,B,,private,1,0,permanent,2000-01-01,0\n", 3, "parcel_id"),
    ("missing column", "parcel_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since\nP-1,A,,private,1,0,permanent,2000-01-01\n", 1, "credit_percent"),
    ("unknown owner kind", f"{HEADER}\nP-1,A,,company,1,0,permanent,2000-01-01,0\n", 2, "owner_kind"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("name,data,line,column", BAD_CASES, ids=[case[0] for case in BAD_CASES])
def test_one_bad_row_rejects_the_whole_file(name, data, line, column):
    run(GOOD)
    before = snapshot()
    bad = data.replace("P-1,A,", "P-9,A,") if name != "duplicate parcel_id" else data
    # a good row first, so the rejection is of the whole file and not just the bad row
    lines = bad.splitlines()
    if name != "missing column":
        lines.insert(1, "P-7,Good Row,,private,3,0,permanent,2000-01-01,0")
        line += 1
    result = run("\n".join(lines) + "\n")
    assert not result.ok
    assert any(e.line == line and e.column == column for e in result.errors), result.errors
    assert snapshot() == before
    assert not Parcel.objects.filter(parcel_id__in=["P-7", "P-9"]).exists()


@pytest.mark.django_db
def test_every_error_is_listed_not_just_the_first():
    data = f"{HEADER}\nP-1,A,,private,x,0,permanent,2000-01-01,0\nP-2,B,,private,1,0,nope,2000-01-01,0\nP-3,C,,private,1,0,permanent,01/02/2000,0\n"
    result = run(data)
    assert [(e.line, e.column) for e in result.errors] == [(2, "gravity_acres"), (3, "inclusion"), (4, "water_since")]


@pytest.mark.django_db
def test_not_utf8_is_rejected_with_its_line():
    data = f"{HEADER}\nP-1,Jos\xe9,,private,1,0,permanent,2000-01-01,0\n".encode("latin-1")
    result = run(data)
    assert not result.ok and result.errors[0].line == 2
    assert "UTF-8" in result.errors[0].message
    assert Parcel.objects.count() == 0


@pytest.mark.django_db
def test_command_exit_code_and_counts(tmp_path, capsys):
    good = tmp_path / "good.csv"
    good.write_text(GOOD, encoding="utf-8")
    call_command("import_parcels", str(good))
    assert "created 3, updated 0, unchanged 0" in capsys.readouterr().out
    bad = tmp_path / "bad.csv"
    bad.write_text(f"{HEADER}\nP-1,A,,private,1,0,permanent,2000-13-01,0\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        call_command("import_parcels", str(bad))
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "line 2, column water_since" in err
    assert Parcel.objects.get(parcel_id="P-1").water_since == date(2000, 1, 1)


@pytest.mark.django_db
def test_the_history_names_who_imported_new_parcels_and_owners(client):
    """The audit trail of a COPY import: created rows (COPY) and changed rows (UPDATE) alike name
    the acting user and the upload; the audit page says what in words, by cadastre number."""
    from django.urls import reverse
    from pghistory.models import Events

    from parcels.services import user_create

    authority = user_create(username="aut", role="authority", password=None)
    assert parcels_import(acting_user=authority, data=GOOD.encode(), source="upload 7 padron.csv").ok
    changed = GOOD.replace("P-1,Ana Pagán,ana@example.pr,private,100,", "P-1,Ana Pagán,ana@example.pr,private,120,")
    assert parcels_import(acting_user=authority, data=changed.encode(), source="upload 8 padron.csv").ok
    # the registry's rows the imports wrote (user_create's own staff-profile row is not the import's)
    events = list(Events.objects.filter(pgh_model__in=["parcels.ParcelEvent", "parcels.OwnerEvent"]).order_by("pgh_id"))
    assert {e.pgh_label for e in events} == {"insert", "update"} and len(events) > 3
    assert all(e.pgh_context and e.pgh_context["username"] == "aut" for e in events), [e.pgh_context for e in events]
    client.force_login(authority)
    # the parcels' history (the test database's own migrations recorded the office's details too)
    page = client.get(reverse("parcels:audit"), {"what": "parcels.ParcelEvent"}).content.decode()
    assert "Alta · predio P-1" in page and "Cambio · predio P-1" in page and "upload 8 padron.csv" in page
    assert "parcels.Parcel " not in page and "sistema" not in page
