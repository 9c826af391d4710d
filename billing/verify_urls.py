from django.urls import path

from . import verify_views

app_name = "verify"
urlpatterns = [
    path("<str:code>/", verify_views.document, name="document"),
]
