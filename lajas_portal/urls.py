from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from parcels import portal_forms
from parcels import views as parcel_views

urlpatterns = [
    path("", parcel_views.home, name="home"),
    path("cuenta/entrar/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("cuenta/salir/", auth_views.LogoutView.as_view(), name="logout"),
    path("cuenta/clave/olvido/", auth_views.PasswordResetView.as_view(
        form_class=portal_forms.PasswordResetForm, email_template_name="registration/password_reset_email.txt",
        html_email_template_name="registration/password_reset_email.html",
    ), name="password_reset"),
    path("cuenta/clave/olvido/enviado/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("cuenta/clave/nueva/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(
        form_class=portal_forms.SetPasswordForm,
    ), name="password_reset_confirm"),
    path("cuenta/clave/lista/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("cuenta/", include("parcels.account_urls")),
    path("portal/", include("parcels.portal_urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    path("contribucion/", include("levy.urls")),
    path("colecturia/", include("billing.urls")),
    path("cobros/", include("billing.hacienda_urls")),
    path("verificar/", include("billing.verify_urls")),
    path("auditoria/libros/", include("billing.books_urls")),
    path("", include("parcels.urls")),
]
