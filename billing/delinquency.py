"""The delinquent list (¶12) from SQL: every late charge's balance and surcharge computed set-based
over the stored records, exactly as ``billing.rules.ledger_state`` reads them for one account
(issue 20). Nothing is replayed in Python and nothing here writes.

For each charge that accrues surcharge and whose stored last day to pay is before D (the as-of
day), on a parcel whose ledger still owes by D (the candidates the account replay took):

- *principal*: the issued principal less the ``PrincipalAdjustment`` rows dated by D (¶9);
- *last day to pay*: the stored day moved past the closed days and the grace days of the legal
  row in force on the due date (``accounts.charge_last_days``: Puerto Rico's holidays come from
  the ``holidays`` package, so the few distinct ``(due, stored)`` pairs are moved in Python and
  handed to the query as arrays), or later by a ``LastDayMove`` dated by D (an office closure);
- *paid*: the stored allocations of the payments that count on D (paid by D and not voided by
  D), plus *crédito aplicado*, less what was given back, and a void's reversals of either (¶13);
- *surcharge*: ¶12 period by period from the day after the last day, calendar months clamped to
  month end (PostgreSQL's ``date + interval 'n months'`` clamps as ``levy.rules.add_months``),
  each on the principal unpaid at its start (principal paid strictly before it) at the rate in
  force on its first day (the legal rows' dated ``surcharge_rate``), while something is unpaid;
  ``Σ rate × unpaid`` half-up to the cent once (``round`` of a positive numeric is half-up).

A past day reads the rows recorded by its end (``accounts.known_by_end_of``), as its statements
do. ``tests/billing/test_delinquent_sql.py`` holds this equal to the rules on random books.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.db import connections, router, transaction
from django.db.models import F, QuerySet, Sum

from levy.exports import safe_cell
from levy.models import LegalParameterSet
from parcels.models import Parcel

from . import accounts, rules
from .accounts import charge_key, charge_last_days, known_by_end_of
from .models import Charge, LedgerEntry

ZERO = Decimal("0.00")

# The list's sort orders (the page's ``o``): the service's own order is oldest last day first.
# Python's sort of the same list was stable: ties keep the base order (last day, cadastre number,
# due date, charge). Cadastre numbers sort by code point (COLLATE "C"), as Python compares str.
ORDERS = {
    "": 'last_day, code COLLATE "C", due_date, id',
    "days_late": 'days_late, code COLLATE "C", due_date, id',
    "-days_late": 'days_late DESC, code COLLATE "C" DESC, due_date, id',
    "balance": 'balance, code COLLATE "C", last_day, due_date, id',
    "-balance": 'balance DESC, code COLLATE "C" DESC, last_day, due_date, id',
}

_CUT = "(%(known_by)s::timestamptz IS NULL OR {t}.created_at < %(known_by)s::timestamptz)"

DELINQUENT_SQL = """
WITH base (due_date, stored, last_day) AS (
    SELECT * FROM unnest(%(dues)s::date[], %(stored)s::date[], %(last_days)s::date[])
), rates AS (
    SELECT f AS starts, LEAD(f) OVER (ORDER BY f) AS ends, r AS rate
      FROM unnest(%(rate_from)s::date[], %(rates)s::numeric[]) AS t (f, r)
), charges AS (
    SELECT c.id, c.parcel_id, c.principal, c.due_date, c.last_day_to_pay, c.fiscal_year_id, c.number, c.kind
      FROM billing_charge c
     WHERE c.accrues_surcharge AND c.last_day_to_pay < %(as_of)s AND c.kind NOT IN ('refund', 'void_refund')
       AND {cut_c}
       AND (%(fiscal_year)s = '' OR c.fiscal_year_id IN (SELECT id FROM levy_fiscalyear WHERE label = %(fiscal_year)s))
       AND (%(number)s::int IS NULL OR c.number = %(number)s::int)
       {parcels}
), owing AS (
    SELECT l.parcel_id FROM billing_ledgerentry l
     WHERE l.parcel_id IN (SELECT parcel_id FROM charges) AND l.entry_date <= %(as_of)s AND {cut_l}
     GROUP BY l.parcel_id HAVING SUM(l.debit) > SUM(l.credit)
), lowered AS (
    SELECT t.charge_id, SUM(t.amount) AS amount FROM billing_principaladjustment t
     WHERE t.entry_date <= %(as_of)s AND {cut_t} GROUP BY t.charge_id
), moved AS (
    SELECT t.charge_id, MAX(t.last_day) AS last_day FROM billing_lastdaymove t
     WHERE t.entry_date <= %(as_of)s AND {cut_t} GROUP BY t.charge_id
), late AS (
    SELECT c.*, c.principal - COALESCE(lowered.amount, 0) AS principal_now,
           GREATEST(COALESCE(base.last_day, c.last_day_to_pay), moved.last_day) AS last_day
      FROM charges c
      LEFT JOIN base ON base.due_date = c.due_date AND base.stored = c.last_day_to_pay
      LEFT JOIN lowered ON lowered.charge_id = c.id
      LEFT JOIN moved ON moved.charge_id = c.id
     WHERE c.parcel_id IN (SELECT parcel_id FROM owing)
       AND GREATEST(COALESCE(base.last_day, c.last_day_to_pay), moved.last_day) < %(as_of)s
), entries (charge_id, day, principal, surcharge, returned) AS (
    -- principal paid (dated: the surcharge basis reads it), surcharge paid, principal given back
    SELECT a.charge_id, p.paid_on, a.principal, a.surcharge, 0
      FROM billing_paymentallocation a
      JOIN billing_payment p ON p.id = a.payment_id
      LEFT JOIN billing_paymentvoid v ON v.payment_id = p.id
     WHERE a.charge_id IS NOT NULL AND p.paid_on <= %(as_of)s AND {cut_p}
       AND (v.id IS NULL OR v.voided_on > %(as_of)s
            OR (%(known_by)s::timestamptz IS NOT NULL AND v.created_at >= %(known_by)s::timestamptz))
    UNION ALL
    SELECT t.charge_id, t.entry_date, t.principal, t.surcharge, 0 FROM billing_creditapplication t
     WHERE t.entry_date <= %(as_of)s AND {cut_t}
    UNION ALL
    SELECT t.charge_id, t.entry_date, 0, -t.surcharge, t.principal FROM billing_giveback t
     WHERE t.entry_date <= %(as_of)s AND {cut_t}
    UNION ALL  -- ¶13: a void's reversal of a crédito aplicado: never paid, from the entry's own date
    SELECT t.charge_id, ca.entry_date, -t.principal, -t.surcharge, 0 FROM billing_voidreversal t
      JOIN billing_creditapplication ca ON ca.id = t.credit_application_id
     WHERE t.kind = 'credit_applied' AND t.entry_date <= %(as_of)s AND {cut_t}
    UNION ALL  -- ¶13: a void's reversal of a give-back: paid again on the charge
    SELECT t.charge_id, t.entry_date, 0, t.surcharge, -t.principal FROM billing_voidreversal t
     WHERE t.kind = 'give_back' AND t.entry_date <= %(as_of)s AND {cut_t}
), paid AS (
    SELECT charge_id, SUM(principal) - SUM(returned) AS principal_paid, SUM(surcharge) AS surcharge_paid
      FROM entries GROUP BY charge_id
), dated AS (
    SELECT charge_id, day, SUM(principal) AS principal FROM entries WHERE principal <> 0 GROUP BY charge_id, day
), periods AS (
    SELECT * FROM (
        SELECT l.id, k.k, (l.last_day + 1 + make_interval(months => k.k))::date AS start, l.principal_now
          FROM late l
         CROSS JOIN LATERAL generate_series(0, (EXTRACT(YEAR FROM %(as_of)s::date)::int - EXTRACT(YEAR FROM l.last_day + 1)::int) * 12
                                               + EXTRACT(MONTH FROM %(as_of)s::date)::int - EXTRACT(MONTH FROM l.last_day + 1)::int) AS k (k)
    ) begun WHERE start <= %(as_of)s
), paid_before AS (
    -- principal paid strictly before each period's start, for the charges with principal paid
    SELECT pr.id, pr.k, SUM(d.principal) AS principal
      FROM periods pr JOIN dated d ON d.charge_id = pr.id AND d.day < pr.start
     GROUP BY pr.id, pr.k
), stops AS (
    -- ¶12: the first period begun with nothing unpaid: it and the later ones carry no surcharge
    SELECT pb.id, MIN(pb.k) AS k FROM paid_before pb JOIN late l ON l.id = pb.id
     WHERE l.principal_now - pb.principal <= 0 GROUP BY pb.id
), basis AS (
    SELECT pr.id, pr.k, pr.start, pr.principal_now - COALESCE(pb.principal, 0) AS unpaid
      FROM periods pr
      LEFT JOIN paid_before pb ON pb.id = pr.id AND pb.k = pr.k
      LEFT JOIN stops ON stops.id = pr.id
     WHERE pr.principal_now > 0 AND (stops.k IS NULL OR pr.k < stops.k)
), surcharges AS (
    SELECT b.id, ROUND(SUM(r.rate * b.unpaid), 2) AS surcharge, COUNT(*) AS periods,
           {basis_columns}
      FROM basis b JOIN rates r ON r.starts <= b.start AND (r.ends IS NULL OR b.start < r.ends)
     GROUP BY b.id
), listed AS (
    SELECT l.id, l.parcel_id, pp.parcel_id AS code, o.name AS owner_name, fy.label AS fiscal_year, l.number, l.kind,
           l.due_date, l.last_day, %(as_of)s::date - l.last_day AS days_late, l.principal_now AS principal,
           COALESCE(s.surcharge, 0.00) AS surcharge, COALESCE(s.periods, 0) AS periods,
           COALESCE(paid.principal_paid, 0.00) AS principal_paid, COALESCE(paid.surcharge_paid, 0.00) AS surcharge_paid,
           l.principal_now + COALESCE(s.surcharge, 0.00) - COALESCE(paid.principal_paid, 0.00)
               - COALESCE(paid.surcharge_paid, 0.00) AS balance,
           s.starts, s.unpaids, s.rates
      FROM late l
      JOIN parcels_parcel pp ON pp.id = l.parcel_id
      JOIN parcels_owner o ON o.id = pp.owner_id
      JOIN levy_fiscalyear fy ON fy.id = l.fiscal_year_id
      LEFT JOIN surcharges s ON s.id = l.id
      LEFT JOIN paid ON paid.charge_id = l.id
), kept AS (
    SELECT * FROM listed
     WHERE balance > 0 AND days_late >= %(min_days_late)s AND (%(min_balance)s::numeric IS NULL OR balance >= %(min_balance)s::numeric)
)
"""

# Every line (the command's CSV and the kept list).
ALL_SQL = "SELECT {columns} FROM kept ORDER BY {order}"
BASIS_COLUMNS = ("array_agg(b.start ORDER BY b.k) AS starts, array_agg(b.unpaid ORDER BY b.k) AS unpaids, "
                 "array_agg(r.rate ORDER BY b.k) AS rates")
NO_BASIS_COLUMNS = "NULL::date[] AS starts, NULL::numeric[] AS unpaids, NULL::numeric[] AS rates"
COLUMNS = ("id", "parcel_id", "code", "owner_name", "fiscal_year", "number", "kind", "due_date", "last_day", "days_late",
           "principal", "surcharge", "periods", "principal_paid", "surcharge_paid", "balance", "starts", "unpaids", "rates")


@dataclass(frozen=True)
class Line:
    """One late charge as the SQL computed it: ``state`` is the charge's ``rules.ChargeState``
    as ``accounts.account_states`` would give it, field for field."""

    charge_id: int
    parcel_pk: int
    parcel_code: str  # the cadastre number (``Parcel.parcel_id``)
    owner_name: str
    fiscal_year: str
    number: int | None
    kind: str
    state: rules.ChargeState
    days_late: int


@dataclass(frozen=True)
class Totals:
    count: int = 0
    parcels: int = 0
    principal: Decimal = ZERO
    surcharge: Decimal = ZERO
    paid: Decimal = ZERO
    balance: Decimal = ZERO


@dataclass(frozen=True)
class Filters:
    """What the list is asked for (``DelinquentFilterForm``'s fields, the command's options)."""

    as_of: date
    fiscal_year: str = ""
    number: int | None = None
    min_balance: Decimal | None = None
    min_days_late: int = 0
    parcels: QuerySet | None = None  # only these parcels (the page's search box), or every parcel


def _line(row: tuple) -> Line:
    (pk, parcel_pk, code, owner_name, fiscal_year, number, kind, due, last_day, days_late, principal, surcharge, periods,
     principal_paid, surcharge_paid, balance, starts, unpaids, rates) = row
    state = rules.ChargeState(
        key=charge_key(pk), principal=principal, due=due, last_day=last_day, periods=periods, surcharge=surcharge,
        surcharge_basis=tuple(zip(starts or (), unpaids or (), strict=True)), principal_paid=principal_paid,
        surcharge_paid=surcharge_paid, paid=principal_paid + surcharge_paid, balance=balance, accrues_surcharge=True,
        first_delinquent=last_day + timedelta(days=1), surcharge_rates=tuple(rates or ()),
    )
    return Line(charge_id=pk, parcel_pk=parcel_pk, parcel_code=code, owner_name=owner_name, fiscal_year=fiscal_year,
                number=number, kind=kind, state=state, days_late=days_late)


def _query(filters: Filters, tail: str, order: str, extra: dict | None = None, *,
           basis: bool = True) -> tuple[str, str, dict]:
    """The database alias to read (the replica for a report page, ``parcels.replica``), the SQL
    and its parameters. Three small queries first: the legal rows, the closures and the
    distinct ``(due, stored last day)`` pairs of the candidate charges."""
    alias = router.db_for_read(Charge)
    known_by: datetime | None = known_by_end_of(filters.as_of)
    pairs = Charge.objects.using(alias).filter(accrues_surcharge=True, last_day_to_pay__lt=filters.as_of)
    if known_by is not None:
        pairs = pairs.filter(created_at__lt=known_by)
    history = LegalParameterSet.history(known_by=known_by)
    last_days = charge_last_days(pairs.values_list("due_date", "last_day_to_pay").distinct().order_by(), known_by=known_by,
                                 history=history)
    schedule = history.surcharge_schedule
    parcels_sql, parcels_params = "", ()
    if filters.parcels is not None:
        parcels_sql, parcels_params = filters.parcels.values("pk").query.sql_with_params()
        parcels_sql = "AND c.parcel_id IN (" + _named(parcels_sql) + ")"
    sql = DELINQUENT_SQL.format(
        basis_columns=BASIS_COLUMNS if basis else NO_BASIS_COLUMNS, cut_c=_CUT.format(t="c"), cut_l=_CUT.format(t="l"), cut_t=_CUT.format(t="t"), cut_p=_CUT.format(t="p"),
        parcels=parcels_sql,
    ) + tail.format(columns=", ".join(COLUMNS), order=ORDERS.get(order, ORDERS[""]))
    params = {
        "as_of": filters.as_of, "known_by": known_by, "fiscal_year": filters.fiscal_year or "", "number": filters.number or None,
        "min_balance": filters.min_balance, "min_days_late": filters.min_days_late or 0,
        "dues": [due for due, _stored in last_days], "stored": [stored for _due, stored in last_days],
        "last_days": list(last_days.values()), "rate_from": [start for start, _rate in schedule],
        "rates": [rate for _start, rate in schedule], **{f"parcels_{n}": value for n, value in enumerate(parcels_params)},
        **(extra or {}),
    }
    return alias, sql, params


def _named(sql: str) -> str:
    """A compiled queryset's positional placeholders (``%s``) as the named ones of the whole
    query (``%(parcels_0)s``, …); its literal percent signs (``%%``) stay as they are."""
    count = iter(range(1_000_000))
    return re.sub(r"%%|%s", lambda m: m.group(0) if m.group(0) == "%%" else f"%(parcels_{next(count)})s", sql)


def _fetch(alias: str, sql: str, params: dict) -> list[tuple]:
    """The rows of the list's query, without PostgreSQL's JIT: its row estimates for the arrays
    and period series are far off, and compiling the plan took longer than running it (9.5 s of
    28 s on the 100,000-parcel bench district)."""
    with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
        cursor.execute("SET LOCAL jit = off")
        cursor.execute(sql, params)
        return cursor.fetchall()


def lines(filters: Filters, *, order: str = "", basis: bool = True) -> list[Line]:
    """Every late charge of ``filters``, in ``order`` (``ORDERS``; oldest last day first).
    ``basis=False`` leaves each state's period-by-period basis out (``surcharge_basis`` and
    ``surcharge_rates`` empty; ``periods`` and every figure as they are): a CSV prints none."""
    alias, sql, params = _query(filters, ALL_SQL, order, basis=basis)
    return [_line(row) for row in _fetch(alias, sql, params)]


CSV_COLUMNS = ("parcel_id", "owner_name", "fiscal_year", "number", "last_day_to_pay", "days_late", "principal", "surcharge",
               "paid", "balance")


def csv_text(found: list[Line]) -> str:
    """¶12: the list as the documented CSV, for the page's export and ``billing delinquent`` alike;
    text cells through ``safe_cell`` (a spreadsheet never runs an owner's name as a formula).
    Built whole, in one buffer: 80,000 lines written one by one through an output wrapper cost
    seconds, and a list cut half way must not be sent as a shorter file."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows([safe_cell(line.parcel_code), safe_cell(line.owner_name), line.fiscal_year, line.number or "",
                      line.state.last_day.isoformat(), line.days_late, line.state.principal, line.state.surcharge,
                      line.state.paid, line.state.balance] for line in found)
    return buffer.getvalue()


# The page keeps each list it computed (every line of its filters, in its order) under the books'
# version (``accounts.kept_under_books_version``), so paging and coming back cost one small query
# and the cache read; only the first view after a change of the books runs the list's query.
_KEPT_VERSION = 3  # of the kept rows' shape: bump it when ``COLUMNS`` or the JSON form changes


_DATES = {COLUMNS.index(name) for name in ("due_date", "last_day")}
_AMOUNTS = {COLUMNS.index(name) for name in ("principal", "surcharge", "principal_paid", "surcharge_paid", "balance")}
_DATE_LISTS, _AMOUNT_LISTS = {COLUMNS.index("starts")}, {COLUMNS.index("unpaids"), COLUMNS.index("rates")}


def _stored_row(row: list) -> tuple:
    """A kept row (JSON: dates and amounts as text) as the query gave it."""
    def cell(index: int, value: object) -> object:
        if value is None:
            return None
        if index in _DATES:
            return date.fromisoformat(value)
        if index in _AMOUNTS:
            return Decimal(value)
        if index in _DATE_LISTS:
            return [date.fromisoformat(item) for item in value]
        if index in _AMOUNT_LISTS:
            return [Decimal(item) for item in value]
        return value
    return tuple(cell(index, value) for index, value in enumerate(row))


def _kept(filters: Filters, order: str) -> dict:
    """Every row of the list in ``order`` with the totals, kept in the shared cache as a list of
    JSON texts, one a row: a page then decodes only its own rows. (Unpickling 7,542 computed lines
    took 0.3 s; decoding them as one JSON text, 50–110 ms a page; a list of texts unpickles in
    about 1 ms.)"""
    def compute() -> str:
        alias, sql, params = _query(filters, ALL_SQL, order)
        rows = _fetch(alias, sql, params)
        found = [_line(row) for row in rows]
        totals = Totals(count=len(found), parcels=len({line.parcel_pk for line in found}),
                        principal=sum((line.state.principal for line in found), ZERO),
                        surcharge=sum((line.state.surcharge for line in found), ZERO),
                        paid=sum((line.state.principal_paid + line.state.surcharge_paid for line in found), ZERO),
                        balance=sum((line.state.balance for line in found), ZERO))
        return {"totals": [totals.count, totals.parcels, *(str(amount) for amount in (
                    totals.principal, totals.surcharge, totals.paid, totals.balance))],
                "rows": [json.dumps(row, default=str) for row in rows]}

    parcels = str(filters.parcels.values("pk").query) if filters.parcels is not None else None
    marker = (_KEPT_VERSION, filters.as_of, filters.fiscal_year, filters.number, filters.min_balance, filters.min_days_late,
              parcels, ORDERS.get(order, ORDERS[""]))
    return accounts.kept_under_books_version("delinquent-page", marker, compute, using=router.db_for_read(Charge))


def page(filters: Filters, *, order: str = "", number: int = 1, size: int = 50) -> tuple[list[Line], Totals, int]:
    """One page of the list and the totals of all of it: ``(lines, totals, page number)``; a page
    past the end is the last one (as ``Paginator.get_page``). The list is the kept one
    (``_kept``): its query runs once per version of the books, not once per page."""
    kept = _kept(filters, order)
    count, parcels, *amounts = kept["totals"]
    totals = Totals(count, parcels, *(Decimal(amount) for amount in amounts))
    last = max(1, -(-count // size))
    number = min(max(1, number), last)
    return [_line(_stored_row(json.loads(row))) for row in kept["rows"][(number - 1) * size:number * size]], totals, number


def kept_lines(filters: Filters, *, order: str = "") -> list[Line]:
    """Every line of the kept list (``_kept``) in ``order``: the page's CSV export, all of what
    the page shows, filtered and sorted the same, without running the list's query again."""
    return [_line(_stored_row(json.loads(row))) for row in _kept(filters, order)["rows"]]


# --- Delinquency ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DelinquentCharge:
    parcel: Parcel
    charge: Charge
    state: rules.ChargeState
    days_late: int


def with_records(found: list[Line]) -> list[DelinquentCharge]:
    """The lines with their parcels (and owners) and charges (and fiscal years), in two queries."""
    parcels = Parcel.objects.select_related("owner").in_bulk({line.parcel_pk for line in found})
    charges = Charge.objects.select_related("fiscal_year").in_bulk({line.charge_id for line in found})
    return [DelinquentCharge(parcel=parcels[line.parcel_pk], charge=charges[line.charge_id], state=line.state,
                             days_late=line.days_late) for line in found]


def delinquent_charges_replayed(*, as_of: date, fiscal_year: str = "", number: int | None = None,
                                min_balance: Decimal | None = None, min_days_late: int = 0) -> list[DelinquentCharge]:
    """The same list from the rules (``rules.ledger_state``), account by account: what the SQL of
    ``billing.delinquency`` must equal (tests/billing/test_delinquent_sql.py). Too slow for a
    district (about 0.1 s per 1,000 late accounts on 2 cores); nothing else calls it.

    Candidates are narrowed in SQL (a charge past its last day on a parcel whose ledger still
    owes), then each candidate account is replayed for the exact balance and surcharge."""
    charges = Charge.objects.filter(last_day_to_pay__lt=as_of, accrues_surcharge=True)
    if fiscal_year:
        charges = charges.filter(fiscal_year__label=fiscal_year)
    if number:
        charges = charges.filter(number=number)
    cut = known_by_end_of(as_of)  # a past day's list is the books as they stood at its end
    owing = (
        accounts._recorded(LedgerEntry.objects.filter(entry_date__lte=as_of), cut).values("parcel_id")
        .annotate(d=Sum("debit"), c=Sum("credit")).filter(d__gt=F("c")).values("parcel_id")
    )
    candidates = list(accounts._recorded(charges, cut).filter(parcel_id__in=owing).values_list("pk", "parcel_id"))
    wanted = {pk for pk, _ in candidates}
    parcel_ids = {parcel_id for _, parcel_id in candidates}
    found: list[DelinquentCharge] = []
    states = accounts.account_states(parcels=Parcel.objects.filter(pk__in=parcel_ids).select_related("owner"), as_of=as_of,
                                     roll_lines=False, known_by=cut)
    for account in states.values():
        parcel = account.parcel
        for state in account.state.charges:
            charge = account.charges[state.key]
            if charge.pk not in wanted or state.balance <= 0:
                continue
            days_late = (as_of - state.last_day).days
            if days_late <= 0:  # an office closure moved its last day to pay (¶12) to as_of or later
                continue
            if days_late < min_days_late or (min_balance is not None and state.balance < min_balance):
                continue
            found.append(DelinquentCharge(parcel=parcel, charge=charge, state=state, days_late=days_late))
    found.sort(key=lambda item: (item.state.last_day, item.parcel.parcel_id))
    return found
