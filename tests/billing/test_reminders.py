"""Issue 19: courtesy e-mail reminders to landowners with a confirmed address (¶12, ¶13, ¶14).

Example 1 (``district_1``, finalized 30 June 2026): every parcel is ``owner_a``'s; the July
installment is due 1 July 2026 with its last day to pay 31 August 2026 (¶12: 60 days, moved
past Sunday 30 August), so 16 August is 15 days before it and 1 September its first
delinquent day."""

from __future__ import annotations

import smtplib
import threading
import time
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.core import mail
from django.core.mail.backends import locmem
from django.core.mail.backends.base import BaseEmailBackend
from django.db import IntegrityError, transaction
from django.db import connection as db_connection
from django.utils import timezone

from billing import accounts, rules
from billing.models import Charge, Office, ReminderAttempt, ReminderSend
from billing.references import payment_reference, reference_display
from billing.services import collection, counter, reminders
from billing.tasks import reminders_daily
from parcels.models import Parcel
from tests.billing.conftest import billing_cmd
from tests.clock import on_day
from tests.test_languages import wrong_language

JULY_LAST_DAY = date(2026, 8, 31)


class RefusingBackend(BaseEmailBackend):
    """An SMTP server that refuses every message."""

    def send_messages(self, email_messages):  # noqa: ANN001, ANN201
        raise smtplib.SMTPRecipientsRefused({"carmen@example.pr": (550, b"mailbox unavailable")})


def confirm(owner, *, language: str = "es") -> None:
    owner.email_confirmed_at = timezone.now()
    owner.preferred_language = language
    owner.save(update_fields=["email_confirmed_at", "preferred_language"])


@pytest.fixture
def office(db):
    office = Office.objects.get(code="LAJ")
    office.address_line1, office.town, office.zip_code = "Calle Principal 12", "Lajas", "00667"
    office.phone, office.hours_es, office.hours_en = "(787) 899-0000", "lunes a viernes, 8:00 a. m. a 4:30 p. m.", "Monday to Friday, 8:00 a.m. to 4:30 p.m."
    office.save()
    return office


def july(parcel_id: str) -> Charge:
    return Charge.objects.get(parcel__parcel_id=parcel_id, kind=Charge.Kind.INSTALLMENT, number=1)


def message_to(parcel_id: str) -> mail.EmailMessage:
    [message] = [m for m in mail.outbox if f" {parcel_id} " in m.subject or m.subject.endswith(f" {parcel_id}")]
    return message


@pytest.mark.django_db
def test_a_confirmed_owner_gets_the_reminder_15_days_before_the_last_day_with_the_amount_last_day_and_reference(
        district_1, owner_a, office):
    confirm(owner_a)
    as_of = date(2026, 8, 16)
    run = reminders.reminders_send(as_of=as_of)
    assert run.count("sent") == 5 and len(mail.outbox) == 5  # one per parcel of owner_a (P1..P5)
    message = message_to("P4")
    charge = july("P4")
    # what the bill would ask: the account as of that day (¶12, ¶13)
    account = accounts.account_state(parcel=charge.parcel, as_of=as_of).state
    to_pay = rules.amount_to_pay(account=account, charge_key=accounts.charge_key(charge.pk))
    assert to_pay.amount == Decimal("6930.90") and to_pay.valid_through == JULY_LAST_DAY
    assert message.to == ["carmen@example.pr"]
    assert "31 de agosto de 2026" in message.subject
    body = message.body
    assert "Total a pagar al 16 de agosto de 2026: $6,930.90, a más tardar el 31 de agosto de 2026" in body
    assert "Último día para pagar sin recargo: 31 de agosto de 2026" in body
    assert f"Referencia de pago: {reference_display(payment_reference(charge.pk))}" in body
    assert "Colecturía de Lajas" in body and "Dirección: CALLE PRINCIPAL 12, LAJAS PR 00667" in body
    assert "(787) 899-0000" in body and "lunes a viernes" in body
    assert "no cambia ninguna fecha ni elimina ningún recargo" in body  # ¶13: a courtesy
    assert "Este correo no es la notificación de embargo del ¶14." in body
    assert wrong_language(message.subject + "\n" + body, "es") == []
    # logged: one claim and one sent attempt per reminder
    send = ReminderSend.objects.get(charge=charge)
    assert (send.kind, send.days_before, send.owner_id) == ("before", 15, owner_a.pk)
    [attempt] = send.attempts.all()
    assert (attempt.status, attempt.to_address, attempt.as_of, attempt.amount.amount) == ("sent", "carmen@example.pr", as_of,
                                                                                         Decimal("6930.90"))


@pytest.mark.django_db
def test_a_reminder_run_twice_sends_nothing_twice(district_1, owner_a):
    confirm(owner_a)
    first = reminders.reminders_send(as_of=date(2026, 8, 16))
    again = reminders.reminders_send(as_of=date(2026, 8, 16))
    later = reminders.reminders_send(as_of=date(2026, 8, 20))  # still the 15-day reminder's window
    assert first.count("sent") == 5
    assert again.count("sent") == 0 and again.count("already") == 5
    assert later.count("sent") == 0 and later.count("already") == 5
    assert len(mail.outbox) == 5 and ReminderSend.objects.count() == 5 and ReminderAttempt.objects.count() == 5
    # the database refuses a second claim of the same reminder, whatever the code does
    send = ReminderSend.objects.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        ReminderSend.objects.create(charge=send.charge, parcel=send.parcel, owner=send.owner, kind=send.kind,
                                    days_before=send.days_before)


@pytest.mark.django_db
def test_the_3_day_reminder_follows_and_a_missed_day_is_caught_up_once(district_1, owner_a):
    confirm(owner_a)
    caught_up = reminders.reminders_send(as_of=date(2026, 8, 20))  # the task did not run on 16 August
    assert {o.due.days_before for o in caught_up.outcomes} == {15} and caught_up.count("sent") == 5
    assert reminders.reminders_send(as_of=date(2026, 8, 27)).count("sent") == 0  # 4 days before: nothing new
    near = reminders.reminders_send(as_of=date(2026, 8, 28))
    assert {o.due.days_before for o in near.outcomes} == {3} and near.count("sent") == 5
    assert all("faltan 3 días" in message.body for message in mail.outbox[5:])
    assert ReminderSend.objects.filter(days_before=3).count() == 5 and len(mail.outbox) == 10


@pytest.mark.django_db
def test_a_paid_installment_gets_no_reminder(district_1, owner_a, staff):
    confirm(owner_a)
    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(date(2026, 7, 3)):
        counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("9180.00"), paid_on=date(2026, 7, 3))
    run = reminders.reminders_send(as_of=date(2026, 8, 16))
    assert sorted(o.due.parcel.parcel_id for o in run.outcomes) == ["P2", "P3", "P4", "P5"]


@pytest.mark.django_db
def test_an_unconfirmed_owner_gets_no_reminder(district_1, owner_a):
    # an address not confirmed yet (issue 19: only a confirmed e-mail)
    assert owner_a.email and owner_a.email_confirmed_at is None
    assert reminders.reminders_send(as_of=date(2026, 8, 16)).outcomes == ()
    # confirmed once, then the address removed: nothing either
    owner_a.email_confirmed_at, owner_a.email = timezone.now(), ""
    owner_a.save(update_fields=["email_confirmed_at", "email"])
    assert reminders.reminders_send(as_of=date(2026, 9, 1)).outcomes == ()
    assert mail.outbox == [] and not ReminderSend.objects.exists()


@pytest.mark.django_db
def test_the_first_delinquent_days_email_names_the_surcharge_and_the_next_step(district_1, owner_a, office):
    confirm(owner_a)
    run = reminders.reminders_send(as_of=date(2026, 9, 1))
    assert {o.due.kind for o in run.outcomes} == {"delinquent"} and run.count("sent") == 5
    message = message_to("P4")
    # ¶12: ½% of the unpaid $6,930.90 for the first month: $34.65 (half-up), owed $6,965.55
    assert "moroso" in message.subject and "1 de septiembre de 2026" in message.subject
    assert "hoy es $34.65 (½% sobre $6,930.90)" in message.body
    assert "½% de lo no pagado por cada mes o fracción de mes" in message.body
    assert "Total a pagar al 1 de septiembre de 2026: $6,965.55" in message.body
    assert "procedimiento de embargo" in message.body and "(¶14)" in message.body
    assert "no cambia ninguna fecha ni elimina ningún recargo" in message.body
    # caught up within the first surcharge month only, and once
    assert reminders.reminders_send(as_of=date(2026, 9, 15)).count("sent") == 0
    assert reminders.reminders_send(as_of=date(2026, 10, 2)).outcomes == ()


@pytest.mark.django_db
def test_a_seizure_notice_triggers_one_reminder(district_1, owner_a, staff, make_user):
    confirm(owner_a)
    officer = make_user("hector", "hacienda", full_name="Héctor Nazario Bonilla", title="Subdirector de Recaudaciones")
    p2 = Parcel.objects.get(parcel_id="P2")
    reminders.reminders_send(as_of=date(2026, 9, 1))  # the delinquent reminders, out of the way
    mail.outbox.clear()
    with on_day(date(2026, 9, 10)):
        step = collection.seizure_step_issue(acting_user=officer, parcel=p2, kind="notice", on=date(2026, 9, 10))
    run = reminders.reminders_send(as_of=date(2026, 9, 10))
    assert [(o.due.kind, o.due.parcel.parcel_id, o.status) for o in run.outcomes if o.status == "sent"] == [("seizure", "P2", "sent")]
    [message] = mail.outbox
    assert step.number in message.subject
    debt = accounts.parcel_debt(parcel=p2, as_of=date(2026, 9, 10))
    assert f"Adeudado al 10 de septiembre de 2026: ${debt:,.2f}" in message.body
    assert "10 de octubre de 2026" in message.body  # the notice's 30-day term
    assert f"Referencia de pago: {reference_display(payment_reference(july('P2').pk))}" in message.body
    assert "Este correo no es la notificación de embargo del ¶14." in message.body
    send = ReminderSend.objects.get(kind="seizure")
    assert send.seizure_step == step and send.charge == july("P2")
    assert reminders.reminders_send(as_of=date(2026, 9, 11)).count("sent") == 0 and len(mail.outbox) == 1


@pytest.mark.django_db
def test_an_english_owner_gets_english(district_1, owner_a, office):
    confirm(owner_a, language="en")
    reminders.reminders_send(as_of=date(2026, 8, 16))
    message = message_to("P4")
    assert message.subject == "Reminder: 2026-2027 installment 1 (July) of parcel P4 can be paid without surcharge until 31 August 2026"
    assert "Total to pay as of 16 August 2026: $6,930.90, by 31 August 2026" in message.body
    assert "Hours: Monday to Friday, 8:00 a.m. to 4:30 p.m." in message.body
    assert "This e-mail is not the ¶14 seizure notice." in message.body
    assert "moves no date and waives no surcharge" in message.body
    assert "Recordatorio" not in message.body and wrong_language(message.subject + "\n" + message.body, "en") == []
    assert ReminderAttempt.objects.filter(language="en").count() == 5
    mail.outbox.clear()
    reminders.reminders_send(as_of=date(2026, 9, 1))
    assert "The ¶12 surcharge now applies: ½% of the unpaid amount" in message_to("P4").body


@pytest.mark.django_db
def test_a_failing_backend_is_logged_as_a_failure_and_retried_on_a_later_run(district_1, owner_a, settings):
    """Decision (billing.services.reminders): a refused e-mail keeps its claim with a failed
    attempt (error, address, time); each later run retries it while it is still timely, at most
    MAX_ATTEMPTS times, and once sent it is never sent again."""
    confirm(owner_a)
    settings.EMAIL_BACKEND = "tests.billing.test_reminders.RefusingBackend"
    failed = reminders.reminders_send(as_of=date(2026, 8, 16))
    assert failed.count("failed") == 5 and mail.outbox == []
    attempt = ReminderAttempt.objects.filter(send__charge=july("P1")).get()
    assert attempt.status == "failed" and attempt.to_address == "carmen@example.pr"
    assert "SMTPRecipientsRefused" in attempt.error and "mailbox unavailable" in attempt.error
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    retried = reminders.reminders_send(as_of=date(2026, 8, 17))
    assert retried.count("sent") == 5 and len(mail.outbox) == 5
    assert list(ReminderAttempt.objects.filter(send__charge=july("P1")).order_by("id").values_list("status", flat=True)) == [
        "failed", "sent"]
    assert ReminderSend.objects.count() == 5  # the same claims
    assert reminders.reminders_send(as_of=date(2026, 8, 18)).count("already") == 5 and len(mail.outbox) == 5


@pytest.mark.django_db
def test_a_reminder_refused_max_attempts_times_is_given_up(district_1, owner_a, settings):
    confirm(owner_a)
    settings.EMAIL_BACKEND = "tests.billing.test_reminders.RefusingBackend"
    for day in range(16, 16 + reminders.MAX_ATTEMPTS):
        assert reminders.reminders_send(as_of=date(2026, 8, day)).count("failed") == 5
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert reminders.reminders_send(as_of=date(2026, 8, 25)).count("given_up") == 5 and mail.outbox == []
    assert ReminderAttempt.objects.count() == 5 * reminders.MAX_ATTEMPTS


@pytest.mark.django_db
def test_the_command_sends_or_only_says_what_it_would(district_1, owner_a):
    confirm(owner_a)
    code, out, err = billing_cmd("reminders", "--as-of", "2026-08-16", "--dry-run")
    assert code == 0, err
    assert out.splitlines()[-1] == "would send 5, already sent 0, given up 0"
    assert "would_send before 15d P1 2026-2027/1 to carmen@example.pr (es) $9,180.00" in out
    assert mail.outbox == [] and not ReminderSend.objects.exists()
    code, out, err = billing_cmd("reminders", "--as-of", "2026-08-16")
    assert code == 0 and out.splitlines()[-1] == "sent 5, failed 0, already sent 0, given up 0" and len(mail.outbox) == 5
    code, out, err = billing_cmd("reminders", "--as-of", "2026-08-16")
    assert out.splitlines()[-1] == "sent 0, failed 0, already sent 5, given up 0" and len(mail.outbox) == 5
    code, out, err = billing_cmd("reminders", "--as-of", "16/08/2026")
    assert code == 1 and err.strip() == "error: malformed date '16/08/2026' (use YYYY-MM-DD)"


@pytest.mark.django_db
def test_the_periodic_task_is_scheduled_and_sends_the_days_reminders(district_1, owner_a):
    from procrastinate.contrib.django import app

    assert ("billing.reminders", "nightly") in app.periodic_registry.periodic_tasks
    confirm(owner_a)
    # 12:00 UTC on 16 August 2026 is 08:00 in Puerto Rico: that day's reminders
    counts = reminders_daily(int(datetime(2026, 8, 16, 12, 0, tzinfo=UTC).timestamp()))
    assert counts == {"sent": 5, "failed": 0, "already": 0, "given_up": 0} and len(mail.outbox) == 5


@pytest.mark.django_db
def test_the_statement_page_shows_the_reminder_log_to_staff_only(district_1, owner_a, client, users, settings):
    confirm(owner_a)
    settings.EMAIL_BACKEND = "tests.billing.test_reminders.RefusingBackend"
    reminders.reminders_send(as_of=date(2026, 8, 16))
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    reminders.reminders_send(as_of=date(2026, 8, 17))
    p1 = Parcel.objects.get(parcel_id="P1")
    client.force_login(users["hacienda"])
    page = client.get(f"/colecturia/predio/{p1.pk}/estado/").content.decode()
    assert "Recordatorios por correo electrónico" in page and 'id="reminder-log"' in page
    assert "15 días antes del último día para pagar" in page and "carmen@example.pr (ES)" in page
    assert "Enviado" in page and "Falló" in page and "SMTPRecipientsRefused" in page and "$9,180.00" in page
    client.force_login(users["landowner"])
    page = client.get(f"/colecturia/predio/{p1.pk}/estado/").content.decode()
    assert "Recordatorios por correo electrónico" not in page


class SlowBackend(locmem.EmailBackend):
    """The in-memory outbox, a little slow, so two runs overlap while one holds its claim."""

    def send_messages(self, messages):  # noqa: ANN001, ANN201
        time.sleep(0.3)
        return super().send_messages(messages)


@pytest.mark.django_db(transaction=True)
def test_two_runs_at_once_send_each_reminder_once(seed_rows, district_1, owner_a, settings):
    """Two workers running the same day's reminders at the same moment: the second waits on the
    first's uncommitted claim (the unique index) and then finds it sent."""
    confirm(owner_a)
    settings.EMAIL_BACKEND = "tests.billing.test_reminders.SlowBackend"
    start, runs, errors = threading.Barrier(2), [], []

    def worker() -> None:
        try:
            start.wait()
            runs.append(reminders.reminders_send(as_of=date(2026, 8, 16)))
        except Exception as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)
        finally:
            db_connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [] and len(runs) == 2
    assert sum(run.count("sent") for run in runs) == 5 and sum(run.count("already") for run in runs) == 5
    assert len(mail.outbox) == 5 and sorted(m.subject.split(" del predio ")[1].split()[0] for m in mail.outbox) == [
        "P1", "P2", "P3", "P4", "P5"]
    assert ReminderSend.objects.count() == 5 and ReminderAttempt.objects.count() == 5


@pytest.mark.django_db
def test_the_registry_parcel_page_shows_the_reminder_log_to_staff(district_1, owner_a, client, users):
    confirm(owner_a)
    reminders.reminders_send(as_of=date(2026, 9, 1))
    p4 = Parcel.objects.get(parcel_id="P4")
    for role in ("authority", "auditor"):
        client.force_login(users[role])
        page = client.get(f"/predios/{p4.pk}/").content.decode()
        assert 'id="reminder-log"' in page and "Primer día de morosidad (¶12): 2026-2027 plazo 1 (julio)" in page, role
        assert "$6,965.55" in page and "Enviado" in page
    client.force_login(users["landowner"])
    assert 'id="reminder-log"' not in client.get(f"/predios/{p4.pk}/").content.decode()
