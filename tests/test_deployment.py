"""Checks of the production deployment files against the settings they configure.

No Docker engine is needed: ``docker-compose.yml``, ``deploy/nginx.conf``, the ``Dockerfile`` and
``.env.example`` are read as files, ``deploy/entrypoint.sh`` runs under ``/bin/sh`` with a stand-in
``python``, and the production settings are imported in subprocesses, as a container imports them.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from django.conf import settings

from tests.databases import database_url

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_FILE = ROOT / "lajas_portal" / "settings.py"
ENTRYPOINT = ROOT / "deploy" / "entrypoint.sh"
APP_SERVICES = ("web", "worker")
NAMED_VOLUMES = ("pgdata", "media", "static")
# Debian bookworm's postgresql-client, the image's pg_dump, is 15; pg_dump refuses newer servers.
BOOKWORM_PG_MAJOR = 15
WEASYPRINT_PACKAGES = (
    "libpango-1.0-0",
    "libpangoft2-1.0-0",
    "libharfbuzz0b",
    "libharfbuzz-subset0",
    "libfontconfig1",
    "shared-mime-info",
)
TRUE_WORDS = ("1", "true", "yes", "on")  # what settings.envbool counts as true
MIB = 1024 * 1024


# --- Reading the files -------------------------------------------------------------------------


def settings_env_reads() -> list[tuple[str, str]]:
    """``(helper, NAME)`` for every ``env("NAME"`` / ``envbool(`` / ... call in settings.py."""
    pattern = re.compile(r"\b(env|envbool|envint|envsecret|envlist)\(\s*[\"']([A-Z][A-Z0-9_]*)[\"']")
    return pattern.findall(SETTINGS_FILE.read_text(encoding="utf-8"))


def settings_env_names() -> set[str]:
    """Every variable settings.py reads, ``NAME_FILE`` included for secrets."""
    names = set()
    for helper, name in settings_env_reads():
        names.add(name)
        if helper == "envsecret":
            names.add(f"{name}_FILE")
    return names


def env_example(name: str = ".env.example") -> dict[str, str | None]:
    """Variables in .env.example (or .env.owner.example): name -> value, or None where the line is
    commented out."""
    found: dict[str, str | None] = {}
    for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
        match = re.match(r"^\s*(#\s*)?([A-Z][A-Z0-9_]*)=(.*)$", line)
        if not match:
            continue
        commented, name, value = match.groups()
        if commented:
            found.setdefault(name, None)
        else:
            found[name] = value.strip()
    return found


def env_owner_example() -> dict[str, str | None]:
    return env_example(".env.owner.example")


def env_files(service: dict) -> list[str]:
    files = service.get("env_file") or []
    files = [files] if isinstance(files, str | dict) else files
    return [item["path"] if isinstance(item, dict) else item for item in files]


def environment(service: dict) -> dict[str, str]:
    """A service's ``environment:`` (map or ``KEY=VALUE`` list) as strings."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {name: str(value) for name, value in env.items()}


def mounts(service: dict) -> list[tuple[str, str, str]]:
    """``(kind, source, target)`` of each mount, short or long syntax; kind is volume or bind."""
    result = []
    for entry in service.get("volumes", []):
        if isinstance(entry, dict):
            result.append((entry.get("type", "volume"), entry.get("source", ""), entry["target"]))
        else:
            source, target = entry.split(":")[:2]
            kind = "bind" if source.startswith((".", "/", "~")) else "volume"
            result.append((kind, source, target))
    return result


def named_mounts(service: dict) -> dict[str, str]:
    return {source: target for kind, source, target in mounts(service) if kind == "volume"}


def nginx_text() -> str:
    """deploy/nginx.conf without its comments."""
    text = (ROOT / "deploy" / "nginx.conf").read_text(encoding="utf-8")
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def nginx_values(directive: str) -> list[str]:
    return [value.strip() for value in re.findall(rf"(?m)^\s*{directive}\s+([^;]+);", nginx_text())]


def nginx_size(value: str) -> int:
    """nginx sizes: bytes, or k/m/g suffixes in powers of 1024."""
    match = re.fullmatch(r"(\d+)([kKmMgG]?)", value)
    assert match, f"not an nginx size: {value!r}"
    return int(match[1]) * {"": 1, "k": 1024, "m": MIB, "g": 1024 * MIB}[match[2].lower()]


def nginx_seconds(value: str) -> int:
    match = re.fullmatch(r"(\d+)(s?)", value)
    assert match, f"not a plain number of seconds: {value!r}"
    return int(match[1])


def dockerfile_instructions() -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` in order, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text(encoding="utf-8"))
    result = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            instruction, _, arguments = line.partition(" ")
            result.append((instruction.upper(), arguments.strip()))
    return result


def dockerfile(instruction: str) -> list[str]:
    return [arguments for name, arguments in dockerfile_instructions() if name == instruction]


def apt_packages() -> set[str]:
    packages = set()
    for run in dockerfile("RUN"):
        for command in re.findall(r"apt-get install (.*?)(?:&&|;|$)", run):
            packages.update(word for word in command.split() if not word.startswith("-"))
    return packages


def dockerfile_env() -> dict[str, str]:
    env = {}
    for arguments in dockerfile("ENV"):
        env.update(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=(\S+)", arguments))
    return env


def gunicorn_command() -> list[str]:
    (cmd,) = dockerfile("CMD")[-1:]
    return json.loads(cmd)


def option(command: list[str], name: str) -> str:
    assert name in command, f"{name} missing from {command}"
    return command[command.index(name) + 1]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def services(compose: dict) -> dict[str, dict]:
    return compose["services"]


# --- docker-compose.yml ------------------------------------------------------------------------


def test_compose_defines_db_migrate_web_worker_and_proxy(services):
    assert {"db", "migrate", "web", "worker", "proxy"} <= set(services)


def test_db_is_postgres_15_like_the_images_pg_dump(services):
    image = services["db"]["image"]
    match = re.fullmatch(r"postgres:(\d+)(?:[.-].*)?", image)
    assert match, f"db image {image!r} is not a versioned postgres image"
    assert int(match[1]) == BOOKWORM_PG_MAJOR, "upgrade the image's postgresql-client together with the server"
    assert "build" not in services["db"]


def test_db_keeps_its_data_in_pgdata_and_has_a_healthcheck(services):
    db = services["db"]
    assert named_mounts(db).get("pgdata") == "/var/lib/postgresql/data"
    test = db["healthcheck"]["test"]
    assert "pg_isready" in (test if isinstance(test, str) else " ".join(test))


def test_web_and_worker_are_one_build_of_this_repository(services):
    web, worker = services["web"], services["worker"]
    assert web["build"] == worker["build"]
    context = web["build"] if isinstance(web["build"], str) else web["build"].get("context", ".")
    assert context in (".", "./")
    assert web.get("image") == worker.get("image")


def test_web_runs_gunicorn_and_worker_runs_the_job_worker(services):
    web_command = services["web"].get("command")
    assert web_command is None or "gunicorn" in str(web_command)  # None: the image's CMD
    worker_command = services["worker"]["command"]
    worker_command = worker_command if isinstance(worker_command, list) else worker_command.split()
    assert worker_command[-2:] == ["manage.py", "run_worker"]


def test_the_worker_service_scales(services):
    """``docker compose up --scale worker=3``: nothing in the service may be one of a kind."""
    worker = services["worker"]
    assert not {"container_name", "hostname", "ports"} & set(worker)
    assert "deploy" not in worker or "replicas" not in worker["deploy"]


def test_app_services_read_dotenv_and_wait_for_a_healthy_db_and_the_migrations(services):
    for name in APP_SERVICES:
        service = services[name]
        assert env_files(service) == [".env"], name
        assert service["depends_on"]["db"]["condition"] == "service_healthy", name
        assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully", name


def test_migrate_is_a_one_off_of_the_same_image_as_the_owner(services):
    migrate, web = services["migrate"], services["web"]
    assert migrate["build"] == web["build"] and migrate.get("image") == web.get("image")
    assert environment(migrate)["APP_ROLE"] == "migrate"
    assert env_files(migrate) == [".env", ".env.owner"]  # the owner's file last: it is the one that counts
    assert migrate["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert migrate.get("restart") == "no", "a one-off: web and worker start once it has exited 0"
    command = migrate["command"]
    command = " ".join(command) if isinstance(command, list) else command
    assert re.search(r"manage\.py migrate --no-input && python manage\.py db_grant_app_role\b", command)
    assert named_mounts(migrate).get("media") == environment(migrate)["MEDIA_ROOT"]  # data migrations read it
    assert set(migrate.get("networks") or []) == set(services["db"].get("networks") or [])


def test_only_db_and_migrate_hold_the_owners_credentials(services):
    owner_variables = {"POSTGRES_PASSWORD", "MIGRATE_DATABASE_URL"}
    for name, service in services.items():
        reads_owner_file = ".env.owner" in env_files(service)
        assert reads_owner_file == (name in ("db", "migrate")), name
        assert not owner_variables & set(environment(service)), f"{name} sets an owner credential inline"
    assert services["db"].get("environment") is None, "the db takes its POSTGRES_* from .env.owner only"
    for name in owner_variables:
        assert name not in env_example(), f"{name} belongs in .env.owner.example, not .env.example"
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert ".env" in ignored and ".env.owner" in ignored


def test_named_volumes_are_declared_and_mounted(compose, services):
    assert set(NAMED_VOLUMES) <= set(compose.get("volumes") or {})
    used = {source for service in services.values() for source in named_mounts(service)}
    assert set(NAMED_VOLUMES) <= used
    for name in APP_SERVICES:
        service = services[name]
        media_root = environment(service).get("MEDIA_ROOT") or dockerfile_env()["MEDIA_ROOT"]
        assert named_mounts(service).get("media") == media_root, f"{name} must keep uploads on the media volume"


def test_app_volume_mount_points_belong_to_the_app_user(services):
    """A fresh named volume copies the owner of its mount point; root-owned would be read-only."""
    chowns = " ".join(run for run in dockerfile("RUN") if "chown" in run)
    for name in APP_SERVICES:
        for target in named_mounts(services[name]).values():
            assert target in chowns, f"{target} is not created and chowned in the Dockerfile"


def test_proxy_serves_the_static_files_web_publishes(services):
    web, proxy = services["web"], services["proxy"]
    static_root = environment(web).get("STATIC_ROOT") or dockerfile_env()["STATIC_ROOT"]
    assert static_root == dockerfile_env()["STATIC_ROOT"], "collectstatic ran into the image's STATIC_ROOT"
    publish_dir = environment(web).get("STATIC_PUBLISH_DIR") or dockerfile_env()["STATIC_PUBLISH_DIR"]
    assert named_mounts(web).get("static") == publish_dir
    aliases = re.findall(r"location\s+/static/\s*\{[^}]*?\balias\s+([^;]+);", nginx_text())
    assert len(aliases) == 1, "nginx needs one `location /static/` with an alias"
    assert aliases[0].strip().rstrip("/") == named_mounts(proxy).get("static", "").rstrip("/")


def test_media_is_never_served_by_the_proxy(services):
    """Stored receipts and uploads go through the app's access checks, never straight from nginx."""
    proxy = services["proxy"]
    media_root = environment(services["web"]).get("MEDIA_ROOT") or dockerfile_env()["MEDIA_ROOT"]
    assert "media" not in named_mounts(proxy)
    assert all(not target.startswith(media_root) for _, _, target in mounts(proxy))
    assert not re.search(r"location[^{]*media", nginx_text())
    for path in nginx_values("alias") + nginx_values("root"):
        assert "media" not in path and not path.startswith(media_root)


def test_proxy_is_nginx_on_port_80_with_the_repository_config(services):
    proxy = services["proxy"]
    assert proxy["image"].startswith("nginx:")
    assert "80:80" in [str(port) for port in proxy["ports"]]
    binds = {source: target for kind, source, target in mounts(proxy) if kind == "bind"}
    assert binds.get("./deploy/nginx.conf") == "/etc/nginx/conf.d/default.conf"


def test_only_the_proxy_publishes_ports(services):
    published = {name for name, service in services.items() if service.get("ports")}
    assert published == {"proxy"}


def test_proxy_cannot_reach_the_database(services):
    db_networks = set(services["db"].get("networks") or ["default"])
    proxy_networks = set(services["proxy"].get("networks") or ["default"])
    assert not db_networks & proxy_networks
    assert set(services["web"].get("networks") or ["default"]) >= {*db_networks, *proxy_networks} - {"default"}


def test_every_service_restarts(services):
    for name, service in services.items():
        if name != "migrate":  # the one-off
            assert service.get("restart") in ("always", "unless-stopped", "on-failure"), name


def test_no_service_runs_with_debug(services):
    for name, service in services.items():
        debug = environment(service).get("DEBUG", "false")
        assert debug.strip().lower() not in TRUE_WORDS, name


# --- deploy/nginx.conf -------------------------------------------------------------------------


def test_proxy_body_limit_matches_the_upload_limit():
    """A full 20 MB CSV plus its multipart envelope gets through; much more is refused early."""
    (limit,) = nginx_values("client_max_body_size")
    size = nginx_size(limit)
    assert settings.MAX_UPLOAD_BYTES < size <= settings.MAX_UPLOAD_BYTES + MIB


def test_proxy_buffers_requests_and_forwards_client_details():
    assert nginx_values("proxy_request_buffering") == ["on"]
    headers = dict(value.split(None, 1) for value in nginx_values("proxy_set_header"))
    assert headers.get("X-Forwarded-Proto")
    assert headers.get("X-Forwarded-For")
    assert headers.get("Host") == "$host"
    assert any("web:8000" in value for value in nginx_values("set") + nginx_values("proxy_pass"))


def test_proxy_waits_longer_than_gunicorn():
    (read_timeout,) = nginx_values("proxy_read_timeout")
    assert nginx_seconds(read_timeout) > int(option(gunicorn_command(), "--timeout"))


# --- .env.example ------------------------------------------------------------------------------


def test_env_example_lists_every_variable_the_settings_read():
    names = settings_env_names()
    # Guards the scan itself: a settings refactor must not make this test pass vacuously.
    assert {"DATABASE_URL", "SECRET_KEY", "SECRET_KEY_FILE", "DEBUG", "ALLOWED_HOSTS"} <= names
    missing = sorted(names - set(env_example()))
    assert not missing, f".env.example does not mention {missing}"


def test_env_example_is_shaped_for_production():
    example, owner = env_example(), env_owner_example()
    required = ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "SITE_URL", "DATABASE_URL")
    for name in required:
        assert example.get(name) is not None, f"{name} must be set (not commented) in .env.example"
    for name in ("POSTGRES_DB", "POSTGRES_USER", "POSTGRES_PASSWORD", "MIGRATE_DATABASE_URL"):
        assert owner.get(name) is not None, f"{name} must be set (not commented) in .env.owner.example"
    assert set(owner) == {"POSTGRES_DB", "POSTGRES_USER", "POSTGRES_PASSWORD", "MIGRATE_DATABASE_URL"}
    assert example["DEBUG"].lower() not in TRUE_WORDS
    assert (example.get("DEMO_DATA_ALLOWED") or "false").lower() not in TRUE_WORDS
    assert "CHANGE_ME" in example["SECRET_KEY"], "a placeholder, never a real key"
    assert "CHANGE_ME" in owner["POSTGRES_PASSWORD"]
    assert "CHANGE_ME" in urlsplit(example["DATABASE_URL"]).password
    assert all(origin.startswith("https://") for origin in example["CSRF_TRUSTED_ORIGINS"].split(","))
    assert example["SITE_URL"].startswith("https://")


def test_env_example_database_urls_point_at_the_db_service_as_two_roles(services):
    owner = env_owner_example()
    app, migrate = urlsplit(env_example()["DATABASE_URL"]), urlsplit(owner["MIGRATE_DATABASE_URL"])
    for url in (app, migrate):
        assert url.scheme in ("postgres", "postgresql")
        assert url.hostname == "db" and "db" in services
        assert url.path.lstrip("/") == owner["POSTGRES_DB"]
    assert migrate.username == owner["POSTGRES_USER"] and migrate.password == owner["POSTGRES_PASSWORD"]
    assert app.username not in (owner["POSTGRES_USER"], "postgres"), "web and worker connect as a role of their own"


# --- Dockerfile --------------------------------------------------------------------------------


def test_dockerfile_builds_on_python_311_slim_bookworm():
    assert dockerfile("FROM")[0].startswith("python:3.11-slim-bookworm")


def test_dockerfile_installs_weasyprint_libraries_fonts_and_pg_dump():
    packages = apt_packages()
    assert set(WEASYPRINT_PACKAGES) <= packages
    assert any(package.startswith("fonts-") for package in packages)
    assert "postgresql-client" in packages
    assert any("pip install -r requirements.txt" in run for run in dockerfile("RUN"))


def test_dockerfile_runs_as_a_non_root_user():
    users = dockerfile("USER")
    assert users, "the image must switch to an unprivileged user"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    assert any("useradd" in run and user in run for run in dockerfile("RUN"))


def test_dockerfile_collects_static_without_baking_in_a_key():
    (collect,) = [run for run in dockerfile("RUN") if "collectstatic" in run]
    assert "SECRET_KEY=" in collect and "DATABASE_URL=" in collect and "--no-input" in collect
    # ENV or ARG would leave a known key (or a dummy database) in the image for runtime.
    for instruction in ("ENV", "ARG"):
        for arguments in dockerfile(instruction):
            assert not re.search(r"\b(SECRET_KEY|DATABASE_URL)\b", arguments), f"{instruction} {arguments}"


def test_dockerfile_default_command_is_gunicorn_with_the_entrypoint():
    command = gunicorn_command()
    assert command[0] == "gunicorn"
    assert "lajas_portal.wsgi:application" in command
    assert option(command, "--bind") == "0.0.0.0:8000"
    assert option(command, "--workers") == "3"
    assert 30 <= int(option(command, "--timeout")) <= 120
    assert dockerfile("ENTRYPOINT")


# --- deploy/entrypoint.sh ----------------------------------------------------------------------


def run_entrypoint(tmp_path: Path, env: dict[str, str], *command: str) -> tuple[subprocess.CompletedProcess, str]:
    """Runs the entrypoint with a stand-in ``python`` that logs its arguments; returns the log too."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake_python = bin_dir / "python"
    fake_python.write_text('#!/bin/sh\necho "$*" >> "$FAKE_PYTHON_LOG"\ncat > /dev/null\n', encoding="utf-8")
    fake_python.chmod(0o755)
    log = tmp_path / "python.log"
    log.touch()
    full_env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "FAKE_PYTHON_LOG": str(log),
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": "postgres://lajas:pw@db:5432/lajas",
        **env,
    }
    completed = subprocess.run(
        ["/bin/sh", str(ENTRYPOINT), *command],
        env=full_env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return completed, log.read_text(encoding="utf-8")


@pytest.mark.skipif(not Path("/bin/sh").exists(), reason="needs a POSIX shell")
def test_entrypoint_is_valid_posix_shell():
    assert subprocess.run(["/bin/sh", "-n", str(ENTRYPOINT)], capture_output=True).returncode == 0


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "MIGRATE_DATABASE_URL", "POSTGRES_PASSWORD", "EMAIL_HOST_PASSWORD"])
def test_entrypoint_refuses_the_placeholders_of_env_example(tmp_path, name):
    value = "postgres://lajas:CHANGE_ME@db:5432/lajas" if name.endswith("DATABASE_URL") else "CHANGE_ME"
    # The migrate role: it may hold every one of them (web and worker refuse the owner's anyway).
    env = {"APP_ROLE": "migrate", "MIGRATE_DATABASE_URL": "postgres://lajas:pw@db:5432/lajas", name: value}
    completed, log = run_entrypoint(tmp_path, env, "echo", "started")
    assert completed.returncode != 0
    assert name in completed.stderr and "started" not in completed.stdout
    assert log == ""


def test_entrypoint_requires_a_database_url(tmp_path):
    completed, log = run_entrypoint(tmp_path, {"DATABASE_URL": ""}, "echo", "started")
    assert completed.returncode != 0 and "DATABASE_URL" in completed.stderr
    assert log == ""


def test_entrypoint_publishes_static_for_the_web_role_and_never_migrates(tmp_path):
    static_root, publish = tmp_path / "staticfiles", tmp_path / "published"
    (static_root / "css").mkdir(parents=True)
    (static_root / "css" / "app.0123456789ab.css").write_text("body {}", encoding="utf-8")
    publish.mkdir()
    env = {"APP_ROLE": "web", "STATIC_ROOT": str(static_root), "STATIC_PUBLISH_DIR": str(publish)}
    completed, log = run_entrypoint(tmp_path, env, "echo", "started")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "started"
    assert (publish / "css" / "app.0123456789ab.css").read_text(encoding="utf-8") == "body {}"
    migrations = [line for line in log.splitlines() if "migrate" in line]
    assert migrations == ["manage.py migrate --check --no-input"], "web only waits for the migrate service"


def test_entrypoint_never_migrates_for_the_worker_role(tmp_path):
    completed, log = run_entrypoint(tmp_path, {"APP_ROLE": "worker"}, "echo", "started")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "started"
    migrations = [line for line in log.splitlines() if "migrate" in line]
    assert migrations == ["manage.py migrate --check --no-input"]


@pytest.mark.parametrize("role", ["web", "worker"])
@pytest.mark.parametrize("name", ["MIGRATE_DATABASE_URL", "POSTGRES_PASSWORD"])
def test_entrypoint_refuses_to_start_web_or_worker_with_the_owners_credentials(tmp_path, role, name):
    value = "postgres://lajas:owner-secret@db:5432/lajas" if name == "MIGRATE_DATABASE_URL" else "owner-secret"
    completed, log = run_entrypoint(tmp_path, {"APP_ROLE": role, name: value}, "echo", "started")
    assert completed.returncode != 0
    assert name in completed.stderr and ".env.owner" in completed.stderr and "started" not in completed.stdout
    assert log == ""


def test_entrypoint_runs_the_migrate_command_as_the_owner(tmp_path):
    env = {
        "APP_ROLE": "migrate",
        "DATABASE_URL": "postgres://lajas_app:app-pw@db:5432/lajas",
        "MIGRATE_DATABASE_URL": "postgres://lajas:owner-pw@db:5432/lajas",
    }
    completed, log = run_entrypoint(tmp_path, env, "sh", "-c", 'echo "$DATABASE_URL $APP_DATABASE_URL"')
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["postgres://lajas:owner-pw@db:5432/lajas", "postgres://lajas_app:app-pw@db:5432/lajas"]
    assert "migrate" not in log  # the command migrates (docker-compose.yml), not the entrypoint


def test_entrypoint_refuses_the_migrate_role_without_the_owners_url(tmp_path):
    completed, log = run_entrypoint(tmp_path, {"APP_ROLE": "migrate"}, "echo", "started")
    assert completed.returncode != 0 and "MIGRATE_DATABASE_URL" in completed.stderr
    assert log == ""


# --- Production settings -----------------------------------------------------------------------


def production_env(**variables: str) -> dict[str, str]:
    """This process's environment minus everything the settings read, plus ``variables``."""
    # DJANGO_ALLOW_ASYNC_UNSAFE is set by the browser tests' conftest for Playwright beside the ORM;
    # a deployment never has it, and check --deploy rightly refuses it.
    env = {
        name: value for name, value in os.environ.items()
        if name not in settings_env_names() and name != "DJANGO_ALLOW_ASYNC_UNSAFE"
    }
    env.update(DJANGO_SETTINGS_MODULE="lajas_portal.settings", **variables)
    return env


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)


def anchor_key_file(folder: Path) -> str:
    """A signing key for the anchors (billing.anchors) in ``folder``: production requires one (billing.E001)."""
    from billing import anchors

    path = folder / "anchor_signing_key.pem"
    anchors.keygen(str(path))
    return str(path)


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    env = production_env(
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="riego.example.pr",
        DATABASE_URL=database_url(),
        ANCHOR_SIGNING_KEY_FILE=anchor_key_file(tmp_path),
    )
    completed = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert "no issues" in output


def test_check_deploy_refuses_production_without_an_anchor_signing_key():
    env = production_env(DEBUG="false", SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="riego.example.pr",
                         DATABASE_URL=database_url())
    completed = subprocess.run([sys.executable, "manage.py", "check", "--deploy"], env=env, cwd=ROOT, capture_output=True,
                               text=True, timeout=180)
    output = completed.stdout + completed.stderr
    assert completed.returncode != 0, output
    assert "(billing.E001) No usable anchor signing key: ANCHOR_SIGNING_KEY_FILE is not set." in output, output


@pytest.mark.parametrize("secret_key", [None, ""], ids=["unset", "empty"])
def test_settings_refuse_to_start_without_a_secret_key(secret_key):
    env = production_env(DATABASE_URL=database_url())
    if secret_key is not None:
        env["SECRET_KEY"] = secret_key
    completed = run_python("import django; django.setup()", env)
    assert completed.returncode != 0
    assert "SECRET_KEY" in completed.stderr and "ImproperlyConfigured" in completed.stderr


def test_settings_read_the_secret_key_from_a_file(tmp_path):
    key = secrets.token_urlsafe(50)
    key_file = tmp_path / "secret_key"
    key_file.write_text(f"{key}\n", encoding="utf-8")
    env = production_env(DATABASE_URL=database_url(), SECRET_KEY_FILE=str(key_file))
    completed = run_python("import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)", env)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == key


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed here")
def test_nginx_accepts_the_configuration(tmp_path):
    """``nginx -t`` on the server block inside a minimal http block (only where nginx exists)."""
    main = tmp_path / "nginx.conf"
    main.write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\nhttp {{\n"
        + "".join(f"  {kind}_temp_path {tmp_path}/{kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        + f"  include {ROOT / 'deploy' / 'nginx.conf'};\n}}\n",
        encoding="utf-8",
    )
    completed = subprocess.run(["nginx", "-t", "-c", str(main), "-p", str(tmp_path)], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
