from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.utils.translation import gettext_lazy as _


def restrict_trigger_skipping(sender, using, **kwargs) -> None:
    from .database import trigger_skip_restrict

    trigger_skip_restrict(using=using)


class ParcelsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "parcels"
    verbose_name = _("Registro de predios")

    def ready(self) -> None:
        from . import tasks  # noqa: F401  (registers the job handlers)

        # After the migrations, which may have installed pgtrigger's permissive version again.
        post_migrate.connect(restrict_trigger_skipping, sender=self)
