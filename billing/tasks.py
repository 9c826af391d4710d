"""Periodic tasks, run by the procrastinate worker (``procrastinate.contrib.django`` imports this
module when Django starts: it autodiscovers the ``tasks`` module of every installed app).

- ``books_check_nightly`` every night at ``BOOKS_CHECK_CRON`` (default 02:30 in Puerto Rico):
  checks the books (and compares them with the newest signed anchor, ``billing.anchors``), records the run (``BooksCheck``, shown on ``/auditoria/libros/``) and, when
  something differs, e-mails ``ADMINS`` what differed and the control totals.
- ``backup_nightly`` runs ``manage.py backup`` at ``BACKUP_CRON``, and only when it is set.
- ``billing.bill_batch_part`` (issue 20, defined in ``billing.bulk`` beside the job that defers it,
  registered by the import below) renders and merges one part of a bulk-printing batch.
- ``reminders_daily`` sends the landowners' e-mail reminders of the day (issue 19,
  ``billing.services.reminders.reminders_send``) at ``REMINDERS_CRON`` (default 08:00 in Puerto Rico).

The cron expressions are read in UTC by procrastinate (Puerto Rico is UTC−4 all year). A queueing
lock keeps at most one of each waiting in the queue if the worker was down for a while.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.mail import mail_admins
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from procrastinate.contrib.django import app
from procrastinate.tasks import Task

from . import (
    anchors,
    bulk,  # noqa: F401  (registers the task billing.bill_batch_part)
)
from .models import BooksCheck
from .services import books_checks, reminders


@app.task(name="billing.books_check", queueing_lock="billing.books_check")
def books_check_nightly(timestamp: int) -> int:
    """Checks and records the books; e-mails ``ADMINS`` when they do not balance or the check
    cannot run. Returns the ``BooksCheck``'s id. ``timestamp``: the scheduled time (procrastinate)."""
    try:
        # against the newest signed anchor too (billing.anchors); none configured: the database alone
        check = books_checks.books_check_run(acting_user=None, trigger=BooksCheck.Trigger.NIGHTLY,
                                             extra_findings=anchors.anchor_check().findings)
    except Exception as exc:
        with translation.override(settings.LANGUAGE_CODE):
            mail_admins(_("La verificación de los libros no pudo completarse"),
                        _("La verificación nocturna de los libros falló antes de terminar: %(error)s\n\n"
                          "Vea el registro del proceso de fondo (docker compose logs worker).") % {"error": exc})
        raise
    if not check.passed:
        books_check_alert(check)
    return check.pk


def books_check_alert(check: BooksCheck) -> None:
    """E-mails ``ADMINS`` what differed in ``check`` and its control totals, in the site's language."""
    with translation.override(settings.LANGUAGE_CODE):
        when = date_format(timezone.localtime(check.started_at), "DATETIME_FORMAT")
        count = len(check.findings)
        subject = ngettext("Los libros no cuadran: %(count)d diferencia (%(when)s)",
                           "Los libros no cuadran: %(count)d diferencias (%(when)s)", count) % {"count": count, "when": when}
        width = max((len(name) for name, _value in check.totals), default=0)
        lines = [
            _("La verificación nocturna de los libros del %(when)s encontró lo siguiente.") % {"when": when},
            "",
            _("Qué difiere:"),
            *(f"  - {finding['check']}: {finding['message']}" for finding in check.findings),
            "",
            _("Totales de control:"),
            *(f"  {name:<{width}}  {value}" for name, value in check.totals),
            "",
            _("Todas las verificaciones: %(url)s") % {"url": settings.SITE_URL + reverse("books:checks")},
            _("Un hallazgo nunca se corrige editando la base de datos: informe a los desarrolladores con este mensaje."),
        ]
        mail_admins(subject, "\n".join(lines))


@app.task(name="billing.backup", queueing_lock="billing.backup")
def backup_nightly(timestamp: int) -> None:
    """``manage.py backup`` into ``BACKUP_DIR``; e-mails ``ADMINS`` when it fails."""
    try:
        call_command("backup")
    except Exception as exc:
        with translation.override(settings.LANGUAGE_CODE):
            mail_admins(_("La copia de seguridad programada falló"),
                        _("manage.py backup falló: %(error)s") % {"error": exc})
        raise


@app.task(name="billing.reminders", queueing_lock="billing.reminders")
def reminders_daily(timestamp: int) -> dict[str, int]:
    """Issue 19: the e-mail reminders timely on the scheduled day (in Puerto Rico); the same
    service as ``manage.py billing reminders --as-of D``. Sending twice is harmless: each
    reminder is claimed once (``ReminderSend``). Returns the counts per outcome."""
    as_of = timezone.localtime(datetime.fromtimestamp(timestamp, tz=UTC)).date()
    run = reminders.reminders_send(as_of=as_of)
    return {status: run.count(status) for status in ("sent", "failed", "already", "given_up")}


def schedule(task: Task, *, setting: str) -> None:
    """Registers ``task`` with procrastinate to run at the cron expression of ``setting``; one it
    cannot read stops Django from starting (rather than the worker failing at night)."""
    cron = getattr(settings, setting)
    app.periodic(cron=cron, periodic_id="nightly")(task)
    try:
        app.periodic_registry.periodic_tasks[(task.name, "nightly")].croniter  # noqa: B018 (parses the expression)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{setting}={cron!r} is not a cron expression (minute hour day month weekday): {exc}") from None


schedule(books_check_nightly, setting="BOOKS_CHECK_CRON")
schedule(reminders_daily, setting="REMINDERS_CRON")
if settings.BACKUP_CRON:
    schedule(backup_nightly, setting="BACKUP_CRON")
