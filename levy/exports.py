"""The roll as CSV/XLSX rows and the levy as a JSON-ready summary (pages and commands share these).

The exports are written row by row into a file (``write_roll_csv``, ``write_roll_xlsx``), never
held whole in memory: a roll of a million lines is a file of some hundred megabytes (issue 20)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from decimal import Decimal
from typing import IO, Any

from .models import Levy, RollLine
from .rules import CENT

ROLL_COLUMNS = (
    "parcel_id", "owner_name", "gravity_acres", "pumped_acres", "equivalent_acres", "levied", "reason",
    "om_charge", "credit_percent", "credit", "net", "first_installment", "second_installment",
)
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\n")
# The rows of one XLSX worksheet (Excel's limit, the header row included): a longer roll is
# refused before anything is written, and the page offers the CSV instead (issue 20).
XLSX_MAX_ROWS = 1_048_576
TEXT_COLUMNS = {"parcel_id", "owner_name", "levied", "reason"}
XLSX_FORMATS = {"gravity_acres": "#,##0.0000", "pumped_acres": "#,##0.0000", "equivalent_acres": "#,##0.0000",
                "credit_percent": "0.00"}


class TooManyRowsForXlsx(ValueError):
    """The roll has more lines than an XLSX worksheet has rows."""


def xlsx_fits(line_count: int) -> bool:
    """Whether ``line_count`` roll lines and the header fit in one XLSX worksheet."""
    return line_count + 1 <= XLSX_MAX_ROWS


def safe_cell(value: str) -> str:
    r"""Neutralize spreadsheet formulas in text cells (CSV injection): ``=HYPERLINK(…)`` → ``'=HYPERLINK(…)``.

    A carriage return inside the text becomes a line feed: with ``lineterminator="\n"`` Python's
    csv writer quotes a field holding ``\n`` but not one holding a lone ``\r``, and a spreadsheet
    starts a new row at that ``\r``, so ``x\r=1+1`` would put a live ``=1+1`` at the start of a row."""
    if value.startswith(FORMULA_PREFIXES):
        value = "'" + value
    return value.replace("\r\n", "\n").replace("\r", "\n")


def roll_rows(levy: Levy) -> Iterator[list[str]]:
    lines = RollLine.objects.filter(levy=levy).order_by("parcel_code").values_list(
        "parcel_code", "owner_name", "gravity_acres", "pumped_acres", "equivalent_acres", "levied", "reason",
        "om_charge", "credit_percent", "credit", "net", "first_installment", "second_installment",
    )
    for code, owner, gravity, pumped, equivalent, levied, reason, charge, pct, credit, net, first, second in lines.iterator(chunk_size=10000):
        yield [safe_cell(code), safe_cell(owner), str(gravity), str(pumped), str(equivalent), "yes" if levied else "no",
               reason, str(charge), str(pct), str(credit), str(net), str(first), str(second)]


def write_roll_csv(levy: Levy, out: IO[str]) -> int:
    """Every line of the roll as CSV into ``out``, as ``manage.py levy export`` prints it; the
    number of lines written."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(ROLL_COLUMNS)
    count = 0
    for row in roll_rows(levy):
        writer.writerow(row)
        count += 1
    return count


def write_roll_xlsx(levy: Levy, out: IO[bytes], *, sheet_title: str, summary_title: str) -> int:
    """The roll as an Excel workbook into ``out``: numbers as numbers (acres to 4 places, dollars
    to cents), text cells through ``safe_cell`` so a name like ``=HYPERLINK(…)`` stays text; a
    second sheet with the levy's summary. openpyxl's write-only mode keeps one row in memory at a
    time. A roll longer than ``XLSX_MAX_ROWS`` raises ``TooManyRowsForXlsx`` before anything is
    written. Returns the number of lines written."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell

    count = RollLine.objects.filter(levy=levy).count()
    if not xlsx_fits(count):
        raise TooManyRowsForXlsx(count)
    book = Workbook(write_only=True)
    sheet = book.create_sheet(sheet_title[:31])
    sheet.append(list(ROLL_COLUMNS))
    formats = [XLSX_FORMATS.get(name, "#,##0.00") for name in ROLL_COLUMNS]
    numeric = [name not in TEXT_COLUMNS for name in ROLL_COLUMNS]
    for row in roll_rows(levy):
        cells = []
        for value, is_number, number_format in zip(row, numeric, formats, strict=True):
            if is_number:
                cell = WriteOnlyCell(sheet, value=Decimal(value))
                cell.number_format = number_format
            else:
                cell = WriteOnlyCell(sheet, value=value)
            cells.append(cell)
        sheet.append(cells)
    summary = book.create_sheet(summary_title[:31])
    for key, value in levy_summary(levy).items():
        summary.append([key, safe_cell(str(value)) if value is not None else ""])
    book.save(out)
    return count


def acres_text(value: Decimal) -> str:
    """Acres without trailing zeros but with at least one decimal, as the worked examples write
    them (``500.0``, ``473.3``, ``127464.47635``): no precision is hidden, none is invented."""
    text = format(value.normalize(), "f")
    if "." not in text:
        text += ".0"
    return text


def levy_summary(levy: Levy) -> dict[str, Any]:
    """The levy as ``levy show --format json`` prints it: amounts as strings like ``"1234.56"``."""

    def money(field: str) -> str:
        return str(getattr(levy, field).amount.quantize(CENT))

    return {
        "fiscal_year": levy.fiscal_year.label,
        "status": levy.status,
        "om_estimate": money("om_estimate"),
        "reserve": money("reserve"),
        "credits": money("credits"),
        "credits_certified": levy.credits_certified,
        "deficit": money("deficit"),
        "surplus": money("surplus"),
        "misc_income": money("misc_income"),
        "subtotal": money("subtotal"),
        "safety_margin": money("safety_margin"),
        "total_levy": money("total_levy"),
        "gravity_acres": acres_text(levy.gravity_acres),
        "pumped_acres": acres_text(levy.pumped_acres),
        "equivalent_acres": acres_text(levy.equivalent_acres),
        "rate_gravity": str(levy.rate_gravity),
        "rate_pumped": str(levy.rate_pumped),
        "parcels_levied": levy.parcels_levied,
        "roll_total": money("roll_total"),
        "roll_credits": money("roll_credits"),
        "roll_net": money("roll_net"),
        "finalized_on": levy.finalized_on.isoformat() if levy.finalized_on else None,
        "finalized_late": levy.finalized_late,
    }
