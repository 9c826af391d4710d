from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.utils.translation import gettext_lazy as _


def cache_table_create(*, using: str = "default", **kwargs: Any) -> None:
    """The shared cache's table (settings.CACHES, a DatabaseCache unless CACHE_URL says Redis)
    after every ``migrate``: wherever the app is migrated (``make run``, the web container's start,
    CI, the test database), whatever CACHE_URL said when the migrations first ran. Nothing for
    Redis, nothing when the table exists."""
    from django.core.management import call_command

    call_command("createcachetable", database=using, verbosity=0)


def restrict_trigger_skipping(sender, using, **kwargs) -> None:
    from .database import trigger_skip_restrict

    trigger_skip_restrict(using=using)


class ParcelsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "parcels"
    verbose_name = _("Registro de predios")

    def ready(self) -> None:
        from . import signals  # noqa: F401  (registers the access-log receivers; procrastinate finds tasks.py)

        post_migrate.connect(cache_table_create, sender=self, dispatch_uid="parcels.cache_table_create")
        # After the migrations, which may have installed pgtrigger's permissive version again.
        post_migrate.connect(restrict_trigger_skipping, sender=self)
