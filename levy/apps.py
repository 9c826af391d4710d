from django.apps import AppConfig


class LevyConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "levy"
