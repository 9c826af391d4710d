"""¶1(2), ¶2, ¶4, ¶12: the fund journal for Hacienda's accounting system (issue 19).

Three kinds of balanced journal (``billing.models.Journal``), each written once for the event
that caused it, in that event's transaction:

- **accrual**: finalizing a roll (``accrual_journal_for_roll``) debits the levy receivable of its
  fiscal year and credits levy income by the installments issued (¶4, ¶9, ¶12); each correction
  (``accrual_journal_for_correction``) does the same for what it raised and the reverse for
  what it lowered, and moves the money it freed (give-backs) to unapplied credits and from there
  to the charges it paid (*crédito aplicado*).
- **collections**: an office's day close, or a bank file applied (``collections_journal_post``,
  the one function both call): cash or bank debited against what the day's receipts paid, as
  their stored ``PaymentAllocation`` rows say: levy receivable by fiscal year, surcharge income
  (¶12), water sales income (sec. 374a) and unapplied credits (money beyond issued charges). The
  day's voids and refunds get their own lines (sections ``voids`` and ``refunds``).
- **adjustment**: a void or a refund dated in a day already closed: the closed day's journal is
  never changed; the later event posts its own dated journal.

Every levy amount is split between the reserve fund (¶1(2)) and the Operating Fund (¶2) in the
proportions of that fiscal year's final levy (``rules.fund_split``, largest remainder to the
cent). Surcharges and water sales go to the Operating Fund (``docs/interpretations.md``, "Where
surcharge income goes"); unapplied credits belong to no fund (money held for the landowner). In
a collections journal the cash or bank line is split by fund too, so each fund balances on its
own. Account codes come from ``settings.JOURNAL_ACCOUNTS`` (read when posting).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet, Sum

from levy.models import Levy, RollCorrection

from .. import rules
from ..models import (
    Charge,
    CorrectionCharge,
    CreditApplication,
    DayClose,
    GiveBack,
    Journal,
    JournalLine,
    Payment,
    PaymentAllocation,
    PaymentVoid,
    PrincipalAdjustment,
    Refund,
    _office_day_lock,
)

ZERO = Decimal("0.00")
RESERVE, OPERATING, NONE = JournalLine.Fund.RESERVE, JournalLine.Fund.OPERATING, JournalLine.Fund.NONE
SPLIT = "split"  # a line of the levy: split reserve / operating in its fiscal year's proportions
MONEY_ROLES = ("cash", "bank")
ACCOUNT_ROLES = ("cash", "bank", "levy_receivable", "unapplied_credits", "levy_income", "surcharge_income",
                 "water_sales_income")
CSV_COLUMNS = ("journal", "posted_on", "account", "fund", "debit", "credit", "receipts")


def journal_accounts() -> dict[str, str]:
    """The account code of each role, from ``settings.JOURNAL_ACCOUNTS`` (read at call time)."""
    accounts = dict(settings.JOURNAL_ACCOUNTS)
    missing = [role for role in ACCOUNT_ROLES if not str(accounts.get(role, "")).strip()]
    if missing:
        raise ValueError(f"JOURNAL_ACCOUNTS has no code for {', '.join(missing)}")
    return accounts


def account_code(role: str, fiscal_year: str | None, accounts: dict[str, str]) -> str:
    """The exported code: the levy receivable is kept by fiscal year (``1210-2026-2027``)."""
    code = str(accounts[role]).strip()
    return f"{code}-{fiscal_year}" if role == "levy_receivable" and fiscal_year else code


def receipt_number(office_code: str, fiscal_year: str, number: int) -> str:
    """A receipt's printed number (``Receipt.display_number``) from its parts."""
    return f"{office_code}-{fiscal_year}-{number:06d}"


# --- Building lines ---------------------------------------------------------------------------------


@dataclass
class _Group:
    amount: Decimal = ZERO
    receipts: list[str] = field(default_factory=list)

    def add(self, amount: Decimal, receipt: str | None) -> None:
        self.amount += amount
        if receipt and receipt not in self.receipts:
            self.receipts.append(receipt)


class _Lines:
    """Postings gathered by (section, money role, account role, fiscal year, fund mode, side),
    then turned into lines: a ``SPLIT`` group becomes a reserve and an Operating Fund line in
    its fiscal year's proportions; with a money role, each (section, money role, fund) gets the
    cash or bank line that balances it, so each fund balances on its own."""

    def __init__(self, proportions: dict[str | None, tuple[Decimal, Decimal]]) -> None:
        self.groups: dict[tuple[str, str, str, str | None, str, str], _Group] = {}
        self.proportions = proportions

    def post(self, *, section: str, role: str, fund: str, side: str, amount: Decimal, fiscal_year: str | None = None,
             money: str = "", receipt: str | None = None) -> None:
        if amount == 0:
            return
        if fund == SPLIT and fiscal_year not in self.proportions:
            raise ValueError(f"no levy proportions for {fiscal_year}")
        key = (section, money, role, fiscal_year if fund == SPLIT or role == "levy_receivable" else None, fund, side)
        self.groups.setdefault(key, _Group()).add(amount, receipt)

    def lines(self, accounts: dict[str, str]) -> list[JournalLine]:
        built: list[JournalLine] = []
        money: dict[tuple[str, str, str], _Group] = {}  # (section, money role, fund): the net credit it balances
        for (section, money_role, role, fiscal_year, fund, side), group in self.groups.items():
            if fund == SPLIT:
                reserve, total = self.proportions[fiscal_year]
                parts = rules.fund_split(amount=group.amount, reserve=reserve, total_levy=total)
                shares = ((RESERVE, parts.reserve), (OPERATING, parts.operating))
            else:
                shares = ((fund, group.amount),)
            for share_fund, amount in shares:
                if amount == 0:
                    continue
                built.append(JournalLine(
                    section=section, role=role, account=account_code(role, fiscal_year, accounts), fund=share_fund,
                    debit=amount if side == "debit" else ZERO, credit=amount if side == "credit" else ZERO,
                    receipts=list(group.receipts),
                ))
                if money_role:
                    net = money.setdefault((section, money_role, share_fund), _Group())
                    net.add(amount if side == "credit" else -amount, None)
                    for receipt in group.receipts:
                        net.add(ZERO, receipt)
        for (section, money_role, fund), net in money.items():
            if net.amount == 0:
                continue
            built.append(JournalLine(
                section=section, role=money_role, account=account_code(money_role, None, accounts), fund=fund,
                debit=net.amount if net.amount > 0 else ZERO, credit=-net.amount if net.amount < 0 else ZERO,
                receipts=list(net.receipts),
            ))
        order = {name: index for index, name in enumerate(JournalLine.Section.values)}
        funds = {RESERVE: 0, OPERATING: 1, NONE: 2}
        built.sort(key=lambda line: (order[line.section], line.credit > 0, line.account, funds[line.fund]))
        return built


def levy_proportions(fiscal_years: Iterable[str]) -> dict[str | None, tuple[Decimal, Decimal]]:
    """¶1(2), ¶4: ``{fiscal year: (reserve, total levy)}`` of each year's final levy; a year
    with no final levy (a correction charge cannot exist without one) has no reserve part."""
    wanted = set(fiscal_years)
    found: dict[str | None, tuple[Decimal, Decimal]] = {
        label: (reserve, total) for label, reserve, total in Levy.objects.filter(
            status=Levy.Status.FINAL, fiscal_year__label__in=wanted).values_list("fiscal_year__label", "reserve", "total_levy")
        if total > 0
    }
    for label in wanted:
        found.setdefault(label, (ZERO, Decimal("1.00")))
    return found


def _charge_target(kind: str) -> tuple[str, str]:
    """Where a charge's principal is kept: (account role, fund)."""
    if kind in (Charge.Kind.INSTALLMENT, Charge.Kind.CORRECTION):
        return "levy_receivable", SPLIT
    if kind == Charge.Kind.WATER:
        return "water_sales_income", OPERATING  # sec. 374a: recognized when collected
    return "unapplied_credits", NONE  # a refund charge: money that was the landowner's credit


def _journal_create(*, acting_user: Any, kind: str, source: str, source_id: int, posted_on: date, description: str,
                    lines: list[JournalLine], office: Any = None, day: date | None = None) -> Journal:
    with connection.cursor() as cursor:  # the id first: the number is made of it (journals need no gapless series)
        cursor.execute("SELECT nextval(pg_get_serial_sequence('billing_journal', 'id'))")
        pk = cursor.fetchone()[0]
    journal = Journal.objects.create(
        pk=pk, number=f"DI-{pk:06d}", kind=kind, posted_on=posted_on, source=source,
        source_id=source_id, office=office, day=day, description=description[:200], created_by=acting_user,
    )
    for position, line in enumerate(lines, start=1):
        line.journal = journal
        line.position = position
    JournalLine.objects.bulk_create(lines)
    return journal


# --- Accrual: the roll and its corrections -------------------------------------------------------------


def accrual_journal_for_roll(*, acting_user: Any, levy: Levy) -> Journal | None:
    """¶4, ¶9, ¶12: the finalized roll: levy receivable of its fiscal year (debit) against levy
    income (credit) by the installments issued, split reserve / Operating Fund. Once per levy;
    none when nothing was issued (every line at 100 % credit)."""
    existing = Journal.objects.filter(source=Journal.Source.ROLL_FINALIZE, source_id=levy.pk).first()
    if existing is not None:
        return existing
    label = levy.fiscal_year.label
    issued = Charge.objects.filter(roll_line__levy=levy, kind=Charge.Kind.INSTALLMENT).aggregate(total=Sum("principal"))["total"] or ZERO
    if issued == 0:
        return None
    lines = _Lines(levy_proportions([label]))
    section = JournalLine.Section.ACCRUAL
    lines.post(section=section, role="levy_receivable", fund=SPLIT, side="debit", amount=issued, fiscal_year=label)
    lines.post(section=section, role="levy_income", fund=SPLIT, side="credit", amount=issued, fiscal_year=label)
    return _journal_create(
        acting_user=acting_user, kind=Journal.Kind.ACCRUAL, source=Journal.Source.ROLL_FINALIZE, source_id=levy.pk,
        posted_on=levy.finalized_on, description=f"Padrón {label} finalizado: contribución por cobrar (¶4, ¶9)",
        lines=lines.lines(journal_accounts()),
    )


def accrual_journal_for_correction(*, acting_user: Any, correction: RollCorrection, posted_on: date) -> Journal | None:
    """¶9, ¶11, ¶12: a correction's own dated journal, from the rows ``correction_post`` wrote:
    what it raised (receivable against income), what it lowered (the reverse), the money it
    freed from lowered charges (``GiveBack``: receivable or surcharge income to unapplied credits)
    and that money paid to open charges (``CreditApplication``: unapplied credits to the charge)."""
    existing = Journal.objects.filter(source=Journal.Source.ROLL_CORRECTION, source_id=correction.pk).first()
    if existing is not None:
        return existing
    label = correction.roll_line.levy.fiscal_year.label
    rises = sum((c.charge.principal.amount for c in CorrectionCharge.objects.filter(correction=correction).select_related("charge")),
                ZERO)
    lowered = sum((a.amount.amount for a in PrincipalAdjustment.objects.filter(correction=correction)), ZERO)
    backs = list(GiveBack.objects.filter(correction=correction).select_related("charge__fiscal_year"))
    applied = list(CreditApplication.objects.filter(correction=correction, source="correction")
                   .select_related("charge__fiscal_year"))
    years = {label} | {row.charge.fiscal_year.label for row in [*backs, *applied]}
    lines = _Lines(levy_proportions(years))
    accrual, reclass = JournalLine.Section.ACCRUAL, JournalLine.Section.RECLASS
    lines.post(section=accrual, role="levy_receivable", fund=SPLIT, side="debit", amount=rises, fiscal_year=label)
    lines.post(section=accrual, role="levy_income", fund=SPLIT, side="credit", amount=rises, fiscal_year=label)
    lines.post(section=accrual, role="levy_income", fund=SPLIT, side="debit", amount=lowered, fiscal_year=label)
    lines.post(section=accrual, role="levy_receivable", fund=SPLIT, side="credit", amount=lowered, fiscal_year=label)
    for back in backs:
        role, fund = _charge_target(back.charge.kind)
        year = back.charge.fiscal_year.label
        lines.post(section=reclass, role=role, fund=fund, side="debit", amount=back.principal.amount, fiscal_year=year)
        lines.post(section=reclass, role="surcharge_income", fund=OPERATING, side="debit", amount=back.surcharge.amount)
        lines.post(section=reclass, role="unapplied_credits", fund=NONE, side="credit", amount=back.surcharge.amount + back.principal.amount)
    for row in applied:
        role, fund = _charge_target(row.charge.kind)
        year = row.charge.fiscal_year.label
        lines.post(section=reclass, role="unapplied_credits", fund=NONE, side="debit",
                   amount=row.surcharge.amount + row.principal.amount)
        lines.post(section=reclass, role=role, fund=fund, side="credit", amount=row.principal.amount, fiscal_year=year)
        lines.post(section=reclass, role="surcharge_income", fund=OPERATING, side="credit", amount=row.surcharge.amount)
    built = lines.lines(journal_accounts())
    if not built:
        return None
    number = RollCorrection.objects.numbered().get(pk=correction.pk).number
    return _journal_create(
        acting_user=acting_user, kind=Journal.Kind.ACCRUAL, source=Journal.Source.ROLL_CORRECTION, source_id=correction.pk,
        posted_on=posted_on, description=f"Corrección n.º {number} del padrón {label} (¶9)", lines=built,
    )


# --- Collections: a day close, a bank file, and adjustments of closed days -------------------------------


def _post_allocations(lines: _Lines, *, section: str, side: str, money: str, payments: list[Payment]) -> None:
    """What each payment paid, as its stored allocation rows say, on ``side``."""
    numbers = {p.pk: receipt_number(p.receipt.office.code, p.receipt.fiscal_year, p.receipt.number) for p in payments}
    for payment_id, kind, year, surcharge, principal in (
        PaymentAllocation.objects.filter(payment_id__in=numbers).order_by("payment_id", "id")
        .values_list("payment_id", "charge__kind", "charge__fiscal_year__label", "surcharge", "principal")
    ):
        receipt = numbers[payment_id]
        role, fund = _charge_target(kind) if kind else ("unapplied_credits", NONE)
        lines.post(section=section, role=role, fund=fund, side=side, amount=principal, fiscal_year=year, money=money,
                   receipt=receipt)
        lines.post(section=section, role="surcharge_income", fund=OPERATING, side=side, amount=surcharge, money=money,
                   receipt=receipt)


@transaction.atomic
def collections_journal_post(
    *, acting_user: Any, payments: Iterable[Payment] = (), voids: Iterable[PaymentVoid] = (), refunds: Iterable[Refund] = (),
    source: str, source_id: int, posted_on: date, description: str, office: Any = None, day: date | None = None,
    money_account: str = "cash",
) -> Journal | None:
    """¶12, ¶13, sec. 374a: the balanced collections (or adjustment) journal of a set of payments,
    voids and refunds, written once per ``(source, source_id)`` (a second call returns the first
    journal): the day close of an office (``source`` ``day_close``), a bank file applied
    (``bank_file``, ``money_account`` ``bank``), or a void or refund dated in a closed day
    (``void``, ``refund``: an adjustment).

    Receipts: ``money_account`` debited against what their stored allocations paid; voids: the
    same lines reversed (the voided receipt's allocation); refunds: unapplied credits debited,
    cash (a cash refund) or bank (a check) credited. None when there is nothing to post."""
    if money_account not in MONEY_ROLES:
        raise ValueError(f"money_account must be one of {MONEY_ROLES}")
    existing = Journal.objects.filter(source=source, source_id=source_id).first()
    if existing is not None:
        return existing
    kind = (Journal.Kind.COLLECTIONS if source in (Journal.Source.DAY_CLOSE, Journal.Source.BANK_FILE,
                                                   Journal.Source.BANK_EXCEPTION)
            else Journal.Kind.ADJUSTMENT)
    payments = list(Payment.objects.filter(pk__in=[p.pk for p in payments]).select_related("receipt__office"))
    voided = list(Payment.objects.filter(void__in=[v.pk for v in voids]).select_related("receipt__office"))
    refunds = list(refunds)
    years = set(PaymentAllocation.objects.filter(payment__in=[*payments, *voided], charge__isnull=False)
                .values_list("charge__fiscal_year__label", flat=True))
    lines = _Lines(levy_proportions(years))
    _post_allocations(lines, section=JournalLine.Section.RECEIPTS, side="credit", money=money_account, payments=payments)
    _post_allocations(lines, section=JournalLine.Section.VOIDS, side="debit", money=money_account, payments=voided)
    for refund in refunds:
        money = "bank" if refund.method == Refund.Method.CHECK else money_account
        lines.post(section=JournalLine.Section.REFUNDS, role="unapplied_credits", fund=NONE, side="debit",
                   amount=refund.amount.amount, money=money, receipt=refund.number or f"RE#{refund.pk}")
    built = lines.lines(journal_accounts())
    if not built:
        return None
    return _journal_create(acting_user=acting_user, kind=kind, source=source, source_id=source_id, posted_on=posted_on,
                           description=description, lines=built, office=office, day=day)


def day_close_journal_post(*, acting_user: Any, close: DayClose) -> Journal | None:
    """¶13: the collections journal of a closed office day: its receipts, the voids dated that
    day of the office's payments and the refunds it paid that day."""
    office, day = close.office, close.day
    return collections_journal_post(
        acting_user=acting_user, source=Journal.Source.DAY_CLOSE, source_id=close.pk, posted_on=day, office=office, day=day,
        payments=Payment.objects.filter(office=office, paid_on=day),
        voids=PaymentVoid.objects.filter(payment__office=office, voided_on=day),
        refunds=Refund.objects.filter(office=office, refunded_on=day),
        description=f"Recaudaciones del {day:%d/%m/%Y} en {office.code} (cierre del día)",
    )


def _wait_for_a_close_under_way(*, office_id: int, day: date) -> None:
    """Take the office day's lock shared, as a payment does (``billing.models.PAYMENT_GUARDS``):
    a close of that day under way is waited for, and a close that starts later waits for this
    transaction. So a void or refund is either in the close's journal or sees the close and
    posts its adjustment, never neither nor both."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_advisory_xact_lock_shared({_office_day_lock('%s', '%s')})", [office_id, day])


def adjustment_for_void(*, acting_user: Any, void: PaymentVoid, today: date) -> Journal | None:
    """A void dated in an office day already closed: its own adjustment journal, posted today;
    the closed day's journal stays as it was. Nothing when the day is still open (its close
    will include the void)."""
    office_id = void.payment.office_id
    _wait_for_a_close_under_way(office_id=office_id, day=void.voided_on)
    if not DayClose.objects.filter(office_id=office_id, day=void.voided_on).exists():
        return None
    return collections_journal_post(
        acting_user=acting_user, source=Journal.Source.VOID, source_id=void.pk, posted_on=max(today, void.voided_on),
        office=void.payment.office, day=void.voided_on, voids=[void],
        description=f"Anulación del {void.voided_on:%d/%m/%Y} en un día ya cerrado",
    )


def adjustment_for_refund(*, acting_user: Any, refund: Refund, today: date) -> Journal | None:
    """A refund dated in an office day already closed (a check refund): its own adjustment journal."""
    if refund.office_id is None:
        return None
    _wait_for_a_close_under_way(office_id=refund.office_id, day=refund.refunded_on)
    if not DayClose.objects.filter(office_id=refund.office_id, day=refund.refunded_on).exists():
        return None
    return collections_journal_post(
        acting_user=acting_user, source=Journal.Source.REFUND, source_id=refund.pk, posted_on=max(today, refund.refunded_on),
        office=refund.office, day=refund.refunded_on, refunds=[refund],
        description=f"Reembolso {refund.number} del {refund.refunded_on:%d/%m/%Y} en un día ya cerrado",
    )


# --- Reading and exporting ---------------------------------------------------------------------------


def journals_on(day: date) -> QuerySet[Journal]:
    """The journals posted on ``day``, with their lines (two queries)."""
    return Journal.objects.filter(posted_on=day).select_related("office", "created_by").prefetch_related("lines").order_by("id")


def journal_csv(journals: Iterable[Journal]) -> str:
    """The documented CSV (``README.md``, "The fund journal"): one row per journal line,
    ``journal, posted_on, account, fund, debit, credit, receipts`` (receipts joined by spaces)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for journal in journals:
        for line in journal.lines.all():
            writer.writerow([journal.number, journal.posted_on.isoformat(), line.account, line.fund, f"{line.debit:.2f}",
                             f"{line.credit:.2f}", " ".join(line.receipts)])
    return out.getvalue()
