from django.urls import path

from . import verify_views

app_name = "verify"
urlpatterns = [
    path("clave-publica/", verify_views.public_key, name="public-key"),  # a verification code always holds a "."
    path("<str:code>/", verify_views.document, name="document"),
]
