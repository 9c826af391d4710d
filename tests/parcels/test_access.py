"""Role access to every page of the registry; a landowner gets 404 for anything not theirs."""

import pytest
from django.urls import reverse

READERS = {"authority", "hacienda", "collector", "supervisor", "auditor"}


def pages(parcel, owner):
    return {
        reverse("parcels:parcel-list"): READERS,
        reverse("parcels:parcel-create"): {"authority"},
        reverse("parcels:parcel-edit", args=[parcel.pk]): {"authority"},
        reverse("parcels:parcel-transfer", args=[parcel.pk]): {"authority"},
        reverse("parcels:owner-list"): READERS,
        reverse("parcels:owner-create"): {"authority"},
        reverse("parcels:owner-detail", args=[owner.pk]): READERS,
        reverse("parcels:owner-edit", args=[owner.pk]): {"authority"},
        reverse("parcels:import-upload"): {"authority"},
        reverse("parcels:audit"): READERS,
    }


@pytest.mark.django_db
def test_anonymous_is_sent_to_login(client, parcel_a, owner_a):
    for url in [*pages(parcel_a, owner_a), reverse("home"), reverse("parcels:parcel-detail", args=[parcel_a.pk])]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url


@pytest.mark.django_db
def test_each_role_gets_exactly_its_pages(client, users, parcel_a, owner_a):
    for role, user in users.items():
        client.force_login(user)
        for url, allowed in pages(parcel_a, owner_a).items():
            status = client.get(url).status_code
            assert status == (200 if role in allowed else 403), (role, url, status)


@pytest.mark.django_db
def test_landowner_sees_own_parcel_and_404_for_others(client, users, parcel_a, parcel_b):
    client.force_login(users["landowner"])
    home = client.get(reverse("home")).content.decode()
    assert "LAJ-A1" in home and "LAJ-B1" not in home
    assert client.get(reverse("parcels:parcel-detail", args=[parcel_a.pk])).status_code == 200
    assert client.get(reverse("parcels:parcel-detail", args=[parcel_b.pk])).status_code == 404
    assert client.get(reverse("parcels:parcel-detail", args=[999999])).status_code == 404


@pytest.mark.django_db
def test_staff_see_any_parcel_with_history(client, users, parcel_b):
    client.force_login(users["auditor"])
    response = client.get(reverse("parcels:parcel-detail", args=[parcel_b.pk]))
    assert response.status_code == 200 and "Historial" in response.content.decode()


@pytest.mark.django_db
def test_authority_creates_a_parcel_from_the_form(client, users, owner_a):
    client.force_login(users["authority"])
    response = client.post(reverse("parcels:parcel-create"), {
        "parcel_id": "NEW-1", "owner_key": "OWN-A", "area_unit": "cuerda", "gravity_area": "10", "pumped_area": "0",
        "inclusion": "permanent", "water_since": "2020-05-01", "credit_percent": "0",
    })
    assert response.status_code == 302
    from parcels.models import Parcel

    assert str(Parcel.objects.get(parcel_id="NEW-1").gravity_acres) == "9.7122"
    bad = client.post(reverse("parcels:parcel-create"), {
        "parcel_id": "NEW-2", "owner_key": "NOPE", "area_unit": "acre", "gravity_area": "0", "pumped_area": "0",
        "inclusion": "permanent", "credit_percent": "150",
    })
    assert bad.status_code == 200
    text = bad.content.decode()
    assert "NOPE" in text and not Parcel.objects.filter(parcel_id="NEW-2").exists()


@pytest.mark.django_db
def test_upload_page_previews_then_applies(client, users, django_capture_on_commit_callbacks):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from parcels.models import ImportUpload, Parcel

    client.force_login(users["authority"])
    data = b"parcel_id,owner_name,owner_email,owner_kind,gravity_acres,pumped_acres,inclusion,water_since,credit_percent\nU-1,Ana,,private,5,0,permanent,2001-01-01,0\n"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("parcels:import-upload"), {"file": SimpleUploadedFile("p.csv", data, "text/csv")})
    assert response.status_code == 302
    upload = ImportUpload.objects.get()
    assert upload.status == "ready" and upload.summary["created"] == 1
    assert not Parcel.objects.exists()
    detail = client.get(reverse("parcels:import-detail", args=[upload.pk])).content.decode()
    assert "Confirmar" in detail
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("parcels:import-confirm", args=[upload.pk]))
    upload.refresh_from_db()
    assert upload.status == "applied" and Parcel.objects.filter(parcel_id="U-1").exists()


@pytest.mark.django_db
def test_five_failed_logins_lock_that_user_from_that_address(client, users):
    url = reverse("login")
    for _ in range(5):
        response = client.post(url, {"username": "u_hacienda", "password": "wrong"}, REMOTE_ADDR="10.0.0.5")
        assert response.status_code in (200, 429)
    locked = client.post(url, {"username": "u_hacienda", "password": "Correct-Horse-Battery-9"}, REMOTE_ADDR="10.0.0.5")
    assert locked.status_code == 429 and "bloqueada" in locked.content.decode()
    # the same user from another address, and another user from that address, still sign in
    other = client.post(url, {"username": "u_hacienda", "password": "Correct-Horse-Battery-9"}, REMOTE_ADDR="10.0.0.6")
    assert other.status_code == 302


@pytest.mark.django_db
def test_sessions_expire_after_30_idle_minutes(client, users, settings):
    assert settings.SESSION_COOKIE_AGE == 30 * 60 and settings.SESSION_SAVE_EVERY_REQUEST
    client.force_login(users["auditor"])
    client.get(reverse("home"))
    session = client.session
    assert 29 * 60 < session.get_expiry_age() <= 30 * 60


@pytest.mark.django_db
def test_language_switch_to_english(client, users):
    client.force_login(users["auditor"])
    client.post(reverse("set_language"), {"language": "en", "next": "/"})
    page = client.get(reverse("parcels:parcel-list")).content.decode()
    assert 'lang="en"' in page and "Parcels" in page
