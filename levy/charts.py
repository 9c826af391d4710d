"""The worksheet's waterfall chart (¶1–¶4) as plain geometry for a server-rendered SVG (no JS).

Amounts stay ``Decimal``; only pixel coordinates are floats. The template
``levy/_waterfall.svg.html`` draws what ``waterfall`` returns; the same steps fill the text
table that stands beside the chart for readers who do not see it.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any

from django.utils.translation import gettext as _

from parcels.money import money_text

UP = "up"
DOWN = "down"
TOTAL = "total"
FILLS = {UP: "#005ea2", DOWN: "#d54309", TOTAL: "#1a4480"}  # app.css --primary, --error, --primary-dark

WIDTH = 960
HEIGHT = 420
LEFT, RIGHT, TOP, BOTTOM = 100, 16, 36, 70


@dataclass(frozen=True)
class Step:
    key: str
    label: str
    paragraph: str
    kind: str  # UP adds, DOWN subtracts, TOTAL is a result drawn from zero
    amount: Decimal  # dollars, never negative
    start: Decimal  # running amount before the step (zero for a TOTAL)
    end: Decimal  # running amount after the step

    @property
    def signed(self) -> Decimal:
        return -self.amount if self.kind == DOWN else self.amount


def value_label(step: Step) -> str:
    """A step's amount as Puerto Rico writes it, signed as the step acts: "+$25,000.00",
    "−$40,000.00", "$1,250,000.00" for the first amount and the results."""
    sign = "\u2212" if step.kind == DOWN else "+" if step.kind == UP and step.start else ""
    return f"{sign}{money_text(step.amount)}"


@dataclass(frozen=True)
class Bar:
    step: Step
    x: float
    y: float
    width: float
    height: float
    fill: str
    center: float
    value_y: float
    connector: tuple[float, float, float] | None  # x1, x2, y to the next bar
    cut: bool = False  # the bar starts below the axis (a broken axis): drawn with a break mark

    @property
    def value_label(self) -> str:
        return value_label(self.step)

    @property
    def bottom(self) -> float:
        return round(self.y + self.height, 1)

    @property
    def break_path(self) -> str:
        """A zigzag across the foot of a cut bar: the part below the axis is not drawn."""
        quarter = self.width / 4
        y = self.bottom - 8
        points = " ".join(f"l {quarter:.1f} {dy}" for dy in (-4, 4, -4, 4))
        return f"M {self.x:.1f} {y:.1f} {points}"


@dataclass(frozen=True)
class Tick:
    y: float
    amount: Decimal

    @property
    def label(self) -> str:
        """Whole dollars for the axis (the table beside the chart has the cents)."""
        sign = "\u2212" if self.amount < 0 else ""
        return f"{sign}${abs(self.amount):,.0f}"


@dataclass(frozen=True)
class Waterfall:
    width: int
    height: int
    left: int
    right: int
    zero_y: float
    bars: tuple[Bar, ...]
    ticks: tuple[Tick, ...]
    label_y: float
    axis_start: Decimal = Decimal(0)  # above zero when the axis is broken so that small steps show

    @property
    def broken(self) -> bool:
        return self.axis_start > 0

    @property
    def axis_start_label(self) -> str:
        return money_text(self.axis_start)

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(bar.step for bar in self.bars)


def worksheet_steps(levy: Any) -> list[Step]:
    """¶1–¶4 as chart steps, from a ``Levy`` or a ``rules.Worksheet`` (same field names).

    A net surplus larger than the rest gives a negative running amount; the subtotal is then
    zero (¶3, ¶4: a levy is never negative), as the rules compute it."""

    def amount(name: str) -> Decimal:
        value = getattr(levy, name)
        return getattr(value, "amount", value)

    surplus = amount("surplus")
    fund = ("surplus", _("Superávit"), DOWN, surplus) if surplus else ("deficit", _("Déficit"), UP, amount("deficit"))
    specs = [
        ("om_estimate", _("O&M"), "¶1(1)", UP, amount("om_estimate")),
        ("reserve", _("Reserva"), "¶1(2)", UP, amount("reserve")),
        ("credits", _("Créditos"), "¶1(3)", UP, amount("credits")),
        (fund[0], fund[1], "¶2", fund[2], fund[3]),
        ("misc_income", _("Ingresos misc."), "¶3", DOWN, amount("misc_income")),
        ("subtotal", _("Subtotal"), "¶3", TOTAL, amount("subtotal")),
        ("safety_margin", _("Margen"), "¶3", UP, amount("safety_margin")),
        ("total_levy", _("Total"), "¶4", TOTAL, amount("total_levy")),
    ]
    steps: list[Step] = []
    running = Decimal("0.00")
    for key, label, paragraph, kind, value in specs:
        if kind == TOTAL:
            steps.append(Step(key, label, paragraph, kind, value, Decimal("0.00"), value))
            running = value
        else:
            end = running + value if kind == UP else running - value
            steps.append(Step(key, label, paragraph, kind, value, running, end))
            running = end
    return steps


def nice_step(span: Decimal, target_ticks: int = 5) -> Decimal:
    """A round tick interval (1, 2, 2.5 or 5 × 10ⁿ dollars) giving about ``target_ticks`` ticks."""
    if span <= 0:
        return Decimal(1)
    raw = span / target_ticks
    exponent = raw.adjusted()
    base = Decimal(10) ** exponent
    for factor in (Decimal(1), Decimal(2), Decimal("2.5"), Decimal(5), Decimal(10)):
        if base * factor >= raw:
            return base * factor
    return base * 10


@dataclass(frozen=True)
class Axis:
    """A vertical dollar axis from ``low`` (bottom) to ``high`` (top) in ticks of ``interval``,
    drawn over ``plot_height`` pixels from pixel ``top``. Shared by every chart of the app."""

    low: Decimal
    high: Decimal
    interval: Decimal
    top: int
    plot_height: int

    def y(self, amount: Decimal) -> float:
        # Pixels only: the float never feeds back into an amount.
        return round(self.top + float((self.high - amount) / (self.high - self.low)) * self.plot_height, 1)

    def ticks(self) -> tuple[Tick, ...]:
        ticks = []
        amount = self.low
        while amount <= self.high:
            ticks.append(Tick(y=self.y(amount), amount=amount))
            amount += self.interval
        return tuple(ticks)


def axis(low: Decimal, high: Decimal, *, top: int, plot_height: int, span: Decimal | None = None) -> Axis:
    """The axis holding ``low``..``high``, widened to whole ticks (``nice_step`` of ``span``,
    by default ``high - low``); never empty."""
    interval = nice_step(high - low if span is None else span)
    low = (low / interval).to_integral_value(rounding=ROUND_FLOOR) * interval
    high = (high / interval).to_integral_value(rounding=ROUND_CEILING) * interval
    if high == low:
        high = low + interval
    return Axis(low=low, high=high, interval=interval, top=top, plot_height=plot_height)


# Every step that is not zero shows as a bar at least this tall (pixels of the viewBox), and the
# axis is broken above zero when a step would otherwise be drawn shorter than VISIBLE (issue 18:
# on a $1,250,000.00 O&M estimate the reserve, credits and margin were slivers).
MIN_BAR = 8.0
VISIBLE = 12.0


def axis_floor(steps: list[Step], plot_height: int) -> Decimal:
    """Where the dollar axis starts. Zero, unless a step other than the first amount and the
    results would be shorter than ``VISIBLE`` pixels on an axis from zero: then a round amount
    below the lowest point any such step (or the top of a result) reaches, leaving as much room
    below it as the small steps span, so the first amount and the results still show as (cut)
    bars. Never above the lowest point, never below zero."""
    values = [Decimal(0)] + [s.start for s in steps] + [s.end for s in steps]
    low, high = min(values), max(values)
    if low < 0 or high <= 0:
        return Decimal(0)
    moving = [s for s in steps[1:] if s.kind != TOTAL and s.amount > 0]
    if not moving or min(s.amount for s in moving) / high * plot_height >= VISIBLE:
        return Decimal(0)
    lowest = min([min(s.start, s.end) for s in moving] + [s.end for s in steps if s.kind == TOTAL])
    room = high - lowest
    floor = lowest - max(room, high / 50)
    if floor <= 0:
        return Decimal(0)
    interval = nice_step(high - floor)
    return max((floor / interval).to_integral_value(rounding=ROUND_FLOOR) * interval, Decimal(0))


def waterfall(steps: list[Step]) -> Waterfall:
    values = [Decimal(0)] + [s.start for s in steps] + [s.end for s in steps]
    plot_height = HEIGHT - TOP - BOTTOM
    start = axis_floor(steps, plot_height)
    if start > 0:
        scale = axis(start, max(values), top=TOP, plot_height=plot_height)
    else:
        scale = axis(min(values), max(values), top=TOP, plot_height=plot_height)

    def y_of(amount: Decimal) -> float:
        return scale.y(max(amount, scale.low))
    plot_width = WIDTH - LEFT - RIGHT

    slot = plot_width / len(steps)
    bar_width = round(slot * 0.62, 1)
    bars: list[Bar] = []
    for index, step in enumerate(steps):
        x = round(LEFT + slot * index + (slot - bar_width) / 2, 1)
        top, bottom = y_of(max(step.start, step.end)), y_of(min(step.start, step.end))
        height = round(bottom - top, 1)
        if step.amount and height < MIN_BAR:  # a step that is not zero is a bar one can see
            if step.kind == DOWN:
                bottom = round(top + MIN_BAR, 1)
            else:
                top = round(bottom - MIN_BAR, 1)
            height = MIN_BAR
        height = max(height, 1.0)  # a zero step still shows as a hairline
        connector = None
        if index + 1 < len(steps):
            connector = (round(x + bar_width, 1), round(x + slot, 1), y_of(step.end))
        bars.append(Bar(step=step, x=x, y=top, width=bar_width, height=height, fill=FILLS[step.kind],
                        center=round(x + bar_width / 2, 1), value_y=round(top - 6, 1), connector=connector,
                        cut=min(step.start, step.end) < scale.low))
    return Waterfall(width=WIDTH, height=HEIGHT, left=LEFT, right=WIDTH - RIGHT, zero_y=y_of(Decimal(0)),
                     bars=tuple(bars), ticks=scale.ticks(), label_y=HEIGHT - BOTTOM + 22, axis_start=scale.low)


# --- The same chart for a phone: one row per step, the bars running sideways ---------------------
# At 390 px the wide chart is drawn at a third of its size (its labels 4 px high); this one is drawn
# near its own size, so each label reads at about 14 px. The page shows one or the other (app.css).

PHONE_WIDTH = 360
PHONE_ROW = 52
PHONE_TOP = 8
PHONE_AXIS = 28  # the tick labels under the rows


@dataclass(frozen=True)
class Row:
    step: Step
    top: float  # of the row; its words sit on the first line, its bar under them
    text_y: float
    x: float
    y: float
    width: float
    height: float
    fill: str
    cut: bool
    value_label: str
    connector: tuple[float, float, float] | None  # x, y1, y2 to the next row's bar

    @property
    def break_path(self) -> str:
        """A zigzag across the left end of a cut bar (the part below the axis start)."""
        quarter = self.height / 4
        x = self.x + 8
        points = " ".join(f"l {dx} {quarter:.1f}" for dx in (-4, 4, -4, 4))
        return f"M {x:.1f} {self.y:.1f} {points}"


@dataclass(frozen=True)
class PhoneWaterfall:
    width: int
    height: int
    rows: tuple[Row, ...]
    ticks: tuple[tuple[float, str], ...]  # x, label
    axis_y: float
    axis_start: Decimal

    @property
    def broken(self) -> bool:
        return self.axis_start > 0


def phone_waterfall(steps: list[Step]) -> PhoneWaterfall:
    """``steps`` as rows: the axis (broken as ``waterfall`` breaks it) runs left to right."""
    values = [Decimal(0)] + [s.start for s in steps] + [s.end for s in steps]
    plot = PHONE_WIDTH - 2
    start = axis_floor(steps, HEIGHT - TOP - BOTTOM)
    scale = axis(start, max(values), top=0, plot_height=plot) if start > 0 else axis(min(values), max(values), top=0,
                                                                                      plot_height=plot)

    def x_of(amount: Decimal) -> float:
        return round(1 + plot - scale.y(max(amount, scale.low)), 1)

    rows: list[Row] = []
    for index, step in enumerate(steps):
        top = PHONE_TOP + index * PHONE_ROW
        left, right = x_of(min(step.start, step.end)), x_of(max(step.start, step.end))
        if step.amount and right - left < MIN_BAR / 2:
            if step.kind == DOWN:
                left = round(right - MIN_BAR / 2, 1)
            else:
                right = round(left + MIN_BAR / 2, 1)
        bar_y = top + 24
        connector = None
        if index + 1 < len(steps):
            connector = (x_of(step.end), bar_y + 20, bar_y + PHONE_ROW)
        rows.append(Row(step=step, top=top, text_y=top + 17, x=left, y=bar_y, width=max(round(right - left, 1), 1.0),
                        height=20, fill=FILLS[step.kind], cut=min(step.start, step.end) < scale.low,
                        value_label=value_label(step), connector=connector))
    axis_y = PHONE_TOP + len(steps) * PHONE_ROW
    ticks = tuple((round(1 + plot - tick.y, 1), tick.label) for tick in scale.ticks())
    return PhoneWaterfall(width=PHONE_WIDTH, height=axis_y + PHONE_AXIS, rows=tuple(rows), ticks=ticks, axis_y=axis_y,
                          axis_start=scale.low)
