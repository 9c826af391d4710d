"""The collection dashboard: its figures, summed in SQL, and a grouped bar chart as plain geometry
for a server-rendered SVG (no JS).

Figures by semester (fiscal year × installment number, ¶12) of the levy's charges (installments
and supplementary corrections; sec. 374a water sales are not the levy):

- *billed*: the charges' principal;
- *collected*: principal of those charges paid as of today. The ledger does not tie a payment to
  a charge, so the allocation of ``billing.rules.account_state`` is reproduced in SQL: a parcel's
  principal paid (payments − voids − realized surcharges) goes to its charges oldest first (due
  date, then id). This is exact because a payment settles each charge's surcharge and principal
  before the next charge;
- *delinquent*: principal still unpaid on charges past their last day to pay (¶12; the accrued
  surcharge is on the delinquent list);
- *surcharges collected*: realized surcharges (less reversed ones) of payments dated in the
  semester (July–December is semester 1, January–June semester 2).

Amounts stay ``Decimal`` dollars; only pixel coordinates are floats.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from django.db import connection
from django.db.models import Case, DecimalField, F, IntegerField, Sum, Value, When
from django.db.models.functions import ExtractMonth, ExtractYear
from django.utils.translation import gettext as _

from levy.charts import Tick, axis
from levy.models import Levy
from levy.rules import fiscal_year_label

from . import rules
from .models import LedgerEntry

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


# The allocation of payments to charges, as ``rules.account_state`` makes it, for every parcel at
# once. ``before`` is the principal of the parcel's earlier charges in application order.
CHARGE_FIGURES_SQL = """
WITH paid AS (
    SELECT parcel_id,
           SUM(CASE kind WHEN 'payment' THEN credit WHEN 'void' THEN -debit
                         WHEN 'surcharge' THEN -debit WHEN 'surcharge_void' THEN credit END) AS principal_paid
      FROM billing_ledgerentry
     WHERE entry_date <= %(as_of)s AND kind IN ('payment', 'void', 'surcharge', 'surcharge_void')
     GROUP BY parcel_id
), chain AS (
    SELECT c.parcel_id, c.kind, c.fiscal_year_id, c.number, c.principal, c.last_day_to_pay, c.accrues_surcharge,
           SUM(c.principal) OVER (PARTITION BY c.parcel_id ORDER BY c.due_date, c.id) - c.principal AS before
      FROM billing_charge c
), applied AS (
    SELECT chain.*, LEAST(chain.principal, GREATEST(COALESCE(paid.principal_paid, 0) - chain.before, 0)) AS collected
      FROM chain LEFT JOIN paid ON paid.parcel_id = chain.parcel_id
)
SELECT fy.label, applied.number, SUM(applied.principal), SUM(applied.collected),
       SUM(CASE WHEN applied.accrues_surcharge AND applied.last_day_to_pay < %(as_of)s
                THEN applied.principal - applied.collected ELSE 0 END),
       COUNT(DISTINCT CASE WHEN applied.accrues_surcharge AND applied.last_day_to_pay < %(as_of)s
                            AND applied.principal > applied.collected THEN applied.parcel_id END)
  FROM applied JOIN levy_fiscalyear fy ON fy.id = applied.fiscal_year_id
 WHERE applied.kind = ANY(%(kinds)s)
 GROUP BY fy.label, fy.start, applied.number
 ORDER BY fy.start, applied.number NULLS LAST
"""


def _charge_figures(as_of: date) -> list[SemesterRow]:
    with connection.cursor() as cursor:
        cursor.execute(CHARGE_FIGURES_SQL, {"as_of": as_of, "kinds": list(LEVY_KINDS)})
        return [
            SemesterRow(fiscal_year=label, number=number, billed=billed or ZERO, collected=collected or ZERO,
                        delinquent=delinquent or ZERO, delinquent_parcels=parcels)
            for label, number, billed, collected, delinquent, parcels in cursor.fetchall()
        ]


def _surcharges_by_semester(as_of: date) -> dict[tuple[str, int], Decimal]:
    """Realized surcharges less reversed ones, by the semester of the payment (or reversal) date."""
    money = DecimalField(max_digits=14, decimal_places=2)
    rows = (
        LedgerEntry.objects.filter(entry_date__lte=as_of, kind__in=[LedgerEntry.Kind.SURCHARGE, LedgerEntry.Kind.SURCHARGE_VOID])
        .annotate(month=ExtractMonth("entry_date"), year=ExtractYear("entry_date"))
        .annotate(
            start_year=Case(When(month__gte=7, then=F("year")), default=F("year") - 1, output_field=IntegerField()),
            half=Case(When(month__gte=7, then=Value(1)), default=Value(2), output_field=IntegerField()),
        )
        .values("start_year", "half")
        .annotate(total=Sum(Case(
            When(kind=LedgerEntry.Kind.SURCHARGE, then=F("debit")), default=-F("credit"), output_field=money,
        )))
        .order_by()
    )
    return {(fiscal_year_label(row["start_year"]), row["half"]): row["total"] or ZERO for row in rows}


def dashboard(*, as_of: date) -> Dashboard:
    """Billed, collected, delinquent and surcharges collected by semester, and the ¶1(2)/¶2 split
    of the collected principal per fiscal year. Three queries whatever the size of the district."""
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
        figures = ", ".join(f"{labels[key]} ${getattr(row, key):,.2f}" for key, _fill in SERIES)
        parts.append(f"{label} {sublabel}: {figures}")
    return "; ".join(parts) + "."

