"""A year in the life, with faults (issue 20): a whole fiscal year of a district run through the
services on a simulated clock, faults injected on a schedule, and the books checked at the end.

What it runs (fiscal year 2025-2026, every date before the real today, so the final
``verify_books`` in a process of its own reads the same past the run wrote):

- 15 May 2025: the registry import (``parcels_import``), the Authority's certified estimates;
  20 June: the roll computed (``levy_compute``) and finalized by a second Hacienda officer.
- The first day each semester's bills are offered (¶12, ``BILL_OFFER_DAYS`` before 1 July and
  1 January): bulk printing (``bill_batch_start``, the ``bill_batch`` job) of ``YEAR_BILLS``
  bills in real procrastinate workers (``bench/year_worker.py``, on the simulated clock).
- Every weekday from 1 July 2025 to 30 June 2026: counter payments (``counter.payment_record``,
  on time, late with ¶12 surcharge, a few over-paid into credit), then, on each day the counter
  took or paid back money, the supervisor's day close (``counter.day_close``; one day $5.00
  short, explained). On the 15th of each month (or the next weekday) the collecting bank's payment file (``bank.bank_file_import``, ¶13), one file with an
  unknown cadastre number (the exceptions queue) and one returning an earlier payment (NSF).
- Voids of bounced checks (``voids.payment_void``), refunds of credit asked by one supervisor and
  approved by another (``refund_request`` / ``refund_approve``), roll corrections up and down
  (``corrections.roll_correction_create``, ¶9), the July half's last day closed by a storm
  (``office_closure_record``, ¶12), and a new ¶12 surcharge rate from 1 November 2025
  (``legal_parameters_add``).

Faults (``YEAR_FAULTS``, comma-separated, default ``kill,terminate,double``):

- ``kill``: the July bulk printing's worker gets SIGKILL once its first chunk of bills is
  committed; a second worker takes the job again (``retry_stalled_jobs``) and finishes it: every
  bill once, numbers without a gap.
- ``terminate``: while the January bulk printing runs, ``pg_terminate_backend`` of every other
  connection to the database (the worker's and this process's, whose payment was about to
  commit); this process reconnects and records the payment again under its idempotency key, the
  worker reconnects and the job is retried (resumed if it failed).
- ``double``: one counter payment submitted twice at once from two threads with one idempotency
  key: one payment, one receipt.

Knobs (environment): ``YEAR_PARCELS`` (default 100000), ``YEAR_BILLS`` bills per semester printed
in bulk (default 60; the kill needs more than one chunk of 24; 0 skips bulk printing), ``YEAR_PAYMENTS``
counter payments over the year (default 400: each renders its PDF receipt, ~0.3 s on a quiet
machine), ``YEAR_BANK_LINES`` payments per monthly bank file (default 8), ``YEAR_STATEMENTS``
parcels whose statements are written (default all: five ``statement()`` calls of ~18 queries a
parcel, so at 100,000 parcels hours; give a number to write the first N in cadastre order),
``YEAR_STATEMENT_PROCESSES`` processes writing them (default one per core),
``YEAR_PROCESSES`` rendering processes per worker (default 1), ``YEAR_OUT`` the output folder
(default ``$TMPDIR/lajas-year``), ``YEAR_SEED`` (default 2025), ``YEAR_TEMPLATE`` an empty migrated
database to copy instead of migrating a new one (the test's; nobody may be connected to it).

Database: ``DATABASE_URL`` names a server and database; the year runs in ``<name>_year``, dropped
and created afresh (never another benchmark's ``<name>_bench``). Stored documents go to
``YEAR_OUT/media`` (the workers and ``verify_books`` share it).

Outputs, for an outside checker, in ``YEAR_OUT``: ``events.csv`` (day, kind, parcel, amount, who:
every event the run recorded), ``statements.jsonl`` (every parcel's statement,
``billing.accounts.statement(...).to_json()``, at five dates: 30 Jun, 30 Sep, 31 Dec 2025,
31 Mar, 30 Jun 2026), ``faults.csv`` and ``figures.csv``. It prints the figures as they occur
(import, roll, finalize, bulk printing, counter median, delinquent list), the faults survived and
the wall time, then runs ``manage.py verify_books --full`` in a process of its own and exits 1
unless the books are clean (or a fault was not survived).
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import date, datetime, timedelta
from datetime import time as clock_time
from decimal import Decimal
from pathlib import Path
from typing import Any

from common import ROOT, certified_estimates, registry_csv

FISCAL_YEAR = "2025-2026"
YEAR_START, YEAR_END = date(2025, 7, 1), date(2026, 6, 30)
STATEMENT_DATES = (date(2025, 6, 30), date(2025, 9, 30), date(2025, 12, 31), date(2026, 3, 31), date(2026, 6, 30))
CENT = Decimal("0.01")


def knob(name: str, default: int) -> int:
    return int(os.environ.get(name, str(default)))


PARCELS = knob("YEAR_PARCELS", 100_000)
BILLS = knob("YEAR_BILLS", 60)
PAYMENTS = knob("YEAR_PAYMENTS", 400)
BANK_LINES = knob("YEAR_BANK_LINES", 8)
STATEMENTS = knob("YEAR_STATEMENTS", 0) or None
PROCESSES = knob("YEAR_PROCESSES", 1)
STATEMENT_PROCESSES = max(1, knob("YEAR_STATEMENT_PROCESSES", os.cpu_count() or 1))
SEED = knob("YEAR_SEED", 2025)
FAULTS = {f.strip() for f in os.environ.get("YEAR_FAULTS", "kill,terminate,double").split(",") if f.strip()}
OUT = Path(os.environ.get("YEAR_OUT") or Path(tempfile.gettempdir()) / "lajas-year")


# --- The simulated clock -------------------------------------------------------------------------


class Clock:
    """``django.utils.timezone.now`` (which ``localdate()``, ``auto_now_add`` and every service
    read) moved to a chosen office hour of a chosen day, plus the real time elapsed since; only
    forward, so records follow each other in time. The workers get the same offset."""

    def __init__(self) -> None:
        from django.utils import timezone

        self._timezone = timezone
        self._real_now = timezone.now
        self.offset, self.set = timedelta(0), False
        timezone.now = self.now

    def now(self) -> datetime:
        return self._real_now() + self.offset

    def to(self, day: date, hour: int = 8) -> None:
        moment = datetime.combine(day, clock_time(hour), tzinfo=self._timezone.get_default_timezone())
        if not self.set or moment > self.now():
            self.offset, self.set = moment - self._real_now(), True

    def today(self) -> date:
        return self._timezone.localdate()


# --- The run's record: events, figures, faults ---------------------------------------------------


class Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str, str]] = []
        self.figures: list[tuple[str, str]] = []
        self.faults: list[tuple[str, str, str]] = []
        self.started = time.perf_counter()

    def event(self, day: date, kind: str, parcel: str, amount: Decimal | str | None, who: Any) -> None:
        self.events.append((day.isoformat(), kind, parcel, "" if amount is None else str(amount),
                            getattr(who, "username", who or "")))

    def figure(self, label: str, value: str) -> None:
        self.figures.append((label, value))
        print(f"  figure: {label}: {value} (load {loadavg()})", flush=True)

    def fault(self, day: date, kind: str, outcome: str) -> None:
        self.faults.append((day.isoformat(), kind, outcome))
        print(f"  FAULT {kind} on {day}: {outcome}", flush=True)


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


class timed:  # noqa: N801 (a context manager read like a phrase)
    def __init__(self, log: Log, label: str) -> None:
        self.log, self.label = log, label

    def __enter__(self) -> timed:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self.start
        if exc[0] is None:
            self.log.figure(self.label, f"{self.seconds:.2f} s")


# --- Database, connections, workers --------------------------------------------------------------


def setup_year_database() -> str:
    """A fresh ``<name>_year`` database on the configured server, migrated; returns its name."""
    import django
    from django.conf import settings

    django.setup()
    import psycopg
    from django.core.management import call_command
    from django.db import connections

    db = settings.DATABASES["default"]
    name = f"{db['NAME']}_year"
    params = connections["default"].get_connection_params()
    params["dbname"] = "postgres"
    connections["default"].close()
    template = os.environ.get("YEAR_TEMPLATE", "")
    with psycopg.connect(**params, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    db["NAME"] = name
    connections["default"].settings_dict["NAME"] = name
    call_command("migrate", verbosity=0)  # nothing left to do on a migrated template
    return name


def side_connection() -> Any:
    """A psycopg connection of its own (autocommit), outside Django's, for the faults."""
    import psycopg
    from django.db import connection

    return psycopg.connect(**connection.get_connection_params(), autocommit=True)


def reconnect() -> None:
    """After the server cut this process's sessions: drop them (closing a dead one may itself
    fail) so the next query opens a new one."""
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        try:
            conn.close()
        except Exception:  # noqa: BLE001 (a dead connection's close fails; it is discarded anyway)
            conn.connection = None


def child_env(clock: Clock, **extra: str) -> dict[str, str]:
    from django.db import connection

    from tests.databases import database_url

    return {**os.environ, "DATABASE_URL": database_url(connection.settings_dict), "TEST_MEDIA_ROOT": str(OUT / "media"),
            "DJANGO_SETTINGS_MODULE": "lajas_portal.settings_test", "YEAR_CLOCK_OFFSET": str(clock.offset.total_seconds()),
            **extra}


class Worker:
    """``bench/year_worker.py`` (``manage.py run_worker`` on the simulated clock) in a process
    group of its own; its output goes to a file."""

    count = 0

    def __init__(self, clock: Clock) -> None:
        Worker.count += 1
        self.name = f"year-worker-{os.getpid()}-{Worker.count}"
        self.log = OUT / f"{self.name}.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen([sys.executable, str(ROOT / "bench" / "year_worker.py")], cwd=ROOT,
                                            env=child_env(clock, PGAPPNAME=self.name), stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def check(self) -> None:
        if not self.alive():
            raise SystemExit(f"{self.name} ended ({self.process.returncode}):\n{self.output()[-3000:]}")

    def kill(self) -> None:
        os.killpg(self.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.alive():
            os.killpg(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.kill()


LOST_WHILE_WAITING: list[str] = []  # connections lost while only reading (another session cut them)


def wait_for(condition: Callable[[], Any], what: str, timeout: float, pause: float = 0.2) -> Any:
    """``condition()`` until true; its reads are retried on a new connection when the server
    drops this process's (a read changes nothing, so reading again is always safe)."""
    from django.db import InterfaceError, OperationalError

    deadline = time.monotonic() + timeout
    while True:
        try:
            found = condition()
        except (OperationalError, InterfaceError) as exc:
            LOST_WHILE_WAITING.append(f"waiting for {what}: {str(exc).strip()}")
            print(f"  connection lost while waiting for {what} ({str(exc).strip()}); reading again on a new one", flush=True)
            reconnect()
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(pause)


# --- The year --------------------------------------------------------------------------------


class Year:
    def __init__(self, log: Log, clock: Clock) -> None:
        self.log, self.clock = log, clock
        self.rng = random.Random(SEED)
        self.sequence = 0
        self.counter_times: list[float] = []
        self.paid_checks: list[Any] = []  # check payments a bank may return (voids)
        self.credits: list[Any] = []  # parcels over-paid into credit (refunds)

    # -- helpers

    def key(self) -> str:
        self.sequence += 1
        return f"year-{SEED}-{self.sequence:07d}"

    def users(self) -> None:
        from parcels.services import user_create

        self.authority, self.hacienda = certified_estimates(FISCAL_YEAR)
        self.hacienda2 = user_create(username="year_hac2", role="hacienda", password=None)
        self.collector = user_create(username="year_col", role="collector", password=None)
        self.supervisor = user_create(username="year_sup", role="supervisor", password=None)
        self.supervisor2 = user_create(username="year_sup2", role="supervisor", password=None)
        self.log.event(self.clock.today(), "estimates_certified", "", "12500000.00", self.authority)

    # -- spring: registry, estimates, roll

    def spring(self) -> None:
        from billing.services.installments import roll_finalize
        from levy.services import levy_compute
        from parcels.services import parcels_import

        self.clock.to(date(2025, 5, 15))
        data = registry_csv(PARCELS, seed=SEED)
        with timed(self.log, f"import {PARCELS:,} parcels (parcels_import)"):
            result = parcels_import(acting_user=None, data=data, source="bench year")
        if not result.ok:
            raise SystemExit(f"import failed: {result.errors[:3]}")
        self.log.event(self.clock.today(), "registry_import", "", None, "")
        self.users()
        self.clock.to(date(2025, 6, 20))
        with timed(self.log, f"compute and store the roll of {PARCELS:,} parcels (levy_compute)"):
            levy_compute(acting_user=self.hacienda, fiscal_year=FISCAL_YEAR)
        self.log.event(self.clock.today(), "roll_compute", "", None, self.hacienda)
        with timed(self.log, "finalize the roll (roll_finalize)"):
            levy = roll_finalize(acting_user=self.hacienda2, fiscal_year=FISCAL_YEAR, today=self.clock.today())
        self.log.event(self.clock.today(), "roll_finalize", "", levy.total_levy.amount, self.hacienda2)
        from billing.models import Charge, Office

        self.office = Office.objects.get(code="LAJ")
        # ¶13: a collecting agent bank (set up once, as the demo does; offices have no create service)
        self.bank, _created = Office.objects.get_or_create(code="BPPR", defaults={"name": "Banco Popular — agente recaudador",
                                                                                 "kind": Office.Kind.BANK})
        self.billed = {number: list(Charge.objects.filter(kind=Charge.Kind.INSTALLMENT, number=number, fiscal_year__label=FISCAL_YEAR)
                                    .order_by("parcel__parcel_id").values_list("parcel__parcel_id", flat=True))
                       for number in (1, 2)}
        self.parcel_pk = dict(Charge.objects.filter(kind=Charge.Kind.INSTALLMENT, number=1, fiscal_year__label=FISCAL_YEAR)
                              .values_list("parcel__parcel_id", "parcel_id"))

    # -- the plan of the year's payments

    def plan(self) -> dict[date, list[tuple[str, str]]]:
        """Which parcel pays at the counter on which weekday: each semester half of the counter
        payers on time, a third late (¶12 surcharge), the rest after the semester's last day of
        the next (two halves at once); a few pay $25.00 more than due (credit)."""
        payers = self.billed[1]
        per_semester = min(PAYMENTS // 2, len(payers))
        schedule: dict[date, list[tuple[str, str]]] = {}
        windows = {1: [(date(2025, 7, 2), date(2025, 8, 20)), (date(2025, 9, 2), date(2025, 12, 12))],
                   2: [(date(2026, 1, 5), date(2026, 2, 20)), (date(2026, 3, 2), date(2026, 6, 12))]}
        for semester in (1, 2):
            chosen = self.rng.sample(payers, per_semester)
            for index, parcel in enumerate(chosen):
                start, end = windows[semester][0] if index % 3 != 2 else windows[semester][1]
                day = start + timedelta(days=self.rng.randint(0, (end - start).days))
                while day.weekday() >= 5:
                    day += timedelta(days=1)
                over = self.rng.random() < 0.04 or index == 0  # at least one credit to pay back
                schedule.setdefault(day, []).append((parcel, "over" if over else "due"))
        return schedule

    # -- events

    def counter_payment(self, parcel_id: str, how: str, *, key: str | None = None, method: str | None = None) -> Any:
        from billing.accounts import account_state
        from billing.models import Payment
        from billing.services import counter
        from parcels.models import Parcel

        today = self.clock.today()
        parcel = Parcel.objects.get(pk=self.parcel_pk[parcel_id])
        due = account_state(parcel=parcel, as_of=today, known_by=None).state.total_due
        if due <= 0:
            return None
        amount = due + (Decimal("25.00") if how == "over" else Decimal("0.00"))
        method = method or self.rng.choice([Payment.Method.CASH, Payment.Method.CASH, Payment.Method.CHECK, Payment.Method.CARD,
                                  Payment.Method.TRANSFER])
        key = key or self.key()
        reference = f"CK{key[-7:]}" if method == Payment.Method.CHECK else ""
        start = time.perf_counter()
        receipt = counter.payment_record(acting_user=self.collector, parcel=parcel, amount=amount, paid_on=today,
                                         method=method, reference=reference, idempotency_key=key)
        self.counter_times.append(time.perf_counter() - start)
        self.log.event(today, f"counter_payment_{method}", parcel_id, amount, self.collector)
        if method == Payment.Method.CHECK:
            self.paid_checks.append(receipt.payment)
        if how == "over":
            self.credits.append(parcel)
        return receipt

    def day_close(self, *, short: bool = False) -> bool:
        """The supervisor closes a day the counter took or paid back money (counted as the
        receipts say; with ``short`` $5.00 of cash missing, explained). True when closed short."""
        from billing.models import DayClose, Payment, Refund
        from billing.selectors import day_report
        from billing.services import counter

        today = self.clock.today()
        if DayClose.objects.filter(office=self.office, day=today).exists():
            return False
        if not (Payment.objects.filter(office=self.office, paid_on=today).exists()
                or Refund.objects.filter(office=self.office, refunded_on=today).exists()):
            return False
        report = day_report(office=self.office, day=today)
        cash, checks = report.expected(Payment.Method.CASH), report.expected(Payment.Method.CHECK)
        if short and cash >= Decimal("5.00"):
            counter.day_close(acting_user=self.supervisor, office=self.office, day=today, counted_cash=cash - Decimal("5.00"),
                              counted_checks=checks, explanation="Faltan $5.00 de efectivo: cambio mal dado")
            self.log.event(today, "day_close_short", "", cash - Decimal("5.00"), self.supervisor)
            return True
        else:
            counter.day_close(acting_user=self.supervisor, office=self.office, day=today, counted_cash=cash, counted_checks=checks)
            self.log.event(today, "day_close", "", cash + checks, self.supervisor)
            return False

    def bank_file(self, month_index: int, returned: Any | None) -> Any | None:
        """¶13: the bank's file of the day: ``BANK_LINES`` parcels paying what they owe (value
        date today), in one month a line for a cadastre number that does not exist."""
        from billing.accounts import account_states
        from billing.models import Payment
        from billing.services import bank
        from parcels.models import Parcel

        today = self.clock.today()
        candidates = self.rng.sample(self.billed[1], min(len(self.billed[1]), BANK_LINES * 3))
        parcels = list(Parcel.objects.filter(parcel_id__in=candidates).select_related("owner").order_by("parcel_id"))
        states = account_states(parcels=parcels, as_of=today, known_by=None)
        header = "trace_number,value_date,amount,reference,payer_name,kind,original_trace_number,return_reason\n"
        lines, paying = [], []
        for parcel in parcels:
            due = states[parcel.pk].state.total_due
            if due > 0 and len(paying) < BANK_LINES:
                paying.append((parcel, due))
        for number, (parcel, due) in enumerate(paying, start=1):
            lines.append(f"BP{today:%Y%m%d}{number:03d},{today},{due},{parcel.parcel_id},Pagador {number},,,\n")
        if month_index == 2:
            lines.append(f"BP{today:%Y%m%d}900,{today},250.00,X-0000000,Juan del Pueblo,,,\n")
        if not lines:
            return None
        imported = bank.bank_file_import(acting_user=self.supervisor, bank=self.bank, name=f"bppr-{today:%Y%m%d}.csv",
                                         data=(header + "".join(lines)).encode())
        for parcel, due in paying:
            self.log.event(today, "bank_payment", parcel.parcel_id, due, self.supervisor)
        if month_index == 2:
            self.log.event(today, "bank_exception", "X-0000000", "250.00", self.supervisor)
        if returned is not None:  # an earlier file's payment the bank returns (NSF): voided by the file
            payment = Payment.objects.select_related("parcel").get(pk=returned.payment_id)
            data = (header + f"BR{today:%Y%m%d}001,{today},{payment.amount.amount},,,return,{returned.trace_number},"
                    "R01 fondos insuficientes (NSF)\n")
            bank.bank_file_import(acting_user=self.supervisor, bank=self.bank, name=f"bppr-{today:%Y%m%d}-devoluciones.csv",
                                  data=data.encode())
            self.log.event(today, "bank_return", payment.parcel.parcel_id, payment.amount.amount, self.supervisor)
        return imported

    def void_check(self) -> None:
        from billing.models import PaymentVoid
        from billing.services.voids import payment_void

        while self.paid_checks:
            payment = self.paid_checks.pop(0)
            if PaymentVoid.objects.filter(payment=payment).exists():
                continue
            payment_void(acting_user=self.supervisor, payment=payment, reason="Cheque devuelto por el banco: fondos insuficientes",
                         voided_on=self.clock.today())
            self.log.event(self.clock.today(), "void", payment.parcel.parcel_id, payment.amount.amount, self.supervisor)
            return

    def refund(self) -> None:
        """Issue 19: a supervisor asks to pay back a parcel's credit; another approves it."""
        from billing.accounts import account_state
        from billing.services import counter

        today = self.clock.today()
        while self.credits:
            parcel = self.credits.pop(0)
            credit = account_state(parcel=parcel, as_of=today, known_by=None).state.credit_balance - counter.refund_held(parcel=parcel)
            if credit <= 0:
                continue
            request = counter.refund_request(acting_user=self.supervisor, parcel=parcel, amount=credit,
                                             reason="El contribuyente pagó de más y pide la devolución")
            counter.refund_approve(acting_user=self.supervisor2, request=request)
            self.log.event(today, "refund_request", parcel.parcel_id, credit, self.supervisor)
            self.log.event(today, "refund_approve", parcel.parcel_id, credit, self.supervisor2)
            return

    def correction(self, *, up: bool) -> None:
        """¶9: a supplementary entry raising or lowering a line's O&M charge by a tenth."""
        from billing.services.corrections import roll_correction_create
        from levy.models import RollLine

        lines = list(RollLine.objects.filter(levy__fiscal_year__label=FISCAL_YEAR, levy__status="final",
                                             parcel_id__in=self.parcel_pk.values(), om_charge__gt=Decimal("100.00"))
                     .order_by("parcel_code")[:50])
        if not lines:
            return
        line = self.rng.choice(lines)
        delta = (line.om_charge * Decimal("0.10")).quantize(CENT)
        delta = delta if up else -delta
        reason = ("Mensura nueva: el área por gravedad es un 10 % mayor que la del padrón" if up
                  else "Mensura nueva: el área por gravedad es un 10 % menor que la del padrón")
        roll_correction_create(acting_user=self.hacienda, roll_line=line, reason=reason, om_charge_delta=delta)
        self.log.event(self.clock.today(), "correction_up" if up else "correction_down", line.parcel_code, delta, self.hacienda)

    def closure_day(self) -> date:
        """¶12: the July half's last day to pay (as finalized), which a storm will close."""
        from billing.accounts import statement
        from parcels.models import Parcel

        parcel = Parcel.objects.get(pk=self.parcel_pk[self.billed[1][0]])
        return next(line.last_day_to_pay for line in statement(parcel=parcel, as_of=YEAR_START, known_by=None).lines
                    if line.number == 1)

    def closure(self, last_day: date) -> None:
        """¶12: the offices closed by a storm on the July half's last day to pay, recorded that morning."""
        from billing.services.collection import office_closure_record

        self.clock.to(last_day, hour=7)
        _closure, moved = office_closure_record(acting_user=self.hacienda, day=last_day,
                                                reason="Tormenta tropical: oficinas cerradas por orden ejecutiva")
        self.log.event(last_day, "office_closure", "", str(moved), self.hacienda)

    def surcharge_rate(self) -> None:
        """¶12: Hacienda records a new surcharge rate from 1 November (a new dated row)."""
        from levy.models import LegalParameterSet
        from levy.services import legal_parameters_add

        current = LegalParameterSet.objects.filter(effective_from__lte=date(2025, 11, 1)).order_by("-effective_from").first()
        rate = (current.surcharge_rate + Decimal("0.005")).quantize(Decimal("0.0001"))
        legal_parameters_add(acting_user=self.hacienda, effective_from=date(2025, 11, 1), changes={"surcharge_rate": rate},
                             reason="Ley 2025-117: el recargo por mes o fracción sube medio punto")
        self.log.event(self.clock.today(), "surcharge_rate", "", rate, self.hacienda)

    def delinquent_list(self, as_of: date) -> None:
        from django.core.management import call_command

        out = io.StringIO()
        with timed(self.log, f"delinquent list as of {as_of} (billing delinquent --format csv)"):
            call_command("billing", "delinquent", "--as-of", as_of.isoformat(), "--format", "csv", stdout=out)
        self.log.figure(f"delinquent list as of {as_of}: rows", f"{max(0, out.getvalue().count(chr(10)) - 1):,}")

    def owing_parcel(self) -> tuple[Any, Decimal]:
        """A parcel of the roll that owes something today, and what it owes."""
        from billing.accounts import account_state
        from parcels.models import Parcel

        for parcel_id in self.rng.sample(self.billed[1], len(self.billed[1])):
            parcel = Parcel.objects.get(pk=self.parcel_pk[parcel_id])
            due = account_state(parcel=parcel, as_of=self.clock.today(), known_by=None).state.total_due
            if due > 0:
                return parcel, due
        raise SystemExit("no parcel owes anything")

    # -- bulk printing, with the worker faults

    def bulk_print(self, number: int, fault: str | None) -> None:
        from billing.models import Bill, BillBatch, Charge
        from billing.services import bills as bill_services
        from billing.services.bills import offered_from
        from parcels.models import Job

        if BILLS <= 0:
            return
        sample = sorted(self.rng.sample(self.billed[number], min(BILLS, len(self.billed[number]))))
        first = Charge.objects.filter(kind=Charge.Kind.INSTALLMENT, number=number, fiscal_year__label=FISCAL_YEAR).order_by("due_date").first()
        self.clock.to(offered_from(first), hour=7)
        today = self.clock.today()
        workers = [Worker(self.clock)]
        try:
            start = time.perf_counter()
            batch = bill_services.bill_batch_start(self.hacienda, FISCAL_YEAR, number, filters={"parcel_ids": sample},
                                                   processes=PROCESSES)
            self.log.event(today, f"bulk_printing_{number}", "", str(len(sample)), self.hacienda)
            job_id = batch.job_id
            from billing import bulk

            if fault == "kill":
                if len(sample) <= bulk.CHUNK:
                    self.log.fault(today, "kill -9 worker", f"skipped: {len(sample)} bills are one chunk (YEAR_BILLS > {bulk.CHUNK})")
                else:
                    def first_chunk() -> bool:
                        workers[0].check()
                        return Bill.objects.filter(batch=batch).count() >= bulk.CHUNK

                    wait_for(first_chunk, "the worker's first chunk of bills", timeout=600)
                    workers.append(Worker(self.clock))
                    wait_for(lambda: "Starting worker" in workers[1].output() or not workers[1].alive(),
                             "the second worker to start", timeout=120)
                    if Job.objects.get(pk=job_id).status not in Job.ACTIVE:
                        raise SystemExit("the batch ended before the worker could be killed: raise YEAR_BILLS")
                    workers[0].kill()
                    killed = time.monotonic()
                    issued = Bill.objects.filter(batch=batch).count()
                    self.log.event(today, "fault_kill_worker", "", str(issued), "")

                    def retaken() -> bool:
                        workers[1].check()
                        return Job.objects.get(pk=job_id).attempts >= 2

                    wait_for(retaken, "another worker to take the batch again", timeout=300)
                    self.kill_report = (issued, time.monotonic() - killed)
            elif fault == "terminate":
                wait_for(lambda: workers[0].check() or Job.objects.get(pk=job_id).status in (Job.Status.RUNNING, Job.Status.DONE),
                         "the worker to take the batch", timeout=300)
                self.terminate_everyone(workers[0])

            def finished() -> bool:
                for worker in workers[-1:]:
                    worker.check()
                return Job.objects.get(pk=job_id).status not in Job.ACTIVE

            wait_for(finished, "the batch to end", timeout=7200, pause=0.5)
            job = Job.objects.get(pk=job_id)
            if job.status == Job.Status.FAILED:  # out of attempts after the cut: Hacienda resumes it
                batch = bill_services.bill_batch_resume(self.hacienda, BillBatch.objects.get(pk=batch.pk))
                self.log.event(self.clock.today(), f"bulk_printing_{number}_resumed", "", None, self.hacienda)
                wait_for(lambda: Job.objects.get(pk=batch.job_id).status not in Job.ACTIVE, "the resumed batch", timeout=7200, pause=0.5)
                job = Job.objects.get(pk=batch.job_id)
            elapsed = time.perf_counter() - start
        finally:
            for worker in workers:
                worker.stop()
        if job.status != Job.Status.DONE:
            raise SystemExit(f"bulk printing {number} ended {job.status}: {job.error}")
        bills = list(Bill.objects.filter(batch_id=batch.pk).values_list("charge_id", "number"))
        charges = [charge for charge, _number in bills]
        if len(bills) != len(sample) or len(set(charges)) != len(charges):
            raise SystemExit(f"bulk printing {number}: {len(bills)} bills for {len(sample)} installments")
        self.log.figure(f"bulk printing of {len(sample):,} bills, semester {number} (job, {len(workers)} worker(s))",
                        f"{elapsed:.1f} s, {elapsed / len(sample) * 1000:.0f} ms a bill")
        if fault == "terminate" and self.log.faults:
            day, kind, outcome = self.log.faults[-1]
            self.log.faults[-1] = (day, kind, f"{outcome}; the batch then ended with {len(bills)} bills, each "
                                   f"installment once ({job.attempts} attempt(s) of its job)")
            print(f"  FAULT {kind}: the batch then ended with {len(bills)} bills ({job.attempts} attempt(s))", flush=True)
        if fault == "kill" and hasattr(self, "kill_report"):
            issued, after = self.kill_report
            numbers = sorted(int(n.rsplit("-", 1)[1]) for _c, n in bills)
            gapless = numbers == list(range(numbers[0], numbers[0] + len(numbers)))
            self.log.fault(today, "kill -9 worker", f"killed after {issued} bills, taken again by a new worker "
                           f"{after:.0f} s later; {len(bills)} bills, each installment once, numbers "
                           f"{'without a gap' if gapless else 'WITH A GAP'} (attempts {job.attempts})")
            if not gapless:
                self.log.survived = False

    def terminate_everyone(self, worker: Worker) -> None:
        """``pg_terminate_backend`` of every other session of the database, this process's
        included, while its counter payment is about to commit; the payment is recorded again
        under the same idempotency key after reconnecting."""
        from django.db import InterfaceError, OperationalError, transaction

        from billing.models import Payment

        today = self.clock.today()
        payer = self.owing_parcel()[0].parcel_id
        key = self.key()
        side = side_connection()
        lost, receipt, cut = False, None, []
        try:
            with transaction.atomic():
                receipt = self.counter_payment(payer, "due", key=key, method=Payment.Method.CASH)
                with side.cursor() as cursor:
                    cursor.execute("SELECT pid, application_name, pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
                                   "WHERE datname = current_database() AND pid <> pg_backend_pid()")
                    cut = cursor.fetchall()
        except (OperationalError, InterfaceError):
            lost = True
        finally:
            side.close()
        reconnect()
        if receipt is not None and lost:
            self.counter_times.pop()
            self.log.events.pop()
            before = Payment.objects.filter(idempotency_key=key).count()
            self.counter_payment(payer, "due", key=key, method=Payment.Method.CASH)
            after = Payment.objects.filter(idempotency_key=key).count()
        else:
            before, after = 0, Payment.objects.filter(idempotency_key=key).count()
        workers_cut = sum(1 for _pid, name, done in cut if done and name == worker.name)
        ok = lost and before == 0 and after == 1 and worker.alive()
        self.log.fault(today, "pg_terminate_backend of every connection",
                       f"{sum(1 for *_r, done in cut if done)} sessions cut ({workers_cut} of the worker); this process's "
                       f"payment lost at commit: {lost} ({before} stored), recorded again after reconnecting: "
                       f"{after} payment; worker still running: {worker.alive()}")
        self.log.event(today, "fault_terminate", payer, None, "")
        if not ok:
            self.log.survived = False

    def double_submit(self) -> None:
        """The collector's form sent twice at once (two threads, one idempotency key)."""
        from django.db import connection

        from billing.models import Payment, Receipt
        from billing.services import counter

        today = self.clock.today()
        parcel, due = self.owing_parcel()
        parcel_id = parcel.parcel_id
        key = self.key()
        receipts: list[Any] = []
        errors: list[BaseException] = []
        barrier = threading.Barrier(2)

        def submit() -> None:
            try:
                barrier.wait()
                receipts.append(counter.payment_record(acting_user=self.collector, parcel=parcel, amount=due, paid_on=today,
                                                       method=Payment.Method.CASH, idempotency_key=key))
            except BaseException as exc:  # noqa: BLE001 (reported below)
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=submit) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        payments = Payment.objects.filter(idempotency_key=key).count()
        same = len({r.pk for r in receipts}) == 1 and Receipt.objects.filter(payment__idempotency_key=key).count() == 1
        ok = not errors and len(receipts) == 2 and payments == 1 and same
        self.log.event(today, "counter_payment_cash", parcel_id, due, self.collector)
        self.log.fault(today, "double submit of a counter payment",
                       f"2 submits at once, {payments} payment, {'one receipt returned to both' if same else 'DIFFERENT RECEIPTS'}"
                       f"{'; errors: ' + repr(errors) if errors else ''}")
        if not ok:
            self.log.survived = False

    # -- the run

    def run(self) -> None:
        self.log.survived = True
        self.spring()
        schedule = self.plan()
        self.bulk_print(1, "kill" if "kill" in FAULTS else None)
        closed = self.closure_day()
        month_bank: dict[tuple[int, int], bool] = {}
        bank_payment_to_return: Any | None = None
        short_done = False
        specials = {
            date(2025, 9, 16): lambda: self.correction(up=False),
            date(2025, 10, 1): self.surcharge_rate,
            date(2025, 10, 15): lambda: self.delinquent_list(date(2025, 10, 15)),
            date(2025, 10, 21): self.void_check,
            date(2025, 11, 18): self.refund,
            date(2026, 2, 10): lambda: self.correction(up=True),
            date(2026, 3, 17): self.void_check,
            date(2026, 4, 15): lambda: self.delinquent_list(date(2026, 4, 15)),
            date(2026, 5, 19): self.refund,
            date(2026, 6, 9): self.refund,
        }
        if "double" in FAULTS:
            specials[date(2025, 8, 12)] = self.double_submit
        january_done = False
        day = YEAR_START
        while day <= YEAR_END:
            if not january_done and day >= date(2025, 11, 17):
                self.bulk_print(2, "terminate" if "terminate" in FAULTS else None)
                january_done = True
            if day == closed:
                self.closure(day)
            elif day.weekday() < 5:
                self.clock.to(day)
                for parcel_id, how in schedule.get(day, []):
                    self.counter_payment(parcel_id, how)
                if day in specials:
                    specials[day]()
                month = (day.year, day.month)
                if day.day >= 15 and month not in month_bank:
                    month_bank[month] = True
                    self.bank_file(len(month_bank), bank_payment_to_return)
                    bank_payment_to_return = None
                    if len(month_bank) == 3:  # the next file returns one of this file's payments
                        from billing.models import BankFileLine

                        line = BankFileLine.objects.filter(payment__isnull=False).order_by("-pk").first()
                        bank_payment_to_return = line
                self.clock.to(day, hour=17)
                short_done = self.day_close(short=not short_done and day >= date(2025, 9, 1)) or short_done
            day += timedelta(days=1)
        self.log.figure(f"payment at the counter with its receipt, median of {len(self.counter_times):,}",
                        f"{statistics.median(self.counter_times) * 1000:.0f} ms" if self.counter_times else "none")


def write_outputs(log: Log, clock: Clock) -> None:
    from parcels.models import Parcel

    with open(OUT / "events.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["day", "kind", "parcel", "amount", "who"])
        writer.writerows(log.events)
    total = Parcel.objects.count() if not STATEMENTS else min(STATEMENTS, Parcel.objects.count())
    start = time.perf_counter()
    # In STATEMENT_PROCESSES processes of their own (each a slice in cadastre order), joined in order.
    size = -(-total // STATEMENT_PROCESSES)
    slices = [(offset, min(size, total - offset), OUT / f"statements-{index}.part")
              for index, offset in enumerate(range(0, total, size))]
    children = [subprocess.Popen([sys.executable, __file__, "--statements", str(offset), str(limit), str(path)], cwd=ROOT / "bench",
                                 env=child_env(clock)) for offset, limit, path in slices]
    failed = [child.args for child in children if child.wait() != 0]
    if failed:
        raise SystemExit(f"statement writers failed: {failed}")
    count = 0
    with open(OUT / "statements.jsonl", "wb") as handle:
        for _offset, _limit, path in slices:
            data = path.read_bytes()
            count += data.count(b"\n")
            handle.write(data)
            path.unlink()
    log.figure(f"{count:,} statements written (statements.jsonl, {len(slices)} processes)", f"{time.perf_counter() - start:.1f} s")
    with open(OUT / "faults.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([("day", "fault", "outcome"), *log.faults])


def statements_write(offset: int, limit: int, path: str) -> None:
    """``--statements``: the statements of parcels ``offset`` to ``offset + limit`` (cadastre
    order) at the five dates, one JSON line each, in a process of its own on the year's clock."""
    from datetime import timedelta as delta

    import django
    from django.utils import timezone

    moved = delta(seconds=float(os.environ.get("YEAR_CLOCK_OFFSET", "0")))
    real_now = timezone.now
    timezone.now = lambda: real_now() + moved
    django.setup()
    from billing.accounts import statement
    from parcels.models import Parcel

    with open(path, "w") as handle:
        for parcel in Parcel.objects.select_related("owner").order_by("parcel_id")[offset:offset + limit].iterator(chunk_size=2000):
            for as_of in STATEMENT_DATES:
                handle.write(json.dumps(statement(parcel=parcel, as_of=as_of).to_json(), sort_keys=True, ensure_ascii=False) + "\n")


def verify_books(log: Log, clock: Clock) -> bool:
    """``manage.py verify_books --full`` in a process of its own (the real clock: after the year)."""
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "manage.py", "verify_books", "--full", "--no-anchors"], cwd=ROOT,
                         env=child_env(clock, YEAR_CLOCK_OFFSET="0"), capture_output=True, text=True, check=False)
    log.figure("verify_books --full", f"{time.perf_counter() - start:.1f} s, exit {run.returncode}")
    print(run.stdout[-4000:], run.stderr[-2000:], sep="\n", flush=True)
    return run.returncode == 0


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    os.environ["TEST_MEDIA_ROOT"] = str(OUT / "media")
    (OUT / "media").mkdir(exist_ok=True)
    log = Log()
    print(f"a year in the life: {PARCELS:,} parcels, {BILLS} bills a semester, {PAYMENTS} counter payments, "
          f"faults {sorted(FAULTS)}, output {OUT} (load {loadavg()})", flush=True)
    with timed(log, "create and migrate the year's database"):
        name = setup_year_database()
    print(f"database {name}", flush=True)
    clock = Clock()
    year = Year(log, clock)
    year.run()
    clock.to(YEAR_END + timedelta(days=1))
    write_outputs(log, clock)
    from django.db import connections

    connections.close_all()
    clean = verify_books(log, clock)
    wall = time.perf_counter() - log.started
    with open(OUT / "figures.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([("figure", "value"), *log.figures, ("wall time", f"{wall:.1f} s")])
    print(f"\nfaults survived ({len(log.faults)}):")
    for day, kind, outcome in log.faults:
        print(f"  {day} {kind}: {outcome}")
    for lost in LOST_WHILE_WAITING:
        print(f"  not injected, survived: connection lost {lost}")
    print(f"{len(log.events):,} events; outputs in {OUT}")
    print(f"wall time {wall:.1f} s (load {loadavg()}); verify_books --full {'clean' if clean else 'NOT CLEAN'}")
    return 0 if clean and getattr(log, "survived", False) else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["--statements"]:
        statements_write(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(main())
