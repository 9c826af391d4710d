from django.apps import AppConfig


class BillingConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "billing"

    def ready(self) -> None:
        # bulk registers the bill_batch task (tasks.py modules are found by procrastinate), anchors
        # the billing.anchor task, checks the system check billing.E001.
        from . import anchors, bulk, chain, checks  # noqa: F401

        # An anchor within a minute of each issued record, deferred in the issuing transaction.
        chain.record_chained.connect(anchors.on_record_chained, dispatch_uid="billing.anchors")
