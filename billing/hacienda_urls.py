"""Hacienda's and the Authority's collection pages, under ``/cobros/`` (namespace ``collections``)."""

from django.urls import path

from . import hacienda_views as views
from . import office_views

app_name = "collections"
urlpatterns = [
    path("morosos/", views.delinquent, name="delinquent"),
    path("predio/<int:pk>/embargo/", views.seizure, name="seizure"),
    path("embargo/paso/<int:pk>/pdf/", views.seizure_pdf, name="seizure-pdf"),
    path("predio/<int:pk>/certificaciones/", views.certificates, name="certificates"),
    path("certificacion/<int:pk>/pdf/", views.certificate_pdf, name="certificate-pdf"),
    path("resumen/", views.dashboard, name="dashboard"),
    path("agua/", views.water, name="water"),
    path("agua/importar/", views.water_import, name="water-import"),
    path("agua/facturar/", views.water_bill, name="water-bill"),
    path("cierres/", views.closures, name="closures"),
    path("oficinas/", office_views.office_list, name="offices"),
    path("oficinas/<str:code>/", office_views.office_edit, name="office-edit"),
    path("avisos/", views.bill_batches, name="bill-batches"),
    path("avisos/<int:pk>/", views.bill_batch, name="bill-batch"),
    path("avisos/<int:pk>/parte/<int:index>/", views.bill_batch_part, name="bill-batch-part"),
]
