from django.urls import path

from . import views

app_name = "parcels"
urlpatterns = [
    path("predios/", views.parcel_list, name="parcel-list"),
    path("predios/nuevo/", views.parcel_create, name="parcel-create"),
    path("predios/<int:pk>/", views.parcel_detail, name="parcel-detail"),
    path("predios/<int:pk>/editar/", views.parcel_edit, name="parcel-edit"),
    path("predios/<int:pk>/traspaso/", views.parcel_transfer, name="parcel-transfer"),
    path("duenos/", views.owner_list, name="owner-list"),
    path("duenos/nuevo/", views.owner_create, name="owner-create"),
    path("duenos/<int:pk>/", views.owner_detail, name="owner-detail"),
    path("duenos/<int:pk>/editar/", views.owner_edit, name="owner-edit"),
    path("duenos/<int:pk>/confirmar-direccion/", views.owner_address_confirm, name="owner-address-confirm"),
    path("importar/", views.import_upload, name="import-upload"),
    path("importar/plantilla.csv", views.import_template, name="import-template"),
    path("importar/<int:pk>/", views.import_detail, name="import-detail"),
    path("importar/<int:pk>/confirmar/", views.import_confirm, name="import-confirm"),
    path("trabajos/<int:pk>/", views.job_status, name="job-status"),
    path("auditoria/", views.audit, name="audit"),
]
