"""System checks of the billing app.

- billing.E001 (``check --deploy``, DEBUG off): the anchor signing key (``ANCHOR_SIGNING_KEY_FILE``)
  is set and readable. Without it no signed anchor is written, and the books can again be
  rewritten by whoever owns the database (``billing.anchors``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, register

from . import anchors


@register(Tags.security, deploy=True)
def anchor_signing_key(app_configs: Any, **kwargs: Any) -> list[Error]:
    if settings.DEBUG:
        return []
    problem = anchors.key_problem()
    if problem is None:
        return []
    return [Error(
        f"No usable anchor signing key: {problem}. Without it no signed anchor of the books is written outside the "
        "database, and a database owner could rewrite the books undetected.",
        hint="Run `manage.py anchor keygen --out /run/secrets/anchor_signing_key.pem`, mount the file into the app and "
             "worker containers only, set ANCHOR_SIGNING_KEY_FILE to its path and publish the public key (README, Anchors).",
        id="billing.E001",
    )]
