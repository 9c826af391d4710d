"""``manage.py db_grant_app_role [--role NAME]``: run as the owner role (the migrate service, after
``migrate``) to create or update the application's login role and give it exactly the privileges
the application uses on every table and sequence (parcels.database.app_role_grant).

The role and its password come from ``APP_DATABASE_URL``, the URL web and worker connect with
(deploy/entrypoint.sh sets it from the app's ``DATABASE_URL`` before switching to the owner's
``MIGRATE_DATABASE_URL``), so the app's password lives in one place, ``.env``. With ``--role`` only
the privileges are set and the password is left as it is.
"""

from __future__ import annotations

import os

import dj_database_url
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from parcels.database import RoleError, app_role_grant


class Command(BaseCommand):
    help = "Creates or updates the application's database role with only the privileges it uses (run as the owner)."

    def add_arguments(self, parser):
        parser.add_argument("--role", help="The application role's name (default: the user of APP_DATABASE_URL).")

    def handle(self, *args, role, **options):
        password = None
        if not role:
            url = os.environ.get("APP_DATABASE_URL", "")
            if not url:
                raise CommandError("give --role, or APP_DATABASE_URL (the URL web and worker connect with)")
            app = dj_database_url.parse(url)
            role, password = app.get("USER") or "", app.get("PASSWORD") or None
            if app.get("NAME") and app["NAME"] != connection.settings_dict["NAME"]:
                raise CommandError(
                    f"APP_DATABASE_URL names database {app['NAME']!r}, but this connection is to "
                    f"{connection.settings_dict['NAME']!r}"
                )
        try:
            result = app_role_grant(role=role, password=password)
        except RoleError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"{'created' if result.created else 'updated'} role {result.role}: SELECT, INSERT, UPDATE, DELETE on "
            f"{result.tables} tables and USAGE, SELECT on {result.sequences} sequences of schema {result.schema} "
            f"(owner {result.owner}); no TRUNCATE, no DDL"
        )
