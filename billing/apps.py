from django.apps import AppConfig


class BillingConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "billing"

    def ready(self) -> None:
        from . import bulk  # noqa: F401  (registers the bill_batch task; tasks.py modules are found by procrastinate)
