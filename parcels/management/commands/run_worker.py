from django.core.management.base import BaseCommand

from parcels.jobs import worker_run


class Command(BaseCommand):
    help = ("Runs background jobs (imports, rolls, bulk printing) until stopped: a procrastinate worker "
            "that reconnects when its database goes away. Run as many as wanted.")

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Stop when no job is left to run.")
        parser.add_argument("--queue", action="append", dest="queues", help="Only this queue (repeatable); default all.")

    def handle(self, *args, **options):
        worker_run(once=options["once"], queues=options["queues"])
