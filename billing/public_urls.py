from django.urls import path

from . import public_views

app_name = "owed"
urlpatterns = [
    path("", public_views.owed, name="lookup"),
]
