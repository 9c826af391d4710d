from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ParcelsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "parcels"
    verbose_name = _("Registro de predios")

    def ready(self) -> None:
        from . import tasks  # noqa: F401  (registers the job handlers)
