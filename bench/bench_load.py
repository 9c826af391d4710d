"""Landowner and staff pages under load (issue target: p95 under 200 ms and no errors with 20
concurrent users on 2 cores).

The app is served the production way: gunicorn with sync workers (3, as the Dockerfile runs it),
``lajas_portal.settings`` with DEBUG off, hashed and compressed static files served by whitenoise,
PBKDF2 password hashes, database sessions saved on every request. Requests come from a second
process on loopback the way the TLS proxy forwards them (``X-Forwarded-Proto: https``, so the
secure cookies and the CSRF origin check are the production ones).

The database is the district of ``district.py`` (issue 20: 100,000 parcels, a finalized roll, a
season of payments, 10 % of the accounts late; ``BENCH_LOAD_SEED=demo`` serves ``seed_demo``'s
district instead, with receipts) with more accounts: landowners linked to owners that have
several parcels, collectors and Hacienda officers. Each virtual user
signs in once with its own account, fetches the static files its first page links, then cycles
through its role's pages with a think time between requests:

- landowner: portal home (parcels and the receipts list), own parcel, statement, own receipt page;
- collector: counter search, a parcel at the counter, a statement, the day report;
- Hacienda: roll page with filters, delinquent list, collection dashboard, a statement.

Staff accounts give the code of their authenticator app (computed from the device key, as an app
does) after the password. Everyone signs in first (at once: 20 PBKDF2 hashes keep the workers busy
for seconds); the warm-up starts when the last one is in, and requests started during it are left
out of the figures.

Environment: ``BENCH_LOAD_USERS`` (20), ``BENCH_LOAD_SECONDS`` (60), ``BENCH_LOAD_WARMUP`` (15),
``BENCH_LOAD_WORKERS`` (3 gunicorn workers), ``BENCH_LOAD_THINK`` ("0.5,2": seconds a user waits
between two pages, uniform; "0" for none), ``BENCH_LOAD_PARCELS`` (``BENCH_PARCELS``, else 100,000), ``BENCH_LOAD_SEED`` ("district" or "demo").
Run alone: ``cd bench && ../.venv/bin/python bench_load.py``."""

from __future__ import annotations

import http.client
import json
import logging
import math
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import quote, urlencode

from common import ROOT, setup_fresh_database

USERS = int(os.environ.get("BENCH_LOAD_USERS", "20"))
SECONDS = float(os.environ.get("BENCH_LOAD_SECONDS", "60"))
WARMUP = float(os.environ.get("BENCH_LOAD_WARMUP", "15"))
WORKERS = int(os.environ.get("BENCH_LOAD_WORKERS", "3"))
THINK = tuple(float(x) for x in os.environ.get("BENCH_LOAD_THINK", "0.5,2").split(","))
PARCELS = int(os.environ.get("BENCH_LOAD_PARCELS", os.environ.get("BENCH_PARCELS", "100000")))
# "district" (default): the district of ``district.py`` (import, roll, finalize, a season of
# payments, 10 % late); "demo": ``seed_demo`` (with receipts, bank files, closed days: slow past
# a few thousand parcels).
SEED = os.environ.get("BENCH_LOAD_SEED", "district")
TARGET_P95_MS = 200.0
PASSWORD = "Carga-de-prueba-2026"
FISCAL_YEAR = "2026-2027"
SEARCH_WORDS = ["rivera", "santiago", "vélez", "irizarry", "torres", "cruz", "colón", "finca", "maría", "josé", "LAJ-0001",
                "LAJ-00042", "hacienda", "pagán", "ramos"]
ROLES = ("landowner", "collector", "hacienda")


# --- the load generator (a second process) ------------------------------------------------------


class Browser:
    """One signed-in user: its own connection and cookie jar, the headers the TLS proxy adds."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.origin = f"https://127.0.0.1:{port}"
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, body: str | None = None, headers: dict | None = None) -> tuple[int, str, bytes]:
        sent = {"Host": f"127.0.0.1:{self.port}", "X-Forwarded-Proto": "https", "User-Agent": "lajas-bench-load",
                "Accept-Language": "es-PR,es;q=0.9", **(headers or {})}
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        try:
            self.conn.request(method, path, body=body, headers=sent)
            response = self.conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            raise
        for header in response.headers.get_all("Set-Cookie") or []:
            cookie = SimpleCookie()
            cookie.load(header)
            for name, morsel in cookie.items():
                if morsel["max-age"] == "0":
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = morsel.value
        return response.status, response.getheader("Location", ""), data

    def post_form(self, path: str, fields: dict[str, str]) -> tuple[int, str]:
        status, _, page = self.request("GET", path)
        found = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        if status != 200 or not found:
            raise RuntimeError(f"{path}: HTTP {status}")
        form = urlencode({"csrfmiddlewaretoken": found.group(1).decode(), **fields})
        status, location, _ = self.request("POST", path, body=form, headers={
            "Content-Type": "application/x-www-form-urlencoded", "Origin": self.origin, "Referer": f"{self.origin}{path}"})
        return status, location

    def sign_in(self, username: str, password: str, totp_key: str | None = None) -> None:
        """The password, then (staff) the code of the user's authenticator app, computed from its key."""
        status, location = self.post_form("/cuenta/entrar/", {"username": username, "password": password})
        if status != 302 or location.startswith("/cuenta/"):
            raise RuntimeError(f"sign-in refused for {username}: HTTP {status} {location}")
        if totp_key:
            from django_otp.oath import totp

            status, location = self.post_form("/cuenta/verificar/", {"code": f"{totp(bytes.fromhex(totp_key)):06d}"})
            if status != 302 or location.startswith("/cuenta/"):
                raise RuntimeError(f"code refused for {username}: HTTP {status} {location}")


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.samples: dict[str, list[float]] = {}
        self.errors: dict[str, int] = {}
        self.error_samples: list[str] = []
        self.warmup_requests = 0

    def add(self, label: str, ms: float, error: str | None) -> None:
        with self.lock:
            self.samples.setdefault(label, []).append(ms)
            self.errors.setdefault(label, 0)
            if error:
                self.errors[label] += 1
                if len(self.error_samples) < 20:
                    self.error_samples.append(f"{label}: {error}")


def virtual_user(index: int, plan: dict, user: dict, recorder: Recorder, clock: dict, signed_in: threading.Barrier) -> None:
    rng = random.Random(index)
    time.sleep(index / max(len(plan["users"]), 1))  # everyone starts within the first second
    browser = Browser(plan["port"])
    start = time.perf_counter()
    try:
        browser.sign_in(user["username"], user["password"], user.get("totp_key"))
        error = None
    except Exception as exc:  # a benchmark counts every failure
        error = f"{type(exc).__name__}: {exc}"
    recorder.add("sign-in (GET form + POST, PBKDF2; staff: + code page)", (time.perf_counter() - start) * 1000, error)
    try:
        signed_in.wait(timeout=180)  # the warm-up starts once everyone has signed in
    except threading.BrokenBarrierError:
        return
    if error:
        return
    static_done = False
    think_low, think_high = (plan["think"] + [plan["think"][0]])[:2]
    step = 0
    while True:
        label, paths = user["pages"][step % len(user["pages"])]
        step += 1
        path = rng.choice(paths)
        began = time.perf_counter()
        if began >= clock["end"]:
            return
        error = None
        body = b""
        try:
            measured = {"X-Bench-Label": label} if began >= clock["warmup_end"] else {}
            status, location, body = browser.request("GET", path, headers=measured)
            if status != 200:
                error = f"HTTP {status} {location} for {path}"
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc} for {path}"
        elapsed = (time.perf_counter() - began) * 1000
        if began >= clock["warmup_end"]:
            recorder.add(label, elapsed, error)
        else:
            with recorder.lock:
                recorder.warmup_requests += 1
        if not static_done and not error:
            # A browser fetches the stylesheets, scripts and images once, then keeps them cached.
            static_done = True
            for asset in sorted(set(re.findall(rb'(?:href|src)="(/static/[^"]+)"', body))):
                began = time.perf_counter()
                try:
                    status, _, _ = browser.request("GET", asset.decode())
                    error = None if status == 200 else f"HTTP {status} for {asset.decode()}"
                except Exception as exc:
                    error = f"{type(exc).__name__}: {exc}"
                recorder.add("static files (whitenoise), once per user", (time.perf_counter() - began) * 1000, error)
        if plan["think"][-1] > 0:
            time.sleep(rng.uniform(think_low, think_high))


def client_main(plan_path: str) -> None:
    """Runs the virtual users of the plan and prints their samples as JSON on stdout."""
    plan = json.loads(Path(plan_path).read_text())
    recorder = Recorder()
    clock = {"warmup_end": math.inf, "end": math.inf}

    def start_clock() -> None:
        now = time.perf_counter()
        clock.update(warmup_end=now + plan["warmup"], end=now + plan["warmup"] + plan["seconds"])

    signed_in = threading.Barrier(len(plan["users"]), action=start_clock)
    threads = [threading.Thread(target=virtual_user, args=(n, plan, user, recorder, clock, signed_in), daemon=True)
               for n, user in enumerate(plan["users"])]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 180 + plan["warmup"] + plan["seconds"] + 60
    for thread in threads:
        thread.join(timeout=max(deadline - time.monotonic(), 0))
    print(json.dumps({"samples": recorder.samples, "errors": recorder.errors, "error_samples": recorder.error_samples,
                      "warmup_requests": recorder.warmup_requests, "seconds": plan["seconds"]}))


# --- the data, the server and the figures -------------------------------------------------------

# gunicorn hooks: each worker logs the CPU time and the time it spent on every measured request
# (the label comes in a header from the load generator), so the figures also say how much of a
# page's latency is its own work and how much is waiting for a worker or a core.
GUNICORN_CONFIG = """
import os, time

def pre_request(worker, req):
    worker.bench_started = (time.process_time(), time.perf_counter())

def post_request(worker, req, environ, resp):
    label = environ.get("HTTP_X_BENCH_LABEL")
    if not label:
        return
    cpu, wall = worker.bench_started
    line = f"{label}\\t{(time.process_time() - cpu) * 1000:.2f}\\t{(time.perf_counter() - wall) * 1000:.2f}\\n"
    with open(os.path.join(os.environ["BENCH_LOAD_SERVER_LOG"], f"{os.getpid()}.tsv"), "a") as log:
        log.write(line)
"""


def seed(parcels: int) -> None:
    from io import StringIO

    from django.core.management import call_command

    for name in ("weasyprint", "fontTools"):
        logging.getLogger(name).setLevel(logging.WARNING)
    call_command("seed_demo", parcels=parcels, stdout=StringIO())


def make_plan(users: int, port: int) -> dict:
    """The accounts and the pages each virtual user cycles through, from the seeded data."""
    from collections import Counter

    from django.conf import global_settings
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.db.models import Count
    from django.test import override_settings
    from django_otp.plugins.otp_totp.models import TOTPDevice

    from billing.models import Payment, Receipt
    from parcels.models import Owner, Parcel
    from parcels.services import user_create

    rng = random.Random(2026)
    counts = {"landowner": round(users * 0.4), "collector": round(users * 0.3)}
    counts["hacienda"] = users - counts["landowner"] - counts["collector"]

    # Landowners: the demo one, then the private owners with the most receipts and several parcels.
    receipts_by_owner = Counter(Receipt.objects.values_list("snapshot__owner_key", flat=True))
    several = set(Owner.objects.filter(kind=Owner.Kind.PRIVATE).exclude(owner_key="DEMO-LANDOWNER")
                  .annotate(n=Count("parcels"))
                  .filter(n__gte=2).values_list("owner_key", flat=True))
    keys = ["DEMO-LANDOWNER"] + [key for key, _ in receipts_by_owner.most_common() if key in several]
    if len(keys) < counts["landowner"]:
        keys += [key for key in several if key not in keys]
    User = get_user_model()
    accounts: dict[str, list[str]] = {"landowner": ["terrateniente"], "collector": ["colector"], "hacienda": ["hacienda", "hacienda2"]}
    for role, prefix in (("landowner", "dueno"), ("collector", "colector"), ("hacienda", "hacienda")):
        for n in range(len(accounts[role]) + 1, counts[role] + 1):
            owner = Owner.objects.get(owner_key=keys[n - 1]) if role == "landowner" else None
            username = f"{prefix}-carga-{n}"
            if not User.objects.filter(username=username).exists():
                user_create(username=username, role=role, owner=owner)
            accounts[role].append(username)
        accounts[role] = accounts[role][: counts[role]]
    # Every account signs in with a PBKDF2 hash, as in production (settings_test hashes with MD5).
    with override_settings(PASSWORD_HASHERS=global_settings.PASSWORD_HASHERS):
        User.objects.update(password=make_password(PASSWORD))

    # Staff sign in with the code of an authenticator app (the demo users have theirs from seed_demo).
    totp_keys = {}
    for username in accounts["collector"] + accounts["hacienda"]:
        user = User.objects.get(username=username)
        device = TOTPDevice.objects.filter(user=user, confirmed=True).first() or TOTPDevice.objects.create(
            user=user, name="app", confirmed=True)
        totp_keys[username] = device.key

    levied = list(Parcel.objects.filter(charges__isnull=False).distinct().order_by("pk").values_list("pk", flat=True))
    staff_parcels = rng.sample(levied, min(60, len(levied)))
    days = sorted({day.isoformat() for day in Payment.objects.values_list("paid_on", flat=True)})
    roll = f"/contribucion/{FISCAL_YEAR}/padron/"
    roll_paths = [roll]
    for _ in range(40):
        query = {"q": rng.choice(["", "", "rivera", "LAJ-0004", "finca", "cruz"]), "levied": rng.choice(["", "yes", "no"]),
                 "credit": rng.choice(["", "", "yes"]), "o": rng.choice(["", "-charge", "owner", "-net", "equivalent"]),
                 "page": rng.choice(["", "2", "5", "12"])}
        roll_paths.append(f"{roll}?{urlencode({k: v for k, v in query.items() if v})}")
    delinquent = ["/cobros/morosos/"] + [f"/cobros/morosos/?{urlencode(q)}" for q in (
        {"o": "-balance"}, {"o": "-days_late", "page": "2"}, {"page": "3"}, {"semester": "1"}, {"min_balance": "500"})]
    plan_users = []
    for role in ROLES:
        for username in accounts[role]:
            if role == "landowner":
                user = User.objects.select_related("owner_account__owner").get(username=username)
                owner = user.owner_account.owner
                own = list(Parcel.objects.filter(owner=owner).values_list("pk", flat=True))
                receipts = list(Receipt.objects.filter(snapshot__owner_key=owner.owner_key).values_list("pk", flat=True))
                pages = [["landowner: portal home (parcels, receipts list)", ["/"]],
                         ["landowner: own parcel", [f"/predios/{pk}/" for pk in own]],
                         ["landowner: statement", [f"/colecturia/predio/{pk}/estado/" for pk in own]]]
                if receipts:
                    pages.append(["landowner: receipt page", [f"/colecturia/recibo/{pk}/" for pk in receipts]])
            elif role == "collector":
                pages = [["collector: counter search", [f"/colecturia/?{urlencode({'q': word})}" for word in SEARCH_WORDS]],
                         ["collector: parcel at the counter", [f"/colecturia/predio/{pk}/" for pk in staff_parcels]],
                         ["collector: parcel statement", [f"/colecturia/predio/{pk}/estado/" for pk in staff_parcels]],
                         ["collector: day report", ["/colecturia/cuadre/"] + [f"/colecturia/cuadre/?day={day}" for day in days]]]
            else:
                pages = [["hacienda: roll page with filters", roll_paths],
                         ["hacienda: delinquent list", delinquent],
                         ["hacienda: collection dashboard", ["/cobros/resumen/"]],
                         ["hacienda: parcel statement", [f"/colecturia/predio/{pk}/estado/" for pk in staff_parcels]]]
            plan_users.append({"role": role, "username": username, "password": PASSWORD, "pages": pages,
                               "totp_key": totp_keys.get(username)})
    return {"port": port, "users": plan_users, "warmup": WARMUP, "seconds": SECONDS, "think": list(THINK)}


def database_url(db: dict) -> str:
    auth = quote(db.get("USER") or "", safe="")
    if db.get("PASSWORD"):
        auth += ":" + quote(db["PASSWORD"], safe="")
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{auth}@{quote(db.get('HOST') or '', safe='')}{port}/{quote(db['NAME'], safe='')}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_serving(port: int, server: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {server.returncode}")
        try:
            status, _, _ = Browser(port).request("GET", "/cuenta/entrar/")
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError("gunicorn did not answer in time")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(math.ceil(share * len(ordered)) - 1, 0)]


def figures(result: dict) -> tuple[list[tuple[str, str]], str]:
    """Rows for the table (one per page, sign-in and static files, then all pages together) and a
    text table: what the users saw (p50/p95/max) and, per page, the median CPU time and time a
    gunicorn worker spent on it (the rest of a latency is waiting for a worker or a core)."""
    head = f"{'page':<52} {'requests':>8} {'errors':>6} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'cpu ms':>7} {'work ms':>7}"
    rows, lines = [], [head]
    pages: list[float] = []
    errors = sum(result["errors"].values())
    for label in sorted(result["samples"], key=lambda name: (name.split(":")[0] not in ROLES, name)):
        values = result["samples"][label]
        p50, p95, top = percentile(values, 0.5), percentile(values, 0.95), max(values)
        page = label.split(":")[0] in ROLES
        server = result["server"].get(label, [])
        cpu = percentile([c for c, _ in server], 0.5) if server else math.nan
        work = percentile([w for _, w in server], 0.5) if server else math.nan
        if page:
            pages += values
        flag = "  <- p95 over 200 ms" if page and p95 > TARGET_P95_MS else ""
        flag += f"  <- {result['errors'][label]} errors" if result["errors"][label] else ""
        lines.append(f"{label:<52} {len(values):>8} {result['errors'][label]:>6} {p50:>7.0f} {p95:>7.0f} {top:>7.0f} "
                     f"{cpu:>7.0f} {work:>7.0f}{flag}")
        server_note = f"; worker: CPU {cpu:.0f} ms, {work:.0f} ms (medians)" if server else ""
        rows.append((f"load: {label}", f"p50 {p50:.0f} ms, p95 {p95:.0f} ms, max {top:.0f} ms; {len(values)} requests, "
                                       f"{result['errors'][label]} errors{server_note}{flag}"))
    if not pages:
        rows.append(("load: all pages", f"no page measured; {errors} errors: {result['error_samples'][:3]}"))
        return rows, "\n".join(lines)
    p95 = percentile(pages, 0.95)
    verdict = "met" if p95 <= TARGET_P95_MS and errors == 0 else "MISSED"
    think = "no think time" if THINK[-1] <= 0 else f"think time {THINK[0]:g}-{THINK[-1]:g} s"
    rows.append((f"load: all pages, {USERS} users for {result['seconds']:.0f} s ({think}, {WORKERS} workers)",
                 f"p50 {percentile(pages, 0.5):.0f} ms, p95 {p95:.0f} ms, max {max(pages):.0f} ms; {len(pages)} requests "
                 f"({len(pages) / result['seconds']:.1f}/s), {errors} errors; target p95 < 200 ms and 0 errors: {verdict}"))
    worst = max((label for label in result["samples"] if label.split(":")[0] in ROLES),
                key=lambda label: percentile(result["samples"][label], 0.95))
    worst_p95 = percentile(result["samples"][worst], 0.95)
    from table import issue_row

    issue_row(f"pages under load, {USERS} users with think time ({think}), {PARCELS:,} parcels",
              f"all pages p95 {p95:.0f} ms; slowest page p95 {worst_p95:.0f} ms ({worst}); {errors} errors",
              "every page p95 ≤ 200 ms, 0 errors", worst_p95 <= TARGET_P95_MS and errors == 0)
    lines.append(f"{'ALL PAGES':<52} {len(pages):>8} {errors:>6} {percentile(pages, 0.5):>7.0f} {p95:>7.0f} {max(pages):>7.0f}"
                 f"  target p95 < {TARGET_P95_MS:.0f} ms, 0 errors: {verdict}")
    return rows, "\n".join(lines)


def main() -> list[tuple[str, str]]:
    if SEED == "demo":
        setup_fresh_database()
        print(f"seeding the demo district ({PARCELS:,} parcels, payments and receipts)...", flush=True)
        seed(PARCELS)
        return run()
    import district

    district.PARCELS = PARCELS
    results: list[tuple[str, str]] = []
    district.build(results)
    return results + run()


def run() -> list[tuple[str, str]]:
    """Serve the seeded database with gunicorn and load it from a second process."""
    from django.conf import settings
    from django.db import connections

    port = free_port()
    plan = make_plan(USERS, port)
    url = database_url(settings.DATABASES["default"])
    connections.close_all()

    work = Path(tempfile.mkdtemp(prefix="lajas-load-"))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "lajas_portal.settings", "DEBUG": "false", "DATABASE_URL": url,
           "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1", "STATIC_ROOT": str(work / "static"),
           "MEDIA_ROOT": str(work / "media"), "LOG_LEVEL": "WARNING", "DEMO_DATA_ALLOWED": "false"}
    env.pop("SECRET_KEY_FILE", None)
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--no-input", "-v", "0"], cwd=ROOT, env=env, check=True)
    plan_path = work / "plan.json"
    plan_path.write_text(json.dumps(plan))
    (work / "gunicorn.conf.py").write_text(GUNICORN_CONFIG)
    (work / "server").mkdir()
    log = (work / "gunicorn.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "lajas_portal.wsgi:application", "--config", str(work / "gunicorn.conf.py"),
         "--bind", f"127.0.0.1:{port}", "--workers", str(WORKERS), "--timeout", "60", "--worker-tmp-dir", "/dev/shm"],
        cwd=ROOT, env={**env, "BENCH_LOAD_SERVER_LOG": str(work / "server")}, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        try:
            wait_until_serving(port, server)
        except RuntimeError:
            print((work / "gunicorn.log").read_text()[-3000:], file=sys.stderr)
            raise
        roles = ", ".join(f"{sum(u['role'] == r for u in plan['users'])} {r}" for r in ROLES)
        print(f"gunicorn ({WORKERS} workers) on 127.0.0.1:{port}; {USERS} users ({roles}), "
              f"{WARMUP:.0f} s warm-up then {SECONDS:.0f} s measured...", flush=True)
        load_before = os.getloadavg()
        client = subprocess.run([sys.executable, __file__, "--client", str(plan_path)], cwd=Path(__file__).parent,
                                capture_output=True, text=True, timeout=WARMUP + SECONDS + 180)
        load = os.getloadavg()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    if client.returncode != 0:
        print(client.stderr[-3000:], (work / "gunicorn.log").read_text()[-3000:], sep="\n", file=sys.stderr)
        return [("load: all pages", f"the load generator failed (exit {client.returncode})")]
    result = json.loads(client.stdout)
    result["server"] = {}
    for worker_log in (work / "server").glob("*.tsv"):
        for line in worker_log.read_text().splitlines():
            label, cpu, wall = line.split("\t")
            result["server"].setdefault(label, []).append((float(cpu), float(wall)))
    shutil.rmtree(work, ignore_errors=True)
    rows, table = figures(result)
    print(table)
    if result["error_samples"]:
        print("errors, first ones:", *result["error_samples"], sep="\n  ")
    averages = f"{load_before[0]:.2f} before, {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} (1, 5, 15 min) right after"
    print(f"warm-up requests (not counted): {result['warmup_requests']}; load average: {averages}", flush=True)
    rows.append(("load: machine load average during the run", averages))
    return rows


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--client":
        client_main(sys.argv[2])
    else:
        main()
