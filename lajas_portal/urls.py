from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

import billing.roll_urls
import levy.urls
from billing import home_views, portal_forms

urlpatterns = [
    path("", home_views.home, name="home"),
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
    path("portal/", include("billing.portal_urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    # The levy's pages and, in the same ``levy`` namespace, the roll's finalization and corrections
    # (billing's, since they create charges): levy imports nothing of billing.
    path("contribucion/", include((levy.urls.urlpatterns + billing.roll_urls.urlpatterns, "levy"))),
    path("colecturia/", include("billing.urls")),
    path("cobros/", include("billing.hacienda_urls")),
    path("verificar/", include("billing.verify_urls")),
    path("cuanto-debo/", include("billing.public_urls")),
    path("auditoria/libros/", include("billing.books_urls")),
    path("", include("parcels.urls")),
]
