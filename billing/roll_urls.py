"""The roll's finalization and corrections, joined to ``levy.urls`` under the ``levy``
namespace by the project's URLconf (same paths and names as before they moved to billing)."""

from django.urls import path

from levy.urls import FiscalYearConverter  # noqa: F401  (registers the ``fiscal_year`` converter)

from . import roll_views

urlpatterns = [
    path("<fiscal_year:year>/finalizar/", roll_views.finalize, name="finalize"),
    path("<fiscal_year:year>/correcciones/", roll_views.corrections, name="corrections"),
]
