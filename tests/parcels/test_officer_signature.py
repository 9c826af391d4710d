"""What an officer signs with: the User's first and last name and ``StaffProfile.title``."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.utils import translation

from parcels.models import StaffProfile
from parcels.officers import OfficerSignatureMissing, officer_signature
from parcels.roles import ROLES
from parcels.services import staff_profile_set, user_create
from tests.conftest import PASSWORD
from tests.otp import app_device

User = get_user_model()


@pytest.fixture
def users(make_user, owner_a):
    """One user per role, none with a name or a title yet (the factory gives staff both; these
    tests give them one by one)."""
    return {role: make_user(f"u_{role}", role, owner_a if role == "landowner" else None, full_name="", title="") for role in ROLES}


@pytest.fixture(autouse=True)
def spanish():
    """The messages are compared in Spanish, whatever language an earlier test left active."""
    with translation.override("es-pr"):
        yield


@pytest.mark.django_db
def test_officer_signature_is_the_full_name_and_title(users):
    staff_profile_set(acting_user=users["authority"], user=users["hacienda"], full_name="  María del Carmen  Soto ",
                      title="Colector de Rentas Internas")
    user = User.objects.get(pk=users["hacienda"].pk)
    assert (user.first_name, user.last_name) == ("María", "del Carmen Soto")
    assert officer_signature(user) == ("María del Carmen Soto", "Colector de Rentas Internas")
    profile = StaffProfile.objects.get(user=user)
    assert profile.events.get(pgh_label="insert").pgh_context["username"] == users["authority"].username


@pytest.mark.django_db
def test_officer_signature_refuses_without_name_or_title(users):
    user = users["hacienda"]
    with pytest.raises(OfficerSignatureMissing) as caught:
        officer_signature(user)
    assert caught.value.messages == [
        "No se puede emitir: al usuario «u_hacienda» le falta el nombre completo y el cargo para firmar. Un administrador "
        "lo completa en el administrador del sitio (Usuarios) o con «manage.py create_user … --full-name … --title …»."
    ]
    assert isinstance(caught.value, ValidationError) and caught.value.code == "officer_signature_missing"
    staff_profile_set(acting_user=None, user=user, full_name="Ana Rivera")
    with pytest.raises(OfficerSignatureMissing, match="le falta el cargo para firmar"):
        officer_signature(User.objects.get(pk=user.pk))
    staff_profile_set(acting_user=None, user=user, full_name="", title="Director de Recaudaciones")
    with pytest.raises(OfficerSignatureMissing, match="le falta el nombre completo para firmar"):
        officer_signature(User.objects.get(pk=user.pk))
    staff_profile_set(acting_user=None, user=user, full_name="Ana Rivera", title="   ")
    with pytest.raises(OfficerSignatureMissing, match="le falta el cargo para firmar"):
        officer_signature(User.objects.get(pk=user.pk))


@pytest.mark.django_db
def test_create_user_sets_the_name_and_title(capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("Una-Clave-Larga-2026\n"))
    call_command("create_user", "arivera", "--role", "collector", "--full-name", "Ana Rivera Soto",
                 "--title", "Colector de Rentas Internas", "--password-stdin")
    assert officer_signature(User.objects.get(username="arivera")) == ("Ana Rivera Soto", "Colector de Rentas Internas")
    call_command("create_user", "sinfirma", "--role", "hacienda")
    assert "sinfirma cannot sign certificates or notices until a full name and a title are set" in capsys.readouterr().out


@pytest.mark.django_db
def test_a_landowner_gets_no_title(owner_a):
    with pytest.raises(CommandError, match="Solo el personal tiene cargo"):
        call_command("create_user", "dueno", "--role", "landowner", "--owner", "OWN-A", "--title", "Colector")
    assert not User.objects.filter(username="dueno").exists()
    user = user_create(username="dueno2", role="landowner", owner=owner_a, full_name="Carmen Irizarry Vélez")
    assert user.get_full_name() == "Carmen Irizarry Vélez" and not StaffProfile.objects.filter(user=user).exists()


@pytest.mark.django_db
def test_the_admin_user_page_saves_the_name_and_title(client, users):
    admin = User.objects.create_superuser("it_admin", "it@example.pr", PASSWORD)
    app_device(admin)
    client.force_login(admin)
    target = users["supervisor"]
    url = f"/admin/auth/user/{target.pk}/change/"
    page = client.get(url)
    assert page.status_code == 200 and "staff_profile-0-title" in page.content.decode()
    data = {
        "username": target.username, "first_name": "Héctor", "last_name": "Montalvo Seda", "email": "",
        "is_active": "on", "groups": [g.pk for g in target.groups.all()],
        "last_login_0": "", "last_login_1": "", "date_joined_0": "01/12/2026", "date_joined_1": "08:00:00",
        "staff_profile-TOTAL_FORMS": "1", "staff_profile-INITIAL_FORMS": "0", "staff_profile-MIN_NUM_FORMS": "0",
        "staff_profile-MAX_NUM_FORMS": "1", "staff_profile-0-title": "Director de Recaudaciones",
        "staff_profile-0-user": str(target.pk),
    }
    response = client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else response
    assert officer_signature(User.objects.get(pk=target.pk)) == ("Héctor Montalvo Seda", "Director de Recaudaciones")
    profile = StaffProfile.objects.get(user=target)
    assert profile.events.get(pgh_label="insert").pgh_context["user"] == admin.pk  # the history middleware


@pytest.mark.django_db
def test_the_audit_page_lists_a_title_change_with_who_made_it(client, users):
    staff_profile_set(acting_user=users["authority"], user=users["collector"], title="Colector de Rentas Internas")
    client.force_login(users["authority"])
    page = client.get("/auditoria/", {"event": "changes", "what": "parcels.StaffProfileEvent"}).content.decode()
    assert f"Alta · cargo de funcionario «Colector de Rentas Internas» (#{users['collector'].pk})" in page
    assert "u_authority" in page
