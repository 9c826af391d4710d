import random
import time
from datetime import date, timedelta
from decimal import Decimal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from billing.accounts import account_state
from billing.models import Payment
from billing.services.counter import payment_record
from billing.services.installments import roll_finalize
from levy.models import FiscalYear
from levy.services import estimate_certify, estimate_enter, levy_compute
from parcels.demo import demo_csv
from parcels.models import Owner, Parcel
from parcels.roles import STAFF_ROLES
from parcels.second_factor import demo_totp_device_set, totp_secret
from parcels.services import parcels_import, staff_profile_set, user_create

DEMO_USERS = [
    ("autoridad", "authority"),
    ("hacienda", "hacienda"),
    ("hacienda2", "hacienda"),
    ("colector", "collector"),
    ("supervisor", "supervisor"),
    ("auditor", "auditor"),
    ("terrateniente", "landowner"),
]
# What the demo staff sign certificates, notices and receipts with (``parcels.officers``).
DEMO_SIGNATURES = {
    "autoridad": ("Ramón Acosta Lugo", "Director del Registro de Predios"),
    "hacienda": ("Gladys Montalvo Seda", "Directora de Recaudaciones"),
    "hacienda2": ("Héctor Nazario Bonilla", "Subdirector de Recaudaciones"),
    "colector": ("Ana Rivera Soto", "Colectora de Rentas Internas"),
    "supervisor": ("Edwin Figueroa Ramos", "Supervisor de Colecturía"),
    "auditor": ("Noemí Cintrón Padilla", "Auditora Interna"),
}


STEPS = 4
DEMO_BACKDATE_REASON = "Datos de demostración"


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
        owner = Owner.objects.filter(owner_key=landowner_key).first()
        started = self.step(2, "one user per role")
        lines = []
        for username, role in DEMO_USERS:
            password = f"Lajas-2026-{role}"
            user = get_user_model().objects.filter(username=username).first()
            full_name, title = DEMO_SIGNATURES.get(username, ("", ""))
            if user is None:
                user = user_create(username=username, role=role, password=password,
                                   owner=owner if role == "landowner" else None, email=f"{username}@example.pr",
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
        self.seed_levy_and_payments()

    def seed_levy_and_payments(self) -> None:
        """The 2026-2027 levy, certified, computed and finalized on time, and a season of
        payments at the counter: most July halves on time, some late, some still unpaid."""

        started = self.step(3, "the 2026-2027 levy: estimates certified, roll computed and finalized")
        if FiscalYear.objects.exists():
            self.done(started, "levy data already present; left as it is")
            self.stdout.write(f"demo {STEPS} of {STEPS}: payments left as they are")
            return
        users = {user.username: user for user in get_user_model().objects.filter(username__in=[u for u, _ in DEMO_USERS])}
        estimate_enter(acting_user=users["autoridad"], fiscal_year="2026-2027", om_estimate=Decimal("1250000.00"),
                       reserve=Decimal("25000.00"), misc_income=Decimal("40000.00"), deficit=Decimal("30000.00"))
        estimate_certify(acting_user=users["autoridad"], fiscal_year="2026-2027")
        levy_compute(acting_user=users["hacienda"], fiscal_year="2026-2027")
        levy = roll_finalize(acting_user=users["hacienda2"], fiscal_year="2026-2027", today=date(2026, 6, 26))
        self.done(started, f"total ${levy.total_levy.amount:,.2f}, {levy.parcels_levied} parcels levied")
        started = self.step(4, f"a season of payments at the counter, each with its PDF receipt linking to {settings.SITE_URL}")
        # The season is recorded today, so a payment dated earlier is back-dated (issue 11, finding 7):
        # by the demo supervisor, with the reason printed on its receipt; one payment per parcel, so
        # none lands before a later one. A day after today is not a payment yet.
        today = timezone.localdate()
        rng = random.Random(2026)
        paying = list(Parcel.objects.filter(charges__isnull=False).distinct().order_by("parcel_id")[:400])
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
