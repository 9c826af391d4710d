from django.urls import path

from . import portal_views

app_name = "portal"
urlpatterns = [
    path("crear-cuenta/", portal_views.claim, name="claim"),
    path("invitar/", portal_views.invite, name="invite"),
    path("plazo/<int:pk>/aviso/", portal_views.installment_bill, name="installment-bill"),
    path("predio/<int:pk>/estado-de-cuenta/", portal_views.statement_pdf, name="statement-pdf"),
    path("activar/<uidb64>/<token>/", portal_views.ActivateView.as_view(), name="activate"),
]
