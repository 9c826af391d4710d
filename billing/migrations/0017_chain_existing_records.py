"""Chains the records issued before the chain existed (``billing.chain.backfill``): each series in
number order, the series interleaved by issue time so each day close records the heads as they
then were. Nothing to undo: the links are append-only, and reversing leaves them."""

from django.db import migrations


def chain_existing(apps, schema_editor):
    from billing import chain

    chain.backfill()


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0016_books_checkpoint"),
        ("levy", "0009_chain_link"),
    ]

    operations = [migrations.RunPython(chain_existing, migrations.RunPython.noop)]
