from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from parcels import views as parcel_views

urlpatterns = [
    path("", parcel_views.home, name="home"),
    path("cuenta/entrar/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("cuenta/salir/", auth_views.LogoutView.as_view(), name="logout"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    path("contribucion/", include("levy.urls")),
    path("colecturia/", include("billing.urls")),
    path("cobros/", include("billing.hacienda_urls")),
    path("", include("parcels.urls")),
]
