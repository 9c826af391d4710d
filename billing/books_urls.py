"""The recorded checks of the books, under ``/auditoria/libros/`` (namespace ``books``)."""

from django.urls import path

from . import books_views

app_name = "books"
urlpatterns = [
    path("", books_views.checks, name="checks"),
]
