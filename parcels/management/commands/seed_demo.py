from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from parcels.demo import demo_csv
from parcels.models import Owner, Parcel
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
        self.stdout.write("demo users (username / password):")
        for username, role in DEMO_USERS:
            password = f"Lajas-2026-{role}"
            if not get_user_model().objects.filter(username=username).exists():
                user_create(username=username, role=role, password=password, owner=owner if role == "landowner" else None,
                            email=f"{username}@example.pr")
            self.stdout.write(f"  {username:14} {password:28} ({role})")
