#!/bin/sh
# Entrypoint of the production image (see Dockerfile and docker-compose.yml).
#
# 1. Refuses to start while a CHANGE_ME placeholder from .env.example is still in use, or without
#    DATABASE_URL (without it the settings would start the development-only embedded PostgreSQL).
# 2. Waits for the database (DB_WAIT_TIMEOUT seconds, 60 by default).
# 3. By APP_ROLE:
#      web     migrates, then copies the static files built into the image to STATIC_PUBLISH_DIR
#              (the volume nginx serves /static/ from);
#      worker  waits until the web container has applied every migration
#              (MIGRATION_WAIT_TIMEOUT seconds, 300 by default);
#      other   nothing more (one-off commands: `docker compose run --rm -e APP_ROLE=none web ...`).
# 4. Execs the command, which so receives the container's signals directly.
set -eu

for name in SECRET_KEY DATABASE_URL POSTGRES_PASSWORD EMAIL_HOST_PASSWORD; do
    eval "value=\${$name:-}"
    case "$value" in
        *CHANGE_ME*)
            echo "entrypoint: $name still holds the CHANGE_ME placeholder from .env.example; set a real value in .env" >&2
            exit 1
            ;;
    esac
done

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
        connection.close()
        break
PYTHON

case "${APP_ROLE:-web}" in
    web)
        python manage.py migrate --no-input
        publish="${STATIC_PUBLISH_DIR:-}"
        if [ -n "$publish" ] && [ -d "$publish" ] && [ -w "$publish" ]; then
            # Hashed names never change meaning, so old files may stay for pages still open.
            cp -R --preserve=timestamps "${STATIC_ROOT:?}/." "$publish/"
        fi
        ;;
    worker)
        waited=0
        limit="${MIGRATION_WAIT_TIMEOUT:-300}"
        until python manage.py migrate --check --no-input >/dev/null 2>&1; do
            if [ "$waited" -ge "$limit" ]; then
                echo "entrypoint: migrations still unapplied after ${limit} s; is the web container running?" >&2
                exit 1
            fi
            echo "entrypoint: waiting for the web container to apply migrations" >&2
            sleep 5
            waited=$((waited + 5))
        done
        ;;
esac

exec "$@"
