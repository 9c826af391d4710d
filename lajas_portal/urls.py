from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

import levy.urls
from billing.web import portal
from billing.web import urls as billing_urls

urlpatterns = [
    path("", billing_urls.home_page, name="home"),
    path("cuenta/entrar/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("cuenta/salir/", auth_views.LogoutView.as_view(), name="logout"),
    path("cuenta/clave/olvido/", auth_views.PasswordResetView.as_view(
        form_class=portal.PasswordResetForm, email_template_name="registration/password_reset_email.txt",
        html_email_template_name="registration/password_reset_email.html",
    ), name="password_reset"),
    path("cuenta/clave/olvido/enviado/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("cuenta/clave/nueva/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(
        form_class=portal.SetPasswordForm,
    ), name="password_reset_confirm"),
    path("cuenta/clave/lista/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("cuenta/", include("parcels.account_urls")),
    path("portal/", include((billing_urls.portal_patterns, "portal"))),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    # The levy's pages and, in the same ``levy`` namespace, the roll's finalization and corrections
    # (billing's, since they create charges): levy imports nothing of billing.
    path("contribucion/", include((levy.urls.urlpatterns + billing_urls.roll_patterns, "levy"))),
    path("colecturia/", include((billing_urls.counter_patterns, "billing"))),
    path("cobros/", include((billing_urls.collections_patterns, "collections"))),
    path("verificar/", include((billing_urls.verify_patterns, "verify"))),
    path("cuanto-debo/", include((billing_urls.owed_patterns, "owed"))),
    path("auditoria/libros/", include((billing_urls.books_patterns, "books"))),
    path("auditoria/registros/", include((billing_urls.registers_patterns, "registers"))),
    path("", include("parcels.urls")),
]
