"""Signed anchors of the books: trust that does not rest on the database's owner.

The chain of issued records (``billing.chain``) and the checkpoints (``BooksCheckpoint``) live in
the database, so whoever owns the database (or its backups) could rewrite all of them together.
An *anchor* is a checkpoint taken out of their reach:

- what it holds (``anchor_payload``): the head (position and hash) of every chain series, the
  number of rows of every books table, the last number of every numbering series, and the
  control totals of a checkpoint (``billing.books.checkpoint_marks`` / ``checkpoint_totals``:
  the records issued ``chain.CHECKPOINT_SETTLE`` before the anchor, bulk-printing parts'
  hashes included);
- signed with an Ed25519 key (``cryptography``) read from the PEM file named by
  ``ANCHOR_SIGNING_KEY_FILE``: mounted into the app and the workers only, never stored in the
  database (``manage.py anchor keygen`` makes one);
- written to an append-only store outside the database (``STORAGES["anchors"]``: a write-once
  folder, ``ANCHOR_DIR``, by default; S3 object storage with object lock when configured), and
  e-mailed to ``ANCHOR_EMAIL`` when set;
- when: within ``ANCHOR_DELAY_SECONDS`` of each issued record (``chain.record_chained``, sent in
  the issuing transaction, defers the ``billing.anchor`` task in that same transaction: an
  outbox; its queueing lock makes one anchor of a burst), at each day close (its own lock, no
  delay), after each merged bulk-printing part, and on ``manage.py anchor now``.

``verify_books`` reads the newest anchors (``anchor_findings``): each signature must verify with
the public key; every anchored head must still be a link of its series with the same hash,
every count at least the anchored count, every numbering series at least its anchored last
number, and the anchored control totals identical. Emptying the books, rewriting a document with
its chain and checkpoint, deleting a recent payment whole, or replacing a merged part and its hash
row all leave an anchor the database no longer matches.

File format (``anchor-<UTC time>.json``)::

    {"anchor": {...payload...}, "signature": "<base64 Ed25519 signature of canonical(payload)>",
     "public_key": "<base64 raw public key>"}

``canonical`` is the chain's (sorted keys, no spaces, UTF-8), so anyone can check an anchor with
the published public key and nothing of this code.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.mail import EmailMessage
from django.db import connection, transaction
from django.utils import timezone
from procrastinate.contrib.django import app
from procrastinate.exceptions import AlreadyEnqueued

from . import books, chain
from .storage import WriteOnceStorage, anchor_storage

logger = logging.getLogger(__name__)

FORMAT = "lajas-books-anchor/1"
PREFIX = "anchor-"
NEWEST = 3  # anchors whose signatures verify_books checks by default; the books are compared with the newest valid one

# name -> SQL counting rows that are never deleted: an anchored count is a floor.
COUNTS: dict[str, str] = {
    **{table: f"SELECT COUNT(*) FROM {table}" for table in (  # noqa: S608 (constants)
        "billing_charge", "billing_payment", "billing_paymentvoid", "billing_refund", "billing_receipt",
        "billing_ledgerentry", "billing_dayclose", "billing_debtcertificate", "billing_seizurestep", "billing_bill",
        "billing_issueddocument", "billing_accountstatement", "billing_billbatchpart", "billing_paymentallocation",
        "billing_correctioncharge", "billing_principaladjustment", "billing_lastdaymove", "billing_giveback",
        "billing_creditapplication", "billing_bookscheck", "billing_bookscheckpoint", "levy_chainlink",
        "levy_rollcorrection", "billing_voidreversal",
        "billing_journal", "billing_journalline",  # issue 19: the fund journal
        # issue 19: bank files, reminders, e-mailed bills, refund requests, reprints
        "billing_bankfile", "billing_bankfileline", "billing_banklineresolution", "billing_remindersend",
        "billing_reminderattempt", "billing_billemail", "billing_refundrequest", "billing_reprintlog",
    )},
    "levy_levy (final)": "SELECT COUNT(*) FROM levy_levy WHERE status = 'final'",
}


# --- Keys --------------------------------------------------------------------------------------------


class AnchorKeyError(Exception):
    """The signing or public key is missing or unreadable."""


def private_key(path: str | None = None) -> Ed25519PrivateKey:
    """The signing key from ``path`` (default ``ANCHOR_SIGNING_KEY_FILE``)."""
    path = path or settings.ANCHOR_SIGNING_KEY_FILE
    if not path:
        raise AnchorKeyError("ANCHOR_SIGNING_KEY_FILE is not set")
    try:
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise AnchorKeyError(f"cannot read the anchor signing key {path}: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise AnchorKeyError(f"{path} is not an Ed25519 private key")
    return key


def public_key(path: str | None = None) -> Ed25519PublicKey:
    """The public key from ``path``, else ``ANCHOR_PUBLIC_KEY_FILE``, else derived from the signing key."""
    path = path or settings.ANCHOR_PUBLIC_KEY_FILE
    if not path:
        return private_key().public_key()
    try:
        key = serialization.load_pem_public_key(Path(path).read_bytes())
    except (OSError, ValueError, TypeError) as exc:
        raise AnchorKeyError(f"cannot read the anchor public key {path}: {exc}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise AnchorKeyError(f"{path} is not an Ed25519 public key")
    return key


def public_pem(key: Ed25519PublicKey) -> str:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def fingerprint(key: Ed25519PublicKey) -> str:
    """SHA-256 of the raw public key, in hexadecimal groups of four (how it is read aloud)."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    digest = hashlib.sha256(raw).hexdigest()
    return " ".join(digest[i:i + 4] for i in range(0, len(digest), 4))


@dataclass(frozen=True)
class Published:
    pem: str
    fingerprint: str


def published_key() -> Published | None:
    """The public key as the verification page and the README publish it, or ``None`` when no key is configured."""
    try:
        key = public_key()
    except AnchorKeyError:
        return None
    return Published(pem=public_pem(key), fingerprint=fingerprint(key))


def keygen(out: str) -> Ed25519PublicKey:
    """A new key pair: the private key at ``out`` (PEM, mode 0600, never overwritten), the public
    key beside it at ``out.pub``."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # refuses to replace a key
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    Path(f"{out}.pub").write_text(public_pem(key.public_key()), encoding="ascii")
    return key.public_key()


def key_problem() -> str | None:
    """Why anchors cannot be signed here, or ``None`` (the system check billing.E001)."""
    try:
        private_key()
    except AnchorKeyError as exc:
        return str(exc)
    return None


# --- Writing -----------------------------------------------------------------------------------------


def anchor_payload(cursor: Any, *, now: datetime, reason: str) -> dict[str, Any]:
    """What an anchor taken ``now`` holds (see the module docstring)."""
    counts = {}
    for name, sql in COUNTS.items():
        cursor.execute(sql)
        counts[name] = cursor.fetchone()[0]
    cursor.execute("""
        SELECT 'receipt ' || o.code || ' ' || s.fiscal_year, s.last_number FROM billing_receiptseries s
          JOIN billing_office o ON o.id = s.office_id
        UNION ALL SELECT 'document ' || kind || ' ' || year, last_number FROM billing_documentseries
    """)
    series = dict(cursor.fetchall())
    cursor.execute("SELECT id, pdf, sha256 FROM billing_billbatchpart ORDER BY id")
    parts = {str(pk): [name, sha256] for pk, name, sha256 in cursor.fetchall()}
    marks = books.checkpoint_marks(cursor, until=now - chain.CHECKPOINT_SETTLE)
    return {
        "format": FORMAT,
        "site": settings.SITE_URL,
        "created_at": now.astimezone(UTC).isoformat(),
        "reason": reason,
        "chain": chain.heads_now(cursor),
        "counts": counts,
        "series": series,
        "parts": parts,  # every merged bulk-printing part: its file and the file's SHA-256 (rows never change)
        "marks": marks,
        "totals": books.checkpoint_totals(cursor, marks),
    }


def sign(payload: dict[str, Any], key: Ed25519PrivateKey) -> bytes:
    """The anchor file's bytes: the payload, its signature and the public key."""
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    document = {"anchor": payload, "signature": base64.b64encode(key.sign(chain.canonical(payload))).decode(),
                "public_key": base64.b64encode(raw).decode()}
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False).encode() + b"\n"


def _read_payload(*, now: datetime, reason: str) -> dict[str, Any]:
    """The payload read in one snapshot (REPEATABLE READ), or in the caller's transaction."""
    if connection.in_atomic_block:
        with connection.cursor() as cursor:
            return anchor_payload(cursor, now=now, reason=reason)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        return anchor_payload(cursor, now=now, reason=reason)


def anchor_write(*, reason: str, key_file: str | None = None, storage: Any = None) -> str:
    """Take, sign and store an anchor now (and e-mail it to ``ANCHOR_EMAIL``); its name in the store."""
    key = private_key(key_file)
    storage = storage or anchor_storage()
    now = timezone.now()
    payload = _read_payload(now=now, reason=reason)
    data = sign(payload, key)
    # Named by the machine's clock (names sort by time; the payload carries the application's).
    stamp = f"{PREFIX}{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}"
    try:
        name = storage.save(f"{stamp}.json", ContentFile(data))
    except FileExistsError:  # two anchors in one microsecond
        name = storage.save(f"{stamp}-{os.getpid()}.json", ContentFile(data))
    if settings.ANCHOR_EMAIL:
        message = EmailMessage(
            subject=f"{settings.EMAIL_SUBJECT_PREFIX}anchor {name}",
            body=(f"Signed anchor of the books of {settings.SITE_URL}, {payload['created_at']} ({reason}).\n"
                  f"Public key fingerprint: {fingerprint(key.public_key())}\n"
                  "Keep this message: `manage.py verify_books --anchors DIR --public-key FILE` compares the books with it."),
            to=list(settings.ANCHOR_EMAIL), attachments=[(name, data, "application/json")],
        )
        message.send()
    logger.info("anchor %s written (%s)", name, reason)
    return name


@app.task(name="billing.anchor", queueing_lock="billing.anchor")
def anchor_task(reason: str = "issued records") -> str | None:
    """The outbox's worker side: write an anchor (nothing without a signing key)."""
    if not settings.ANCHOR_SIGNING_KEY_FILE:
        logger.warning("no ANCHOR_SIGNING_KEY_FILE: no anchor written")
        return None
    return anchor_write(reason=reason)


def anchor_soon(*, reason: str, delay: int | None = None, lock: str = "billing.anchor") -> bool:
    """Defer an anchor in the caller's transaction (the outbox: it is written only if the caller
    commits). While one is waiting under ``lock`` this one is folded into it. Nothing without a
    signing key (development, tests that do not anchor). Whether a new task was queued."""
    if not settings.ANCHOR_SIGNING_KEY_FILE:
        return False
    delay = settings.ANCHOR_DELAY_SECONDS if delay is None else delay
    options: dict[str, Any] = {"queueing_lock": lock}
    if delay > 0:
        options["schedule_in"] = {"seconds": delay}
    try:
        with transaction.atomic():  # a savepoint: the lock's unique violation must not abort the caller
            anchor_task.configure(**options).defer(reason=reason)
    except AlreadyEnqueued:
        return False
    return True


def on_record_chained(sender: Any, *, kind: str, ids: list[int], **kwargs: Any) -> None:
    """``chain.record_chained``: an anchor within a minute; at once (its own lock) for a day close."""
    if kind == chain.DAY_CLOSE:
        anchor_soon(reason="day close", delay=0, lock="billing.anchor.day_close")
    else:
        anchor_soon(reason=f"issued {kind}")


# --- Reading and comparing -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Anchor:
    name: str
    payload: dict[str, Any]
    valid: bool
    problem: str = ""


def folder_storage(path: str) -> WriteOnceStorage:
    """A folder of anchors given on the command line (a copy of the store, the auditors' mail)."""
    return WriteOnceStorage(location=path, deletable=False)


def anchor_names(storage: Any) -> list[str]:
    """The anchors in the store, newest first (their names sort by time)."""
    try:
        _dirs, files = storage.listdir("")
    except FileNotFoundError:
        return []
    return sorted((name for name in files if name.startswith(PREFIX) and name.endswith(".json")), reverse=True)


def anchor_read(storage: Any, name: str, key: Ed25519PublicKey) -> Anchor:
    """One anchor, its signature checked against ``key``."""
    try:
        with storage.open(name, "rb") as handle:
            document = json.loads(handle.read())
        payload = document["anchor"]
        signature = base64.b64decode(document["signature"], validate=True)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Anchor(name, {}, False, f"cannot be read: {exc}")
    try:
        key.verify(signature, chain.canonical(payload))
    except InvalidSignature:
        return Anchor(name, payload, False, f"its signature does not verify with the public key {fingerprint(key)}")
    if payload.get("format") != FORMAT:
        return Anchor(name, payload, False, f"unknown format {payload.get('format')!r}")
    return Anchor(name, payload, True)


def compare(cursor: Any, anchor: Anchor, limit: int) -> list[books.Finding]:
    """How the books now differ from what ``anchor`` recorded: heads first, then counts, numbering
    series and totals."""
    where = f"anchor {anchor.name}"
    payload = anchor.payload
    findings: list[books.Finding] = []

    def add(rows: list[tuple], describe: Callable[[tuple], str]) -> None:
        findings.extend(books._limited("anchors", rows, limit, describe))

    heads = sorted(payload.get("chain", {}).items())
    now_heads: dict[tuple[str, int], str] = {}
    if heads:
        cursor.execute("""
            SELECT h.series, h.position, l.hash FROM unnest(%s::text[], %s::int[]) AS h(series, position)
              LEFT JOIN levy_chainlink l ON l.series = h.series AND l.position = h.position
        """, [[series for series, _head in heads], [head[0] for _series, head in heads]])
        now_heads = {(series, position): hash_ for series, position, hash_ in cursor.fetchall()}
    add([(series, position, hash_, now_heads.get((series, position))) for series, (position, hash_) in heads
         if now_heads.get((series, position)) != hash_],
        lambda row: f"{where}: series {row[0]} had link {row[1]} with hash {row[2][:16]}…, it is now "
                    f"{('hash ' + row[3][:16] + '…') if row[3] else 'missing'}")
    counts = []
    for name, anchored in payload.get("counts", {}).items():
        sql = COUNTS.get(name)
        if sql is None:
            continue
        cursor.execute(sql)
        found = cursor.fetchone()[0]
        if found < anchored:
            counts.append((name, anchored, found))
    add(counts, lambda row: f"{where}: {row[0]} has {row[2]} rows, fewer than the {row[1]} anchored")
    cursor.execute("""
        SELECT 'receipt ' || o.code || ' ' || s.fiscal_year, s.last_number FROM billing_receiptseries s
          JOIN billing_office o ON o.id = s.office_id
        UNION ALL SELECT 'document ' || kind || ' ' || year, last_number FROM billing_documentseries
    """)
    series_now = dict(cursor.fetchall())
    add([(name, last, series_now.get(name)) for name, last in sorted(payload.get("series", {}).items())
         if (series_now.get(name) or 0) < last],
        lambda row: f"{where}: numbering series {row[0]} is at {row[2] if row[2] is not None else '(missing)'}, "
                    f"below the {row[1]} anchored")
    anchored_parts = payload.get("parts", {})
    cursor.execute("SELECT id::text, pdf, sha256 FROM billing_billbatchpart WHERE id::text = ANY(%s)", [list(anchored_parts)])
    parts_now = {pk: [name, sha256] for pk, name, sha256 in cursor.fetchall()}
    add([(pk, name, sha256, parts_now.get(pk)) for pk, (name, sha256) in sorted(anchored_parts.items(), key=lambda i: int(i[0]))
         if parts_now.get(pk) != [name, sha256]],
        lambda row: f"{where}: bulk-printing part #{row[0]} was {row[1]} with SHA-256 {row[2][:16]}…, it is now "
                    f"{(row[3][0] + ' with SHA-256 ' + row[3][1][:16] + '…') if row[3] else 'missing'}")
    totals = books.checkpoint_totals(cursor, payload.get("marks", {}))
    anchored_totals = payload.get("totals", {})
    add([(name, value, totals.get(name, "(none)")) for name, value in anchored_totals.items() if totals.get(name) != value],
        lambda row: f"{where}: {row[0]}: was {row[1]}, now {row[2]}")
    return findings


@dataclass(frozen=True)
class AnchorCheck:
    findings: list[books.Finding]
    warnings: list[str]
    compared_with: str | None  # the anchor the books were compared with


def anchor_check(*, storage: Any = None, key: Ed25519PublicKey | None = None, newest: int = NEWEST,
                 limit: int = books.DEFAULT_LIMIT, using: str = "default") -> AnchorCheck:
    """``verify_books``'s anchors: the newest ``newest`` anchors' signatures, then the books against
    the newest anchor whose signature verifies. With no key or no anchor, a warning and no finding."""
    from django.db import connections

    if key is None:
        try:
            key = public_key()
        except AnchorKeyError as exc:
            return AnchorCheck([], [f"no anchors checked: no public key ({exc}); the books were checked against the "
                                    "database alone"], None)
    storage = storage or anchor_storage()
    names = anchor_names(storage)
    if not names:
        location = getattr(storage, "location", None) or getattr(storage, "bucket_name", "") or "the anchor store"
        return AnchorCheck([], [f"no anchors found in {location}: the books were checked against the database alone"], None)
    findings: list[books.Finding] = []
    chosen: Anchor | None = None
    for name in names[:max(1, newest)]:
        anchor = anchor_read(storage, name, key)
        if not anchor.valid:
            findings.append(books.Finding("anchors", f"anchor {name}: {anchor.problem}"))
        elif chosen is None:
            chosen = anchor
    if chosen is None:
        for name in names[max(1, newest):]:  # every newer one is bad: look further back
            anchor = anchor_read(storage, name, key)
            if anchor.valid:
                chosen = anchor
                break
    if chosen is None:
        findings.append(books.Finding("anchors", "no anchor's signature verifies: the books cannot be compared with any"))
        return AnchorCheck(findings, [], None)
    with connections[using].cursor() as cursor:
        findings += compare(cursor, chosen, limit)
    return AnchorCheck(findings, [], chosen.name)
