#!/bin/sh
# Entrypoint of the production image (see Dockerfile and docker-compose.yml).
#
# 1. Refuses to start while a CHANGE_ME placeholder from .env.example or .env.owner.example is
#    still in use, or without DATABASE_URL (without it the settings would start the
#    development-only embedded PostgreSQL).
# 2. Two database roles (README, "Deployment"): web and worker connect as the application role,
#    which owns nothing and cannot TRUNCATE, ALTER or disable triggers; only the one-off migrate
#    service holds the owner role's credentials (MIGRATE_DATABASE_URL, POSTGRES_PASSWORD in
#    .env.owner). web and worker refuse to start if they are given them.
# 3. Waits for the database (DB_WAIT_TIMEOUT seconds, 60 by default).
# 4. By APP_ROLE:
#      migrate  connects as the owner: DATABASE_URL becomes MIGRATE_DATABASE_URL and the app's
#               URL is passed on as APP_DATABASE_URL (for `manage.py db_grant_app_role`); the
#               command (docker-compose.yml) migrates and grants. Any other command given to
#               the migrate service (pg_restore, psql) runs with the owner's credentials too;
#      web      waits until every migration is applied (MIGRATION_WAIT_TIMEOUT seconds, 300 by
#               default), then copies the static files built into the image to
#               STATIC_PUBLISH_DIR (the volume nginx serves /static/ from);
#      worker   waits until every migration is applied, likewise;
#      other    nothing more (one-off commands: `docker compose run --rm -e APP_ROLE=none web ...`).
# 5. Execs the command, which so receives the container's signals directly.
set -eu

for name in SECRET_KEY DATABASE_URL MIGRATE_DATABASE_URL POSTGRES_PASSWORD EMAIL_HOST_PASSWORD; do
    eval "value=\${$name:-}"
    case "$value" in
        *CHANGE_ME*)
            echo "entrypoint: $name still holds the CHANGE_ME placeholder from .env.example or .env.owner.example; set a real value in .env or .env.owner" >&2
            exit 1
            ;;
    esac
done

role="${APP_ROLE:-web}"
case "$role" in
    migrate)
        if [ -z "${MIGRATE_DATABASE_URL:-}" ]; then
            echo "entrypoint: the migrate service needs MIGRATE_DATABASE_URL, the owner role's URL (see .env.owner.example)" >&2
            exit 1
        fi
        APP_DATABASE_URL="${DATABASE_URL:-}"
        DATABASE_URL="$MIGRATE_DATABASE_URL"
        export APP_DATABASE_URL DATABASE_URL
        ;;
    web|worker)
        for name in MIGRATE_DATABASE_URL POSTGRES_PASSWORD; do
            eval "value=\${$name:-}"
            if [ -n "$value" ]; then
                echo "entrypoint: $role must not hold the database owner's credentials ($name); they belong in .env.owner, read only by the db and migrate services" >&2
                exit 1
            fi
        done
        ;;
esac

if [ -z "${DATABASE_URL:-}" ]; then
    echo "entrypoint: DATABASE_URL must be set (see .env.example)" >&2
    exit 1
fi

python - <<'PYTHON'
import os
import sys
import time

import django
from django.db import connection
from django.db.utils import OperationalError

django.setup()
timeout = int(os.environ.get("DB_WAIT_TIMEOUT", "60"))
deadline = time.monotonic() + timeout
while True:
    try:
        connection.ensure_connection()
    except OperationalError as exc:
        if time.monotonic() >= deadline:
            sys.exit(f"entrypoint: no database after {timeout} s: {exc}")
        print("entrypoint: waiting for the database", file=sys.stderr)
        time.sleep(2)
    else:
        break
if os.environ.get("APP_ROLE", "web") in ("web", "worker"):
    from parcels.database import app_role_problems

    problems = app_role_problems()
    if problems:
        sys.exit(
            "entrypoint: DATABASE_URL must connect as the application's own role, not the owner: "
            + "; ".join(problems) + " (README, Deployment: run the migrate service)"
        )
connection.close()
PYTHON

wait_for_migrations() {
    waited=0
    limit="${MIGRATION_WAIT_TIMEOUT:-300}"
    until python manage.py migrate --check --no-input >/dev/null 2>&1; do
        if [ "$waited" -ge "$limit" ]; then
            echo "entrypoint: migrations still unapplied after ${limit} s; has the migrate service run?" >&2
            exit 1
        fi
        echo "entrypoint: waiting for the migrate service to apply migrations" >&2
        sleep 5
        waited=$((waited + 5))
    done
}

case "$role" in
    web)
        wait_for_migrations
        publish="${STATIC_PUBLISH_DIR:-}"
        if [ -n "$publish" ] && [ -d "$publish" ] && [ -w "$publish" ]; then
            # Hashed names never change meaning, so old files may stay for pages still open.
            cp -R --preserve=timestamps "${STATIC_ROOT:?}/." "$publish/"
        fi
        ;;
    worker)
        wait_for_migrations
        ;;
esac

exec "$@"
