"""The 100,000-parcel district of issue 20, built through the bulk paths and measured as it is
built: the first rows of the issue's table, each ratio timed side by side in the same run.

1. import the registry with the CLI (``manage.py import_parcels``, the whole process) and, on the
   same server right before and after, a plain ``COPY`` of the same file into a plain table;
2. compute and store the roll (``levy_compute``) and a plain ``COPY`` of the same roll rows;
3. finalize it (``roll_finalize``, timed alone in a process of its own) with ~17.9 % of the lines
   at 100 % credit (¶9: each still gets its zero notice); past ``BENCH_FINALIZE_TIMEOUT`` seconds
   the process is stopped and the roll is finalized without the zero notices, so the rest of the
   district can still be built (the row says so);
4. a season of payments written straight to the tables (as ``bench_installments.collection_records``
   does): every levied parcel but 10 % paid its July half in July–August 2026, so 10 % of the
   accounts are late (¶12: July half due July 1, delinquent after 60 days);
5. ``billing delinquent --format csv`` and the roll export (``levy export``), both whole CLI processes.

``BENCH_PARCELS`` (default 100,000) makes a smaller district for a quick run. The database
(``<name>_bench``) is left built, for ``bench_load`` to serve."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

from common import ROOT, certified_estimates, registry_csv, setup_fresh_database
from table import issue_row

PARCELS = int(os.environ.get("BENCH_PARCELS", "100000"))
FULL_CREDIT_SHARE = 0.179  # the issue's district: 17,863 of 100,000 lines at 100 % credit (¶9)
LATE_SHARE = 0.10
FINALIZE_TIMEOUT = float(os.environ.get("BENCH_FINALIZE_TIMEOUT", "120"))
FISCAL_YEAR = "2026-2027"
# The list is the books as known at the end of its day, and the district is written today: today
# (on the machine's clock the issue was measured on, after the July half's 60 days of grace, ¶12,
# and before the January half's: 10 % of the accounts late).
AS_OF = date.today()
FINALIZED_ON = date(2026, 6, 30)
COPY_COLUMNS = ("parcel_id text, owner_id text, owner_name text, owner_email text, owner_kind text, gravity_acres numeric, "
                "pumped_acres numeric, inclusion text, water_since date, credit_percent numeric")


def district_csv(count: int) -> bytes:
    """``common.registry_csv`` with ~17.9 % of the rows at 100 % credit (the same rows every run)."""
    rng = random.Random(179)
    lines = registry_csv(count).decode().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        if rng.random() < FULL_CREDIT_SHARE:
            line = line.rsplit(",", 1)[0] + ",100"
        out.append(line)
    return ("\n".join(out) + "\n").encode()


def _connect():
    import psycopg
    from django.db import connections

    params = connections["default"].get_connection_params()
    return psycopg.connect(**params, autocommit=True)


def copy_seconds(table_sql: str, data: bytes, copy_sql: str) -> float:
    """Create a plain table (no index, no constraint, no trigger), COPY ``data`` into it, drop it:
    the seconds the COPY took (its own statement, committed)."""
    with _connect() as conn:
        conn.execute("DROP TABLE IF EXISTS bench_plain_copy")
        conn.execute(f"CREATE TABLE bench_plain_copy ({table_sql})")
        start = time.perf_counter()
        with conn.cursor() as cursor, cursor.copy(copy_sql) as copy:
            for offset in range(0, len(data), 1 << 20):
                copy.write(data[offset:offset + (1 << 20)])
        seconds = time.perf_counter() - start
        conn.execute("DROP TABLE bench_plain_copy")
    return seconds


def database_url() -> str:
    from bench_load import database_url as url
    from django.conf import settings

    return url(settings.DATABASES["default"])


def manage(*args: str, stdout=subprocess.DEVNULL) -> float:
    """A whole ``manage.py`` process on the bench database: its wall time."""
    from django.db import connections

    connections.close_all()
    env = {**os.environ, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "lajas_portal.settings_test"}
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)}: {run.stderr[-2000:]}")
    return seconds


def ratio_row(what: str, seconds: float, copy: float, target: float, extra: str = "") -> None:
    ratio = seconds / copy
    issue_row(what, f"{seconds:.2f} s = {ratio:.1f} × COPY ({copy:.2f} s){extra}", f"≤ {target:g} × COPY", ratio <= target)


def build_registry(results: list[tuple[str, str]]) -> Path:
    data = district_csv(PARCELS)
    path = Path(tempfile.mkdtemp(prefix="lajas-district-")) / "registry.csv"
    path.write_bytes(data)
    copy_sql = "COPY bench_plain_copy FROM STDIN WITH (FORMAT csv, HEADER true)"
    before = copy_seconds(COPY_COLUMNS, data, copy_sql)
    seconds = manage("import_parcels", str(path))
    after = copy_seconds(COPY_COLUMNS, data, copy_sql)
    copy = (before + after) / 2
    results.append((f"import {PARCELS:,} parcels (CLI, whole process)", f"{seconds:.2f} s"))
    results.append(("plain COPY of the same file (before, after)", f"{before:.3f} s, {after:.3f} s"))
    ratio_row(f"import {PARCELS:,} parcels (CLI, whole process)", seconds, copy, 10)
    return path


def build_roll(results: list[tuple[str, str]]):
    from django.db import connection

    from levy.services import ROLL_LINE_COLUMNS, levy_compute

    _, hacienda = certified_estimates(FISCAL_YEAR)
    start = time.perf_counter()
    levy = levy_compute(acting_user=hacienda, fiscal_year=FISCAL_YEAR)
    seconds = time.perf_counter() - start
    columns = ", ".join(ROLL_LINE_COLUMNS)
    with connection.cursor() as cursor:
        rows = bytearray()
        with cursor.cursor.copy(f"COPY (SELECT {columns} FROM levy_rollline WHERE levy_id = %s) TO STDOUT",
                                [levy.pk]) as copy:
            for chunk in copy:
                rows += chunk
        cursor.execute("SELECT string_agg(quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod), ', ' "
                       "ORDER BY array_position(%s::text[], a.attname::text)) FROM pg_attribute a "
                       "WHERE a.attrelid = 'levy_rollline'::regclass AND a.attname = ANY(%s::text[])",
                       [list(ROLL_LINE_COLUMNS), list(ROLL_LINE_COLUMNS)])
        table_sql = cursor.fetchone()[0]
    copy = copy_seconds(table_sql, bytes(rows), f"COPY bench_plain_copy ({columns}) FROM STDIN")
    results.append((f"compute and store the roll of {PARCELS:,} parcels", f"{seconds:.2f} s ({levy.parcels_in_roll:,} lines)"))
    results.append(("plain COPY of the same roll rows", f"{copy:.3f} s ({len(rows) / 1e6:.1f} MB)"))
    ratio_row(f"compute and store the roll of {PARCELS:,} parcels", seconds, copy, 10)
    return levy


def finalize_worker(db_name: str) -> None:
    """In a process of its own: ``roll_finalize`` alone, timed; prints JSON."""
    import django
    from django.conf import settings

    django.setup()
    settings.DATABASES["default"]["NAME"] = db_name
    from django.contrib.auth import get_user_model
    from django.db import connections

    connections["default"].settings_dict["NAME"] = db_name
    from billing.services.installments import roll_finalize

    finalizer = get_user_model().objects.get(username="hacienda2")
    start = time.perf_counter()
    roll_finalize(acting_user=finalizer, fiscal_year=FISCAL_YEAR, today=FINALIZED_ON)
    print(json.dumps({"seconds": time.perf_counter() - start}))


def staff_users() -> dict:
    """The accounts ``bench_load.make_plan`` starts from (seed_demo's names) and a collector's office."""
    from parcels.models import Owner
    from parcels.services import user_create

    owner = Owner.objects.order_by("pk").first()
    users = {name: user_create(username=name, role=role, password=None) for name, role in
             (("hacienda2", "hacienda"), ("colector", "collector"), ("hacienda", "hacienda"))}
    users["terrateniente"] = user_create(username="terrateniente", role="landowner", owner=owner)
    return users


def finalize(results: list[tuple[str, str]], levy) -> None:
    from django.conf import settings
    from django.db import connections

    from levy.models import RollLine

    full = RollLine.objects.filter(levy=levy, credit_percent=100).count()
    db_name = settings.DATABASES["default"]["NAME"]
    connections.close_all()
    what = f"finalize a {PARCELS:,}-parcel roll, {full:,} lines at 100 % credit"
    try:
        run = subprocess.run([sys.executable, __file__, "--finalize", db_name], cwd=ROOT / "bench", capture_output=True,
                             text=True, timeout=FINALIZE_TIMEOUT)
    except subprocess.TimeoutExpired:
        results.append((what, f"stopped after {FINALIZE_TIMEOUT:.0f} s, nothing committed"))
        issue_row(what, f"> {FINALIZE_TIMEOUT:.0f} s (stopped, nothing committed); the district was finalized without "
                        "its zero notices", "≤ 30 s", False)
        from unittest import mock

        from django.contrib.auth import get_user_model

        from billing.services import installments

        with mock.patch.object(installments, "zero_notices_issue", return_value=None):
            installments.roll_finalize(acting_user=get_user_model().objects.get(username="hacienda2"),
                                       fiscal_year=FISCAL_YEAR, today=FINALIZED_ON)
        return
    if run.returncode != 0:
        raise RuntimeError(f"finalize: {run.stderr[-2000:]}")
    seconds = json.loads(run.stdout.strip().splitlines()[-1])["seconds"]
    results.append((what, f"{seconds:.2f} s"))
    issue_row(what, f"{seconds:.2f} s", "≤ 30 s", seconds <= 30)


def season(results: list[tuple[str, str]], users: dict) -> None:
    """Every levied parcel but ``LATE_SHARE`` paid its July half on a day of July–August 2026 at
    the office LAJ, written straight to the tables (payment, allocation, ledger entry), like
    ``bench_installments.collection_records``; one payment in 50 was voided in September (the
    parcel late again). Each payment has its numbered receipt, as every counter payment does
    (the counter, the statements and the day report link to it), whose snapshot holds what those
    pages read: the parcel, its owner and the payment; no stored PDF (no page of the load opens
    one)."""
    from billing import models as billing
    from parcels.models import Parcel

    start = time.perf_counter()
    collector = users["colector"]
    office = billing.Office.objects.get(code="LAJ")
    july = {parcel_id: (pk, principal) for pk, parcel_id, principal in billing.Charge.objects.filter(
        kind=billing.Charge.Kind.INSTALLMENT, number=1, principal__gt=0).values_list("pk", "parcel_id", "principal")}
    rng = random.Random(20)
    payers = sorted(parcel for parcel in july if rng.random() >= LATE_SHARE)
    days = [date(2026, 7, 1) + timedelta(days=n) for n in range(0, 46) if (date(2026, 7, 1) + timedelta(days=n)).weekday() < 5]
    payments = billing.Payment.objects.bulk_create(
        (billing.Payment(parcel_id=parcel_id, office=office, collector=collector, paid_on=rng.choice(days),
                         amount=july[parcel_id][1], method=billing.Payment.Method.CASH,
                         idempotency_key=f"bench-{parcel_id}", payer_name="Dueño de prueba") for parcel_id in payers),
        batch_size=5000,
    )
    billing.PaymentAllocation.objects.bulk_create(
        (billing.PaymentAllocation(payment=payment, charge_id=july[payment.parcel_id][0], principal=payment.amount)
         for payment in payments), batch_size=5000,
    )
    ledger = billing.LedgerEntry
    ledger.objects.bulk_create(
        (ledger(parcel_id=payment.parcel_id, entry_date=payment.paid_on, kind=ledger.Kind.PAYMENT, credit=payment.amount,
                payment=payment, description="Pago", created_by=collector) for payment in payments), batch_size=5000,
    )
    parcels = {row[0]: row[1:] for row in Parcel.objects.filter(pk__in=payers).values_list(
        "pk", "parcel_id", "owner__owner_key", "owner__name", "gravity_acres", "pumped_acres")}
    halves = billing.Charge.objects.filter(kind=billing.Charge.Kind.INSTALLMENT, parcel_id__in=payers)
    january = dict(halves.filter(number=2).values_list("parcel_id", "principal"))
    last_day = dict(halves.filter(number=1).values_list("parcel_id", "last_day_to_pay"))

    def snapshot(payment) -> dict:
        """The receipt's frozen snapshot (``snapshots.ReceiptSnapshot.to_json``): the July half paid in
        full on time, nothing else due, the January half still to come."""
        code, key, name, gravity, pumped = parcels[payment.parcel_id]
        paid = str(getattr(payment.amount, "amount", payment.amount))  # a MoneyField holds Money
        return {
            "parcel_id": code, "owner_name": name, "owner_key": key, "gravity_acres": str(gravity), "pumped_acres": str(pumped),
            "equivalent_acres": str(gravity + pumped * Decimal("0.5")), "office": {"code": office.code, "name": office.name},
            "collector": collector.username, "collector_name": "", "paid_on": payment.paid_on.isoformat(), "amount": paid,
            "method": payment.method, "reference": "", "tendered": paid, "change": "0.00",
            "applications": [{"description": f"Plazo 1 del año fiscal {FISCAL_YEAR}", "fiscal_year": FISCAL_YEAR, "number": 1,
                              "kind": "installment", "principal": paid, "due_date": "2026-07-01",
                              "last_day_to_pay": last_day[payment.parcel_id].isoformat(), "surcharge": "0.00", "principal_paid": paid,
                              "balance_after": "0.00"}],
            "credit_balance": "0.00", "total_due_after": "0.00",
            "total_balance_after": str(january.get(payment.parcel_id, Decimal("0.00"))),
            "backdate_reason": "", "recorded_on": None, "language": "",
        }

    billing.Receipt.objects.bulk_create(
        (billing.Receipt(office=office, fiscal_year=FISCAL_YEAR, number=number, payment=payment, snapshot=snapshot(payment))
         for number, payment in enumerate(payments, start=1)), batch_size=5000,
    )
    billing.ReceiptSeries.objects.update_or_create(office=office, fiscal_year=FISCAL_YEAR,
                                                   defaults={"last_number": len(payments)})
    seconds = time.perf_counter() - start
    results.append(("(setup) a season of payments, straight to the tables",
                    f"{len(payments):,} payments of {len(july):,} July halves in {seconds:.1f} s "
                    f"({1 - len(payments) / max(len(july), 1):.1%} late)"))


def delinquent(results: list[tuple[str, str]]) -> None:
    out = Path(tempfile.mkdtemp(prefix="lajas-delinquent-"))
    with (out / "delinquent.csv").open("w") as stdout:
        seconds = manage("billing", "delinquent", "--as-of", AS_OF.isoformat(), "--format", "csv", stdout=stdout)
    with (out / "roll.csv").open("w") as stdout:
        export = manage("levy", "export", "--fiscal-year", FISCAL_YEAR, "--format", "csv", stdout=stdout)
    late = sum(1 for _ in (out / "delinquent.csv").open()) - 1
    results.append((f"billing delinquent --format csv ({late:,} rows, as of {AS_OF})", f"{seconds:.2f} s"))
    results.append(("levy export (the roll, CSV)", f"{export:.2f} s"))
    ratio = seconds / export
    issue_row(f"delinquent list of {PARCELS:,} parcels ({late:,} rows), billing delinquent --format csv",
              f"{seconds:.2f} s = {ratio:.1f} × the roll export ({export:.2f} s)", "≤ 2 × the export", ratio <= 2)


def build(results: list[tuple[str, str]]) -> None:
    """The whole district, measured as it is built (the database stays for ``bench_load``)."""
    setup_fresh_database()
    build_registry(results)
    levy = build_roll(results)
    users = staff_users()
    finalize(results, levy)
    season(results, users)
    delinquent(results)


def main() -> list[tuple[str, str]]:
    results: list[tuple[str, str]] = []
    build(results)
    return results


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--finalize":
        finalize_worker(sys.argv[2])
    else:
        for label, figure in main():
            print(f"{label}: {figure}")
