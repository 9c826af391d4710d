"""The books' invariants, checked by set-based queries (``manage.py verify_books``, the test suite
after every database test, ``manage.py backup``).

Design (hordak's invariants, pretix's ``check_order_transactions``):
- ``verify()`` runs read-only aggregate queries and returns a list of ``Finding`` (one line
  each); an empty list means the books balance. Nothing is computed per object in Python: each
  check is one query (a few for a broken receipt series), so a district of 100,000 parcels is
  checked in seconds. Each query lists at most ``limit`` findings and says when it held some back.
- ``control_totals()`` returns figures that two copies of the database must share (the original
  and a restored backup): the levy of each year, charges, payments, surcharges, counts of
  receipts and documents and a digest of every stored document's SHA-256.

The invariants:
1. levy: each year's original final roll adds up to its levy (Σ O&M charges = ¶4 total levy,
   and the roll's stored credits, net and line counts are its lines' sums). Corrections are
   reconciled on their own: each one is posted once, as a charge (more owed) or a ledger credit
   (less owed), for exactly its net change.
2. installments: the July and January installments issued for a line of a final roll are its
   halves, so together they are its net (¶9, ¶12); nothing is billed for a draft roll.
3. ledger: every charge, payment, void, realized surcharge, refund and correction credit is in
   the parcel's ledger exactly once, for its amount and on its date, and each parcel's ledger
   balance = charges + realized surcharges − payments not voided − correction credits (a void
   reverses its payment and the surcharge it settled). Realized surcharges are the ones printed
   on the payment's receipt.
4. numbering: receipts are numbered 1…n per office and fiscal year with no gap and no
   duplicate, voided ones included, and the series' last number is n; every payment has its
   receipt, for its amount, in the series of its office and date. Bills, debt certificates and
   seizure notices are checked the same way against their ``DocumentSeries``.
5. documents: every stored PDF is unchanged since issue (SHA-256 of the stored bytes = the
   stored hash): receipts, bills, certificates, seizure notices, and the bulk-printing parts'
   files in MEDIA_ROOT.
6. chain (``billing.chain``): every issued record is one link of its series' chain; each series
   runs 1…n with each previous hash the hash before it; each record still hashes to its link; a
   day close's recorded heads are still there. The first broken link of a series is named.
7. numbering counts: each ``ReceiptSeries``/``DocumentSeries`` last number = the records in the
   series = the links of its chain (a table emptied by a superuser behind the triggers is found).
8. checkpoint: the records the last checkpoint (``BooksCheckpoint``, stored after each passing
   recorded check) covered still have its totals, and each chain its head at that length.
9. journals (issue 19, ``billing.services.journal``): every journal has lines and Σ debits =
   Σ credits; for every closed office day, its journals' cash and bank lines (the day close's
   and any later adjustment's) net to its receipts less its voids and refunds; and every receipt,
   void and refund of a closed day is named on a line of a journal.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connections

from . import chain
from .models import BillBatchPart, IssuedDocument, SeizureStep

DEFAULT_LIMIT = 50  # findings listed per check; the rest are summarized in one line

# Receipt series use the fiscal year of the payment date (July 1 – June 30), written 2026-2027.
FISCAL_YEAR_OF_PAID_ON = (
    "to_char(EXTRACT(YEAR FROM pm.paid_on - INTERVAL '6 months')::int, 'FM0000') || '-' || "
    "to_char(EXTRACT(YEAR FROM pm.paid_on - INTERVAL '6 months')::int + 1, 'FM0000')"
)


@dataclass(frozen=True)
class Finding:
    """One broken invariant: the check it belongs to and a one-line description."""

    check: str
    message: str

    def __str__(self) -> str:
        return f"{self.check}: {self.message}"


def _rows(cursor: Any, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple]:
    cursor.execute(sql, params)
    return cursor.fetchall()


def _limited(check: str, rows: list[tuple], limit: int, describe: Callable[[tuple], str]) -> list[Finding]:
    """Findings for the first ``limit`` rows; queries fetch ``limit + 1`` so an excess is known."""
    findings = [Finding(check, describe(row)) for row in rows[:limit]]
    if len(rows) > limit:
        findings.append(Finding(check, f"more findings of this kind not listed (first {limit} shown)"))
    return findings


# --- 1. The levy and the roll ---------------------------------------------------------------------


def check_levy(cursor: Any, limit: int) -> list[Finding]:
    """¶4, ¶9: each final roll's lines add up to its levy and to the totals stored with it."""
    rows = _rows(cursor, """
        SELECT fy.label, l.total_levy, l.roll_total, l.roll_credits, l.roll_net, l.parcels_in_roll, l.parcels_levied,
               COALESCE(SUM(r.om_charge), 0), COALESCE(SUM(r.credit), 0), COALESCE(SUM(r.net), 0),
               COUNT(r.id), COUNT(r.id) FILTER (WHERE r.levied)
          FROM levy_levy l
          JOIN levy_fiscalyear fy ON fy.id = l.fiscal_year_id
          LEFT JOIN levy_rollline r ON r.levy_id = l.id
         WHERE l.status = 'final'
         GROUP BY fy.label, l.id
         ORDER BY fy.label
    """)
    findings = []
    for label, total, roll_total, credits, net, in_roll, levied, lines_om, lines_credit, lines_net, n_lines, n_levied in rows:
        if lines_om != total:
            findings.append(Finding("levy", f"{label}: final roll lines add to {lines_om}, the levy (¶4) is {total}"))
        if roll_total != total:
            findings.append(Finding("levy", f"{label}: stored roll total {roll_total} differs from the levy {total}"))
        if (lines_credit, lines_net) != (credits, net):
            findings.append(Finding("levy", f"{label}: roll lines' credits/net {lines_credit}/{lines_net} differ from the "
                                            f"stored {credits}/{net}"))
        if (n_lines, n_levied) != (in_roll, levied):
            findings.append(Finding("levy", f"{label}: roll has {n_lines} lines ({n_levied} levied), the levy says "
                                            f"{in_roll} ({levied} levied)"))
    return findings[: limit + 1]


def check_corrections(cursor: Any, limit: int) -> list[Finding]:
    """¶9, ¶11, ¶12: each roll correction is posted for exactly its net change: its rises are
    correction charges of its own line (``CorrectionCharge``), its falls principal adjustments, and
    Σ rises − Σ falls is its net; the ledger credits each day's adjustments once."""
    rows = _rows(cursor, """
        WITH raised AS (
            SELECT cc.correction_id AS id, SUM(ch.principal) AS amount,
                   COUNT(*) FILTER (WHERE ch.kind <> 'correction' OR ch.parcel_id <> rl.parcel_id
                                       OR ch.roll_line_id IS DISTINCT FROM rl.id) AS misplaced
              FROM billing_correctioncharge cc
              JOIN billing_charge ch ON ch.id = cc.charge_id
              JOIN levy_rollcorrection c ON c.id = cc.correction_id
              JOIN levy_rollline rl ON rl.id = c.roll_line_id
             GROUP BY cc.correction_id
        ), lowered AS (
            SELECT a.correction_id AS id, SUM(a.amount) AS amount FROM billing_principaladjustment a GROUP BY a.correction_id
        )
        SELECT c.id, fy.label, rl.parcel_code, c.net_delta, l.status, COALESCE(r.amount, 0), COALESCE(w.amount, 0),
               COALESCE(r.misplaced, 0)
          FROM levy_rollcorrection c
          JOIN levy_rollline rl ON rl.id = c.roll_line_id
          JOIN levy_levy l ON l.id = rl.levy_id
          JOIN levy_fiscalyear fy ON fy.id = l.fiscal_year_id
          LEFT JOIN raised r ON r.id = c.id
          LEFT JOIN lowered w ON w.id = c.id
         WHERE l.status <> 'final' OR COALESCE(r.amount, 0) - COALESCE(w.amount, 0) <> c.net_delta
            OR COALESCE(r.misplaced, 0) > 0
         ORDER BY c.id
         LIMIT %s
    """, [limit + 1])

    def describe(row: tuple) -> str:
        pk, label, parcel, net, status, raised, lowered, misplaced = row
        where = f"correction {pk} ({label}, parcel {parcel}, net {net})"
        if status != "final":
            return f"{where} corrects a roll that is not final"
        if misplaced:
            return f"{where}: {misplaced} of its charges are on another parcel or line, or not corrections"
        return f"{where}: its charges raise {raised} and its adjustments lower {lowered}"

    findings = _limited("corrections", rows, limit, describe)
    rows = _rows(cursor, """
        WITH expected AS (
            SELECT ch.parcel_id AS pid, a.entry_date AS day, SUM(a.amount) AS amount
              FROM billing_principaladjustment a JOIN billing_charge ch ON ch.id = a.charge_id
             GROUP BY ch.parcel_id, a.entry_date
        ), posted AS (
            SELECT parcel_id AS pid, entry_date AS day, SUM(credit - debit) AS amount
              FROM billing_ledgerentry WHERE kind = 'correction'
             GROUP BY parcel_id, entry_date
        )
        SELECT p.parcel_id, day, COALESCE(expected.amount, 0), COALESCE(posted.amount, 0)
          FROM expected FULL JOIN posted USING (pid, day)
          JOIN parcels_parcel p ON p.id = pid
         WHERE expected.amount IS DISTINCT FROM posted.amount
         ORDER BY p.parcel_id, day
         LIMIT %s
    """, [limit + 1])
    findings += _limited("corrections", rows, limit, lambda row: (
        f"parcel {row[0]} on {row[1].isoformat()}: corrections lower the debt by {row[2]}, the ledger credits {row[3]}"
    ))
    charges = _rows(cursor, """
        SELECT c.id, p.parcel_id FROM billing_charge c JOIN parcels_parcel p ON p.id = c.parcel_id
         WHERE c.kind = 'correction' AND c.correction_id IS NULL
           AND NOT EXISTS (SELECT 1 FROM billing_correctioncharge cc WHERE cc.charge_id = c.id)
         ORDER BY c.id LIMIT %s
    """, [limit + 1])
    findings += _limited("corrections", charges, limit, lambda row: f"charge C{row[0]} (parcel {row[1]}) is a correction "
                                                                   "without its roll correction")
    return findings


# --- 2. Installments ------------------------------------------------------------------------------


def check_installments(cursor: Any, limit: int) -> list[Finding]:
    """¶9, ¶12: the installments of each final roll line are its two halves (so they add to its net);
    a line that is not levied, and any draft roll, has none."""
    rows = _rows(cursor, """
        WITH issued AS (
            SELECT fy.label, r.parcel_code, r.net,
                   CASE WHEN r.levied THEN r.first_installment ELSE 0 END AS want_1,
                   CASE WHEN r.levied THEN r.second_installment ELSE 0 END AS want_2,
                   COUNT(c.id) FILTER (WHERE c.number = 1) AS n_1, COALESCE(SUM(c.principal) FILTER (WHERE c.number = 1), 0) AS got_1,
                   COUNT(c.id) FILTER (WHERE c.number = 2) AS n_2, COALESCE(SUM(c.principal) FILTER (WHERE c.number = 2), 0) AS got_2,
                   COUNT(c.id) FILTER (WHERE c.parcel_id <> r.parcel_id OR c.fiscal_year_id <> l.fiscal_year_id
                                          OR c.number NOT IN (1, 2)) AS misplaced
              FROM levy_rollline r
              JOIN levy_levy l ON l.id = r.levy_id AND l.status = 'final'
              JOIN levy_fiscalyear fy ON fy.id = l.fiscal_year_id
              LEFT JOIN billing_charge c ON c.roll_line_id = r.id AND c.kind = 'installment'
             GROUP BY fy.label, r.id
        )
        SELECT label, parcel_code, net, want_1, got_1, n_1, want_2, got_2, n_2, misplaced FROM issued
         WHERE got_1 <> want_1 OR got_2 <> want_2 OR misplaced > 0
            OR n_1 <> (CASE WHEN want_1 > 0 THEN 1 ELSE 0 END) OR n_2 <> (CASE WHEN want_2 > 0 THEN 1 ELSE 0 END)
         ORDER BY label, parcel_code
         LIMIT %s
    """, [limit + 1])

    def describe(row: tuple) -> str:
        label, parcel, net, want_1, got_1, n_1, want_2, got_2, n_2, misplaced = row
        if misplaced:
            return f"{label} parcel {parcel}: {misplaced} installment(s) on another parcel, year or half"
        return (f"{label} parcel {parcel}: net {net}, installments issued {got_1} + {got_2} ({n_1} + {n_2} charges), "
                f"expected {want_1} + {want_2}")

    findings = _limited("installments", rows, limit, describe)
    rows = _rows(cursor, """
        SELECT c.id, p.parcel_id FROM billing_charge c
          JOIN parcels_parcel p ON p.id = c.parcel_id
          LEFT JOIN levy_rollline r ON r.id = c.roll_line_id
          LEFT JOIN levy_levy l ON l.id = r.levy_id
         WHERE c.kind = 'installment' AND (l.status IS DISTINCT FROM 'final')
         ORDER BY c.id LIMIT %s
    """, [limit + 1])
    findings += _limited("installments", rows, limit, lambda row: f"charge C{row[0]} (parcel {row[1]}) is an installment "
                                                                  "of a roll that is not final")
    return findings


# --- 3. The ledger --------------------------------------------------------------------------------

# Which side of the ledger each kind of entry is on, and what it must point at.
LEDGER_SHAPE = """
       (e.kind = 'charge' AND e.credit = 0 AND e.charge_id IS NOT NULL AND e.payment_id IS NULL AND e.refund_id IS NULL)
    OR (e.kind = 'refund' AND e.credit = 0 AND e.charge_id IS NOT NULL AND e.refund_id IS NOT NULL AND e.payment_id IS NULL)
    OR (e.kind IN ('surcharge', 'void') AND e.credit = 0 AND e.payment_id IS NOT NULL AND e.charge_id IS NULL
        AND e.refund_id IS NULL)
    OR (e.kind IN ('payment', 'surcharge_void') AND e.debit = 0 AND e.payment_id IS NOT NULL AND e.charge_id IS NULL
        AND e.refund_id IS NULL)
    OR (e.kind IN ('correction', 'give_back') AND e.debit = 0 AND e.charge_id IS NULL AND e.payment_id IS NULL
        AND e.refund_id IS NULL)
    OR (e.kind = 'credit_applied' AND e.credit = 0 AND e.charge_id IS NULL AND e.payment_id IS NULL AND e.refund_id IS NULL)
    OR (e.kind = 'give_back_void' AND e.credit = 0 AND e.charge_id IS NULL AND e.payment_id IS NULL AND e.refund_id IS NULL)
    OR (e.kind = 'credit_app_void' AND e.debit = 0 AND e.charge_id IS NULL AND e.payment_id IS NULL AND e.refund_id IS NULL)
    OR (e.kind = 'refund_charged' AND e.credit = 0 AND e.charge_id IS NOT NULL AND e.refund_id IS NOT NULL
        AND e.payment_id IS NULL)
    OR (e.kind = 'refund_void' AND e.debit = 0 AND e.charge_id IS NULL AND e.refund_id IS NOT NULL AND e.payment_id IS NULL)
"""

# The surcharge each payment settled, as printed on its receipt (¶12).
RECEIPT_SURCHARGE = """
    SELECT r.payment_id, COALESCE(SUM((a.value ->> 'surcharge')::numeric), 0) AS surcharge
      FROM billing_receipt r
      LEFT JOIN LATERAL jsonb_array_elements(
          CASE WHEN jsonb_typeof(r.snapshot -> 'applications') = 'array' THEN r.snapshot -> 'applications' ELSE '[]'::jsonb END
      ) a ON TRUE
     GROUP BY r.payment_id
"""


def check_ledger(cursor: Any, limit: int) -> list[Finding]:
    findings = []
    rows = _rows(cursor, f"""
        SELECT e.id, p.parcel_id, e.kind FROM billing_ledgerentry e JOIN parcels_parcel p ON p.id = e.parcel_id
         WHERE NOT ({LEDGER_SHAPE}) ORDER BY e.id LIMIT %s
    """, [limit + 1])
    findings += _limited("ledger", rows, limit, lambda row: f"entry {row[0]} (parcel {row[1]}, {row[2]}) is on the wrong side "
                                                            "or points at the wrong record")
    # Every charge (refunds included) is one debit of its principal on its parcel.
    rows = _rows(cursor, """
        SELECT c.id, p.parcel_id, c.kind, c.principal, COUNT(e.id), COALESCE(SUM(e.debit - e.credit), 0)
          FROM billing_charge c
          JOIN parcels_parcel p ON p.id = c.parcel_id
          LEFT JOIN billing_ledgerentry e ON e.charge_id = c.id
         GROUP BY c.id, p.parcel_id
        HAVING COUNT(e.id) <> 1 OR COALESCE(SUM(e.debit - e.credit), 0) <> c.principal
            OR COUNT(e.id) FILTER (WHERE e.parcel_id <> c.parcel_id
                                      OR e.kind <> CASE c.kind WHEN 'refund' THEN 'refund'
                                                               WHEN 'void_refund' THEN 'refund_charged' ELSE 'charge' END) > 0
         ORDER BY c.id LIMIT %s
    """, [limit + 1])
    findings += _limited("ledger", rows, limit, lambda row: (
        f"charge C{row[0]} (parcel {row[1]}, {row[2]} of {row[3]}) is in the ledger {row[4]} time(s) for {row[5]}"
    ))
    # Every payment is one credit on its date; a void is one debit of it on the void's date; the
    # surcharge its receipt shows is one debit, reversed once if the payment is voided.
    rows = _rows(cursor, f"""
        WITH surcharge AS ({RECEIPT_SURCHARGE}),
        entries AS (
            SELECT pm.id, p.parcel_id, pm.amount, v.id IS NOT NULL AS voided, COALESCE(s.surcharge, 0) AS surcharge,
                   COUNT(e.id) FILTER (WHERE e.kind = 'payment') AS n_pay,
                   COALESCE(SUM(e.credit) FILTER (WHERE e.kind = 'payment'), 0) AS pay,
                   COUNT(e.id) FILTER (WHERE e.kind = 'void') AS n_void,
                   COALESCE(SUM(e.debit) FILTER (WHERE e.kind = 'void'), 0) AS void,
                   COUNT(e.id) FILTER (WHERE e.kind = 'surcharge') AS n_sur,
                   COALESCE(SUM(e.debit) FILTER (WHERE e.kind = 'surcharge'), 0) AS sur,
                   COUNT(e.id) FILTER (WHERE e.kind = 'surcharge_void') AS n_sur_void,
                   COALESCE(SUM(e.credit) FILTER (WHERE e.kind = 'surcharge_void'), 0) AS sur_void,
                   COUNT(e.id) FILTER (WHERE e.parcel_id <> pm.parcel_id
                                          OR (e.kind IN ('payment', 'surcharge') AND e.entry_date <> pm.paid_on)
                                          OR (e.kind IN ('void', 'surcharge_void') AND e.entry_date IS DISTINCT FROM v.voided_on)
                                          OR e.kind NOT IN ('payment', 'void', 'surcharge', 'surcharge_void')) AS misplaced
              FROM billing_payment pm
              JOIN parcels_parcel p ON p.id = pm.parcel_id
              LEFT JOIN billing_paymentvoid v ON v.payment_id = pm.id
              LEFT JOIN surcharge s ON s.payment_id = pm.id
              LEFT JOIN billing_ledgerentry e ON e.payment_id = pm.id
             GROUP BY pm.id, p.parcel_id, v.id, s.surcharge
        )
        SELECT id, parcel_id, amount, voided, surcharge, n_pay, pay, n_void, void, n_sur, sur, n_sur_void, sur_void, misplaced
          FROM entries
         WHERE n_pay <> 1 OR pay <> amount
            OR n_void <> (CASE WHEN voided THEN 1 ELSE 0 END) OR void <> (CASE WHEN voided THEN amount ELSE 0 END)
            OR n_sur <> (CASE WHEN surcharge > 0 THEN 1 ELSE 0 END) OR sur <> surcharge
            OR n_sur_void <> (CASE WHEN voided AND surcharge > 0 THEN 1 ELSE 0 END)
            OR sur_void <> (CASE WHEN voided THEN surcharge ELSE 0 END)
            OR misplaced > 0
         ORDER BY id LIMIT %s
    """, [limit + 1])

    def payment(row: tuple) -> str:
        pk, parcel, amount, voided, surcharge, n_pay, pay, n_void, void, n_sur, sur, n_sur_void, sur_void, misplaced = row
        where = f"payment P{pk} (parcel {parcel}, {amount}{', voided' if voided else ''})"
        if misplaced:
            return f"{where}: {misplaced} ledger entries on another parcel, date or kind"
        return (f"{where}, receipt surcharge {surcharge}: ledger has payment {n_pay}×{pay}, void {n_void}×{void}, "
                f"surcharge {n_sur}×{sur}, surcharge reversal {n_sur_void}×{sur_void}")

    findings += _limited("ledger", rows, limit, payment)
    rows = _rows(cursor, """
        SELECT f.id, p.parcel_id, f.amount, COUNT(e.id), COALESCE(SUM(e.debit - e.credit), 0)
          FROM billing_refund f
          JOIN parcels_parcel p ON p.id = f.parcel_id
          LEFT JOIN billing_ledgerentry e ON e.refund_id = f.id AND e.kind = 'refund'
         GROUP BY f.id, p.parcel_id
        HAVING COUNT(e.id) <> 1 OR COALESCE(SUM(e.debit - e.credit), 0) <> f.amount
            OR COUNT(e.id) FILTER (WHERE e.parcel_id <> f.parcel_id OR e.kind <> 'refund' OR e.entry_date <> f.refunded_on) > 0
         ORDER BY f.id LIMIT %s
    """, [limit + 1])
    findings += _limited("ledger", rows, limit, lambda row: (
        f"refund {row[0]} (parcel {row[1]}, {row[2]}) is in the ledger {row[3]} time(s) for {row[4]}"
    ))
    findings += check_balances(cursor, limit)
    return findings


def check_balances(cursor: Any, limit: int) -> list[Finding]:
    """Each parcel's ledger balance (Σ debits − Σ credits) against its records: charges + realized
    surcharges − payments not voided − principal lowered by corrections − surcharge given back +
    surcharge paid by *crédito aplicado*, and a void's reversals of those (issue 17): + surcharge
    given back and reversed − surcharge of a *crédito aplicado* reversed − a refund made a charge
    (the charge is counted with the others; the refund no longer comes out of the credit)."""
    rows = _rows(cursor, f"""
        WITH surcharge AS ({RECEIPT_SURCHARGE}),
        kept AS (
            SELECT pm.id, pm.parcel_id, pm.amount FROM billing_payment pm
             WHERE NOT EXISTS (SELECT 1 FROM billing_paymentvoid v WHERE v.payment_id = pm.id)
        ),
        movements AS (
            SELECT parcel_id, principal AS amount FROM billing_charge
            UNION ALL SELECT parcel_id, -amount FROM kept
            UNION ALL SELECT kept.parcel_id, s.surcharge FROM kept JOIN surcharge s ON s.payment_id = kept.id
            UNION ALL SELECT ch.parcel_id, -a.amount FROM billing_principaladjustment a
                        JOIN billing_charge ch ON ch.id = a.charge_id
            UNION ALL SELECT parcel_id, -surcharge FROM billing_giveback
            UNION ALL SELECT parcel_id, surcharge FROM billing_creditapplication
            -- issue 17: a void's reversals (a refund made a charge is in billing_charge already)
            UNION ALL SELECT parcel_id, surcharge FROM billing_voidreversal WHERE kind = 'give_back'
            UNION ALL SELECT parcel_id, -surcharge FROM billing_voidreversal WHERE kind = 'credit_applied'
            UNION ALL SELECT parcel_id, -principal FROM billing_voidreversal WHERE kind = 'refund'
        ),
        expected AS (SELECT parcel_id AS pid, SUM(amount) AS balance FROM movements GROUP BY parcel_id),
        ledger AS (SELECT parcel_id AS pid, SUM(debit) - SUM(credit) AS balance FROM billing_ledgerentry GROUP BY parcel_id)
        SELECT p.parcel_id, COALESCE(expected.balance, 0), COALESCE(ledger.balance, 0)
          FROM expected FULL JOIN ledger USING (pid)
          JOIN parcels_parcel p ON p.id = pid
         WHERE COALESCE(expected.balance, 0) <> COALESCE(ledger.balance, 0)
         ORDER BY p.parcel_id LIMIT %s
    """, [limit + 1])
    return _limited("ledger", rows, limit, lambda row: (
        f"parcel {row[0]}: charges + surcharges − payments − credits = {row[1]}, the ledger balance is {row[2]}"
    ))


# --- 4. Numbering ---------------------------------------------------------------------------------


def check_receipts(cursor: Any, limit: int) -> list[Finding]:
    """Receipt numbers 1…n per office and fiscal year, voided payments' receipts included."""
    series = _rows(cursor, """
        WITH issued AS (
            SELECT office_id, fiscal_year, COUNT(*) AS n, COUNT(DISTINCT number) AS distinct_n, MIN(number) AS low,
                   MAX(number) AS high
              FROM billing_receipt GROUP BY office_id, fiscal_year
        )
        SELECT o.id, o.code, fiscal_year, COALESCE(i.n, 0), COALESCE(i.distinct_n, 0), i.low, COALESCE(i.high, 0),
               s.last_number
          FROM issued i FULL JOIN billing_receiptseries s USING (office_id, fiscal_year)
          JOIN billing_office o ON o.id = office_id
         WHERE s.id IS NULL OR i.n IS DISTINCT FROM i.distinct_n OR COALESCE(i.high, 0) <> COALESCE(i.n, 0)
            OR (i.n > 0 AND i.low <> 1) OR s.last_number <> COALESCE(i.high, 0)
         ORDER BY o.code, fiscal_year
    """)
    findings = []
    for office_id, code, year, count, distinct, low, high, last in series:
        where = f"series {code} {year}"
        reasons = []
        if last is None:
            reasons.append(f"{count} receipts but no series row")
        elif last != high:
            reasons.append(f"last number allocated {last}, highest receipt {high}")
        duplicates = _rows(cursor, """
            SELECT number FROM billing_receipt WHERE office_id = %s AND fiscal_year = %s
             GROUP BY number HAVING COUNT(*) > 1 ORDER BY number LIMIT 20
        """, [office_id, year])
        if duplicates:
            reasons.append(f"duplicate numbers {', '.join(str(n) for (n,) in duplicates)}")
        missing = _rows(cursor, """
            SELECT n FROM generate_series(1, GREATEST(%s, %s)) n
             WHERE NOT EXISTS (SELECT 1 FROM billing_receipt WHERE office_id = %s AND fiscal_year = %s AND number = n)
             ORDER BY n LIMIT 20
        """, [high, last or 0, office_id, year])
        if missing:
            reasons.append(f"missing numbers {', '.join(str(n) for (n,) in missing)}")
        if not reasons:
            reasons.append(f"{count} receipts, {distinct} numbers from {low} to {high}")
        findings += [Finding("receipts", f"{where}: {reason}") for reason in reasons]
    findings = findings[: limit + 1]
    rows = _rows(cursor, f"""
        SELECT pm.id, p.parcel_id, r.id, r.office_id = pm.office_id, r.fiscal_year = {FISCAL_YEAR_OF_PAID_ON},
               r.snapshot ->> 'amount', pm.amount
          FROM billing_payment pm
          JOIN parcels_parcel p ON p.id = pm.parcel_id
          LEFT JOIN billing_receipt r ON r.payment_id = pm.id
         WHERE r.id IS NULL OR r.office_id <> pm.office_id OR r.fiscal_year <> {FISCAL_YEAR_OF_PAID_ON}
            OR (r.snapshot ->> 'amount')::numeric IS DISTINCT FROM pm.amount
         ORDER BY pm.id LIMIT %s
    """, [limit + 1])

    def describe(row: tuple) -> str:
        pk, parcel, receipt, same_office, same_year, printed, amount = row
        if receipt is None:
            return f"payment P{pk} (parcel {parcel}) has no receipt"
        if not same_office or not same_year:
            return f"payment P{pk} (parcel {parcel}): its receipt is in another office's or year's series"
        return f"payment P{pk} (parcel {parcel}) of {amount}: its receipt says {printed}"

    return findings + _limited("receipts", rows, limit, describe)


# Numbered documents of ``DocumentSeries``: the series kind and the table and column of its numbers.
DOCUMENT_NUMBERS = """
    SELECT 'bill' AS kind, number FROM billing_bill
    UNION ALL SELECT 'certificate', number FROM billing_debtcertificate
    UNION ALL SELECT 'statement', number FROM billing_accountstatement
    UNION ALL SELECT 'seizure_' || kind, number FROM billing_seizurestep
    UNION ALL SELECT 'refund', number FROM billing_refund WHERE number <> ''  -- issue 18; older refunds have none
"""


def check_document_series(cursor: Any, limit: int) -> list[Finding]:
    """Bills, debt certificates and seizure notices: ``PREFIX-YYYY-NNNNNN`` numbered 1…n per kind
    and year (the year the number carries), n being the series' last number."""
    rows = _rows(cursor, f"""
        WITH numbers AS ({DOCUMENT_NUMBERS}),
        parsed AS (
            SELECT kind, number, number ~ '^[A-Z]+-[0-9]{{4}}-[0-9]+$' AS ok,
                   CASE WHEN number ~ '^[A-Z]+-[0-9]{{4}}-[0-9]+$' THEN split_part(number, '-', 2)::int END AS year,
                   CASE WHEN number ~ '^[A-Z]+-[0-9]{{4}}-[0-9]+$' THEN split_part(number, '-', 3)::bigint END AS n
              FROM numbers
        ),
        issued AS (
            SELECT kind, year, COUNT(*) AS count, COUNT(DISTINCT n) AS distinct_n, MIN(n) AS low, MAX(n) AS high,
                   COUNT(*) FILTER (WHERE NOT ok) AS malformed
              FROM parsed GROUP BY kind, year
        )
        SELECT kind, year, COALESCE(i.count, 0), COALESCE(i.distinct_n, 0), i.low, COALESCE(i.high, 0),
               COALESCE(i.malformed, 0), s.last_number
          FROM issued i FULL JOIN billing_documentseries s USING (kind, year)
         WHERE COALESCE(i.malformed, 0) > 0 OR COALESCE(i.count, 0) <> COALESCE(i.distinct_n, 0)
            OR COALESCE(i.high, 0) <> COALESCE(i.count, 0) OR (i.count > 0 AND i.low <> 1)
            OR s.last_number IS DISTINCT FROM COALESCE(i.high, 0)
         ORDER BY kind, year LIMIT %s
    """, [limit + 1])

    def describe(row: tuple) -> str:
        kind, year, count, distinct, low, high, malformed, last = row
        if malformed:
            return f"{kind}: {malformed} number(s) not of the form PREFIX-YYYY-NNNNNN"
        return (f"{kind} {year}: {count} documents with {distinct} numbers from {low} to {high}, "
                f"series last number {last if last is not None else 'missing'} (gaps or duplicates)")

    return _limited("numbering", rows, limit, describe)


# --- 5. Stored documents --------------------------------------------------------------------------


def check_documents(limit: int, *, sample: int | None = None, using: str = "default") -> list[Finding]:
    """Issue 20: the issued PDFs in the document store (``STORAGES["documents"]``) are the bytes
    issued: each row's file is there and hashes to the SHA-256 stored with the row (the chain holds
    that hash too). Every file, or ``sample`` random ones of each table (``verify_books --sample``);
    a missing or changed file is a finding naming the document."""
    from .storage import document_storage

    storage = document_storage()
    wrong: list[tuple[str, str]] = []
    for label, model in (("document", IssuedDocument), ("seizure notice", SeizureStep)):
        rows = model.objects.using(using).order_by("pk")
        if sample is not None:
            rows = rows.order_by("?")[:sample]
        fields = ("kind", "number", "pdf", "sha256") if model is IssuedDocument else ("number", "pdf", "sha256")
        for row in rows.values_list(*fields).iterator(chunk_size=2000):
            name, stored = row[-2], row[-1]
            what = f"{row[0]} {row[1]}" if model is IssuedDocument else f"{label} {row[0]}"
            try:
                with storage.open(name, "rb") as handle:
                    found = hashlib.file_digest(handle, "sha256").hexdigest()
            except OSError:  # FileNotFoundError, or the object store's refusal
                wrong.append((what, f"its file {name} is missing from the document store"))
                continue
            if found != stored:
                wrong.append((what, f"stored bytes hash to {found[:16]}…, issued as {stored[:16]}… (file {name})"))
    return _limited("documents", wrong, limit, lambda row: f"{row[0]}: {row[1]}")


def check_batch_files(limit: int) -> list[Finding]:
    """Bulk-printing parts live in MEDIA_ROOT: each file is there and hashes as it did when merged."""
    wrong = []
    storage = BillBatchPart._meta.get_field("pdf").storage
    for name, stored in BillBatchPart.objects.values_list("pdf", "sha256").order_by("pk"):
        if not name or not storage.exists(name):
            wrong.append((name, "missing"))
            continue
        with storage.open(name, "rb") as handle:
            found = hashlib.file_digest(handle, "sha256").hexdigest()
        if found != stored:
            wrong.append((name, f"hashes to {found[:16]}…, merged as {stored[:16]}…"))
    return _limited("documents", wrong, limit, lambda row: f"bulk-printing part file {row[0]}: {row[1]}")


# --- 6. The chain of issued records ---------------------------------------------------------------


def check_chain(cursor: Any, limit: int) -> list[Finding]:
    """Every issued record is one link of the chain of its series (``billing.chain``); each series
    runs 1…n, each link's previous hash is the hash of the link before it, its content hash is
    the record's content as it is now and its hash follows from both. Per series only the first
    broken link is named (the ones after it hang on it). A day close's recorded heads are still
    links of their series with the same hash."""
    links = _rows(cursor, """
        SELECT series, position, kind, record_id, previous_hash, content_hash, hash, heads::text
          FROM levy_chainlink ORDER BY series, position
    """)
    unlinked: dict[str, dict[int, chain.Record]] = {kind: {} for kind in chain.KINDS}
    for record in chain.all_records(cursor):
        unlinked[record.kind][record.id] = record
    broken: list[tuple] = []
    hashes: dict[tuple[str, int], str] = {}
    series_links: dict[str, list[tuple]] = {}
    for row in links:
        series_links.setdefault(row[0], []).append(row)
    for series, rows in series_links.items():
        previous, reason = chain.GENESIS, None
        for expected, (_series, position, kind, record_id, previous_hash, stored_content, stored_hash, heads) in enumerate(rows, 1):
            hashes[(series, position)] = stored_hash
            record = unlinked.get(kind, {}).pop(record_id, None)
            if reason is not None:
                continue  # the series is already broken before this link
            name = f"series {series} link {position} ({record.label if record else f'{kind} #{record_id}'})"
            if position != expected:
                reason = f"series {series}: link {expected} is missing (the next link is {position})"
            elif previous_hash != previous:
                reason = f"{name}: its previous hash {previous_hash[:16]}… is not link {position - 1}'s hash {previous[:16]}…"
            elif record is None:
                reason = f"{name}: the {kind} it chains is missing"
            elif record.series != series or (kind in chain.NUMBERED and record.number != position):
                reason = f"{name}: the record now carries number {record.number} of series {record.series}"
            else:
                content = chain.full_content(record, json.loads(heads))
                if chain.content_hash(content) != stored_content:
                    reason = f"{name}: the record differs from what was chained (content hash {stored_content[:16]}…, now " \
                             f"{chain.content_hash(content)[:16]}…)"
                elif chain.link_hash(previous_hash, content) != stored_hash:
                    reason = f"{name}: its hash {stored_hash[:16]}… does not follow from the previous hash and its content"
            previous = stored_hash
        if reason is not None:
            broken.append((reason,))
    findings = _limited("chain", broken, limit, lambda row: row[0])
    missing = [(r.label, r.series) for kind in chain.KINDS for r in unlinked[kind].values()]
    findings += _limited("chain", missing, limit, lambda row: f"{row[0]} is not in the chain of series {row[1]}")
    moved = []
    for series, rows in series_links.items():
        for _series, position, kind, _record_id, *_hashes, heads in rows:
            if kind != chain.DAY_CLOSE:
                continue
            for head_series, (head_position, head_hash) in sorted(json.loads(heads).items()):
                now = hashes.get((head_series, head_position))
                if now != head_hash:
                    moved.append((series, position, head_series, head_position, head_hash, now))
    findings += _limited("chain", moved, limit, lambda row: (
        f"series {row[0]} link {row[1]}: the day close recorded {row[2]} at link {row[3]} with hash {row[4][:16]}…, "
        f"that link is now {(row[5][:16] + '…') if row[5] else 'missing'}"
    ))
    return findings


def check_series_counts(cursor: Any, limit: int) -> list[Finding]:
    """Each numbering series' last number = the records in it = the links of its chain: a table
    emptied (or a row deleted) behind the triggers' back leaves the series row and the chain
    longer than the records. A chain of a numbered kind with no series row is found too."""
    rows = _rows(cursor, f"""
        WITH numbered AS (
            SELECT 'receipt ' || o.code || ' ' || s.fiscal_year AS series, s.last_number AS last
              FROM billing_receiptseries s JOIN billing_office o ON o.id = s.office_id
            UNION ALL SELECT kind || ' ' || year, last_number FROM billing_documentseries
        ), records AS (
            SELECT 'receipt ' || o.code || ' ' || r.fiscal_year AS series, COUNT(*) AS n
              FROM billing_receipt r JOIN billing_office o ON o.id = r.office_id GROUP BY 1
            UNION ALL
            SELECT kind || ' ' || split_part(number, '-', 2), COUNT(*)
              FROM ({DOCUMENT_NUMBERS}) d GROUP BY 1
        ), links AS (
            SELECT series, COUNT(*) AS n FROM levy_chainlink WHERE kind IN ('receipt', 'bill', 'certificate', 'statement', 'seizure')
             GROUP BY series
            -- issue 18: numbered refunds are links of the one ``refund`` chain; counted by their number's year
            UNION ALL
            SELECT 'refund ' || split_part(f.number, '-', 2), COUNT(*)
              FROM levy_chainlink l JOIN billing_refund f ON l.kind = 'refund' AND l.record_id = f.id
             WHERE f.number <> '' GROUP BY 1
        )
        SELECT series, numbered.last, COALESCE(records.n, 0), COALESCE(links.n, 0)
          FROM numbered FULL JOIN records USING (series) FULL JOIN links USING (series)
         WHERE numbered.last IS DISTINCT FROM COALESCE(records.n, 0) OR COALESCE(records.n, 0) <> COALESCE(links.n, 0)
         ORDER BY series LIMIT %s
    """, [limit + 1])
    return _limited("numbering", rows, limit, lambda row: (
        f"series {row[0]}: last number issued {row[1] if row[1] is not None else '(no series row)'}, "
        f"{row[2]} records, {row[3]} links in its chain"
    ))


def check_receipt_allocation(cursor: Any, limit: int) -> list[Finding]:
    """What a receipt says its payment paid (Σ surcharge + principal of its applications) is no
    more than the payment (the rest went to the account's credit). The payment's ledger credit and
    the receipt's surcharge against the ledger are ``check_ledger``'s."""
    rows = _rows(cursor, """
        SELECT r.fiscal_year, r.number, o.code, pm.amount,
               COALESCE(SUM((a.value ->> 'surcharge')::numeric + (a.value ->> 'principal_paid')::numeric), 0) AS applied
          FROM billing_receipt r
          JOIN billing_office o ON o.id = r.office_id
          JOIN billing_payment pm ON pm.id = r.payment_id
          LEFT JOIN LATERAL jsonb_array_elements(
              CASE WHEN jsonb_typeof(r.snapshot -> 'applications') = 'array' THEN r.snapshot -> 'applications' ELSE '[]'::jsonb END
          ) a ON TRUE
         GROUP BY r.id, o.code, pm.amount
        HAVING COALESCE(SUM((a.value ->> 'surcharge')::numeric + (a.value ->> 'principal_paid')::numeric), 0) > pm.amount
         ORDER BY r.id LIMIT %s
    """, [limit + 1])
    return _limited("receipts", rows, limit, lambda row: (
        f"receipt {row[2]}-{row[0]}-{row[1]:06d}: its applications add to {row[4]}, more than the payment {row[3]}"
    ))


def check_stored_allocations(cursor: Any, limit: int) -> list[Finding]:
    """¶12, ¶13: each receipt's lines are exactly its payment's stored allocation (charge by charge,
    surcharge and principal, in the order stored), and the allocation adds up to the payment."""
    rows = _rows(cursor, """
        WITH printed AS (
            SELECT r.id AS rid, r.payment_id AS pid,
                   COALESCE(string_agg(((a.value ->> 'surcharge')::numeric)::text || '/'
                                       || ((a.value ->> 'principal_paid')::numeric)::text, ',' ORDER BY a.ordinality), '') AS lines
              FROM billing_receipt r
              LEFT JOIN LATERAL jsonb_array_elements(
                  CASE WHEN jsonb_typeof(r.snapshot -> 'applications') = 'array' THEN r.snapshot -> 'applications' ELSE '[]'::jsonb END
              ) WITH ORDINALITY a(value, ordinality) ON TRUE
             GROUP BY r.id
        ), stored AS (
            SELECT pm.id AS pid,
                   COALESCE(string_agg(al.surcharge::text || '/' || al.principal::text, ',' ORDER BY al.id)
                            FILTER (WHERE al.charge_id IS NOT NULL), '') AS lines,
                   COALESCE(SUM(al.surcharge + al.principal), 0) AS total, pm.amount
              FROM billing_payment pm LEFT JOIN billing_paymentallocation al ON al.payment_id = pm.id
             GROUP BY pm.id
        )
        SELECT r.fiscal_year, r.number, o.code, printed.lines, stored.lines, stored.total, stored.amount
          FROM printed
          JOIN billing_receipt r ON r.id = printed.rid
          JOIN billing_office o ON o.id = r.office_id
          JOIN stored ON stored.pid = printed.pid
         WHERE printed.lines <> stored.lines OR stored.total <> stored.amount
         ORDER BY r.id LIMIT %s
    """, [limit + 1])
    return _limited("receipts", rows, limit, lambda row: (
        f"receipt {row[2]}-{row[0]}-{row[1]:06d}: it printed [{row[3]}] (surcharge/principal), "
        f"its stored allocation is [{row[4]}] of {row[5]} for a payment of {row[6]}"
    ))


def check_statements(cursor: Any, limit: int) -> list[Finding]:
    """¶12, ¶13: for every parcel, the statement as of today equals its ledger: Σ balances − surcharge
    accrued and unpaid − credit = Σ (principal − principal paid) − credit = Σ debits − Σ credits of
    its ledger entries."""
    from django.utils import timezone

    from parcels.models import Parcel

    from .accounts import account_states

    # As of today; payments (and the entries after them) dated later than today are counted too,
    # so that the statement is read as of the last dated entry.
    (latest,) = _rows(cursor, "SELECT MAX(entry_date) FROM billing_ledgerentry WHERE kind <> 'charge'")[0]
    today = max(timezone.localdate(), latest or timezone.localdate())
    ledger = dict(_rows(cursor, "SELECT parcel_id, SUM(debit) - SUM(credit) FROM billing_ledgerentry GROUP BY parcel_id"))
    ids = sorted(set(ledger) | {pk for (pk,) in _rows(cursor, "SELECT DISTINCT parcel_id FROM billing_charge")})
    bad: list[tuple] = []
    for start in range(0, len(ids), 2000):
        parcels = Parcel.objects.filter(pk__in=ids[start:start + 2000])
        for pk, account in sorted(account_states(parcels=parcels, as_of=today, roll_lines=False).items()):
            state = account.state
            unpaid = sum((c.surcharge - c.surcharge_paid for c in state.charges), Decimal(0))
            shown = state.total_balance - unpaid - state.credit_balance
            entries = ledger.get(pk, Decimal(0))
            if not (shown == entries == account.ledger.ledger_balance):
                bad.append((account.parcel.parcel_id, shown, account.ledger.ledger_balance, entries))
            if len(bad) > limit:
                break
    return _limited("statements", bad, limit, lambda row: (
        f"parcel {row[0]}: the statement as of {today.isoformat()} says {row[1]} (balances less unpaid surcharge and "
        f"credit), its charges less principal paid and credit {row[2]}, the ledger entries {row[3]}"
    ))


# --- 7. The last checkpoint -----------------------------------------------------------------------

# (name, table, timestamp column, aggregate): the records a checkpoint covers and their figures.
CHECKPOINT_TABLES = (
    ("charges", "billing_charge", "created_at", "COUNT(*) || ' (' || COALESCE(SUM(principal), 0) || ')'"),
    ("payments", "billing_payment", "created_at", "COUNT(*) || ' (' || COALESCE(SUM(amount), 0) || ')'"),
    ("payment voids", "billing_paymentvoid", "created_at", "COUNT(*) || ' (' || string_agg(payment_id::text, ',' ORDER BY id) || ')'"),
    ("refunds", "billing_refund", "created_at", "COUNT(*) || ' (' || COALESCE(SUM(amount), 0) || ')'"),
    ("void reversals", "billing_voidreversal", "created_at",
     "COUNT(*) || ' (' || COALESCE(SUM(surcharge), 0) || ', ' || COALESCE(SUM(principal), 0) || ')'"),
    ("ledger entries", "billing_ledgerentry", "created_at",
     "COUNT(*) || ' (debits ' || COALESCE(SUM(debit), 0) || ', credits ' || COALESCE(SUM(credit), 0) || ')'"),
    ("receipts", "billing_receipt", "issued_at",
     "COUNT(*) || ' (' || encode(sha256(convert_to(COALESCE(string_agg(snapshot::text, ',' ORDER BY id), ''), 'UTF8')), 'hex') || ')'"),
    ("bills", "billing_bill", "issued_at", "COUNT(*)"),
    ("debt certificates", "billing_debtcertificate", "issued_at", "COUNT(*)"),
    ("seizure notices", "billing_seizurestep", "issued_at", "COUNT(*) || ' (' || COALESCE(string_agg(sha256, ',' ORDER BY id), '') || ')'"),
    ("stored documents", "billing_issueddocument", "created_at",
     "COUNT(*) || ' (' || encode(sha256(convert_to(COALESCE(string_agg(sha256, ',' ORDER BY id), ''), 'UTF8')), 'hex') || ')'"),
    ("roll corrections", "levy_rollcorrection", "created_at", "COUNT(*) || ' (' || COALESCE(SUM(net_delta), 0) || ')'"),
    ("day closes", "billing_dayclose", "closed_at",
     "COUNT(*) || ' (' || COALESCE(SUM(counted_cash), 0) || ', ' || COALESCE(SUM(counted_checks), 0) || ')'"),
    # every stored file: the merged parts' names and hashes (the issued PDFs' are in "stored documents" and the chain)
    ("bulk-printing parts", "billing_billbatchpart", "created_at",
     "COUNT(*) || ' (' || encode(sha256(convert_to(COALESCE(string_agg(pdf || ' ' || sha256, ',' ORDER BY id), ''), 'UTF8')), "
     "'hex') || ')'"),
)


def checkpoint_marks(cursor: Any, *, until: Any) -> dict[str, Any]:
    """Which records a checkpoint taken now covers: per table the highest id issued at or before
    ``until``; the final rolls finalized by then; the length and head hash of each chain."""
    marks: dict[str, Any] = {}
    for _name, table, stamp, _aggregate in CHECKPOINT_TABLES:
        cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table} WHERE {stamp} <= %s", [until])  # constants above
        marks[table] = cursor.fetchone()[0]
    cursor.execute("SELECT COALESCE(MAX(id), 0) FROM levy_levy WHERE status = 'final' AND finalized_at <= %s", [until])
    marks["levy_levy"] = cursor.fetchone()[0]
    cursor.execute("""
        SELECT DISTINCT ON (series) series, position, hash FROM levy_chainlink WHERE created_at <= %s
         ORDER BY series, position DESC
    """, [until])
    marks["chain"] = {series: [position, hash_] for series, position, hash_ in cursor.fetchall()}
    return marks


def checkpoint_totals(cursor: Any, marks: dict[str, Any]) -> dict[str, str]:
    """The figures of the records a checkpoint's ``marks`` cover (all append-only, so fixed)."""
    totals: dict[str, str] = {}
    for name, table, _stamp, aggregate in CHECKPOINT_TABLES:
        if table not in marks:  # a table added since the checkpoint was taken
            continue
        mark = int(marks[table])
        cursor.execute(f"SELECT {aggregate} FROM {table} WHERE id <= %s", [mark])  # constants above
        totals[f"{name} up to #{mark}"] = str(cursor.fetchone()[0])
    mark = int(marks.get("levy_levy", 0))
    for label, levy, lines, net in _rows(cursor, """
        SELECT fy.label, l.total_levy, COUNT(r.id), COALESCE(SUM(r.net), 0)
          FROM levy_levy l JOIN levy_fiscalyear fy ON fy.id = l.fiscal_year_id LEFT JOIN levy_rollline r ON r.levy_id = l.id
         WHERE l.status = 'final' AND l.id <= %s GROUP BY fy.label, l.id ORDER BY fy.label
    """, [mark]):
        totals[f"final roll {label}"] = f"{levy}: {lines} lines, net {net}"
    return totals


def last_checkpoint(cursor: Any) -> tuple | None:
    cursor.execute("""
        SELECT p.id, c.started_at, p.marks::text, p.totals::text FROM billing_bookscheckpoint p
          JOIN billing_bookscheck c ON c.id = p.books_check_id ORDER BY p.id DESC LIMIT 1
    """)
    return cursor.fetchone()


def check_checkpoint(cursor: Any, limit: int) -> list[Finding]:
    """The records the last checkpoint covered have the totals it stored, and each chain still
    has, at the length it had then, the head hash it had then."""
    last = last_checkpoint(cursor)
    if last is None:
        return []
    pk, started_at, marks, stored = last[0], last[1], json.loads(last[2]), dict(json.loads(last[3]))
    where = f"checkpoint {pk} of {started_at:%Y-%m-%d %H:%M}"
    now = checkpoint_totals(cursor, marks)
    differences = [(name, stored.get(name, "(none)"), now.get(name, "(none)"))
                   for name in [*stored, *(n for n in now if n not in stored)] if stored.get(name) != now.get(name)]
    findings = _limited("checkpoint", differences, limit, lambda row: f"{where}: {row[0]}: was {row[1]}, now {row[2]}")
    heads = [(series, position, hash_) for series, (position, hash_) in sorted(marks.get("chain", {}).items())]
    if heads:
        cursor.execute("""
            SELECT h.series, h.position, l.hash FROM unnest(%s::text[], %s::int[]) AS h(series, position)
              LEFT JOIN levy_chainlink l ON l.series = h.series AND l.position = h.position
        """, [[h[0] for h in heads], [h[1] for h in heads]])
        now_heads = {(series, position): hash_ for series, position, hash_ in cursor.fetchall()}
        moved = [(series, position, hash_, now_heads.get((series, position)))
                 for series, position, hash_ in heads if now_heads.get((series, position)) != hash_]
        findings += _limited("checkpoint", moved, limit, lambda row: (
            f"{where}: series {row[0]} had link {row[1]} with hash {row[2][:16]}…, it is now "
            f"{(row[3][:16] + '…') if row[3] else 'missing'}"
        ))
    return findings


# --- 9. The fund journal (issue 19) --------------------------------------------------------------

# A receipt's printed number (Receipt.display_number), as journal lines list it.
RECEIPT_NUMBER_SQL = "o.code || '-' || r.fiscal_year || '-' || lpad(r.number::text, 6, '0')"


def check_journals(cursor: Any, limit: int) -> list[Finding]:
    """Every journal has lines, and its debits equal its credits (the deferred trigger
    ``journal_balances`` refuses one that does not at commit; this finds one changed behind it)."""
    rows = _rows(cursor, """
        SELECT j.number, COUNT(l.id), COALESCE(SUM(l.debit), 0), COALESCE(SUM(l.credit), 0)
          FROM billing_journal j LEFT JOIN billing_journalline l ON l.journal_id = j.id
         GROUP BY j.id, j.number
        HAVING COUNT(l.id) = 0 OR SUM(l.debit) IS DISTINCT FROM SUM(l.credit)
         ORDER BY j.number LIMIT %s
    """, [limit + 1])
    return _limited("journals", rows, limit,
                    lambda row: f"journal {row[0]}: {row[1]} lines, debits {row[2]} ≠ credits {row[3]}" if row[1]
                    else f"journal {row[0]} has no lines")


def check_journal_days(cursor: Any, limit: int) -> list[Finding]:
    """¶13: the journals of each closed office day (``office``, ``day``) move cash and bank by its
    receipts less the voids dated that day of the office's payments and its refunds; and no
    receipt, void or refund of a closed day, nor any receipt of a collecting bank (journaled with
    its file), is missing from a journal line of its section."""
    rows = _rows(cursor, """
        WITH days AS (SELECT c.office_id, c.day, o.code FROM billing_dayclose c JOIN billing_office o ON o.id = c.office_id),
        collected AS (
            SELECT d.office_id, d.day,
                   (SELECT COALESCE(SUM(p.amount), 0) FROM billing_payment p WHERE p.office_id = d.office_id AND p.paid_on = d.day)
                 - (SELECT COALESCE(SUM(p.amount), 0) FROM billing_paymentvoid v JOIN billing_payment p ON p.id = v.payment_id
                     WHERE p.office_id = d.office_id AND v.voided_on = d.day)
                 - (SELECT COALESCE(SUM(f.amount), 0) FROM billing_refund f WHERE f.office_id = d.office_id AND f.refunded_on = d.day)
                   AS expected,
                   (SELECT COALESCE(SUM(l.debit - l.credit), 0) FROM billing_journal j JOIN billing_journalline l ON l.journal_id = j.id
                     WHERE j.office_id = d.office_id AND j.day = d.day AND l.role IN ('cash', 'bank')) AS journaled,
                   d.code
              FROM days d
        )
        SELECT code, day, expected, journaled FROM collected WHERE expected <> journaled ORDER BY day, code LIMIT %s
    """, [limit + 1])
    findings = _limited("journals", rows, limit, lambda row: (
        f"office {row[0]} {row[1]:%Y-%m-%d}: receipts less voids and refunds {row[2]}, its journals move {row[3]}"))
    missing = _rows(cursor, f"""
        WITH named AS (
            SELECT DISTINCT l.section, e.number
              FROM billing_journalline l CROSS JOIN LATERAL jsonb_array_elements_text(l.receipts) AS e(number)
        ),
        owed AS (
            SELECT 'receipts' AS section, {RECEIPT_NUMBER_SQL} AS number
              FROM billing_payment p JOIN billing_receipt r ON r.payment_id = p.id JOIN billing_office o ON o.id = r.office_id
             WHERE EXISTS (SELECT 1 FROM billing_dayclose c WHERE c.office_id = p.office_id AND c.day = p.paid_on)
                OR o.kind = 'bank'  -- a collecting bank's receipts are journaled per file (services.bank)
            UNION ALL
            SELECT 'voids', {RECEIPT_NUMBER_SQL}
              FROM billing_paymentvoid v JOIN billing_payment p ON p.id = v.payment_id
              JOIN billing_receipt r ON r.payment_id = p.id JOIN billing_office o ON o.id = r.office_id
             WHERE EXISTS (SELECT 1 FROM billing_dayclose c WHERE c.office_id = p.office_id AND c.day = v.voided_on)
            UNION ALL
            SELECT 'refunds', CASE WHEN f.number <> '' THEN f.number ELSE 'RE#' || f.id END
              FROM billing_refund f
             WHERE EXISTS (SELECT 1 FROM billing_dayclose c WHERE c.office_id = f.office_id AND c.day = f.refunded_on)
        )
        SELECT o.section, o.number FROM owed o
         WHERE NOT EXISTS (SELECT 1 FROM named n WHERE n.section = o.section AND n.number = o.number)
         ORDER BY o.section, o.number LIMIT %s
    """, [limit + 1])
    what = {"receipts": "receipt", "voids": "void of receipt", "refunds": "refund"}
    return findings + _limited("journals", missing, limit,
                               lambda row: f"{what[row[0]]} {row[1]} is in no journal")


# --- Running them ---------------------------------------------------------------------------------

CHECKS: tuple[Callable[[Any, int], list[Finding]], ...] = (
    check_levy, check_corrections, check_installments, check_ledger, check_receipts, check_document_series,
    check_receipt_allocation, check_stored_allocations, check_statements, check_chain, check_series_counts, check_checkpoint,
    check_journals, check_journal_days,
)


def has_books(cursor: Any) -> bool:
    """Whether anything the checks look at exists (a fresh or registry-only database has nothing)."""
    cursor.execute("""
        SELECT EXISTS (SELECT 1 FROM levy_levy WHERE status = 'final') OR EXISTS (SELECT 1 FROM billing_charge)
            OR EXISTS (SELECT 1 FROM billing_payment) OR EXISTS (SELECT 1 FROM billing_ledgerentry)
            OR EXISTS (SELECT 1 FROM billing_receipt) OR EXISTS (SELECT 1 FROM billing_receiptseries)
            OR EXISTS (SELECT 1 FROM billing_documentseries) OR EXISTS (SELECT 1 FROM billing_issueddocument)
            OR EXISTS (SELECT 1 FROM billing_billbatchpart) OR EXISTS (SELECT 1 FROM levy_rollcorrection)
            OR EXISTS (SELECT 1 FROM levy_chainlink) OR EXISTS (SELECT 1 FROM billing_bookscheckpoint)
            OR EXISTS (SELECT 1 FROM billing_refund) OR EXISTS (SELECT 1 FROM billing_dayclose)
            OR EXISTS (SELECT 1 FROM billing_journal)
    """)
    return bool(cursor.fetchone()[0])


def verify(*, using: str = "default", limit: int = DEFAULT_LIMIT, file_sample: int | None = None) -> list[Finding]:
    """Every invariant of the books; an empty list when they balance. Read-only. The stored
    documents' files are all re-hashed, or ``file_sample`` random ones of each kind."""
    with connections[using].cursor() as cursor:
        if not has_books(cursor):
            return []
        findings = []
        for check in CHECKS:
            findings += check(cursor, limit)
    return findings + check_documents(limit, sample=file_sample, using=using) + check_batch_files(limit)


# --- Control totals -------------------------------------------------------------------------------


# The figures below are computed by one function each, over the whole books (``control_totals``)
# or over a period (``start``..``end``, both days included; issue 19's registers for auditors,
# ``billing.registers``, print these same functions' figures for their period).


def _between(column: str, start: date | None, end: date | None) -> tuple[str, list[Any]]:
    """``AND``-able SQL condition (and its parameters) for ``column`` (a date) within the period."""
    sql, params = "TRUE", []
    if start is not None:
        sql, params = f"{sql} AND {column} >= %s", [*params, start]
    if end is not None:
        sql, params = f"{sql} AND {column} <= %s", [*params, end]
    return sql, params


def _local_day(column: str) -> str:
    """The day (in the district's time zone) of a timestamp column, for records dated by when they were made."""
    return f"({column} AT TIME ZONE '{settings.TIME_ZONE}')::date"


def payment_totals(cursor: Any, *, start: date | None = None, end: date | None = None) -> tuple[int, Decimal, int, Decimal]:
    """Payments (each has its numbered receipt) dated in the period: count, amount, and how many
    of them (and how much) were voided since."""
    where, params = _between("pm.paid_on", start, end)
    ((count, amount, voided, voided_amount),) = _rows(cursor, f"""
        SELECT COUNT(pm.id), COALESCE(SUM(pm.amount), 0), COUNT(v.id), COALESCE(SUM(pm.amount) FILTER (WHERE v.id IS NOT NULL), 0)
          FROM billing_payment pm LEFT JOIN billing_paymentvoid v ON v.payment_id = pm.id
         WHERE {where}
    """, params)
    return count, amount, voided, voided_amount


def void_totals(cursor: Any, *, start: date | None = None, end: date | None = None) -> tuple[int, Decimal]:
    """Voids (¶13) dated in the period: count and the amount of the payments they voided. Over the
    whole books these are ``payment_totals``' voided payments (a payment is voided at most once)."""
    where, params = _between("v.voided_on", start, end)
    ((count, amount),) = _rows(cursor, f"""
        SELECT COUNT(v.id), COALESCE(SUM(pm.amount), 0)
          FROM billing_paymentvoid v JOIN billing_payment pm ON pm.id = v.payment_id
         WHERE {where}
    """, params)
    return count, amount


@dataclass(frozen=True)
class LedgerTotals:
    surcharges: Decimal  # realized surcharges less the ones voids reversed
    refunds: Decimal
    refund_count: int
    corrections: Decimal  # correction credits
    debit: Decimal
    credit: Decimal
    entries: int


def ledger_totals(cursor: Any, *, start: date | None = None, end: date | None = None) -> LedgerTotals:
    """The ledger's entries dated in the period, summed by kind."""
    where, params = _between("entry_date", start, end)
    ((surcharges, refunds, refund_count, corrections, debit, credit, entries),) = _rows(cursor, f"""
        SELECT COALESCE(SUM(debit) FILTER (WHERE kind = 'surcharge'), 0)
               - COALESCE(SUM(credit) FILTER (WHERE kind = 'surcharge_void'), 0),
               COALESCE(SUM(debit) FILTER (WHERE kind = 'refund'), 0), COUNT(*) FILTER (WHERE kind = 'refund'),
               COALESCE(SUM(credit) FILTER (WHERE kind = 'correction'), 0),
               COALESCE(SUM(debit), 0), COALESCE(SUM(credit), 0), COUNT(*)
          FROM billing_ledgerentry
         WHERE {where}
    """, params)
    return LedgerTotals(surcharges=surcharges, refunds=refunds, refund_count=refund_count, corrections=corrections,
                        debit=debit, credit=credit, entries=entries)


def receipt_totals(cursor: Any, *, start: date | None = None, end: date | None = None) -> tuple[int, int, int]:
    """Receipts of payments dated in the period, how many of them belong to voided payments, and
    the receipt series (office and fiscal year) they are numbered in (all series, over the whole books)."""
    where, params = _between("pm.paid_on", start, end)
    series = "(SELECT COUNT(*) FROM billing_receiptseries)" if start is None and end is None else "COUNT(DISTINCT (r.office_id, r.fiscal_year))"
    ((receipts, voided, series_count),) = _rows(cursor, f"""
        SELECT COUNT(r.id), COUNT(v.id), {series}
          FROM billing_receipt r JOIN billing_payment pm ON pm.id = r.payment_id
          LEFT JOIN billing_paymentvoid v ON v.payment_id = r.payment_id
         WHERE {where}
    """, params)
    return receipts, voided, series_count


def correction_totals(cursor: Any, *, start: date | None = None, end: date | None = None) -> list[tuple[str, int, Decimal]]:
    """Roll corrections (¶9) made in the period, per fiscal year of the roll: count and net change."""
    where, params = _between(_local_day("c.created_at"), start, end)
    return _rows(cursor, f"""
        SELECT fy.label, COUNT(c.id), SUM(c.net_delta) FROM levy_rollcorrection c
          JOIN levy_rollline r ON r.id = c.roll_line_id JOIN levy_levy l ON l.id = r.levy_id
          JOIN levy_fiscalyear fy ON fy.id = l.fiscal_year_id
         WHERE {where}
         GROUP BY fy.label ORDER BY fy.label
    """, params)


def final_levy_totals(cursor: Any, *, start: date | None = None, end: date | None = None,
                      late_only: bool = False) -> list[tuple[str, Decimal, Decimal, Decimal, int, int]]:
    """Final rolls finalized in the period (only the ones finalized after July 1, ¶11, with
    ``late_only``): fiscal year, ¶4 total levy, credits, net, lines and lines levied."""
    where, params = _between("l.finalized_on", start, end)
    late = " AND l.finalized_late" if late_only else ""
    return _rows(cursor, f"""
        SELECT fy.label, l.total_levy, l.roll_credits, l.roll_net, l.parcels_in_roll, l.parcels_levied
          FROM levy_levy l JOIN levy_fiscalyear fy ON fy.id = l.fiscal_year_id
         WHERE l.status = 'final' AND {where}{late} ORDER BY fy.label
    """, params)


def day_close_totals(cursor: Any, *, start: date | None = None, end: date | None = None) -> tuple[int, Decimal, Decimal, int]:
    """Day closes of days in the period: count, cash over (+) or short (−) and checks over or
    short (counted − expected, summed), and how many did not match (closed with an explanation)."""
    where, params = _between("day", start, end)
    ((count, cash, checks, unmatched),) = _rows(cursor, f"""
        SELECT COUNT(*), COALESCE(SUM(counted_cash - expected_cash), 0), COALESCE(SUM(counted_checks - expected_checks), 0),
               COUNT(*) FILTER (WHERE counted_cash <> expected_cash OR counted_checks <> expected_checks)
          FROM billing_dayclose WHERE {where}
    """, params)
    return count, cash, checks, unmatched


def bill_totals(cursor: Any, *, start: date | None = None, end: date | None = None) -> int:
    """Bills (*avisos*, ¶12) issued in the period."""
    where, params = _between("issued_on", start, end)
    return _rows(cursor, f"SELECT COUNT(*) FROM billing_bill WHERE {where}", params)[0][0]


def reprint_totals(cursor: Any, *, start: date | None = None, end: date | None = None) -> list[tuple[str, int]]:
    """COPIA reprints (``ReprintLog``) printed in the period, per kind of document."""
    where, params = _between("g.printed_on", start, end)
    return _rows(cursor, f"""
        SELECT d.kind, COUNT(*) FROM billing_reprintlog g JOIN billing_issueddocument d ON d.id = g.document_id
         WHERE {where} GROUP BY d.kind ORDER BY d.kind
    """, params)


def control_totals(*, using: str = "default") -> dict[str, str]:
    """Figures two copies of the books must share, as strings (``name -> value``), in a fixed order."""
    totals: dict[str, str] = {}
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM parcels_parcel")
        totals["parcels"] = str(cursor.fetchone()[0])
        for label, total, credits, net, lines, levied in final_levy_totals(cursor):
            totals[f"levy {label}"] = str(total)
            totals[f"levy {label} credits"] = str(credits)
            totals[f"levy {label} net"] = str(net)
            totals[f"levy {label} lines"] = f"{lines} ({levied} levied)"
        for label, count, net in correction_totals(cursor):
            totals[f"corrections {label}"] = f"{count} ({net})"
        for label, kind, count, principal in _rows(cursor, """
            SELECT fy.label, c.kind, COUNT(*), SUM(c.principal) FROM billing_charge c
              JOIN levy_fiscalyear fy ON fy.id = c.fiscal_year_id
             GROUP BY fy.label, c.kind ORDER BY fy.label, c.kind
        """):
            totals[f"charges {label} {kind}"] = f"{count} ({principal})"
        count, amount, _voided, _voided_amount = payment_totals(cursor)
        voided, voided_amount = void_totals(cursor)
        totals["payments"] = f"{count} ({amount})"
        totals["payments voided"] = f"{voided} ({voided_amount})"
        ledger = ledger_totals(cursor)
        totals["surcharges realized"] = str(ledger.surcharges)
        totals["refunds"] = str(ledger.refunds)
        totals["correction credits"] = str(ledger.corrections)
        totals["ledger entries"] = str(ledger.entries)
        totals["ledger debits"] = str(ledger.debit)
        totals["ledger credits"] = str(ledger.credit)
        totals["ledger balance"] = str(Decimal(ledger.debit) - Decimal(ledger.credit))
        receipts, voided, series = receipt_totals(cursor)
        totals["receipts"] = f"{receipts} in {series} series ({voided} of voided payments)"
        for kind, count in _rows(cursor, "SELECT kind, COUNT(*) FROM billing_issueddocument GROUP BY kind ORDER BY kind"):
            totals[f"documents {kind}"] = str(count)
        totals["bills"] = str(bill_totals(cursor))
        for name, table in (("debt certificates", "billing_debtcertificate"),
                            ("seizure notices", "billing_seizurestep"), ("bulk-printing parts", "billing_billbatchpart")):
            cursor.execute(f"SELECT COUNT(*) FROM {table}")  # table names are the constants above
            totals[name] = str(cursor.fetchone()[0])
        cursor.execute("""
            SELECT encode(sha256(convert_to(COALESCE(string_agg(kind || ' ' || number || ' ' || sha256, ',' ORDER BY kind, number), ''),
                                            'UTF8')), 'hex')
              FROM billing_issueddocument
        """)
        totals["documents digest"] = cursor.fetchone()[0]
    return totals


ISSUED_ALL = -1  # ``check(issued_sample=ISSUED_ALL)``: every issued document (``verify_books --full``)


def check(*, limit: int = DEFAULT_LIMIT, expected_totals: dict[str, str] | None = None,
          using: str = "default", issued_sample: int | None = None) -> tuple[list[Finding], dict[str, str]]:
    """``verify()``'s findings, plus the issued documents' statements read again
    (``billing.issued``: ``issued_sample`` of each kind, its default when None, all with
    ``ISSUED_ALL``), plus (with ``expected_totals``) each control total that differs from them,
    and the control totals. Read-only."""
    from .issued import DEFAULT_SAMPLE, check_issued  # it reads accounts, which sit above the books' SQL

    # ``verify_books --sample N`` re-hashes N random stored files of each kind too; by default, and with --full, all.
    file_sample = None if issued_sample is None or issued_sample == ISSUED_ALL else issued_sample
    findings = verify(using=using, limit=limit, file_sample=file_sample)
    with connections[using].cursor() as cursor:
        any_books = has_books(cursor)
    if any_books:
        sample = DEFAULT_SAMPLE if issued_sample is None else (None if issued_sample == ISSUED_ALL else issued_sample)
        findings += [Finding("issued", message) for message in check_issued(sample=sample, limit=limit)]
    totals = control_totals(using=using)
    if expected_totals is not None:
        findings += totals_differences(expected_totals, totals)
    return findings, totals


def totals_differences(expected: dict[str, str], actual: dict[str, str]) -> list[Finding]:
    """Findings for each control total that differs between two copies of the books."""
    return [
        Finding("totals", f"{name}: expected {expected.get(name, '(none)')}, found {actual.get(name, '(none)')}")
        for name in [*expected, *(name for name in actual if name not in expected)]
        if expected.get(name) != actual.get(name)
    ]
