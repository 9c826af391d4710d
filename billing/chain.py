"""The tamper-evident chain of issued records (``levy.models.ChainLink``), and the books'
checkpoints (``BooksCheckpoint``).

Every issued record is a link in the chain of its numbering series:

=============  ==========================================  =====================================
kind           record                                      series (position)
=============  ==========================================  =====================================
roll           a final roll (``levy.Levy``, status final)  ``roll`` (order of finalization)
correction     ``levy.RollCorrection``                     ``correction <fiscal year>``
receipt        ``Receipt``                                 ``receipt <office> <fiscal year>`` (= its number)
void           ``PaymentVoid``                             ``void``
refund         ``Refund``                                  ``refund``
bill           ``Bill``                                    ``bill <year>`` (= its number)
certificate    ``DebtCertificate``                         ``certificate <year>`` (= its number)
statement      ``AccountStatement`` (*estado de cuenta*)   ``statement <year>`` (= its number)
seizure        ``SeizureStep``                             ``seizure_<kind> <year>`` (= its number)
day_close      ``DayClose``                                ``day_close <office>``
=============  ==========================================  =====================================

The numbered series are the ``ReceiptSeries`` and ``DocumentSeries`` rows, so link *n* of a
numbered series is the record numbered *n*.

- content: the record as issued, read back from the database by one SQL query per kind
  (``SOURCES``): its snapshot, its figures, the ids of what it points at and, where it has a PDF,
  the PDF's SHA-256 as stored. A day close's content also holds the head of every series at that
  moment (``ChainLink.heads``). ``canonical(content)`` is its sorted-key JSON
  (``sort_keys``, separators ``,`` and ``:``, UTF-8, Decimal as a string, dates ISO 8601).
- ``content_hash = sha256(canonical)``; ``hash = sha256(previous_hash ‖ canonical)``, the
  previous hash as its 64 hexadecimal characters (``GENESIS``, 64 zeros, for position 1).
- ``link()`` appends in the issuing transaction, after the record and its PDF are stored, under
  a transaction-scoped lock of the series (``pg_advisory_xact_lock``; a numbered series' row is
  locked by its caller already), so two issues of one series are serialized and cannot fork;
  ``(series, position)`` is unique besides. The content is read back from the database, so
  issuing and checking (``billing.books.check_chain``) see the same JSON.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.dispatch import Signal
from django.utils import timezone

from parcels.bulk import copy_insert

GENESIS = "0" * 64
ROLL, CORRECTION, RECEIPT, VOID, REFUND, BILL, CERTIFICATE, STATEMENT, SEIZURE, DAY_CLOSE = (
    "roll", "correction", "receipt", "void", "refund", "bill", "certificate", "statement", "seizure", "day_close",
)
# Sent in the issuing transaction after records were appended (``kind``, ``ids``): the anchors
# (``billing.anchors``, connected in ``BillingConfig.ready``) defer a signed checkpoint from it.
record_chained = Signal()
KINDS = (ROLL, CORRECTION, RECEIPT, VOID, REFUND, BILL, CERTIFICATE, STATEMENT, SEIZURE, DAY_CLOSE)
NUMBERED = (RECEIPT, BILL, CERTIFICATE, STATEMENT, SEIZURE)  # link n of their series is the record numbered n

# The n of PREFIX-YYYY-NNNNNN and its year, or NULL for a malformed number.
_DOC_YEAR = "CASE WHEN {n} ~ '^[A-Z]+-[0-9]{{4}}-[0-9]+$' THEN split_part({n}, '-', 2) END"
_DOC_N = "CASE WHEN {n} ~ '^[A-Z]+-[0-9]{{4}}-[0-9]+$' THEN split_part({n}, '-', 3)::bigint END"

# kind -> SELECT id, series, number, label, content (jsonb as text), issued (timestamp) FROM … WHERE {where}
# (``{where}`` is replaced, not formatted: the regular expressions hold braces)
SOURCES: dict[str, str] = {
    ROLL: """
        SELECT l.id, 'roll', NULL::bigint, 'padrón ' || fy.label, jsonb_build_object(
                   'kind', 'roll', 'levy', l.id, 'fiscal_year', fy.label, 'estimate', l.estimate_id, 'parameters', l.parameters,
                   'registry_fingerprint', l.registry_fingerprint, 'om_estimate', l.om_estimate::text,
                   'reserve', l.reserve::text, 'credits', l.credits::text, 'credits_certified', l.credits_certified,
                   'deficit', l.deficit::text, 'surplus', l.surplus::text, 'misc_income', l.misc_income::text,
                   'k0', l.k0::text, 'subtotal', l.subtotal::text, 'safety_margin', l.safety_margin::text,
                   'total_levy', l.total_levy::text, 'gravity_acres', l.gravity_acres::text,
                   'pumped_acres', l.pumped_acres::text, 'equivalent_acres', l.equivalent_acres::text,
                   'rate_gravity', l.rate_gravity::text, 'rate_pumped', l.rate_pumped::text,
                   'parcels_levied', l.parcels_levied, 'parcels_in_roll', l.parcels_in_roll,
                   'roll_total', l.roll_total::text, 'roll_credits', l.roll_credits::text, 'roll_net', l.roll_net::text,
                   'finalized_by', l.finalized_by_id, 'finalized_on', l.finalized_on::text, 'finalized_late', l.finalized_late,
                   'lines', (SELECT jsonb_build_object('count', COUNT(*), 'sha256', encode(sha256(convert_to(COALESCE(string_agg(
                                 format('%%s|%%s|%%s|%%s|%%s|%%s|%%s|%%s|%%s|%%s|%%s|%%s|%%s|%%s|%%s|%%s|%%s|%%s', r.parcel_id,
                                        r.parcel_code, r.owner_id, r.owner_key, r.owner_name, r.inclusion, r.water_since,
                                        r.gravity_acres, r.pumped_acres, r.equivalent_acres, r.credit_percent, r.levied,
                                        r.reason, r.om_charge, r.credit, r.net, r.first_installment, r.second_installment),
                                 E'\\n' ORDER BY r.parcel_code, r.id), ''), 'UTF8')), 'hex'))
                               FROM levy_rollline r WHERE r.levy_id = l.id)
               )::text, l.finalized_at
          FROM levy_levy l LEFT JOIN levy_fiscalyear fy ON fy.id = l.fiscal_year_id
         WHERE l.status = 'final' AND {where}
    """,
    CORRECTION: """
        SELECT c.id, 'correction ' || COALESCE(fy.label, '?'), NULL::bigint, 'corrección ' || c.id || ' (' || COALESCE(rl.parcel_code, '?') || ')',
               jsonb_build_object(
                   'kind', 'correction', 'roll_line', c.roll_line_id, 'levy', rl.levy_id, 'parcel', rl.parcel_id,
                   'parcel_code', rl.parcel_code, 'om_charge_delta', c.om_charge_delta::text,
                   'credit_delta', c.credit_delta::text, 'net_delta', c.net_delta::text, 'reason', c.reason,
                   'due_date', c.due_date::text, 'created_by', c.created_by_id
               )::text, c.created_at
          FROM levy_rollcorrection c
          LEFT JOIN levy_rollline rl ON rl.id = c.roll_line_id
          LEFT JOIN levy_levy l ON l.id = rl.levy_id
          LEFT JOIN levy_fiscalyear fy ON fy.id = l.fiscal_year_id
         WHERE {where}
    """,
    RECEIPT: """
        SELECT r.id, 'receipt ' || COALESCE(o.code, '?') || ' ' || r.fiscal_year, r.number::bigint,
               'recibo ' || COALESCE(o.code, '?') || '-' || r.fiscal_year || '-' || to_char(r.number, 'FM000000'),
               jsonb_build_object(
                   'kind', 'receipt', 'office', o.code, 'fiscal_year', r.fiscal_year, 'number', r.number,
                   'payment', r.payment_id, 'parcel', pm.parcel_id, 'paid_on', pm.paid_on::text, 'amount', pm.amount::text,
                   'method', pm.method, 'reference', pm.reference, 'collector', pm.collector_id, 'snapshot', r.snapshot,
                   'pdf_sha256', d.sha256
               )::text, r.issued_at
          FROM billing_receipt r
          LEFT JOIN billing_office o ON o.id = r.office_id
          LEFT JOIN billing_payment pm ON pm.id = r.payment_id
          LEFT JOIN billing_issueddocument d ON d.receipt_id = r.id
         WHERE {where}
    """,
    VOID: """
        SELECT v.id, 'void', NULL::bigint, 'anulación del pago P' || v.payment_id, jsonb_build_object(
                   'kind', 'void', 'payment', v.payment_id, 'parcel', pm.parcel_id, 'amount', pm.amount::text,
                   'receipt', r.id, 'voided_on', v.voided_on::text, 'reason', v.reason, 'voided_by', v.voided_by_id
               )::text, v.created_at
          FROM billing_paymentvoid v
          LEFT JOIN billing_payment pm ON pm.id = v.payment_id
          LEFT JOIN billing_receipt r ON r.payment_id = v.payment_id
         WHERE {where}
    """,
    REFUND: """
        SELECT f.id, 'refund', NULL::bigint, 'reembolso ' || f.id, (jsonb_build_object(
                   'kind', 'refund', 'parcel', f.parcel_id, 'amount', f.amount::text, 'refunded_on', f.refunded_on::text,
                   'reason', f.reason, 'refunded_by', f.refunded_by_id
               -- issue 18: number, way and office; absent (so unchanged) on refunds recorded before, and
               -- read through to_jsonb so the chain's backfill migration, older than the columns, still runs
               ) || jsonb_strip_nulls(jsonb_build_object(
                   'number', NULLIF(to_jsonb(f) ->> 'number', ''), 'method', NULLIF(to_jsonb(f) ->> 'method', ''),
                   'check_number', NULLIF(to_jsonb(f) ->> 'check_number', ''), 'office', to_jsonb(f) -> 'office_id'
               )))::text, f.created_at
          FROM billing_refund f
         WHERE {where}
    """,
    BILL: f"""
        SELECT b.id, 'bill ' || COALESCE({_DOC_YEAR.format(n="b.number")}, '?'), {_DOC_N.format(n="b.number")},
               'aviso ' || b.number, jsonb_build_object(
                   'kind', 'bill', 'number', b.number, 'charge', b.charge_id, 'parcel', b.parcel_id,
                   'issued_on', b.issued_on::text, 'batch', b.batch_id, 'issued_by', b.issued_by_id, 'snapshot', b.snapshot,
                   -- issue 20: a bill printed later is chained when numbered, before its PDF exists; read
                   -- through to_jsonb so the chain's backfill migration, older than the column, still runs
                   'pdf_sha256', CASE WHEN (to_jsonb(b) ->> 'printed_later') = 'true' THEN NULL ELSE d.sha256 END
               )::text, b.issued_at
          FROM billing_bill b
          LEFT JOIN billing_issueddocument d ON d.bill_id = b.id
         WHERE {{where}}
    """,
    CERTIFICATE: f"""
        SELECT c.id, 'certificate ' || COALESCE({_DOC_YEAR.format(n="c.number")}, '?'), {_DOC_N.format(n="c.number")},
               'certificación ' || c.number, jsonb_build_object(
                   'kind', 'certificate', 'number', c.number, 'parcel', c.parcel_id, 'as_of', c.as_of::text,
                   'supersedes', c.supersedes_id, 'issued_by', c.issued_by_id, 'snapshot', c.snapshot, 'pdf_sha256', d.sha256
               )::text, c.issued_at
          FROM billing_debtcertificate c
          LEFT JOIN billing_issueddocument d ON d.certificate_id = c.id
         WHERE {{where}}
    """,
    STATEMENT: f"""
        SELECT e.id, 'statement ' || COALESCE({_DOC_YEAR.format(n="e.number")}, '?'), {_DOC_N.format(n="e.number")},
               'estado de cuenta ' || e.number, jsonb_build_object(
                   'kind', 'statement', 'number', e.number, 'parcel', e.parcel_id, 'as_of', e.as_of::text,
                   'channel', e.channel, 'issued_by', e.issued_by_id, 'snapshot', e.snapshot, 'pdf_sha256', d.sha256
               )::text, e.issued_at
          FROM billing_accountstatement e
          LEFT JOIN billing_issueddocument d ON d.statement_id = e.id
         WHERE {{where}}
    """,
    SEIZURE: f"""
        SELECT s.id, 'seizure_' || s.kind || ' ' || COALESCE({_DOC_YEAR.format(n="s.number")}, '?'),
               {_DOC_N.format(n="s.number")}, 'embargo ' || s.number, jsonb_build_object(
                   'kind', 'seizure', 'number', s.number, 'step', s.kind, 'case', s.case_id, 'parcel', sc.parcel_id,
                   'issued_on', s.issued_on::text, 'term_ends', s.term_ends::text, 'debt', s.debt,
                   'issued_by', s.issued_by_id, 'pdf_sha256', s.sha256
               )::text, s.issued_at
          FROM billing_seizurestep s
          LEFT JOIN billing_seizurecase sc ON sc.id = s.case_id
         WHERE {{where}}
    """,
    DAY_CLOSE: """
        SELECT k.id, 'day_close ' || COALESCE(o.code, '?'), NULL::bigint, 'cierre ' || COALESCE(o.code, '?') || ' ' || k.day::text,
               jsonb_build_object(
                   'kind', 'day_close', 'office', o.code, 'day', k.day::text, 'counted_cash', k.counted_cash::text,
                   'counted_checks', k.counted_checks::text, 'expected_cash', k.expected_cash::text,
                   'expected_checks', k.expected_checks::text, 'closed_by', k.closed_by_id
               )::text, k.closed_at
          FROM billing_dayclose k
          LEFT JOIN billing_office o ON o.id = k.office_id
         WHERE {where}
    """,
}


ALIAS = {ROLL: "l", CORRECTION: "c", RECEIPT: "r", VOID: "v", REFUND: "f", BILL: "b", CERTIFICATE: "c", STATEMENT: "e", SEIZURE: "s",
         DAY_CLOSE: "k"}


@dataclass(frozen=True)
class Record:
    """An issued record as the chain sees it."""

    kind: str
    id: int
    series: str
    number: int | None  # its number in a numbered series
    label: str  # how findings name it, e.g. "recibo LAJ-2026-2027-000003"
    content: dict[str, Any]
    issued: datetime | None


def _json_default(value: Any) -> str:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not canonical JSON")


def canonical(content: dict[str, Any]) -> bytes:
    """Sorted-key JSON, no spaces, UTF-8; Decimal as a string, dates ISO 8601."""
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_json_default).encode()


def content_hash(content: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(content)).hexdigest()


def link_hash(previous_hash: str, content: dict[str, Any]) -> str:
    """``sha256(previous hash ‖ canonical content)``, the previous hash as 64 hex characters."""
    return hashlib.sha256(previous_hash.encode("ascii") + canonical(content)).hexdigest()


def link_hashes(previous_hash: str, content: dict[str, Any]) -> tuple[str, str]:
    """``(content_hash(content), link_hash(previous_hash, content))``, the content made canonical
    once (a finalize appends 16,624 links)."""
    data = canonical(content)
    return hashlib.sha256(data).hexdigest(), hashlib.sha256(previous_hash.encode("ascii") + data).hexdigest()


def records(cursor: Any, kind: str, ids: Sequence[int] | None = None) -> Iterator[Record]:
    """The records of ``kind`` (all of them, or those of ``ids``) as the chain hashes them."""
    where = f"(%s::bigint[] IS NULL OR {ALIAS[kind]}.id = ANY(%s::bigint[]))"
    wanted = None if ids is None else list(ids)
    cursor.execute(SOURCES[kind].replace("{where}", where) + " ORDER BY 1", [wanted, wanted])
    for pk, series, number, label, content, issued in cursor.fetchall():
        yield Record(kind=kind, id=pk, series=series, number=number, label=label,
                     content=json.loads(content, parse_float=Decimal), issued=issued)


def all_records(cursor: Any) -> Iterator[Record]:
    """Every issued record of every kind, in one query (``billing.books.check_chain``)."""
    parts = [f"SELECT %s AS kind, s.* FROM ({SOURCES[kind].replace('{where}', 'TRUE')}) s" for kind in KINDS]
    cursor.execute(" UNION ALL ".join(parts), list(KINDS))
    for kind, pk, series, number, label, content, issued in cursor.fetchall():
        yield Record(kind=kind, id=pk, series=series, number=number, label=label,
                     content=json.loads(content, parse_float=Decimal), issued=issued)


def full_content(record: Record, heads: dict[str, Any] | None) -> dict[str, Any]:
    """What is hashed: the record's content, with the series heads for a day close."""
    if record.kind == DAY_CLOSE:
        return {**record.content, "heads": heads or {}}
    return record.content


def _lock_series(cursor: Any, series: str) -> None:
    key = int.from_bytes(hashlib.sha256(f"lajas.chain:{series}".encode()).digest()[:8], "big", signed=True)
    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def heads_now(cursor: Any) -> dict[str, list]:
    """``{series: [position, hash]}`` of the last link of every series."""
    cursor.execute("SELECT DISTINCT ON (series) series, position, hash FROM levy_chainlink ORDER BY series, position DESC")
    return {series: [position, hash_] for series, position, hash_ in cursor.fetchall()}


def _append(cursor: Any, record: Record) -> None:
    from levy.models import ChainLink

    _lock_series(cursor, record.series)
    head = ChainLink.objects.filter(series=record.series).order_by("-position").values_list("position", "hash").first()
    position, previous = head if head else (0, GENESIS)
    heads = heads_now(cursor) if record.kind == DAY_CLOSE else {}
    digest, link_ = link_hashes(previous, full_content(record, heads))
    ChainLink.objects.create(series=record.series, position=position + 1, kind=record.kind, record_id=record.id,
                             previous_hash=previous, content_hash=digest, hash=link_, heads=heads)


def _append_many(cursor: Any, found: Sequence[Record]) -> None:
    """``_append`` of records that are not day closes, a series at a time: its lock and head read
    once, the links hashed in order and written with one ``COPY`` (issue 20: a finalize chains
    16,624 zero notices; one at a time that was three queries each, most of a minute)."""
    from levy.models import ChainLink

    rows = []
    now = timezone.now()
    for series in dict.fromkeys(record.series for record in found):
        _lock_series(cursor, series)
        head = ChainLink.objects.filter(series=series).order_by("-position").values_list("position", "hash").first()
        position, previous = head if head else (0, GENESIS)
        for record in (record for record in found if record.series == series):
            position += 1
            digest, link_ = link_hashes(previous, full_content(record, {}))
            rows.append((series, position, record.kind, record.id, previous, digest, link_, "{}", now))
            previous = link_
    copy_insert(ChainLink, ("series", "position", "kind", "record_id", "previous_hash", "content_hash", "hash", "heads", "created_at"),
                rows)


@transaction.atomic
def link(kind: str, ids: int | Iterable[int]) -> None:
    """Append the issued record(s) ``ids`` of ``kind`` to their chains, in number order (then id
    order), inside the issuing transaction. A record already linked is left as it is."""
    ids = [ids] if isinstance(ids, int) else list(ids)
    with connection.cursor() as cursor:
        # the ids as one array parameter: a finalize passes 16,624 of them
        cursor.execute("SELECT record_id FROM levy_chainlink WHERE kind = %s AND record_id = ANY(%s::bigint[])", [kind, ids])
        linked = {row[0] for row in cursor.fetchall()}
        wanted = [pk for pk in ids if pk not in linked]
        if not wanted:
            return
        found = sorted(records(cursor, kind, wanted), key=lambda r: (r.series, r.number or 0, r.id))
        if kind == DAY_CLOSE:  # each records the heads of every series as they are when it is linked
            for record in found:
                _append(cursor, record)
        else:
            _append_many(cursor, found)
    if found:
        record_chained.send(sender=link, kind=kind, ids=[record.id for record in found])


def link_of(kind: str, record_id: int) -> Any:
    from levy.models import ChainLink

    return ChainLink.objects.filter(kind=kind, record_id=record_id).first()


def roll_hash(levy_id: int) -> str:
    """The final roll's hash (printed on its bills and on the worksheet); "" before it is chained."""
    found = link_of(ROLL, levy_id)
    return found.hash if found else ""


# --- Backfill (the data migration) ---------------------------------------------------------------


def backfill() -> int:
    """Chain every issued record not in a chain yet: each series in number order, the series
    interleaved by issue time so each day close records the heads as they then were."""
    from levy.models import ChainLink

    linked = set(ChainLink.objects.values_list("kind", "record_id"))
    with connection.cursor() as cursor:
        # a kind added after the backfill's migration (statements) has no table yet when it runs
        tables = set(connection.introspection.table_names(cursor))
        kinds = [kind for kind in KINDS if kind != STATEMENT or "billing_accountstatement" in tables]
        todo = [r for kind in kinds for r in records(cursor, kind) if (r.kind, r.id) not in linked]
        epoch = datetime.min.replace(tzinfo=timezone.get_current_timezone())
        todo.sort(key=lambda r: (r.issued or epoch, KINDS.index(r.kind), r.number or 0, r.id))
        # Within a series, number order wins: its records take the series' slots in number order.
        slots: dict[str, list[int]] = {}
        for index, record in enumerate(todo):
            slots.setdefault(record.series, []).append(index)
        ordered: list[Record | None] = [None] * len(todo)
        for indexes in slots.values():
            members = sorted((todo[i] for i in indexes), key=lambda r: (r.number or 0, r.issued or epoch, r.id))
            for index, record in zip(indexes, members, strict=True):
                ordered[index] = record
        for record in ordered:
            _append(cursor, record)
    return len(todo)


# --- Where a document stands (the public verification page) ---------------------------------------


@dataclass(frozen=True)
class Place:
    series: str
    position: int
    length: int
    previous_hash: str
    hash: str
    intact: bool
    broken_at: int | None  # the first broken link of the series, when not intact


def series_breaks(cursor: Any, series: str) -> int | None:
    """The first position of ``series`` whose link does not follow the one before it (a gap, or
    a previous hash that is not the earlier link's hash), or ``None``."""
    cursor.execute("""
        SELECT position FROM (
            SELECT position, previous_hash, lag(hash) OVER w AS before, lag(position) OVER w AS before_position
              FROM levy_chainlink WHERE series = %s WINDOW w AS (ORDER BY position)
        ) links
         WHERE previous_hash <> COALESCE(before, %s) OR position <> COALESCE(before_position, 0) + 1
         ORDER BY position LIMIT 1
    """, [series, GENESIS])
    row = cursor.fetchone()
    return row[0] if row else None


def place(kind: str, record_id: int) -> Place | None:
    """The record's place in its chain: its link, the series' length, and whether the series'
    links follow one another and the record still hashes to its own link."""
    found = link_of(kind, record_id)
    if found is None:
        return None
    from levy.models import ChainLink

    with connection.cursor() as cursor:
        broken = series_breaks(cursor, found.series)
        record = next(records(cursor, kind, [record_id]), None)
    own_ok = record is not None and found.hash == link_hash(found.previous_hash, full_content(record, found.heads)) and (
        found.content_hash == content_hash(full_content(record, found.heads)))
    if not own_ok and (broken is None or broken > found.position):
        broken = found.position
    length = ChainLink.objects.filter(series=found.series).count()
    return Place(series=found.series, position=found.position, length=length, previous_hash=found.previous_hash,
                 hash=found.hash, intact=broken is None, broken_at=broken)


# --- Checkpoints of the books ---------------------------------------------------------------------

# Rows issued less than this long before a check are left to the next checkpoint: a transaction
# still open when the check read the books may commit rows with lower ids afterwards.
CHECKPOINT_SETTLE = timedelta(minutes=10)
