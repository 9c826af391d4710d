"""The collection dashboard: its figures, summed in SQL, and a grouped bar chart as plain geometry
for a server-rendered SVG (no JS).

Figures by semester (fiscal year × installment number, ¶12) of the levy's charges as of a date D,
read from the stored records exactly as ``billing.rules.ledger_state`` reads them for the
statement (issue 11: the ledger is the one truth; nothing is allocated again here):

- *billed*: each charge's principal less the ``PrincipalAdjustment`` rows (a correction's fall,
  ¶9) recorded on or before D;
- *collected*: principal paid on those charges as of D: the stored ``PaymentAllocation.principal``
  of payments made on or before D and not voided on or before D (a void reverses exactly that
  allocation), plus the principal of *crédito aplicado* (``CreditApplication``) dated by D, less
  principal released to the credit (``GiveBack``) dated by D, and a void's reversals of either
  dated by D (``VoidReversal``, ¶13: the applied principal was never paid, the given-back paid
  again; issue 20 found the dashboard had left them out). Surcharge paid is not principal: it
  is the *surcharges collected* bar. Money a payment left on the account's credit (an allocation
  without a charge) is collected for no charge until a dated *crédito aplicado* takes it to one;
- *delinquent*: principal still unpaid on charges that accrue surcharge and whose last day to pay
  is before D (¶12): the stored day, moved past the closed days and the grace days in force on
  the due date exactly as the account moves it (``accounts.charge_last_days``), or later by a
  ``LastDayMove`` recorded by D (a closure); the accrued surcharge is on the delinquent list;
- *surcharges collected*: surcharge paid by entries dated in the semester (July–December is
  semester 1, January–June semester 2): realized by payments, less reversed by voids, less given
  back (*recargo devuelto*), plus paid with *crédito aplicado*: the ledger's surcharge entries
  (``SURCHARGE_KINDS``), so surcharge paid and then given back is not collected twice.

The levy's charges are the installments and the supplementary corrections (``LEVY_KINDS``;
sec. 374a water sales are not the levy, refunds are not charges). A correction's charge counts in
the row of the half it raises: a correction stores the half it raised as its charge's ``number``
(``CorrectionCharge.number``), so a rise of the January half is billed, collected and delinquent
with the January installments of its fiscal year, as on the statement. Only the older one-charge
corrections, stored without a number, have a row of their own (``number`` None, "correcciones").

Amounts stay ``Decimal`` dollars; only pixel coordinates are floats.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from django.db import connection, router
from django.db.models import Case, DecimalField, F, IntegerField, Sum, Value, When
from django.db.models.functions import ExtractMonth, ExtractYear
from django.utils.translation import gettext as _

from levy.charts import Tick, axis
from levy.models import Levy
from levy.rules import fiscal_year_label
from parcels.money import money_text

from . import accounts, rules
from .models import Charge, LedgerEntry

ZERO = Decimal("0.00")  # dollars
LEVY_KINDS = ("installment", "correction")


@dataclass
class SemesterRow:
    fiscal_year: str
    number: int | None  # 1 = July, 2 = January; None for corrections without an installment number
    billed: Decimal = ZERO
    collected: Decimal = ZERO
    delinquent: Decimal = ZERO
    delinquent_parcels: int = 0
    surcharges: Decimal = ZERO

    @property
    def pending(self) -> Decimal:
        """Billed and not yet paid nor delinquent: not due yet, or within the 60 days (¶12)."""
        return self.billed - self.collected - self.delinquent


@dataclass
class SplitRow:
    """¶1(2), ¶2: the levy principal collected for a fiscal year, split in the levy's proportions."""

    fiscal_year: str
    collected: Decimal
    reserve: Decimal | None = None  # None: no final levy (nothing to take the proportion from)
    operating: Decimal | None = None
    levy_reserve: Decimal | None = None
    levy_total: Decimal | None = None


@dataclass
class Dashboard:
    as_of: date
    rows: list[SemesterRow]
    totals: SemesterRow
    split: list[SplitRow] = field(default_factory=list)


# Every levy charge's figures as of a date from the stored records, summed per semester, for every
# parcel at once. ``base`` is each (due date, stored last day)'s last day as the account counts it
# (``accounts.charge_last_days``, computed in Python for the few distinct pairs); ``moved`` the
# latest ``LastDayMove`` recorded by then. ``paid`` is ``rules.ledger_state``'s principal paid:
# the stored allocations of the payments that count (paid by then, not voided by then), plus
# *crédito aplicado*, less principal given back, each dated by then. A past day reads only the rows
# recorded by its end (``known_by``, ``accounts.known_by_end_of``), as its statements do.
CHARGE_FIGURES_SQL = """
WITH base (due_date, stored, last_day) AS (
    SELECT * FROM unnest(%(dues)s::date[], %(stored)s::date[], %(last_days)s::date[])
), lowered AS (
    SELECT charge_id, SUM(amount) AS amount FROM billing_principaladjustment t
     WHERE entry_date <= %(as_of)s AND (%(known_by)s::timestamptz IS NULL OR t.created_at < %(known_by)s::timestamptz) GROUP BY charge_id
), moved AS (
    SELECT charge_id, MAX(last_day) AS last_day FROM billing_lastdaymove t
     WHERE entry_date <= %(as_of)s AND (%(known_by)s::timestamptz IS NULL OR t.created_at < %(known_by)s::timestamptz) GROUP BY charge_id
), paid AS (
    SELECT charge_id, SUM(principal) AS principal FROM (
        SELECT a.charge_id, a.principal
          FROM billing_paymentallocation a
          JOIN billing_payment p ON p.id = a.payment_id
          LEFT JOIN billing_paymentvoid v ON v.payment_id = p.id
         WHERE a.charge_id IS NOT NULL AND a.principal <> 0 AND p.paid_on <= %(as_of)s AND (%(known_by)s::timestamptz IS NULL OR p.created_at < %(known_by)s::timestamptz)
           AND (v.voided_on IS NULL OR v.voided_on > %(as_of)s
                OR (%(known_by)s::timestamptz IS NOT NULL AND v.created_at >= %(known_by)s::timestamptz))
        UNION ALL
        SELECT charge_id, principal FROM billing_creditapplication t
         WHERE entry_date <= %(as_of)s AND principal <> 0 AND (%(known_by)s::timestamptz IS NULL OR t.created_at < %(known_by)s::timestamptz)
        UNION ALL
        SELECT charge_id, -principal FROM billing_giveback t
         WHERE entry_date <= %(as_of)s AND principal <> 0 AND (%(known_by)s::timestamptz IS NULL OR t.created_at < %(known_by)s::timestamptz)
        UNION ALL  -- ¶13: a void's reversal of a crédito aplicado (never paid) or of a give-back (paid again)
        SELECT charge_id, CASE WHEN kind = 'credit_applied' THEN -principal ELSE principal END FROM billing_voidreversal t
         WHERE kind IN ('credit_applied', 'give_back') AND entry_date <= %(as_of)s AND principal <> 0
           AND (%(known_by)s::timestamptz IS NULL OR t.created_at < %(known_by)s::timestamptz)
    ) entries GROUP BY charge_id
), figures AS (
    SELECT c.parcel_id, c.fiscal_year_id, c.number,
           c.principal - COALESCE(lowered.amount, 0) AS billed,
           COALESCE(paid.principal, 0) AS collected,
           c.accrues_surcharge AND GREATEST(COALESCE(base.last_day, c.last_day_to_pay), moved.last_day) < %(as_of)s AS late
      FROM billing_charge c
      LEFT JOIN base ON base.due_date = c.due_date AND base.stored = c.last_day_to_pay
      LEFT JOIN lowered ON lowered.charge_id = c.id
      LEFT JOIN moved ON moved.charge_id = c.id
      LEFT JOIN paid ON paid.charge_id = c.id
     WHERE c.kind = ANY(%(kinds)s) AND (%(known_by)s::timestamptz IS NULL OR c.created_at < %(known_by)s::timestamptz)
)
SELECT fy.label, figures.number, SUM(figures.billed), SUM(figures.collected),
       SUM(CASE WHEN figures.late AND figures.billed > figures.collected THEN figures.billed - figures.collected ELSE 0 END),
       COUNT(DISTINCT CASE WHEN figures.late AND figures.billed > figures.collected THEN figures.parcel_id END)
  FROM figures JOIN levy_fiscalyear fy ON fy.id = figures.fiscal_year_id
 GROUP BY fy.label, fy.start, figures.number
 ORDER BY fy.start, figures.number NULLS LAST
"""
LAST_DAY_PAIRS_SQL = "SELECT DISTINCT due_date, last_day_to_pay FROM billing_charge WHERE kind = ANY(%(kinds)s)"


def _charge_figures(as_of: date) -> list[SemesterRow]:
    known_by = accounts.known_by_end_of(as_of)  # a past day: the books as they stood at its end (issue 17 §1)
    with connection.cursor() as cursor:
        cursor.execute(LAST_DAY_PAIRS_SQL, {"kinds": list(LEVY_KINDS)})
        last_days = accounts.charge_last_days(cursor.fetchall(), known_by=known_by)
        cursor.execute(CHARGE_FIGURES_SQL, {
            "as_of": as_of, "known_by": known_by, "kinds": list(LEVY_KINDS), "dues": [due for due, _stored in last_days],
            "stored": [stored for _due, stored in last_days], "last_days": list(last_days.values()),
        })
        return [
            SemesterRow(fiscal_year=label, number=number, billed=billed or ZERO, collected=collected or ZERO,
                        delinquent=delinquent or ZERO, delinquent_parcels=parcels)
            for label, number, billed, collected, delinquent, parcels in cursor.fetchall()
        ]


# ¶12: the ledger's surcharge entries, each one-sided: surcharge a payment settled (debit) and its
# reversal by a void (credit); surcharge paid with *crédito aplicado* (debit) and surcharge given
# back after a lowering or a closure (credit). Their debits less credits is the surcharge paid.
# A void's reversal of a give-back (debit) or of a crédito aplicado (credit) is one too (issue 17).
SURCHARGE_KINDS = (LedgerEntry.Kind.SURCHARGE, LedgerEntry.Kind.SURCHARGE_VOID, LedgerEntry.Kind.CREDIT_APPLIED,
                   LedgerEntry.Kind.GIVE_BACK, LedgerEntry.Kind.GIVE_BACK_VOID, LedgerEntry.Kind.CREDIT_APPLIED_VOID)


def _surcharges_by_semester(as_of: date) -> dict[tuple[str, int], Decimal]:
    """Surcharge paid (realized, less reversed and given back, plus paid with credit), by the
    semester of each entry's date."""
    money = DecimalField(max_digits=14, decimal_places=2)
    entries = LedgerEntry.objects.filter(entry_date__lte=as_of, kind__in=SURCHARGE_KINDS)
    if (known_by := accounts.known_by_end_of(as_of)) is not None:  # a past day: what was recorded by its end
        entries = entries.filter(created_at__lt=known_by)
    rows = (
        entries
        .annotate(month=ExtractMonth("entry_date"), year=ExtractYear("entry_date"))
        .annotate(
            start_year=Case(When(month__gte=7, then=F("year")), default=F("year") - 1, output_field=IntegerField()),
            half=Case(When(month__gte=7, then=Value(1)), default=Value(2), output_field=IntegerField()),
        )
        .values("start_year", "half")
        .annotate(total=Sum(F("debit") - F("credit"), output_field=money))
        .order_by()
    )
    return {(fiscal_year_label(row["start_year"]), row["half"]): row["total"] or ZERO for row in rows}


def dashboard_kept(*, as_of: date) -> Dashboard:
    """``dashboard(as_of=…)``, or the same figures computed from exactly the same books moments
    ago (``accounts.kept_under_books_version``)."""
    return accounts.kept_under_books_version("dashboard", (1, as_of), lambda: dashboard(as_of=as_of),
                                             using=router.db_for_read(Charge))


def dashboard(*, as_of: date) -> Dashboard:
    """Billed, collected, delinquent and surcharges collected by semester, and the ¶1(2)/¶2 split
    of the collected principal per fiscal year. At most six queries whatever the size of the district."""
    rows = {(row.fiscal_year, row.number): row for row in _charge_figures(as_of)}
    for (label, half), amount in _surcharges_by_semester(as_of).items():
        rows.setdefault((label, half), SemesterRow(fiscal_year=label, number=half)).surcharges = amount
    ordered = sorted(rows.values(), key=lambda row: (row.fiscal_year, row.number is None, row.number or 0))
    totals = SemesterRow(fiscal_year="", number=None)
    for row in ordered:
        totals.billed += row.billed
        totals.collected += row.collected
        totals.delinquent += row.delinquent
        totals.surcharges += row.surcharges

    collected_by_year: dict[str, Decimal] = {}
    for row in ordered:
        collected_by_year[row.fiscal_year] = collected_by_year.get(row.fiscal_year, ZERO) + row.collected
    levies = {
        levy.fiscal_year.label: levy
        for levy in Levy.objects.filter(status=Levy.Status.FINAL, fiscal_year__label__in=collected_by_year).select_related("fiscal_year")
    }
    split = []
    for label, collected in collected_by_year.items():
        levy = levies.get(label)
        if levy is None or levy.total_levy.amount <= 0:
            split.append(SplitRow(fiscal_year=label, collected=collected))
            continue
        reserve, operating = rules.collection_split(amount=collected, reserve=levy.reserve.amount, total_levy=levy.total_levy.amount)
        split.append(SplitRow(fiscal_year=label, collected=collected, reserve=reserve, operating=operating,
                              levy_reserve=levy.reserve.amount, levy_total=levy.total_levy.amount))
    return Dashboard(as_of=as_of, rows=ordered, totals=totals, split=split)


# --- the grouped bar chart -------------------------------------------------------------------------

WIDTH = 960
HEIGHT = 420
LEFT, RIGHT, TOP, BOTTOM = 100, 16, 24, 92
LEGEND_STEP = 200  # pixels between legend entries
SERIES = (  # key, fill: app.css --primary-dark, --success-dark, --error and the visited-link violet (3:1 or more on white)
    ("billed", "#1a4480"),
    ("collected", "#008817"),
    ("delinquent", "#d54309"),
    ("surcharges", "#54278f"),
)


def series_labels() -> dict[str, str]:
    return {"billed": _("Facturado"), "collected": _("Cobrado"), "delinquent": _("Moroso"), "surcharges": _("Recargos cobrados")}


@dataclass(frozen=True)
class Bar:
    key: str
    label: str
    amount: Decimal
    x: float
    y: float
    width: float
    height: float
    fill: str


@dataclass(frozen=True)
class Group:
    label: str
    sublabel: str
    center: float
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class Legend:
    label: str
    fill: str
    x: float


@dataclass(frozen=True)
class BarChart:
    width: int
    height: int
    left: int
    right: int
    zero_y: float
    label_y: float
    legend_y: float
    groups: tuple[Group, ...]
    ticks: tuple[Tick, ...]
    legend: tuple[Legend, ...]


def semester_label(row: SemesterRow) -> tuple[str, str]:
    if row.number == 1:
        return row.fiscal_year, _("plazo 1 (julio)")
    if row.number == 2:
        return row.fiscal_year, _("plazo 2 (enero)")
    return row.fiscal_year, _("correcciones")


def bar_chart(rows: list[SemesterRow]) -> BarChart | None:
    """One group of four bars per semester; None when there is nothing to draw."""
    if not rows:
        return None
    labels = series_labels()
    high = max(ZERO, max(max(getattr(row, key) for key, _fill in SERIES) for row in rows))
    scale = axis(ZERO, high, top=TOP, plot_height=HEIGHT - TOP - BOTTOM, span=high if high > 0 else Decimal(1))
    y_of = scale.y
    plot_width = WIDTH - LEFT - RIGHT

    slot = plot_width / len(rows)
    bar_width = round(min(slot * 0.8 / len(SERIES), 48), 1)
    groups = []
    for index, row in enumerate(rows):
        center = LEFT + slot * index + slot / 2
        first_x = center - bar_width * len(SERIES) / 2
        bars = []
        for position, (key, fill) in enumerate(SERIES):
            amount = max(getattr(row, key), ZERO)
            top = y_of(amount)
            height = round(y_of(ZERO) - top, 1)
            bars.append(Bar(key=key, label=labels[key], amount=amount, x=round(first_x + bar_width * position, 1), y=top,
                            width=bar_width, height=max(height, 0.0), fill=fill))
        label, sublabel = semester_label(row)
        groups.append(Group(label=label, sublabel=sublabel, center=round(center, 1), bars=tuple(bars)))
    legend = tuple(Legend(label=labels[key], fill=fill, x=LEFT + LEGEND_STEP * index) for index, (key, fill) in enumerate(SERIES))
    return BarChart(width=WIDTH, height=HEIGHT, left=LEFT, right=WIDTH - RIGHT, zero_y=y_of(ZERO), label_y=HEIGHT - BOTTOM + 20,
                    legend_y=HEIGHT - 22, groups=tuple(groups), ticks=scale.ticks(), legend=legend)


def chart_description(rows: list[SemesterRow]) -> str:
    """The chart's ``<desc>``: every bar's figure in words, for readers who do not see it."""
    labels = series_labels()
    parts = []
    for row in rows:
        label, sublabel = semester_label(row)
        figures = ", ".join(f"{labels[key]} {money_text(getattr(row, key))}" for key, _fill in SERIES)
        parts.append(f"{label} {sublabel}: {figures}")
    return "; ".join(parts) + "."

