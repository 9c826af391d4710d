import re
from datetime import date
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.urls import reverse

from parcels.models import Parcel, cuerdas_to_acres
from parcels.selectors import parcel_history
from parcels.services import acting, parcel_transfer, parcel_update


def test_cuerda_conversion_is_exact_to_four_places():
    # 1 cuerda = 3,930.395625 m2 / 4,046.8564224 m2 per acre = 0.97122…
    assert cuerdas_to_acres(Decimal("1")) == Decimal("0.9712")
    assert cuerdas_to_acres(Decimal("100")) == Decimal("97.1222")
    assert cuerdas_to_acres(Decimal("4046.8564224")) == Decimal("3930.3956")


@pytest.mark.django_db
def test_parcel_in_cuerdas_keeps_the_unit_typed(make_parcel, owner_a):
    parcel = make_parcel("C-1", owner_a, gravity="100", pumped="10", unit="cuerda")
    parcel.refresh_from_db()
    assert parcel.area_unit == "cuerda"
    assert parcel.gravity_area_entered == Decimal("100") and parcel.gravity_acres == Decimal("97.1222")
    assert parcel.pumped_acres == Decimal("9.7122")


@pytest.mark.django_db
def test_database_refuses_bad_parcels(parcel_a):
    with pytest.raises(IntegrityError), transaction.atomic():
        Parcel.objects.filter(pk=parcel_a.pk).update(credit_percent=Decimal("101"))
    with pytest.raises(IntegrityError), transaction.atomic():
        Parcel.objects.filter(pk=parcel_a.pk).update(gravity_acres=0, pumped_acres=0)


@pytest.mark.django_db
def test_history_records_who_changed_what(parcel_a, users):
    parcel_update(acting_user=users["authority"], parcel=parcel_a, area_unit="acre", gravity_area=Decimal("50"),
                  pumped_area=Decimal("0"), inclusion="permanent", water_since=date(2000, 1, 1), credit_percent=Decimal("25"))
    events = list(parcel_history(parcel=parcel_a))
    update = next(e for e in events if e.pgh_label == "update")
    assert update.pgh_context["username"] == users["authority"].username
    before, after = update.pgh_diff["gravity_acres"]
    assert (Decimal(str(before)), Decimal(str(after))) == (Decimal("42.5"), Decimal("50"))


@pytest.mark.django_db
def test_history_catches_bulk_and_raw_updates(parcel_a, users):
    with acting(users["hacienda"]):
        Parcel.objects.filter(pk=parcel_a.pk).update(inclusion="excluded")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE parcels_parcel SET credit_percent = 5 WHERE id = %s", [parcel_a.pk])
    updates = [e for e in parcel_history(parcel=parcel_a) if e.pgh_label == "update"]
    # Both writes bypass the ORM's save(); the triggers still record each one.
    assert sorted(e.pgh_diff.popitem()[0] for e in updates) == ["credit_percent", "inclusion"]
    assert all(e.pgh_context["username"] == users["hacienda"].username for e in updates)


@pytest.mark.django_db
def test_transfer_moves_the_parcel_to_the_new_owner(parcel_a, owner_b, users):
    transfer = parcel_transfer(acting_user=users["authority"], parcel=parcel_a, to_owner=owner_b, effective_on=date(2026, 1, 15))
    parcel_a.refresh_from_db()
    assert parcel_a.owner == owner_b and transfer.from_owner.owner_key == "OWN-A"
    with pytest.raises(ValidationError):
        parcel_transfer(acting_user=users["authority"], parcel=parcel_a, to_owner=owner_b, effective_on=date(2026, 1, 16))


@pytest.mark.django_db
def test_create_user_command(owner_a, capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("Una-Clave-Larga-2026\n"))
    call_command("create_user", "maria", "--role", "landowner", "--owner", "OWN-A", "--email", "m@example.pr", "--password-stdin")
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username="maria")
    assert list(user.groups.values_list("name", flat=True)) == ["landowner"]
    assert user.owner_account.owner == owner_a and user.check_password("Una-Clave-Larga-2026")
    with pytest.raises(CommandError, match="unknown role"):
        call_command("create_user", "pepe", "--role", "king")
    with pytest.raises(CommandError, match="unknown owner"):
        call_command("create_user", "pepe", "--role", "landowner", "--owner", "NOPE")
    assert not get_user_model().objects.filter(username="pepe").exists()


@pytest.mark.django_db
def test_parcel_list_filters_and_query_budget(client, users, parcel_a, parcel_b, django_assert_max_num_queries):
    client.force_login(users["hacienda"])
    with django_assert_max_num_queries(9):  # 8, and the second-factor device of the session
        response = client.get(reverse("parcels:parcel-list"), {"irrigation": "pumped"})
    assert response.status_code == 200
    content = response.content.decode()
    assert "LAJ-B1" in content and "LAJ-A1" not in content
    response = client.get(reverse("parcels:parcel-list"), {"q": "carmen"})
    assert "LAJ-A1" in response.content.decode() and "LAJ-B1" not in response.content.decode()
    for value, shown, hidden in [("yes", "LAJ-A1", "LAJ-B1"), ("no", "LAJ-B1", "LAJ-A1")]:  # parcel_a has a 25 % credit
        content = client.get(reverse("parcels:parcel-list"), {"has_credit": value}).content.decode()
        assert shown in content and hidden not in content, value
    content = client.get(reverse("parcels:parcel-list"), {"o": "-gravity_acres"}).content.decode()
    assert content.index("LAJ-A1") < content.index("LAJ-B1")
    assert ">Acres por gravedad (descendente)</option>" in content and "Gravity acres" not in content and "Desconocido" not in content


@pytest.mark.django_db
def test_seed_demo_refuses_production(settings):
    settings.DEMO_DATA_ALLOWED = False
    with pytest.raises(CommandError, match="production"):
        call_command("seed_demo")


@pytest.mark.django_db
def test_seed_demo_builds_a_district_with_a_finalized_levy_and_payments(capsys, settings):
    from billing.models import Payment
    from levy.models import Levy

    call_command("seed_demo", "--parcels", "80")
    out = capsys.readouterr().out
    assert "terrateniente" in out and "Lajas-2026-landowner" in out
    # each demo staff user has an app with the fixed secret printed beside the password
    from base64 import b32encode

    from django_otp.plugins.otp_totp.models import TOTPDevice

    from parcels.second_factor import demo_totp_key

    device = TOTPDevice.objects.get(user__username="hacienda", confirmed=True)
    assert device.key == demo_totp_key("hacienda")
    secret = b32encode(bytes.fromhex(demo_totp_key("hacienda"))).decode()
    assert re.search(rf"hacienda\s+Lajas-2026-hacienda\s+{secret}\s+\(hacienda\)", out)
    assert re.search(r"terrateniente\s+Lajas-2026-landowner\s+\(password only\)", out)
    assert not TOTPDevice.objects.filter(user__username="terrateniente").exists()
    assert Parcel.objects.count() == 80
    assert Levy.objects.get(fiscal_year__label="2026-2027").status == "final"
    assert Payment.objects.filter(parcel__parcel_id="LAJ-000001").exists()
    assert not Payment.objects.filter(parcel__parcel_id="LAJ-000002").exists()
    # the demo staff sign with a name and a title; the demo receipts say who received them by name
    from parcels.officers import officer_signature

    staff = get_user_model().objects
    assert officer_signature(staff.get(username="hacienda")) == ("Gladys Montalvo Seda", "Directora de Recaudaciones")
    assert officer_signature(staff.get(username="colector")) == ("Ana Rivera Soto", "Colectora de Rentas Internas")
    assert officer_signature(staff.get(username="auditor")) == ("Noemí Cintrón Padilla", "Auditora Interna")
    # the season is recorded on seeding day, so its payments are back-dated: by the demo supervisor,
    # with the reason on each receipt (issue 11, finding 7)
    first = Payment.objects.first()
    assert first.backdated and first.backdate_reason == "Datos de demostración"
    assert (first.receipt.snapshot["collector_name"], first.receipt.snapshot["backdate_reason"]) == (
        "Edwin Figueroa Ramos", "Datos de demostración")
    # `make run` shows which step of the demo it is at, and the address the receipts link to.
    steps = [line for line in out.splitlines() if line.startswith("demo ")]
    assert [line.split(":")[0] for line in steps] == ["demo 1 of 4", "demo 2 of 4", "demo 3 of 4", "demo 4 of 4"]
    assert steps[0].startswith("demo 1 of 4: the parcel registry (80 parcels)... 80 parcels (")
    assert f"linking to {settings.SITE_URL}... {Payment.objects.count()} payments recorded (" in steps[3]
    call_command("seed_demo", "--parcels", "80")  # a second run changes nothing
    assert Parcel.objects.count() == 80
    assert "demo parcels left as they are" in capsys.readouterr().out
