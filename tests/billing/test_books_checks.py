"""The recorded checks of the books: the nightly procrastinate task (called in-process, as the
worker would with its scheduled timestamp), ``verify_books`` recording its run, the append-only
record, the e-mail to ``ADMINS`` when the books do not balance, and the page that shows them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pgtrigger
import pytest
from django.conf import settings
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from procrastinate.contrib.django import app

from billing import tasks
from billing.management.commands import backup
from billing.models import BooksCheck, LedgerEntry
from billing.services import books_checks
from billing.web import books as books_views
from tests.billing.conftest import district_1, staff  # noqa: F401
from tests.commands import run_command
from tests.test_books import build_books

ROOT = Path(__file__).resolve().parents[2]
NIGHT = int(datetime(2026, 12, 2, 6, 30, tzinfo=UTC).timestamp())  # 02:30 in Puerto Rico, the scheduled time
ADMINS = [("Contraloría", "auditoria@example.pr"), ("Sistemas", "sistemas@example.pr")]
PAGE = "/auditoria/libros/"


@pytest.fixture
def books_district(district_1, staff):  # noqa: F811
    build_books(staff)
    return district_1


def totals_of(check: BooksCheck) -> dict[str, str]:
    return dict(check.totals)


def tamper_p1_payment() -> None:
    """P1's payment of 9180.00 credited as 9179.00 in its ledger (as in tests/test_books.py)."""
    entry = LedgerEntry.objects.get(kind="payment", payment__parcel__parcel_id="P1")
    with pgtrigger.ignore("billing.LedgerEntry:append_only"):
        LedgerEntry.objects.filter(pk=entry.pk).update(credit=Decimal("9179.00"))


@pytest.mark.django_db
def test_the_nightly_task_records_a_passing_check_and_its_page_shows_it(books_district, users, client, mailoutbox,
                                                                        settings):
    settings.ADMINS = ADMINS
    pk = tasks.books_check_nightly(timestamp=NIGHT)
    check = BooksCheck.objects.get()
    assert check.pk == pk
    assert (check.passed, check.findings, check.trigger, check.acting_user) == (True, [], "nightly", None)
    assert check.started_at <= check.finished_at
    totals = totals_of(check)
    assert [name for name, _value in check.totals][:2] == ["parcels", "levy 2026-2027"]  # control_totals()'s order kept
    assert totals["levy 2026-2027"] == "91800.00"
    assert totals["payments"] == "5 (45130.21)"
    # 91800.00 + 120.00 + 100.00 + 91.80 charged, refunded and surcharged − (45130.21 − 23950.00) paid − 50.00 credited
    assert totals["ledger balance"] == "70881.59"
    assert mailoutbox == []  # nothing to tell when the books balance

    client.force_login(users["auditor"])
    page = client.get(PAGE).content.decode()
    assert "Los libros cuadran." in page and "Tarea nocturna" in page
    assert "<th scope=\"row\">levy 2026-2027</th><td>91800.00</td>" in page
    assert "<th scope=\"row\">ledger balance</th><td>70881.59</td>" in page
    assert "<th scope=\"row\">payments</th><td>5 (45130.21)</td>" in page
    assert "<code>30 6 * * *</code>" in page  # the schedule
    assert 'aria-current="page">Libros</a>' in page  # reached from the staff navigation


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_failing_check_is_recorded_with_its_findings_and_mailed_to_the_admins(books_district, users, client, mailoutbox,
                                                                                 settings):
    settings.ADMINS = ADMINS
    tasks.books_check_nightly(timestamp=NIGHT)  # passes
    tamper_p1_payment()
    tasks.books_check_nightly(timestamp=NIGHT + 86400)
    passed, failed = BooksCheck.objects.order_by("pk")
    payment = LedgerEntry.objects.get(kind="payment", payment__parcel__parcel_id="P1").payment_id
    differed = [
        {"check": "ledger", "message": f"payment P{payment} (parcel P1, 9180.00), receipt surcharge 0.00: ledger has payment "
                                       "1×9179.00, void 0×0, surcharge 0×0, surcharge reversal 0×0"},
        {"check": "ledger", "message": "parcel P1: charges + surcharges − payments − credits = 9300.00, the ledger balance "
                                       "is 9301.00"},
        {"check": "statements", "message": f"parcel P1: the statement as of {timezone.localdate().isoformat()} says 9300.00 "
                                           "(balances less unpaid surcharge and credit), its charges less principal paid and "
                                           "credit 9300.00, the ledger entries 9301.00"},
    ]
    # P1's payment was recorded on 2 July, long before the first night's check, so that night's
    # checkpoint covers its entry and finds it changed: every ledger entry (all of them recorded
    # by then), debits 91,800.00 charged + 120.00 corrected + 100.00 refunded + 103.05 surcharges
    # realized (69.31 + 22.49 + the voided check's 11.25) + 23,950.00 voided = 116,073.05; credits
    # 45,130.21 paid + 50.00 correction credit + 11.25 surcharge reversed = 45,191.46, one dollar less now.
    checkpoint = passed.checkpoint
    entries = LedgerEntry.objects.count()
    differed.append({"check": "checkpoint", "message": (
        f"checkpoint {checkpoint.pk} of {passed.started_at.astimezone(UTC):%Y-%m-%d %H:%M}: ledger entries up to #"
        f"{checkpoint.marks['billing_ledgerentry']}: was {entries} (debits 116073.05, credits 45191.46), now {entries} "
        "(debits 116073.05, credits 45190.46)")})
    assert checkpoint.marks["billing_ledgerentry"] == LedgerEntry.objects.order_by("pk").last().pk
    assert (failed.passed, failed.findings, failed.trigger) == (False, differed, "nightly")
    assert totals_of(failed)["ledger balance"] == "70882.59"  # one dollar less credited than 70881.59
    assert totals_of(failed)["payments"] == "5 (45130.21)"  # the payments themselves are unchanged

    assert len(mailoutbox) == 1
    mail = mailoutbox[0]
    assert mail.to == ["auditoria@example.pr", "sistemas@example.pr"]
    assert mail.from_email == settings.SERVER_EMAIL
    assert mail.subject.startswith("[Riego Lajas] Los libros no cuadran: 4 diferencias (")
    body = mail.body
    assert f"  - ledger: {differed[0]['message']}" in body and f"  - ledger: {differed[1]['message']}" in body
    assert "Totales de control:" in body
    lines = body.splitlines()
    assert any(line.split() == ["ledger", "balance", "70882.59"] for line in lines)
    assert any(line.split() == ["levy", "2026-2027", "91800.00"] for line in lines)
    assert f"{settings.SITE_URL}/auditoria/libros/" in body

    client.force_login(users["hacienda"])
    page = client.get(PAGE).content.decode()
    latest, older = page.split("Verificaciones anteriores")
    assert "Los libros no cuadran." in latest and "Se encontraron 4 diferencias." in latest
    assert "<td>Estados de cuenta</td><td>parcel P1: charges + surcharges − payments − credits = 9300.00, the ledger " \
           "balance is 9301.00</td>" in latest
    assert "<th scope=\"row\">ledger balance</th><td>70882.59</td>" in latest
    assert "los libros cuadran — Tarea nocturna</summary>" in older  # the earlier run, below
    assert "<th scope=\"row\">ledger balance</th><td>70881.59</td>" in older


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_check_that_cannot_run_mails_the_admins_and_fails_the_job(books_district, mailoutbox, settings):
    settings.ADMINS = ADMINS
    with connection.cursor() as cursor:  # undone with the test's transaction
        cursor.execute("ALTER TABLE billing_charge RENAME TO billing_charge_gone")
    with pytest.raises(DatabaseError):
        tasks.books_check_nightly(timestamp=NIGHT)
    assert [mail.subject for mail in mailoutbox] == ["[Riego Lajas] La verificación de los libros no pudo completarse"]
    assert 'relation "billing_charge" does not exist' in mailoutbox[0].body
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE billing_charge_gone RENAME TO billing_charge")
    assert not BooksCheck.objects.exists()


@pytest.mark.django_db
def test_a_recorded_check_refuses_update_and_delete(books_district):
    check = books_checks.books_check_run(acting_user=None, trigger=BooksCheck.Trigger.COMMAND)
    with pytest.raises(DatabaseError, match="Cannot update or delete rows"), transaction.atomic():
        BooksCheck.objects.filter(pk=check.pk).update(passed=False, findings=[{"check": "x", "message": "y"}])
    with pytest.raises(DatabaseError, match="Cannot update or delete rows"), transaction.atomic():
        BooksCheck.objects.filter(pk=check.pk).delete()
    check.refresh_from_db()
    assert check.passed and check.findings == []


@pytest.mark.django_db
def test_a_passed_check_with_findings_is_refused_by_the_database(books_district):
    check = books_checks.books_check_run(acting_user=None, trigger=BooksCheck.Trigger.COMMAND)
    with pytest.raises(DatabaseError, match="bookscheck_passed_iff_no_findings"), transaction.atomic():
        BooksCheck.objects.bulk_create([BooksCheck(started_at=check.started_at, finished_at=check.finished_at, passed=True,
                                                   findings=[{"check": "ledger", "message": "x"}], trigger="command")])


@pytest.mark.django_db
def test_verify_books_records_its_run_and_keeps_its_output(books_district, staff, tmp_path):  # noqa: F811
    code, out, err = run_command("verify_books", "--user", "hac")
    assert code == 0 and out.startswith("books balance; control totals:"), out + err
    check = BooksCheck.objects.get()
    assert (check.passed, check.trigger, check.acting_user, check.compared_with) == (True, "command", staff["hacienda"], "")
    saved = tmp_path / "totals.json"
    saved.write_text('{"totals": {"payments": "4 (45030.21)"}}')
    code, out, err = run_command("verify_books", "--compare", str(saved))
    assert code == 1
    compared = BooksCheck.objects.latest("pk")
    assert compared.findings[0] == {"check": "totals", "message": "payments: expected 4 (45030.21), found 5 (45130.21)"}
    assert out.splitlines()[0] == "totals: payments: expected 4 (45030.21), found 5 (45130.21)"
    assert compared.compared_with == str(saved) and not compared.passed and compared.acting_user is None
    code, out, err = run_command("verify_books", "--no-record", "--format", "json")
    assert code == 0 and BooksCheck.objects.count() == 2
    with pytest.raises(CommandError, match="unknown user 'nobody'"):
        run_command("verify_books", "--user", "nobody")
    assert BooksCheck.objects.count() == 2


@pytest.mark.django_db
def test_older_checks_are_listed_below_the_latest_a_page_at_a_time(books_district, users, client, monkeypatch):
    runs = [tasks.books_check_nightly(timestamp=NIGHT + day * 86400) for day in range(3)]
    monkeypatch.setattr(books_views, "PAGE_SIZE", 1)
    client.force_login(users["collector"])
    first = client.get(PAGE)
    second = client.get(PAGE + "?page=2")
    assert first.context["latest"].pk == second.context["latest"].pk == runs[2]
    assert [c.pk for c in first.context["page"].object_list] == [runs[1]]
    assert [c.pk for c in second.context["page"].object_list] == [runs[0]]
    assert "Página 1 de 2" in first.content.decode() and "Página 2 de 2" in second.content.decode()


def test_the_nightly_check_is_a_periodic_task_at_0230_in_puerto_rico():
    periodic = app.periodic_registry.periodic_tasks
    nightly = periodic[("billing.books_check", "nightly")]
    assert nightly.cron == settings.BOOKS_CHECK_CRON == "30 6 * * *"
    assert nightly.task.queueing_lock == "billing.books_check"
    # procrastinate reads cron in UTC: from noon of 1 December in Puerto Rico (16:00 UTC) the next
    # run is 06:30 UTC on the 2nd, 02:30 in Puerto Rico (UTC−4, no daylight saving time).
    noon = datetime(2026, 12, 1, 16, 0, tzinfo=UTC).timestamp()
    assert nightly.croniter.get_next(ret_type=float, start_time=noon) == NIGHT
    assert not settings.BACKUP_CRON and ("billing.backup", "nightly") not in periodic  # no BACKUP_CRON: no backups


def periodic_tasks_of_a_process(**environ: str) -> subprocess.CompletedProcess:
    """Django started in another process with ``environ``; prints its periodic tasks and crons."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "lajas_portal.settings_test", **environ}
    script = ("from procrastinate.contrib.django import app\n"
              "for (name, pid), task in sorted(app.periodic_registry.periodic_tasks.items()): print(name, pid, task.cron)")
    return subprocess.run([sys.executable, "manage.py", "shell", "--no-imports", "-c", script], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_the_schedules_come_from_the_environment():
    shell = periodic_tasks_of_a_process(BOOKS_CHECK_CRON="15 7 * * *", BACKUP_CRON="0 5 * * 0")
    assert shell.returncode == 0, shell.stderr
    billing = [line for line in shell.stdout.splitlines() if line.startswith("billing.")]  # beside the jobs' own
    assert billing == ["billing.backup nightly 0 5 * * 0", "billing.books_check nightly 15 7 * * *",
                       "billing.reminders nightly 0 12 * * *"]


def test_a_schedule_that_is_not_a_cron_expression_stops_the_start():
    shell = periodic_tasks_of_a_process(BACKUP_CRON="every night")
    assert shell.returncode != 0 and shell.stdout == ""
    assert "ImproperlyConfigured: BACKUP_CRON='every night' is not a cron expression" in shell.stderr


@pytest.mark.django_db
def test_the_backup_task_writes_a_backup_into_backup_dir(books_district, settings, tmp_path, mailoutbox):
    settings.BACKUP_DIR = tmp_path / "backups"
    tasks.backup_nightly(timestamp=NIGHT)
    (dump,) = settings.BACKUP_DIR.glob("*.dump")
    saved = dump.with_name(dump.name.removesuffix(".dump") + ".totals.json")
    assert json.loads(saved.read_text())["totals"]["payments"] == "5 (45130.21)"
    assert dump.with_name(dump.name.removesuffix(".dump") + ".media.tar.gz").exists()
    assert mailoutbox == []


@pytest.mark.django_db
def test_a_failed_backup_task_mails_the_admins(settings, tmp_path, monkeypatch, mailoutbox):
    settings.ADMINS = ADMINS
    settings.BACKUP_DIR = tmp_path / "backups"
    monkeypatch.setattr(backup, "tool_candidates", lambda name, major: [tmp_path / "missing" / name])  # no pg_dump
    with pytest.raises(CommandError):
        tasks.backup_nightly(timestamp=NIGHT)
    assert [mail.subject for mail in mailoutbox] == ["[Riego Lajas] La copia de seguridad programada falló"]
    assert mailoutbox[0].body.startswith("manage.py backup falló: no pg_dump of PostgreSQL ")
    assert not settings.BACKUP_DIR.exists()
