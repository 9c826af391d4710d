from django.urls import path, register_converter

from . import views


class FiscalYearConverter:
    """``2026-2027`` in the URL; the view checks that the second year follows the first."""

    regex = r"[0-9]{4}-[0-9]{4}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return str(value)


register_converter(FiscalYearConverter, "fiscal_year")

app_name = "levy"  # the project URLconf adds billing.web.urls' roll_patterns (finalize, corrections) to this namespace
urlpatterns = [
    path("", views.year_list, name="year-list"),
    path("nuevo/", views.year_start, name="year-start"),
    path("parametros/", views.parameters, name="parameters"),
    path("<fiscal_year:year>/estimados/", views.estimates, name="estimates"),
    path("<fiscal_year:year>/estimados/certificar/", views.estimate_certify, name="estimate-certify"),
    path("<fiscal_year:year>/hoja/", views.worksheet, name="worksheet"),
    path("<fiscal_year:year>/calcular/", views.compute, name="compute"),
    path("<fiscal_year:year>/calcular/<int:pk>/", views.compute_progress, name="compute-progress"),
    path("<fiscal_year:year>/padron/", views.roll, name="roll"),
    path("<fiscal_year:year>/simulacion/", views.whatif, name="whatif"),
]
