"""What PostgreSQL enforces beyond each model's own constraints and triggers.

- ``NO_TRUNCATE``: a statement-level BEFORE TRUNCATE trigger for every append-only or issued
  table (final roll lines, ledger, charges, payments, receipts, documents, ...). A TRUNCATE fires
  no row triggers, so the UPDATE/DELETE guards and the history triggers never see it; this one
  refuses it, for every role including a superuser, and also when the table is only reached
  through ``TRUNCATE other_table CASCADE``. Only ``session_replication_role = replica``
  (superuser-only) skips it: the test suite's flush does that (tests/conftest.py).
- ``app_role_grant``: the application's own login role (``DATABASE_URL`` of web and worker) owns
  nothing and gets only what the application uses: SELECT, INSERT, UPDATE and DELETE on the
  tables, USAGE and SELECT on the sequences, CONNECT and TEMPORARY on the database (bulk updates
  go through a temporary table, parcels/bulk.py) and USAGE on the schema. So it cannot TRUNCATE,
  ALTER or DROP a table, disable a trigger, create anything in the schema or set
  ``session_replication_role``. Migrations run as the owner role, which then calls this
  (``manage.py db_grant_app_role``) so tables created by later migrations are covered too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pgtrigger
from django.db import connections, transaction

NO_TRUNCATE = pgtrigger.Trigger(
    name="no_truncate",
    operation=pgtrigger.Truncate,
    when=pgtrigger.Before,
    level=pgtrigger.Statement,
    func=pgtrigger.Func(
        """
        RAISE EXCEPTION 'TRUNCATE of % is refused: it holds append-only or issued records', TG_TABLE_NAME
            USING ERRCODE = 'restrict_violation';
        """
    ),
)
# Never changed, never deleted, never emptied: the rows of a log or an issued record.
APPEND_ONLY = [pgtrigger.Protect(name="append_only", operation=pgtrigger.Update | pgtrigger.Delete), NO_TRUNCATE]

ROLE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# The tables' full privilege set (PostgreSQL 15); the application role keeps only TABLE_PRIVILEGES.
TABLE_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE")
SEQUENCE_PRIVILEGES = ("USAGE", "SELECT")


class RoleError(Exception):
    """The application role cannot be set up as asked (wrong name, or it is the owner)."""


@dataclass(frozen=True)
class GrantResult:
    role: str
    owner: str
    schema: str
    created: bool
    tables: int
    sequences: int


def app_role_grant(*, role: str, password: str | None = None, using: str = "default") -> GrantResult:
    """Create ``role`` if missing (or bring it back to a plain login role), then give it exactly the
    application's privileges on every table and sequence of the current schema, now and for the
    ones the connected (owner) role creates later. Run as the role that owns the schema's tables.
    ``password`` (None: leave it as it is) is set in the same transaction."""
    if not ROLE_NAME.fullmatch(role):
        raise RoleError(f"application role name {role!r} must be lower-case letters, digits and _")
    connection = connections[using]
    quote = connection.ops.quote_name
    with transaction.atomic(using=using), connection.cursor() as cursor:
        cursor.execute("SELECT current_user, current_schema(), current_database()")
        owner, schema, database = cursor.fetchone()
        if role == owner:
            raise RoleError(
                f"the application role {role!r} is the role running the migrations; give web and worker a role of their own"
            )
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
        created = cursor.fetchone() is None
        attributes = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT"
        cursor.execute(f"{'CREATE' if created else 'ALTER'} ROLE {quote(role)} {attributes}")
        if password is not None:
            cursor.execute(f"ALTER ROLE {quote(role)} PASSWORD %s", [password])
        # Membership in another role would bring that role's privileges (or SET ROLE to it) along.
        cursor.execute(
            "SELECT r.rolname FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid "
            "JOIN pg_roles u ON u.oid = m.member WHERE u.rolname = %s",
            [role],
        )
        for (granted,) in cursor.fetchall():
            cursor.execute(f"REVOKE {quote(granted)} FROM {quote(role)}")
        cursor.execute(
            # Temporary tables (parcels/bulk.py, in another session) are the role's own, and go.
            "SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner"
            " WHERE r.rolname = %s AND c.relpersistence <> 't'",
            [role],
        )
        if cursor.fetchone()[0]:
            raise RoleError(f"the application role {role!r} owns tables; it must own nothing (REASSIGN OWNED BY it first)")

        role_q, schema_q, owner_q = quote(role), quote(schema), quote(owner)
        statements = [
            f"REVOKE ALL ON DATABASE {quote(database)} FROM {role_q}",
            f"GRANT CONNECT, TEMPORARY ON DATABASE {quote(database)} TO {role_q}",
            # PostgreSQL 15 no longer lets PUBLIC create in the public schema; a cluster upgraded
            # from an older version still does.
            f"REVOKE CREATE ON SCHEMA {schema_q} FROM PUBLIC",
            f"REVOKE ALL ON SCHEMA {schema_q} FROM {role_q}",
            f"GRANT USAGE ON SCHEMA {schema_q} TO {role_q}",
            f"REVOKE ALL ON ALL TABLES IN SCHEMA {schema_q} FROM {role_q}",
            f"GRANT {', '.join(TABLE_PRIVILEGES)} ON ALL TABLES IN SCHEMA {schema_q} TO {role_q}",
            f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {schema_q} FROM {role_q}",
            f"GRANT {', '.join(SEQUENCE_PRIVILEGES)} ON ALL SEQUENCES IN SCHEMA {schema_q} TO {role_q}",
            # Tables and sequences the owner creates later (the next release's migrations) come
            # with the same privileges even before this runs again.
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner_q} IN SCHEMA {schema_q} "
            f"GRANT {', '.join(TABLE_PRIVILEGES)} ON TABLES TO {role_q}",
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner_q} IN SCHEMA {schema_q} "
            f"GRANT {', '.join(SEQUENCE_PRIVILEGES)} ON SEQUENCES TO {role_q}",
        ]
        for statement in statements:
            cursor.execute(statement)
        cursor.execute(
            "SELECT count(*) FILTER (WHERE relkind IN ('r', 'p', 'v', 'm')), count(*) FILTER (WHERE relkind = 'S') "
            "FROM pg_class WHERE relnamespace = %s::regnamespace",
            [schema],
        )
        tables, sequences = cursor.fetchone()
    return GrantResult(role=role, owner=owner, schema=schema, created=created, tables=tables, sequences=sequences)


def app_role_problems(*, using: str = "default") -> list[str]:
    """What is wrong with the connected role as the application's role: superuser, owner of
    tables, TRUNCATE on a table, or CREATE on the schema. Web and worker refuse to start on any
    (deploy/entrypoint.sh); empty for a role set up by ``app_role_grant``."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            """
            SELECT current_user, r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolbypassrls,
                   (SELECT count(*) FROM pg_class c WHERE c.relowner = r.oid AND c.relpersistence <> 't'),
                   (SELECT count(*) FROM pg_class c
                     WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
                       AND has_table_privilege(c.oid, 'TRUNCATE, TRIGGER, REFERENCES')),
                   has_schema_privilege(current_schema(), 'CREATE')
              FROM pg_roles r WHERE r.rolname = current_user
            """
        )
        role, powerful, owned, truncatable, can_create = cursor.fetchone()
    problems = []
    if powerful:
        problems.append(f"{role} is a superuser or may create roles or databases")
    if owned:
        problems.append(f"{role} owns {owned} tables, sequences or indexes")
    if truncatable:
        problems.append(f"{role} may TRUNCATE (or add triggers or references to) {truncatable} tables")
    if can_create:
        problems.append(f"{role} may create objects in the schema")
    return problems


def trigger_skip_restrict(*, using: str = "default") -> None:
    """Replace django-pgtrigger's ``_pgtrigger_should_ignore`` (which every trigger calls first)
    with the same check, answered only for members of the function's owner. pgtrigger creates it
    again with each trigger a migration installs, so this runs after every migrate."""
    function = f"{connections[using].ops.quote_name(pgtrigger.features.schema())}._pgtrigger_should_ignore"
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"""
            CREATE OR REPLACE FUNCTION {function}(trigger_name NAME)
            RETURNS BOOLEAN AS $$
                DECLARE
                    _pgtrigger_ignore TEXT[];
                BEGIN
                    -- pgtrigger.ignore is any role's to set; only the owner may skip a trigger with it.
                    IF NOT pg_has_role(
                        current_user, (SELECT proowner FROM pg_proc WHERE oid = '{function}(name)'::regprocedure), 'USAGE'
                    ) THEN
                        RETURN FALSE;
                    END IF;
                    BEGIN
                        SELECT INTO _pgtrigger_ignore CURRENT_SETTING('pgtrigger.ignore');
                        EXCEPTION WHEN OTHERS THEN
                    END;
                    RETURN COALESCE(trigger_name = ANY(_pgtrigger_ignore), FALSE);
                END;
            $$ LANGUAGE plpgsql
            """
        )
