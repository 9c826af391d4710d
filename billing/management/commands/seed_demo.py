import logging
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from datetime import time as clock_time
from decimal import Decimal
from unittest import mock

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import get_connection
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse
from django.utils import timezone

from billing.accounts import account_state
from billing.errors import BillingError
from billing.models import (
    AccountStatement,
    Bill,
    Charge,
    DayClose,
    GiveBack,
    Journal,
    LastDayMove,
    Office,
    OfficeClosure,
    Payment,
    PaymentVoid,
    Receipt,
    ReminderAttempt,
    ReprintLog,
    SeizureCase,
    SeizureStep,
)
from billing.selectors import day_report
from billing.services.bills import bill_document, bill_get_or_issue, offered_from
from billing.services.collection import office_closure_record, seizure_step_issue
from billing.services.corrections import roll_correction_create
from billing.services.counter import day_close, payment_record
from billing.services.installments import roll_finalize
from billing.services.mailing import delivery_choose, delivery_email_confirm, email_confirm_token, returned_mail_record
from billing.services.offices import office_update
from billing.services.reminders import reminders_send
from billing.services.reprints import reprint_issue
from billing.services.statements import statement_get_or_issue
from billing.services.voids import payment_void
from levy.models import FiscalYear, RollCorrection, RollLine
from levy.services import estimate_certify, estimate_enter, levy_compute
from parcels.demo import demo_csv
from parcels.models import Owner, Parcel
from parcels.money import money_text
from parcels.roles import STAFF_ROLES
from parcels.second_factor import demo_totp_device_set, totp_secret
from parcels.services import owner_create, parcel_create, parcels_import, staff_profile_set, user_create

DEMO_OFFICE_PHONE = "(787) 555-0134"
DEMO_USERS = [
    ("autoridad", "authority"),
    ("hacienda", "hacienda"),
    ("hacienda2", "hacienda"),
    ("colector", "collector"),
    ("supervisor", "supervisor"),
    ("supervisor2", "supervisor"),  # issue 19: a refund one supervisor asks for, the other approves
    ("auditor", "auditor"),
    ("terrateniente", "landowner"),
    ("mellison", "landowner"),  # the English-language owner (documents in English)
]
# The demo's English-language owner: the Authority registers her with *idioma de los documentos* = en.
DEMO_RETURNED_MAIL_PARCEL = "LAJ-000003"  # issue 19: its owner's mail came back
ENGLISH_OWNER = {"owner_key": "DEMO-ENGLISH", "name": "Margaret Ellison", "email": "margaret.ellison@example.com",
                 "address_line1": "PO Box 1420", "address_town": "Boquerón", "address_zip": "00622"}

# What the demo staff sign certificates, notices and receipts with (``parcels.officers``).
DEMO_SIGNATURES = {
    "autoridad": ("Ramón Acosta Lugo", "Director del Registro de Predios"),
    "hacienda": ("Gladys Montalvo Seda", "Directora de Recaudaciones"),
    "hacienda2": ("Héctor Nazario Bonilla", "Subdirector de Recaudaciones"),
    "colector": ("Ana Rivera Soto", "Colectora de Rentas Internas"),
    "supervisor": ("Edwin Figueroa Ramos", "Supervisor de Colecturía"),
    "supervisor2": ("Luis Pagán Rivera", "Supervisor de Colecturía"),
    "auditor": ("Noemí Cintrón Padilla", "Auditora Interna"),
}


STEPS = 5
DEMO_BACKDATE_REASON = "Datos de demostración"
DEMO_CLOSURE_REASON = "Tormenta tropical: oficinas cerradas por orden ejecutiva"
DEMO_BANK = ("BPPR", "Banco Popular — agente recaudador")  # ¶13: a collecting agent bank (issue 19)
DEMO_VOID_REASON = "Cheque devuelto por el banco: fondos insuficientes"
DEMO_CLOSE_EXPLANATION = "Faltan $5.00 de efectivo: cambio mal dado a un contribuyente"
DEMO_CORRECTION_REASON = "Mensura nueva: el área por gravedad es un 10 % menor que la del padrón"


@contextmanager
def demo_day(day: date) -> Iterator[None]:
    """Inside the block the application's clock (``timezone.now``, which ``localdate()`` and every
    ``created_at`` read) stands at 10:00 of ``day`` at the office, plus the real time elapsed, so
    what a service records is known from that day on, as if a person had done it then: a statement
    of a past day reads the books as they stood that day (``billing.accounts.known_by_of``), so a
    seizure notice of October needs charges recorded before it. A day not before today leaves the
    clock alone."""
    real_now = timezone.now
    if day >= timezone.localdate():
        yield
        return
    offset = datetime.combine(day, clock_time(10), tzinfo=timezone.get_default_timezone()) - real_now()
    with mock.patch.object(timezone, "now", lambda: real_now() + offset):
        yield


class Command(BaseCommand):
    help = ("Builds a demo district (about 1,500 parcels), one demo user per role, the 2026-2027 levy and a season "
            "of payments, saying which of its steps it is at. Development only.")

    def add_arguments(self, parser):
        parser.add_argument("--parcels", type=int, default=1500)

    def step(self, number: int, what: str) -> float:
        """``demo 2 of 4: what...`` (the line is ended by ``done``); the time it started."""
        self.stdout.write(f"demo {number} of {STEPS}: {what}... ", ending="")
        self.stdout.flush()
        return time.monotonic()

    def done(self, started: float, outcome: str) -> None:
        self.stdout.write(f"{outcome} ({time.monotonic() - started:.0f} s)")

    def handle(self, *args, parcels, **options):
        if not settings.DEMO_DATA_ALLOWED:
            raise CommandError("seed_demo refuses to run against a production configuration (DEBUG is off).")
        data, landowner_key = demo_csv(parcels=parcels)
        started = self.step(1, f"the parcel registry ({parcels:,} parcels)")
        if Parcel.objects.exists():
            self.done(started, "the registry already has parcels; demo parcels left as they are")
        else:
            result = parcels_import(acting_user=None, data=data.encode(), source="seed_demo")
            if not result.ok:
                self.stdout.write("failed")
                raise CommandError("; ".join(str(error) for error in result.errors[:5]))
            self.done(started, f"{result.summary['created']} parcels")
        owners = {"terrateniente": Owner.objects.filter(owner_key=landowner_key).first()}
        started = self.step(2, "one user per role")
        lines = []
        for username, role in DEMO_USERS:
            if username == "mellison":
                owners[username] = self.english_owner()
            password = f"Lajas-2026-{role}"
            user = get_user_model().objects.filter(username=username).first()
            full_name, title = DEMO_SIGNATURES.get(username, ("", ""))
            if user is None:
                user = user_create(username=username, role=role, password=password,
                                   owner=owners.get(username) if role == "landowner" else None, email=f"{username}@example.pr",
                                   full_name=full_name, title=title)
            elif title and not getattr(getattr(user, "staff_profile", None), "title", ""):
                staff_profile_set(acting_user=None, user=user, full_name=full_name, title=title)  # a demo seeded before names
            secret = "(password only)"
            if role in STAFF_ROLES:
                secret = totp_secret(demo_totp_device_set(user=user)).replace(" ", "")
            lines.append(f"  {username:14} {password:28} {secret:34} ({role})")
        self.done(started, f"{len(DEMO_USERS)} users (username / password / authenticator secret; "
                           "the code: any TOTP app, or `make totp USER=<username>`):")
        for line in lines:
            self.stdout.write(line)
        office = Office.objects.filter(code="LAJ", phone="").first()
        if office is not None:  # ¶13: the office's phone, on bills and the portal (a 555 number: fictitious)
            supervisor = get_user_model().objects.get(username="supervisor")
            office_update(acting_user=supervisor, office=office, phone=DEMO_OFFICE_PHONE)
        built = self.seed_levy_and_payments()
        started = self.step(5, "the documents a newcomer looks for")
        if built:
            self.seed_documents()
            self.done(started, "built; where each one is:")
        else:
            self.done(started, "left as they are; where each one is:")
        for line in self.where_each_one_is():
            self.stdout.write(line)

    def english_owner(self) -> Owner:
        """The English-language owner, registered by the demo Authority (her documents are in English)."""
        owner = Owner.objects.filter(owner_key=ENGLISH_OWNER["owner_key"]).first()
        if owner is None:
            authority = get_user_model().objects.filter(username="autoridad").first()
            owner = owner_create(acting_user=authority, preferred_language=Owner.Language.ENGLISH, **ENGLISH_OWNER)
        return owner

    def seed_levy_and_payments(self) -> bool:
        """The 2026-2027 levy, certified, computed and finalized on time, and a season of
        payments at the counter: most July halves on time, some late, some still unpaid. Before
        the estimates, the Authority registers two parcels by hand: the demo landowner's third,
        at 100 % credit (¶9: its notice says nothing to pay), and the English-language owner's.
        False when the levy was already there (nothing done)."""

        started = self.step(3, "the 2026-2027 levy: estimates certified, roll computed and finalized")
        if FiscalYear.objects.exists():
            self.done(started, "levy data already present; left as it is")
            self.stdout.write(f"demo 4 of {STEPS}: payments left as they are")
            return False
        users = {user.username: user for user in get_user_model().objects.filter(username__in=[u for u, _ in DEMO_USERS])}
        # Recorded on the days a person would have done it (``demo_day``): the spring's registry
        # work and estimates, the roll finalized on 26 June (so its installments are known from then).
        with demo_day(date(2026, 5, 15)):
            self.registered_by_hand(users)
            estimate_enter(acting_user=users["autoridad"], fiscal_year="2026-2027", om_estimate=Decimal("1250000.00"),
                           reserve=Decimal("25000.00"), misc_income=Decimal("40000.00"), deficit=Decimal("30000.00"))
            estimate_certify(acting_user=users["autoridad"], fiscal_year="2026-2027")
        with demo_day(date(2026, 6, 26)):
            levy_compute(acting_user=users["hacienda"], fiscal_year="2026-2027")
            levy = roll_finalize(acting_user=users["hacienda2"], fiscal_year="2026-2027", today=date(2026, 6, 26))
            # ¶9: the zero notices are printed by the workers (issue 20); the demo prints its few now, so
            # they are there before `make run` starts a worker (whose batch then finds them printed)
            for notice in Bill.objects.filter(roll_line__levy=levy).order_by("number"):
                bill_document(notice)
        self.left_out = []
        self.seizure_past_its_term(users["hacienda"], timezone.localdate())
        self.done(started, f"total {money_text(levy.total_levy.amount)}, {levy.parcels_levied} parcels levied")
        started = self.step(4, f"a season of payments at the counter, each with its PDF receipt linking to {settings.SITE_URL}")
        # The season is recorded today, so a payment dated earlier is back-dated (issue 11, finding 7):
        # by the demo supervisor, with the reason printed on its receipt; one payment per parcel, so
        # none lands before a later one. A day after today is not a payment yet.
        today = timezone.localdate()
        rng = random.Random(2026)
        by_hand = [parcel_id for parcel_id, _owner in self.by_hand]  # their payments are step 5's
        paying = list(Parcel.objects.filter(charges__isnull=False).exclude(parcel_id__in=by_hand).distinct()
                      .order_by("parcel_id")[:400])
        for number, parcel in enumerate(paying):
            if number and number % 100 == 0:  # a PDF receipt each: about a second a payment
                self.stdout.write(f"{number} of {len(paying)} parcels, ", ending="")
                self.stdout.flush()
            draw = rng.random()
            if parcel.parcel_id == "LAJ-000002":
                continue  # the demo landowner's second parcel stays unpaid (delinquent)
            if parcel.parcel_id == "LAJ-000001" or draw < 0.55:
                day = date(2026, 7, 1) + timedelta(days=rng.randint(0, 55))
            elif draw < 0.75:
                day = date(2026, 9, 1) + timedelta(days=rng.randint(0, 80))  # late: surcharge
            else:
                continue
            due = account_state(parcel=parcel, as_of=day, known_by=None).state.total_due
            method = rng.choice(["cash", "check", "card", "transfer"]) if due > 0 else ""  # the draws as before the rule
            if method and day <= today:
                backdated = day < today
                payment_record(acting_user=users["supervisor" if backdated else "colector"], parcel=parcel, amount=due,
                               paid_on=day, method=method, backdate_reason=DEMO_BACKDATE_REASON if backdated else "")
        self.done(started, f"{Payment.objects.count()} payments recorded")
        return True

    # --- What a newcomer looks for (issue 18): every document reachable in the demo ---------------

    def registered_by_hand(self, users: dict) -> None:
        """Before the estimates, the Authority registers two parcels at the registry's end: the demo
        landowner's third parcel, at 100 % credit (sec. 372, ¶9), and the English-language owner's."""
        last = Parcel.objects.filter(parcel_id__startswith="LAJ-").order_by("-parcel_id").values_list("parcel_id", flat=True).first()
        number = int(last.split("-")[1]) if last else 0
        landowner = get_user_model().objects.get(username="terrateniente").owner_account.owner
        self.by_hand = [(f"LAJ-{number + 1:06d}", landowner), (f"LAJ-{number + 2:06d}", self.english_owner())]
        for (parcel_id, owner), (gravity, water_since, credit) in zip(self.by_hand, [
            (Decimal("8.5000"), date(1987, 4, 1), Decimal("100.00")),
            (Decimal("12.0000"), date(1998, 5, 1), Decimal("0.00")),
        ], strict=True):
            parcel_create(acting_user=users["autoridad"], parcel_id=parcel_id, owner=owner, area_unit=Parcel.AreaUnit.ACRE,
                          gravity_area=gravity, pumped_area=Decimal("0"), inclusion=Parcel.Inclusion.PERMANENT,
                          water_since=water_since, credit_percent=credit)

    def seed_documents(self) -> None:
        """Each through its service, by the role that does it, recorded today: a closure on the
        July half's last day (a storm), a roll correction, a voided receipt, and the
        English-language owner's receipt, bill and estado (the seizure case past its term is
        step 3's, on its days). What today's date does not allow yet (a demo built before the
        season) is left out and said so."""
        users = {user.username: user for user in get_user_model().objects.filter(username__in=[u for u, _ in DEMO_USERS])}
        today = timezone.localdate()
        july = Charge.objects.filter(kind=Charge.Kind.INSTALLMENT, number=1, fiscal_year__label="2026-2027").order_by("pk").first()
        last_day = july.last_day_to_pay
        # ¶12: a storm closed the offices on the July half's last day; recorded by Hacienda.
        office_closure_record(acting_user=users["hacienda"], day=last_day, reason=DEMO_CLOSURE_REASON)
        # ¶9: the Authority measured a parcel again; Hacienda lowers its line by 10 %.
        special = [parcel_id for parcel_id, _owner in self.by_hand] + ["LAJ-000001", "LAJ-000002"]
        paid = (Payment.objects.filter(parcel__credit_percent=0, paid_on__lte=last_day).exclude(parcel__parcel_id__in=special)
                .select_related("parcel").order_by("pk"))
        corrected = paid.first()
        if corrected is not None:
            line = RollLine.objects.get(levy__fiscal_year__label="2026-2027", levy__status="final", parcel=corrected.parcel)
            roll_correction_create(acting_user=users["hacienda"], roll_line=line, reason=DEMO_CORRECTION_REASON,
                                   om_charge_delta=-(line.om_charge * Decimal("0.10")).quantize(Decimal("0.01")))
        # ¶13: a check the bank returned, voided by the supervisor.
        bounced = (Payment.objects.filter(method=Payment.Method.CHECK).exclude(parcel__parcel_id__in=special)
                   .exclude(parcel=getattr(corrected, "parcel", None)).order_by("pk").first())
        if bounced is not None:
            payment_void(acting_user=users["supervisor"], payment=bounced, reason=DEMO_VOID_REASON, voided_on=today)
            self.closed_day_and_reprint(users, bounced)
        self.mailing(users)
        self.english_owner_documents(users, today)
        self.bank_files(users, today, exclude=[*special, getattr(getattr(corrected, "parcel", None), "parcel_id", "")])
        self.first_days_closed(users, today)

    def bank_files(self, users: dict, today: date, *, exclude: list[str]) -> None:
        """¶13 (issue 19): Banco Popular, a collecting agent, sends a file the supervisor imports
        (two payments applied, one to the exceptions queue: a cadastre number that does not
        exist), and a second file returning the second payment (NSF), which voids it."""
        from billing.services import bank

        office, _created = Office.objects.get_or_create(code=DEMO_BANK[0], defaults={"name": DEMO_BANK[1], "kind": Office.Kind.BANK})
        owing = []
        for parcel in (Parcel.objects.filter(parcel_id__startswith="LAJ-", payments__isnull=True).exclude(parcel_id__in=exclude)
                       .order_by("parcel_id")[:40]):
            if account_state(parcel=parcel, as_of=today, known_by=None).state.total_balance >= Decimal("200.00"):
                owing.append(parcel)
            if len(owing) == 2:
                break
        if len(owing) < 2:
            self.left_out.append("the bank files (no two parcels owe $200.00 today)")
            return
        day = today.isoformat()
        header = "trace_number,value_date,amount,reference,payer_name,kind,original_trace_number,return_reason\n"
        first = (header + f"BP{today:%Y%m%d}001,{day},200.00,{owing[0].parcel_id},{owing[0].owner.name.replace(',', ' ')},,,\n"
                 f"BP{today:%Y%m%d}002,{day},150.00,{owing[1].parcel_id},{owing[1].owner.name.replace(',', ' ')},,,\n"
                 f"BP{today:%Y%m%d}003,{day},250.00,LAJ-999999,Juan del Pueblo,,,\n")
        bank.bank_file_import(acting_user=users["supervisor"], bank=office, name=f"bppr-{today:%Y%m%d}.csv", data=first.encode())
        returned = header + f"BR{today:%Y%m%d}001,{day},150.00,,,return,BP{today:%Y%m%d}002,R01 fondos insuficientes (NSF)\n"
        bank.bank_file_import(acting_user=users["supervisor"], bank=office, name=f"bppr-{today:%Y%m%d}-devoluciones.csv",
                              data=returned.encode())

    def closed_day_and_reprint(self, users: dict, payment: Payment) -> None:
        """Issue 19's registers: the supervisor closed the bounced check's day $5.00 short in cash
        (with the explanation) and reprinted its receipt (a logged COPIA)."""
        report = day_report(office=payment.office, day=payment.paid_on)
        cash, checks = report.expected(Payment.Method.CASH), report.expected(Payment.Method.CHECK)
        try:
            day_close(acting_user=users["supervisor"], office=payment.office, day=payment.paid_on,
                      counted_cash=max(cash - Decimal("5.00"), Decimal("0.00")), counted_checks=checks,
                      explanation=DEMO_CLOSE_EXPLANATION)
        except BillingError as exc:
            self.left_out.append(f"the day close of {payment.paid_on:%d/%m/%Y} ({exc})")
        reprint_issue(acting_user=users["supervisor"], document=payment.receipt.document, channel=ReprintLog.Channel.COUNTER)

    def first_days_closed(self, users: dict, today: date) -> None:
        """Issue 19: the supervisor closed the office's first three days of the season that took
        payments, so the fund journal (*Diario contable*) has their collections journals beside the
        roll's accrual. Counted as the receipts stand (no over/short)."""
        office = Office.objects.get(code="LAJ")
        days = list(Payment.objects.filter(office=office, paid_on__lt=min(today, date(2026, 8, 1)))
                    .order_by("paid_on").values_list("paid_on", flat=True).distinct()[:3])
        for day in days:
            if DayClose.objects.filter(office=office, day=day).exists():
                continue
            report = day_report(office=office, day=day)
            day_close(acting_user=users["supervisor"], office=office, day=day, counted_cash=report.expected(Payment.Method.CASH),
                      counted_checks=report.expected(Payment.Method.CHECK))

    def mailing(self, users: dict) -> None:
        """Issue 19: the English-language owner confirmed her e-mail address (the link the portal
        sent her) and chose e-mail delivery, so her January bill below froze it (its verification
        page says so); the post office returned the mail of LAJ-000003's owner,
        recorded by Hacienda (the owner list shows the flag)."""
        english = self.english_owner()
        if english.email:
            delivery_email_confirm(token=email_confirm_token(english))
            delivery_choose(acting_user=users["mellison"], owner=english, delivery=Owner.Delivery.EMAIL)
        if Parcel.objects.filter(parcel_id=DEMO_RETURNED_MAIL_PARCEL).exists():
            returned_mail_record(acting_user=users["hacienda"], reference=DEMO_RETURNED_MAIL_PARCEL,
                                 note="Dirección insuficiente (sello del correo)")

    def seizure_past_its_term(self, hacienda, today: date) -> None:
        """¶14: the demo landowner's unpaid LAJ-000002: the notice 40 days ago (its 30-day term has
        run), the certificate of attachment the day after the term, each recorded on its day
        (``demo_day``); the auction notice is left for a person to issue. Before the season's
        payments are recorded (today), so the books' records follow each other in time."""
        parcel = Parcel.objects.get(parcel_id="LAJ-000002")
        noticed_on = today - timedelta(days=40)
        state = account_state(parcel=parcel, as_of=noticed_on, known_by=None).state
        if not any(c.balance > 0 and c.last_day < noticed_on for c in state.charges):
            self.left_out.append(f"the seizure case (LAJ-000002 is not delinquent on {noticed_on:%d/%m/%Y})")
            return
        with demo_day(noticed_on):
            notice = seizure_step_issue(acting_user=hacienda, parcel=parcel, kind=SeizureStep.Kind.NOTICE, on=noticed_on)
            self.seizure_reminder(parcel.owner, noticed_on)
        certified_on = notice.term_ends + timedelta(days=1)
        with demo_day(certified_on):
            seizure_step_issue(acting_user=hacienda, parcel=parcel, kind=SeizureStep.Kind.CERTIFICATE, on=certified_on)

    def seizure_reminder(self, owner: Owner, noticed_on: date) -> None:
        """Issue 19: the demo landowner confirmed her e-mail, so the day's reminder run e-mailed
        her that a seizure notice was issued (a courtesy, not the ¶14 notice): one row of the
        reminder log on LAJ-000002's statement page. The confirmation page is not the demo's to
        walk, so the address is marked confirmed here; the e-mail goes to Django's in-memory
        backend, never out (the demo's addresses are made up)."""
        Owner.objects.filter(pk=owner.pk, email_confirmed_at__isnull=True).exclude(email="").update(
            email_confirmed_at=timezone.now())
        reminders_send(as_of=noticed_on, connection=get_connection("django.core.mail.backends.locmem.EmailBackend"))

    def english_owner_documents(self, users: dict, today: date) -> None:
        """The English-language owner paid her July half at the counter in August (a receipt), and
        downloads the January half's bill and her estado in the portal."""
        parcel = Parcel.objects.get(parcel_id=self.by_hand[1][0])
        paid_on = min(date(2026, 8, 14), today)
        due = account_state(parcel=parcel, as_of=paid_on, known_by=None).state.total_due
        if due > 0:
            backdated = paid_on < today
            payment_record(acting_user=users["supervisor" if backdated else "colector"], parcel=parcel, amount=due, paid_on=paid_on,
                           method=Payment.Method.TRANSFER, backdate_reason=DEMO_BACKDATE_REASON if backdated else "")
        january = Charge.objects.get(parcel=parcel, kind=Charge.Kind.INSTALLMENT, number=2)
        if today >= offered_from(january):
            bill_get_or_issue(acting_user=users["mellison"], charge=january)
        else:
            self.left_out.append(f"her bill (the January half is offered from {offered_from(january):%d/%m/%Y})")
        quiet = logging.getLogger("billing.services.statements")  # its line would break the step's line
        level, quiet.level = quiet.level, logging.WARNING
        try:
            statement_get_or_issue(parcel=parcel, channel=AccountStatement.Channel.PORTAL, acting_user=users["mellison"],
                                   lang=parcel.owner.preferred_language)  # as the portal asks for it
        finally:
            quiet.setLevel(level)

    def where_each_one_is(self) -> list[str]:
        """One line per thing a newcomer looks for: the parcel, the document's number and the page."""
        site = settings.SITE_URL.rstrip("/")
        lines = []

        def say(what: str, where: str | None) -> None:
            lines.append(f"  {what + ':':37} {where or 'not in this demo (built before it; a new database builds it)'}")

        zero = Bill.objects.filter(snapshot__nothing_to_pay=True).select_related("parcel__owner").order_by("pk").first()
        say("100 % credit, nothing to pay (¶9)", zero and (
            f"{zero.parcel.parcel_id} ({zero.parcel.owner.name}, user terrateniente): notice {zero.number}, "
            f"{site}{reverse('billing:statement', args=[zero.parcel.pk])}"))
        case = SeizureCase.objects.filter(status=SeizureCase.Status.OPEN).select_related("parcel").order_by("pk").first()
        if case is not None:
            steps = list(case.steps.order_by("pk"))
            term = steps[0].term_ends
            say("seizure case, 30-day term run (¶14)", (
                f"{case.parcel.parcel_id}: {', '.join(step.number for step in steps)} (term ended {term:%d/%m/%Y}); "
                f"next step as hacienda: {site}{reverse('collections:seizure', args=[case.parcel.pk])}"))
        else:
            say("seizure case, 30-day term run (¶14)", None)
        english = Owner.objects.filter(owner_key=ENGLISH_OWNER["owner_key"]).first()
        parcel = english and english.parcels.order_by("parcel_id").first()
        if parcel is not None:
            numbers = [*(f"bill {n}" for n in Bill.objects.filter(parcel=parcel).order_by("pk").values_list("number", flat=True)),
                       *(f"receipt {r.display_number}" for r in Receipt.objects.filter(payment__parcel=parcel).order_by("pk")),
                       *(f"estado {n}" for n in AccountStatement.objects.filter(parcel=parcel).order_by("pk").values_list("number", flat=True))]
            say("English-language owner", (f"{parcel.parcel_id} ({english.name}, user mellison): {', '.join(numbers) or 'no documents'}, "
                                           f"{site}{reverse('billing:statement', args=[parcel.pk])}"))
        else:
            say("English-language owner", None)
        void = PaymentVoid.objects.select_related("payment__parcel", "payment__receipt").order_by("pk").first()
        say("voided receipt (¶13)", void and (
            f"{void.payment.parcel.parcel_id}: receipt {void.payment.receipt.display_number}, "
            f"{site}{reverse('billing:receipt', args=[void.payment.receipt.pk])}"))
        correction = RollCorrection.objects.numbered().select_related("roll_line").order_by("pk").first()
        say("roll correction (¶9)", correction and (
            f"{correction.roll_line.parcel_code}: correction no. {correction.number} of the {correction.roll} roll, "
            f"{site}{reverse('levy:corrections', args=[correction.roll])}"))
        reprint = ReprintLog.objects.select_related("document").order_by("pk").first()
        say("registers for auditors (issue 19)", reprint and (
            f"as auditor: {site}{reverse('registers:register')}?kind=reprints&start={reprint.printed_on:%d/%m/%Y}"
            f"&end={reprint.printed_on:%d/%m/%Y} (the COPIA of receipt {reprint.document.number}); kind=day-closes for the day "
            f"closed $5.00 short"))
        flagged = Owner.objects.filter(returned_mail=True).order_by("owner_key").first()
        say("returned mail (issue 19)", flagged and (
            f"{flagged.name} ({flagged.owner_key}), flagged for a new address: {site}{reverse('parcels:owner-list')}?devuelto=1"))
        closure = OfficeClosure.objects.order_by("pk").first()
        say("office closure (¶12)", closure and (
            f"{closure.day:%d/%m/%Y}, {LastDayMove.objects.filter(closure=closure).count():,} last days moved, "
            f"{money_text(sum(back.surcharge.amount for back in GiveBack.objects.filter(closure=closure)))} of surcharge given back, "
            f"{site}{reverse('collections:closures')}"))
        from billing.models import BankFile

        files = list(BankFile.objects.filter(bank__code=DEMO_BANK[0]).order_by("pk"))
        described = ", ".join(f"{item.original_name} ({item.applied_count} applied, {item.exception_count} exception(s), "
                              f"{item.returned_count} returned)" for item in files)
        say("bank payment files (¶13)", files and (
            f"{described}; as supervisor: {site}{reverse('collections:bank-files')}, "
            f"the exceptions queue {site}{reverse('collections:bank-exceptions')}"))
        reminded = ReminderAttempt.objects.select_related("send__parcel").order_by("pk").first()
        say("e-mail reminder log (issue 19)", reminded and (
            f"{reminded.send.parcel.parcel_id}: {reminded.send.get_kind_display()} to {reminded.to_address}, "
            f"{site}{reverse('billing:statement', args=[reminded.send.parcel.pk])}"))
        journal = Journal.objects.filter(source=Journal.Source.DAY_CLOSE).order_by("pk").first()
        say("fund journal of a day (issue 19)", journal and (
            f"{journal.number}, {journal.day:%d/%m/%Y} at {journal.office.code}, "
            f"{site}{reverse('collections:journals')}?fecha={journal.posted_on:%d/%m/%Y}"))
        for what in getattr(self, "left_out", []):
            lines.append(f"  not built on today's date: {what}")
        return lines
