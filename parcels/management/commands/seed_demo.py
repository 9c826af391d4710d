from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from parcels.demo import demo_csv
from parcels.models import Owner, Parcel
from parcels.roles import STAFF_ROLES
from parcels.second_factor import demo_totp_device_set, totp_secret
from parcels.services import parcels_import, user_create

DEMO_USERS = [
    ("autoridad", "authority"),
    ("hacienda", "hacienda"),
    ("hacienda2", "hacienda"),
    ("colector", "collector"),
    ("supervisor", "supervisor"),
    ("auditor", "auditor"),
    ("terrateniente", "landowner"),
]


class Command(BaseCommand):
    help = "Builds a demo district (about 1,500 parcels) and one demo user per role. Development only."

    def add_arguments(self, parser):
        parser.add_argument("--parcels", type=int, default=1500)

    def handle(self, *args, parcels, **options):
        if not settings.DEMO_DATA_ALLOWED:
            raise CommandError("seed_demo refuses to run against a production configuration (DEBUG is off).")
        data, landowner_key = demo_csv(parcels=parcels)
        if Parcel.objects.exists():
            self.stdout.write("the registry already has parcels; demo parcels left as they are")
        else:
            result = parcels_import(acting_user=None, data=data.encode(), source="seed_demo")
            if not result.ok:
                raise CommandError("; ".join(str(error) for error in result.errors[:5]))
            self.stdout.write(f"demo registry: {result.summary['created']} parcels")
        owner = Owner.objects.filter(owner_key=landowner_key).first()
        self.stdout.write("demo users (username / password / authenticator secret; "
                          "the code: any TOTP app, or `python manage.py demo_totp USERNAME`):")
        for username, role in DEMO_USERS:
            password = f"Lajas-2026-{role}"
            user = get_user_model().objects.filter(username=username).first()
            if user is None:
                user = user_create(username=username, role=role, password=password,
                                   owner=owner if role == "landowner" else None, email=f"{username}@example.pr")
            secret = "(password only)"
            if role in STAFF_ROLES:
                secret = totp_secret(demo_totp_device_set(user=user)).replace(" ", "")
            self.stdout.write(f"  {username:14} {password:28} {secret:34} ({role})")
        self.seed_levy_and_payments()

    def seed_levy_and_payments(self) -> None:
        """The 2026-2027 levy, certified, computed and finalized on time, and a season of
        payments at the counter: most July halves on time, some late, some still unpaid."""
        import random
        from datetime import date, timedelta
        from decimal import Decimal

        from billing.models import Payment
        from billing.services import account_state, payment_record
        from levy.models import FiscalYear
        from levy.services import estimate_certify, estimate_enter, levy_compute, roll_finalize

        if FiscalYear.objects.exists():
            self.stdout.write("levy data already present; left as it is")
            return
        users = {user.username: user for user in get_user_model().objects.filter(username__in=[u for u, _ in DEMO_USERS])}
        estimate_enter(acting_user=users["autoridad"], fiscal_year="2026-2027", om_estimate=Decimal("1250000.00"),
                       reserve=Decimal("25000.00"), misc_income=Decimal("40000.00"), deficit=Decimal("30000.00"))
        estimate_certify(acting_user=users["autoridad"], fiscal_year="2026-2027")
        levy_compute(acting_user=users["hacienda"], fiscal_year="2026-2027")
        levy = roll_finalize(acting_user=users["hacienda2"], fiscal_year="2026-2027", today=date(2026, 6, 26))
        rng = random.Random(2026)
        paying = list(Parcel.objects.filter(charges__isnull=False).distinct().order_by("parcel_id")[:400])
        for parcel in paying:
            draw = rng.random()
            if parcel.parcel_id == "LAJ-000002":
                continue  # the demo landowner's second parcel stays unpaid (delinquent)
            if parcel.parcel_id == "LAJ-000001" or draw < 0.55:
                day = date(2026, 7, 1) + timedelta(days=rng.randint(0, 55))
            elif draw < 0.75:
                day = date(2026, 9, 1) + timedelta(days=rng.randint(0, 80))  # late: surcharge
            else:
                continue
            due = account_state(parcel=parcel, as_of=day).state.total_due
            if due > 0:
                payment_record(acting_user=users["colector"], parcel=parcel, amount=due, paid_on=day,
                               method=rng.choice(["cash", "check", "card", "transfer"]))
        self.stdout.write(
            f"demo levy {levy.fiscal_year.label}: total ${levy.total_levy.amount:,.2f}, "
            f"{levy.parcels_levied} parcels levied, {Payment.objects.count()} payments recorded"
        )
