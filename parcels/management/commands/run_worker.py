from django.core.management.base import BaseCommand

from parcels.jobs import worker_loop


class Command(BaseCommand):
    help = "Runs background jobs (imports, rolls, bulk printing) until stopped."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Stop when the queue is empty.")

    def handle(self, *args, **options):
        done = worker_loop(once=options["once"])
        if options["once"]:
            self.stdout.write(f"{done} job(s) run")
