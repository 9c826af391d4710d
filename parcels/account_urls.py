from django.urls import path

from . import second_factor_views

app_name = "account"
urlpatterns = [
    path("seguridad/", second_factor_views.security, name="security"),
    path("verificar/", second_factor_views.verify, name="verify"),
    path("inscribir/", second_factor_views.enrol, name="enrol"),
    path("clave/cambiar/", second_factor_views.password_change, name="password-change"),
    path("seguridad/codigos/", second_factor_views.recovery_codes, name="recovery-codes"),
]
