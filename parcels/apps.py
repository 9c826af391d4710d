from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ParcelsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "parcels"
    verbose_name = _("Registro de predios")
