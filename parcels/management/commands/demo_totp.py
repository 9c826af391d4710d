import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice


class Command(BaseCommand):
    help = "Prints the current sign-in code of a user's authenticator app. Development and demo data only."

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username, **options):
        if not settings.DEMO_DATA_ALLOWED:
            raise CommandError("demo_totp refuses to run against a production configuration (DEMO_DATA_ALLOWED is off).")
        user = get_user_model().objects.filter(username=username).first()
        device = TOTPDevice.objects.filter(user=user, confirmed=True).first() if user else None
        if device is None:
            raise CommandError(f"{username!r} has no authenticator app enrolled")
        totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
        now = time.time()
        totp.time = now
        left = device.step - int(now - device.t0) % device.step
        self.stdout.write(f"{totp.token():0{device.digits}d}  (valid for {left} more seconds)")
