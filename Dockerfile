# syntax=docker/dockerfile:1
# Production image of the Lajas Valley irrigation levy portal. One image, three roles (APP_ROLE):
#   migrate  one-off, as the database owner: migrates and grants the application role its privileges
#   web      (default) gunicorn; its entrypoint publishes the static files for nginx
#   worker   `python manage.py run_worker`
# web and worker connect as the application's role and wait until the migrate service is done.
# See docker-compose.yml for how the roles, volumes and the nginx proxy fit together.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=lajas_portal.settings \
    STATIC_ROOT=/app/staticfiles \
    MEDIA_ROOT=/srv/media \
    STATIC_PUBLISH_DIR=/srv/static \
    APP_ROLE=web

# WeasyPrint's system libraries (Pango, HarfBuzz with its subsetter, fontconfig), a fallback
# font, MIME data for the images it embeds, and pg_dump for backups. postgresql-client on
# bookworm is version 15 and pg_dump refuses to dump a newer server: keep the db image at 15.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        libpango-1.0-0 \
        libpangoft2-1.0-0 \
        libharfbuzz0b \
        libharfbuzz-subset0 \
        libfontconfig1 \
        fontconfig \
        fonts-dejavu-core \
        shared-mime-info \
        postgresql-client \
    && rm -rf /var/lib/apt/lists/*

# The application runs unprivileged. It gets a home directory because fontconfig keeps its
# cache there and gunicorn puts its control socket in ~/.gunicorn.
RUN groupadd --system --gid 1000 app \
    && useradd --system --uid 1000 --gid app --create-home --home-dir /home/app --shell /usr/sbin/nologin app

WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt

# The code stays owned by root, so the running application cannot rewrite itself.
COPY . .

# Hashed, compressed static files are built into the image so whitenoise's manifest always
# matches the code. The key and database URL exist only for this RUN (never ENV: an image must
# not carry a usable key); with DATABASE_URL set the settings connect to nothing at import.
RUN SECRET_KEY=build-only-collectstatic-key-never-used-at-runtime \
    DATABASE_URL=postgres://build:build@build.invalid:5432/build \
    DEBUG=false \
    python manage.py collectstatic --no-input

# Mount points of the named volumes; a fresh volume takes this ownership.
RUN mkdir -p /srv/media /srv/static /srv/anchors && chown app:app /srv/media /srv/static /srv/anchors

COPY --chmod=0755 deploy/entrypoint.sh /usr/local/bin/lajas-entrypoint

USER app
EXPOSE 8000
ENTRYPOINT ["/usr/local/bin/lajas-entrypoint"]
# nginx buffers whole requests (deploy/nginx.conf), so sync workers never wait on slow clients.
# /dev/shm keeps the worker heartbeat off the overlay filesystem.
CMD ["gunicorn", "lajas_portal.wsgi:application", \
     "--bind", "0.0.0.0:8000", \
     "--workers", "3", \
     "--timeout", "60", \
     "--graceful-timeout", "30", \
     "--worker-tmp-dir", "/dev/shm", \
     "--max-requests", "1000", \
     "--max-requests-jitter", "100", \
     "--access-logfile", "-"]
