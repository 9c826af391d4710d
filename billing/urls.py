from django.urls import path

from . import views

app_name = "billing"
urlpatterns = [
    path("", views.counter, name="counter"),
    path("predio/<int:pk>/", views.counter_parcel, name="counter-parcel"),
    path("predio/<int:pk>/estado/", views.statement, name="statement"),
    path("predio/<int:pk>/libro/", views.ledger, name="ledger"),
    path("recibo/<int:pk>/", views.receipt, name="receipt"),
    path("recibo/<int:pk>/pdf/", views.receipt_pdf, name="receipt-pdf"),
    path("documento/<int:pk>/pdf/", views.document_pdf, name="document-pdf"),
    path("pago/<int:pk>/anular/", views.void, name="void"),
    path("cuadre/", views.day_report, name="day-report"),
    path("cuadre/cerrar/", views.day_close, name="day-close"),
    path("sesion/seguir/", views.session_extend, name="session-extend"),
    path("predio/<int:pk>/reembolso/", views.refund, name="refund"),
]
