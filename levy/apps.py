from django.apps import AppConfig


class LevyConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "levy"

    def ready(self) -> None:
        from . import tasks  # noqa: F401  (registers the levy job handlers)
