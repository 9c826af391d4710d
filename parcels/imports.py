"""Parsing and applying the parcel spreadsheet (CSV) that Authority staff keep.

All or nothing: ``parse_parcel_csv`` reads every row and returns every error with its file line
(the header is line 1) and column; ``parcels_import`` (in ``services``) writes only a file with
no error. Bulk writes rely on the database's constraints instead of a query per row.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

from django.utils.translation import gettext as _

REQUIRED_COLUMNS = (
    "parcel_id",
    "owner_name",
    "owner_email",
    "owner_kind",
    "gravity_acres",
    "pumped_acres",
    "inclusion",
    "water_since",
    "credit_percent",
)
OPTIONAL_COLUMNS = ("owner_id", "owner_address")
INCLUSIONS = ("trial", "permanent", "excluded")
OWNER_KINDS = ("private", "public")
MAX_ACRES = Decimal("99999999.9999")


@dataclass(frozen=True)
class ImportError_:
    line: int
    column: str
    message: str

    def __str__(self) -> str:
        return _("línea %(line)s, columna %(column)s: %(message)s") % {
            "line": self.line,
            "column": self.column or "-",
            "message": self.message,
        }


@dataclass(frozen=True)
class ParcelRow:
    line: int
    parcel_id: str
    owner_id: str
    owner_name: str
    owner_email: str
    owner_kind: str
    owner_address: str | None  # None: the column is absent, keep what the owner has
    gravity_acres: Decimal
    pumped_acres: Decimal
    inclusion: str
    water_since: date | None
    credit_percent: Decimal


@dataclass(frozen=True)
class ParsedFile:
    rows: tuple[ParcelRow, ...]
    errors: tuple[ImportError_, ...]


def _decode(data: bytes) -> tuple[str | None, ImportError_ | None]:
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return None, ImportError_(line, "", _("el archivo no es UTF-8 (byte inválido en la posición %(pos)s)") % {"pos": exc.start})


def _acres(value: str, column: str, line: int, errors: list[ImportError_]) -> Decimal | None:
    try:
        amount = Decimal(value.strip())
    except InvalidOperation:
        errors.append(ImportError_(line, column, _("número inválido «%(v)s» (use punto decimal)") % {"v": value}))
        return None
    if not amount.is_finite():
        errors.append(ImportError_(line, column, _("número inválido «%(v)s»") % {"v": value}))
        return None
    if amount < 0:
        errors.append(ImportError_(line, column, _("los acres no pueden ser negativos")))
        return None
    if amount > MAX_ACRES or amount.as_tuple().exponent < -4:  # type: ignore[operator]
        errors.append(ImportError_(line, column, _("a lo sumo 4 decimales y 99,999,999.9999 acres")))
        return None
    return amount


def parse_parcel_csv(data: bytes) -> ParsedFile:
    """Read a whole parcel CSV; return the rows when there is no error, else every error."""
    text, decode_error = _decode(data)
    if decode_error:
        return ParsedFile((), (decode_error,))
    assert text is not None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return ParsedFile((), (ImportError_(1, "", _("el archivo está vacío")),))
    except csv.Error as exc:
        return ParsedFile((), (ImportError_(1, "", str(exc)),))
    header = [name.strip().lower() for name in header]
    errors: list[ImportError_] = []
    for column in REQUIRED_COLUMNS:
        if column not in header:
            errors.append(ImportError_(1, column, _("falta la columna")))
    for column in header:
        if column and column not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS:
            errors.append(ImportError_(1, column, _("columna desconocida")))
    if len(set(header)) != len(header):
        errors.append(ImportError_(1, "", _("hay columnas repetidas")))
    if errors:
        return ParsedFile((), tuple(errors))

    index = {name: position for position, name in enumerate(header)}
    has_address = "owner_address" in index
    rows: list[ParcelRow] = []
    first_line: dict[str, int] = {}
    line = 1
    try:
        for record in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in record):
                continue
            if len(record) != len(header):
                errors.append(ImportError_(line, "", _("tiene %(n)s columnas; el encabezado tiene %(h)s") % {"n": len(record), "h": len(header)}))
                continue
            cell = {name: record[position].strip() for name, position in index.items()}
            row_errors: list[ImportError_] = []

            parcel_id = cell["parcel_id"]
            if not parcel_id:
                row_errors.append(ImportError_(line, "parcel_id", _("vacío")))
            elif len(parcel_id) > 40:
                row_errors.append(ImportError_(line, "parcel_id", _("más de 40 caracteres")))
            elif parcel_id in first_line:
                row_errors.append(ImportError_(line, "parcel_id", _("«%(p)s» repetido (ya en la línea %(l)s)") % {"p": parcel_id, "l": first_line[parcel_id]}))
            else:
                first_line[parcel_id] = line

            if not cell["owner_name"]:
                row_errors.append(ImportError_(line, "owner_name", _("vacío")))
            elif len(cell["owner_name"]) > 200:
                row_errors.append(ImportError_(line, "owner_name", _("más de 200 caracteres")))
            email = cell["owner_email"]
            if email and ("@" not in email or " " in email or len(email) > 254):
                row_errors.append(ImportError_(line, "owner_email", _("correo electrónico inválido «%(v)s»") % {"v": email}))
            kind = cell["owner_kind"].lower()
            if kind not in OWNER_KINDS:
                row_errors.append(ImportError_(line, "owner_kind", _("tipo de dueño desconocido «%(v)s» (private o public)") % {"v": cell["owner_kind"]}))
            owner_id = cell.get("owner_id", "")
            if len(owner_id) > 40:
                row_errors.append(ImportError_(line, "owner_id", _("más de 40 caracteres")))

            gravity = _acres(cell["gravity_acres"], "gravity_acres", line, row_errors)
            pumped = _acres(cell["pumped_acres"], "pumped_acres", line, row_errors)
            if gravity is not None and pumped is not None and gravity == 0 and pumped == 0:
                row_errors.append(ImportError_(line, "gravity_acres", _("los acres por gravedad y por bombeo no pueden ser ambos cero")))

            inclusion = cell["inclusion"].lower()
            if inclusion not in INCLUSIONS:
                row_errors.append(ImportError_(line, "inclusion", _("inclusión desconocida «%(v)s» (trial, permanent o excluded)") % {"v": cell["inclusion"]}))

            water_since = None
            if cell["water_since"]:
                try:
                    water_since = date.fromisoformat(cell["water_since"])
                    if len(cell["water_since"]) != 10:
                        raise ValueError
                except ValueError:
                    row_errors.append(ImportError_(line, "water_since", _("fecha inválida «%(v)s» (AAAA-MM-DD)") % {"v": cell["water_since"]}))
                    water_since = None

            credit = Decimal("0")
            try:
                credit = Decimal(cell["credit_percent"] or "0")
                if not credit.is_finite() or credit < 0 or credit > 100:
                    raise ValueError
                if credit.as_tuple().exponent < -2:  # type: ignore[operator]
                    raise ValueError
            except (InvalidOperation, ValueError):
                row_errors.append(ImportError_(line, "credit_percent", _("crédito fuera de 0–100 o con más de 2 decimales «%(v)s»") % {"v": cell["credit_percent"]}))

            if row_errors:
                errors.extend(row_errors)
                continue
            rows.append(
                ParcelRow(
                    line=line,
                    parcel_id=parcel_id,
                    owner_id=owner_id,
                    owner_name=cell["owner_name"],
                    owner_email=email,
                    owner_kind=kind,
                    owner_address=cell["owner_address"] if has_address else None,
                    gravity_acres=gravity,  # type: ignore[arg-type]
                    pumped_acres=pumped,  # type: ignore[arg-type]
                    inclusion=inclusion,
                    water_since=water_since,
                    credit_percent=credit,
                )
            )
    except csv.Error as exc:
        errors.append(ImportError_(line + 1, "", str(exc)))
    if not rows and not errors:
        errors.append(ImportError_(2, "", _("el archivo no tiene filas de datos")))
    if errors:
        return ParsedFile((), tuple(errors))
    return ParsedFile(tuple(rows), ())
