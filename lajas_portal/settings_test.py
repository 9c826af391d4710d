"""Test settings: only what tests need differs (fast hasher, email, media, a test key)."""

import os
import tempfile

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production-use-0123456789")

from .settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# A test that starts a worker process hands it its MEDIA_ROOT through TEST_MEDIA_ROOT.
MEDIA_ROOT = Path(os.environ.get("TEST_MEDIA_ROOT") or tempfile.mkdtemp(prefix="lajas-media-"))  # noqa: F405
STATIC_ROOT = Path(tempfile.mkdtemp(prefix="lajas-static-"))  # noqa: F405
DEMO_DATA_ALLOWED = True
SECURE_SSL_REDIRECT = False
STORAGES["staticfiles"] = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}  # noqa: F405
# Anchors (billing.anchors) go to a folder of their own, outside MEDIA_ROOT; no signing key unless a test sets one.
ANCHOR_DIR = Path(os.environ.get("TEST_ANCHOR_DIR") or tempfile.mkdtemp(prefix="lajas-anchors-"))  # noqa: F405
ANCHOR_SIGNING_KEY_FILE = ""
ANCHOR_PUBLIC_KEY_FILE = ""
ANCHOR_EMAIL = []
STORAGES["anchors"] = {"BACKEND": "billing.storage.WriteOnceStorage",  # noqa: F405
                       "OPTIONS": {"location": str(ANCHOR_DIR), "deletable": False}}
# Issued PDFs (billing.storage.document_storage) follow MEDIA_ROOT: one folder per test process (xdist worker).
STORAGES["documents"] = {"BACKEND": "billing.storage.WriteOnceStorage", "OPTIONS": {"deletable": False}}  # noqa: F405
# Issue 20: a `replica` alias that is the test database itself (Django's test mirror), so the router's
# choice can be checked per view (tests/test_replica.py turns REPORTS_FROM_REPLICA on there only:
# a test's own transaction is not visible through a second connection).
DATABASES.setdefault("replica", {**DATABASES["default"], "TEST": {"MIRROR": "default"}})  # noqa: F405
REPORTS_FROM_REPLICA = False
