"""Parsing and applying the parcel spreadsheet (CSV) that Authority staff keep.

All or nothing: ``parse_parcel_csv`` reads every row and returns every error with its file line
(the header is line 1) and column; ``parcels_import`` (in ``services``) writes only a file with
no error. Bulk writes rely on the database's constraints instead of a query per row.
Enumerated cells are read in Spanish or English, whatever their case and accents; numbers only
with a decimal point (a decimal comma is refused, never guessed), and a file separated by
semicolons is refused with one message (``_other_delimiter`` says why).
"""

from __future__ import annotations

import csv
import functools
import io
import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from django.utils import translation
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext as _

from .addresses import PR_ZIP_TEXT, STATE_TEXT, STATES, ZIP_FORMAT_TEXT, ZIP_RE, Address, parse_address, zip_problem

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
# The owner's address comes either in one cell (``owner_address``: "line 1, line 2, town, PR 00667")
# or in its parts (``ADDRESS_PART_COLUMNS``), not both; c/o and language go with either.
ADDRESS_PART_COLUMNS = ("owner_address_line1", "owner_address_line2", "owner_town", "owner_state", "owner_zip")
OPTIONAL_COLUMNS = ("owner_id", "owner_address", *ADDRESS_PART_COLUMNS, "owner_care_of", "owner_language")
# Every spelling a cell may use, after ``_folded`` (case, accents and spaces ignored) → the stored value.
INCLUSIONS = {
    "permanent": "permanent", "permanente": "permanent",
    "trial": "trial", "prueba": "trial",
    "excluded": "excluded", "excluido": "excluded",
}
OWNER_KINDS = {"private": "private", "privado": "private", "public": "public", "publico": "public"}
LANGUAGES = {"es": "es", "espanol": "es", "spanish": "es", "en": "en", "ingles": "en", "english": "en"}
MAX_ACRES = Decimal("99999999.9999")
# Other separators a spreadsheet may write between columns: Excel in Spanish writes ";".
OTHER_DELIMITERS = {";": gettext_noop("punto y coma (;)"), "\t": gettext_noop("tabulador")}
DECIMAL_COMMA = re.compile(r"^[+-]?\d*,\d+$")


@dataclass(frozen=True)
class Message:
    """Words kept as their Spanish source (the msgid) and their values, put into the reader's
    language only when read (issue 18 point 19): an upload is parsed by a worker, in Spanish, and
    read later by whoever opens it. A value may itself be a ``Message`` (a translated phrase)."""

    msgid: str
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, msgid: str, **params: Any) -> Message:
        return cls(msgid, tuple(params.items()))

    def __str__(self) -> str:
        text = gettext(self.msgid)
        if not self.params:
            return text
        return text % {name: str(value) if isinstance(value, Message) else value for name, value in self.params}

    def stored(self) -> dict[str, Any]:
        """The JSON form an upload keeps: ``{"msgid": …, "params": {name: value or a stored Message}}``."""
        return {"msgid": self.msgid, "params": {name: value.stored() if isinstance(value, Message) else value
                                                for name, value in self.params}}

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> Message:
        return cls(data["msgid"], tuple((name, cls.from_stored(value) if isinstance(value, dict) else value)
                                        for name, value in (data.get("params") or {}).items()))


@dataclass(frozen=True)
class ImportError_:
    line: int
    column: str
    text: Message

    @property
    def message(self) -> str:
        """The error in the active language."""
        return str(self.text)

    def __str__(self) -> str:
        return _("línea %(line)s, columna %(column)s: %(message)s") % {
            "line": self.line,
            "column": self.column or "-",
            "message": self.message,
        }

    def stored(self) -> dict[str, Any]:
        """What an upload keeps of the error: its words as msgid and values, translated when the
        page is read, and (for whoever reads the row itself) the Spanish text."""
        with translation.override("es-pr"):
            spanish = self.message
        return {"line": self.line, "column": self.column, "message": spanish, **self.text.stored()}


def stored_error_message(error: dict[str, Any]) -> str:
    """A stored error's words in the active language; an upload stored before the errors kept
    their msgid has only its Spanish text."""
    if "msgid" in error:
        return str(Message.from_stored(error))
    return str(error.get("message", ""))


@dataclass(frozen=True)
class ParcelRow:
    line: int
    parcel_id: str
    owner_id: str
    owner_name: str
    owner_email: str
    owner_kind: str
    owner_address: Address | None  # None: no address column, keep what the owner has; empty Address: none
    owner_care_of: str | None  # None: no c/o column, keep the owner's
    owner_language: str | None  # None: no column or an empty cell, keep the owner's (a new owner: "es")
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
        return None, ImportError_(line, "", Message.of(gettext_noop("el archivo no es UTF-8 (byte inválido en la posición %(pos)s)"), pos=exc.start))


@functools.lru_cache(maxsize=4096)
def _folded(value: str) -> str:
    """``" Público "`` → ``"publico"``: what an enumerated cell is compared as. Cached: a file of
    100,000 rows spells its enumerations a handful of ways (issue 20)."""
    decomposed = unicodedata.normalize("NFKD", value)
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).casefold().split())


def _number(value: str, column: str, line: int, errors: list[ImportError_]) -> Decimal | None:
    """A number written with a decimal point; a decimal comma (``12,5``) is refused, never read as 125 or 12."""
    value = value.strip()
    if DECIMAL_COMMA.match(value):
        if len(value) - value.index(",") - 1 == 3:  # 1,250: a thousands separator or three decimals?
            msgid = gettext_noop("«%(v)s» es ambiguo: escriba %(whole)s o %(point)s (punto decimal, sin separador de miles)")
        else:
            msgid = gettext_noop("«%(v)s» tiene coma decimal: use punto decimal: %(point)s")
        errors.append(ImportError_(line, column, Message.of(
            msgid, v=value, point=value.replace(",", "."), whole=value.replace(",", ""),
        )))
        return None
    try:
        return Decimal(value)
    except InvalidOperation:
        errors.append(ImportError_(line, column, Message.of(gettext_noop("número inválido «%(v)s» (use punto decimal y sin separador de miles: 1250.5)"), v=value)))
        return None


def _acres(value: str, column: str, line: int, errors: list[ImportError_]) -> Decimal | None:
    amount = _number(value, column, line, errors)
    if amount is None:
        return None
    if not amount.is_finite():
        errors.append(ImportError_(line, column, Message.of(gettext_noop("número inválido «%(v)s»"), v=value)))
        return None
    if amount < 0:
        errors.append(ImportError_(line, column, Message.of(gettext_noop("los acres no pueden ser negativos"))))
        return None
    if amount > MAX_ACRES or amount.as_tuple().exponent < -4:  # type: ignore[operator]
        errors.append(ImportError_(line, column, Message.of(gettext_noop("a lo sumo 4 decimales y 99,999,999.9999 acres"))))
        return None
    return amount


def _other_delimiter(text: str, header: list[str]) -> str:
    """The separator of a file whose header names our columns with ``;`` or a tab between them, or "".

    Such a file is refused, not read: it comes from a spreadsheet set to Spanish (or most of
    Europe), whose numbers are written ``12,5`` and may carry ``.`` between thousands (``1.250``
    for one thousand two hundred fifty); reading it would mean guessing what every point means."""
    known = set(REQUIRED_COLUMNS + OPTIONAL_COLUMNS)
    if len(known.intersection(header)) > 1:
        return ""
    first_line = text.splitlines()[0] if text else ""
    for delimiter in OTHER_DELIMITERS:
        names = {name.strip().strip('"').lower() for name in first_line.split(delimiter)}
        if len(known & names) > 1:
            return delimiter
    return ""


EXAMPLE_PREFIX = "EJEMPLO-"  # the template's example rows: a file still holding one is refused whole
TEMPLATE_ROWS = (
    ("EJEMPLO-0001", "", "Carmen Irizarry", "carmen@example.pr", "privado", "HC 1 Box 123, Bo. Palmarejo, Lajas, PR 00667-1234",
     "", "español", "10.5", "0", "permanente", "2015-07-01", "0"),
    ("EJEMPLO-0002", "", "Municipio de Lajas", "", "público", "Apartado 910, Lajas, PR 00667",
     "Oficina de Finanzas", "español", "0", "25.25", "prueba", "", "12.5"),
    ("EJEMPLO-0003", "", "John Rivera", "", "privado", "125 Main St, Apt 4, Orlando, FL 32801", "", "inglés",
     "5", "0", "permanente", "2001-01-01", "0"),
)
TEMPLATE_COLUMNS = (
    "parcel_id", "owner_id", "owner_name", "owner_email", "owner_kind", "owner_address", "owner_care_of",
    "owner_language", "gravity_acres", "pumped_acres", "inclusion", "water_since", "credit_percent",
)


def template_csv() -> bytes:
    """The file to start from: every column and the example rows (EJEMPLO-…, refused on import
    until replaced), UTF-8 with a BOM so that Excel shows the accents right (``parse_parcel_csv``
    skips the BOM)."""
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(TEMPLATE_COLUMNS)
    writer.writerows(TEMPLATE_ROWS)
    return out.getvalue().encode("utf-8-sig")


def _example_rows_error(lines: list[int]) -> ImportError_:
    """The template's example rows were left in the file: one error, first, naming their lines."""
    shown = ", ".join(str(line) for line in lines[:10]) + (", …" if len(lines) > 10 else "")
    if len(lines) == 1:
        msgid = gettext_noop("el archivo aún tiene una fila de ejemplo de la plantilla (catastro EJEMPLO-…), en la línea "
                             "%(lines)s: bórrela y escriba sus predios; el archivo se rechaza entero")
    else:
        msgid = gettext_noop("el archivo aún tiene las filas de ejemplo de la plantilla (catastro EJEMPLO-…), en las líneas "
                             "%(lines)s: bórrelas y escriba sus predios; el archivo se rechaza entero")
    return ImportError_(lines[0], "parcel_id", Message.of(msgid, lines=shown))


def _zip_typed(value: str) -> str:
    """``"006671234"`` → ``"00667-1234"``; a spreadsheet that dropped the leading zeros (``667``) is
    not guessed at: the ZIP check refuses it."""
    value = "".join(value.split())
    return f"{value[:5]}-{value[5:]}" if len(value) == 9 and value.isdigit() else value


ADDRESS_LIMITS = (("line1", 100), ("line2", 100), ("town", 60))  # the Owner fields' max_length


def _owner_address(cell: dict[str, str], line: int, errors: list[ImportError_]) -> Address | None:
    """The row's address from ``owner_address`` or from its part columns; an empty ``Address``
    when the cells are empty (the owner has no address), None (with an error) when it cannot be."""
    if "owner_address" in cell:
        text = cell["owner_address"]
        if not text:
            return Address()
        address = parse_address(text)
        if address is None:
            errors.append(ImportError_(line, "owner_address", Message.of(gettext_noop(
                "no se entiende la dirección «%(v)s»: escríbala «línea 1, línea 2, pueblo, PR 00667» (la línea 2 es "
                "opcional; el código postal al final) o use las columnas owner_address_line1, owner_town y owner_zip"
            ), v=text)))
            return None
        column_of = {"line1": "owner_address", "line2": "owner_address", "town": "owner_address"}
    else:
        address = Address(
            line1=cell.get("owner_address_line1", ""), line2=cell.get("owner_address_line2", ""),
            town=cell.get("owner_town", ""), state=(cell.get("owner_state", "") or "PR").upper(),
            zip_code=_zip_typed(cell.get("owner_zip", "")),
        )
        if address.is_empty:
            return Address()
        column_of = {"line1": "owner_address_line1", "line2": "owner_address_line2", "town": "owner_town"}
        missing = [(column, message) for value, column, message in (
            (address.line1, "owner_address_line1", Message.of(gettext_noop("falta la línea 1 de la dirección"))),
            (address.town, "owner_town", Message.of(gettext_noop("falta el pueblo"))),
            (address.zip_code, "owner_zip", Message.of(gettext_noop("falta el código postal (ZIP)"))),
        ) if not value]
        if missing:
            errors.extend(ImportError_(line, column, message) for column, message in missing)
            return None
    state_column = "owner_address" if "owner_address" in cell else "owner_state"
    zip_column = "owner_address" if "owner_address" in cell else "owner_zip"
    problems = len(errors)
    for part, limit in ADDRESS_LIMITS:
        if len(getattr(address, part)) > limit:
            errors.append(ImportError_(line, column_of[part], Message.of(gettext_noop("%(part)s: más de %(n)s caracteres"), part=getattr(address, part)[:20] + "…", n=limit)))
    if address.state not in STATES:
        errors.append(ImportError_(line, state_column, Message.of(STATE_TEXT, v=address.state)))
    elif zip_problem(address.zip_code, address.state):
        problem = ZIP_FORMAT_TEXT if not ZIP_RE.match(address.zip_code) else PR_ZIP_TEXT
        errors.append(ImportError_(line, zip_column, Message.of(gettext_noop("«%(v)s»: %(problem)s"), v=address.zip_code,
                                                                problem=Message.of(problem))))
    return address if len(errors) == problems else None


def _csv_problem(exc: csv.Error) -> Message:
    """What Python's csv module said, in the interface's language: its messages are English
    ("field larger than field limit (131072)") and would show as such in the Spanish page."""
    text = str(exc)
    if text.startswith("field larger than field limit"):
        return Message.of(gettext_noop("un campo tiene más de %(n)s caracteres (¿unas comillas sin cerrar?)"), n=csv.field_size_limit())
    return Message.of(gettext_noop("el archivo no es un CSV válido en esta línea (revise las comillas)"))


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
        return ParsedFile((), (ImportError_(1, "", Message.of(gettext_noop("el archivo está vacío"))),))
    except csv.Error as exc:
        return ParsedFile((), (ImportError_(reader.line_num or 1, "", _csv_problem(exc)),))
    header = [name.strip().lower() for name in header]
    delimiter = _other_delimiter(text, header)
    if delimiter:
        return ParsedFile((), (ImportError_(1, "", Message.of(gettext_noop(
            "las columnas están separadas por %(d)s, no por comas (Excel en español lo hace así): guarde el archivo "
            "con comas entre columnas y punto decimal, como la plantilla"
        ), d=Message.of(OTHER_DELIMITERS[delimiter]))),))
    errors: list[ImportError_] = []
    for column in REQUIRED_COLUMNS:
        if column not in header:
            errors.append(ImportError_(1, column, Message.of(gettext_noop("falta la columna"))))
    for column in header:
        if column and column not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS:
            errors.append(ImportError_(1, column, Message.of(gettext_noop("columna desconocida"))))
    if len(set(header)) != len(header):
        errors.append(ImportError_(1, "", Message.of(gettext_noop("hay columnas repetidas"))))
    part_columns = [column for column in ADDRESS_PART_COLUMNS if column in header]
    if "owner_address" in header and part_columns:
        errors.append(ImportError_(1, part_columns[0], Message.of(gettext_noop(
            "la dirección va en owner_address («línea 1, línea 2, pueblo, PR 00667») o en sus columnas "
            "(owner_address_line1, owner_town, owner_zip…), no en ambas"
        ))))
    if errors:
        return ParsedFile((), tuple(errors))

    index = {name: position for position, name in enumerate(header)}
    has_address = "owner_address" in index
    has_parts = bool(part_columns)
    rows: list[ParcelRow] = []
    first_line: dict[str, int] = {}
    example_lines: list[int] = []
    line = 1
    try:
        for record in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in record):
                continue
            if len(record) != len(header):
                if len(record) > len(header):
                    msgid = gettext_noop("tiene %(n)s columnas; el encabezado tiene %(h)s (¿una coma decimal? use punto decimal: "
                                         "12.5; un texto con comas va entre comillas)")
                else:
                    msgid = gettext_noop("tiene %(n)s columnas; el encabezado tiene %(h)s")
                errors.append(ImportError_(line, "", Message.of(msgid, n=len(record), h=len(header))))
                continue
            cell = {name: record[position].strip() for name, position in index.items()}
            row_errors: list[ImportError_] = []

            parcel_id = cell["parcel_id"]
            if parcel_id.upper().startswith(EXAMPLE_PREFIX):
                example_lines.append(line)  # refused whole below, whatever else the row says
                continue
            if not parcel_id:
                row_errors.append(ImportError_(line, "parcel_id", Message.of(gettext_noop("vacío"))))
            elif len(parcel_id) > 40:
                row_errors.append(ImportError_(line, "parcel_id", Message.of(gettext_noop("más de 40 caracteres"))))
            elif parcel_id in first_line:
                row_errors.append(ImportError_(line, "parcel_id", Message.of(gettext_noop("«%(p)s» repetido (ya en la línea %(l)s)"), p=parcel_id, l=first_line[parcel_id])))
            else:
                first_line[parcel_id] = line

            if not cell["owner_name"]:
                row_errors.append(ImportError_(line, "owner_name", Message.of(gettext_noop("vacío"))))
            elif len(cell["owner_name"]) > 200:
                row_errors.append(ImportError_(line, "owner_name", Message.of(gettext_noop("más de 200 caracteres"))))
            email = cell["owner_email"]
            if email and ("@" not in email or " " in email or len(email) > 254):
                row_errors.append(ImportError_(line, "owner_email", Message.of(gettext_noop("correo electrónico inválido «%(v)s»"), v=email)))
            kind = OWNER_KINDS.get(_folded(cell["owner_kind"]), "")
            if not kind:
                row_errors.append(ImportError_(line, "owner_kind", Message.of(gettext_noop("tipo de dueño desconocido «%(v)s» (privado o público)"), v=cell["owner_kind"])))
            owner_id = cell.get("owner_id", "")
            if len(owner_id) > 40:
                row_errors.append(ImportError_(line, "owner_id", Message.of(gettext_noop("más de 40 caracteres"))))

            address = _owner_address(cell, line, row_errors) if has_address or has_parts else None
            care_of = cell["owner_care_of"] if "owner_care_of" in cell else None
            if care_of is not None and len(care_of) > 100:
                row_errors.append(ImportError_(line, "owner_care_of", Message.of(gettext_noop("más de 100 caracteres"))))
            elif care_of and address is not None and address.is_empty:
                row_errors.append(ImportError_(line, "owner_care_of", Message.of(gettext_noop("un a/c necesita la dirección del dueño en la misma fila"))))
            language = None
            if cell.get("owner_language"):
                language = LANGUAGES.get(_folded(cell["owner_language"]))
                if language is None:
                    row_errors.append(ImportError_(line, "owner_language", Message.of(gettext_noop("idioma desconocido «%(v)s» (español o inglés)"), v=cell["owner_language"])))

            gravity = _acres(cell["gravity_acres"], "gravity_acres", line, row_errors)
            pumped = _acres(cell["pumped_acres"], "pumped_acres", line, row_errors)
            if gravity is not None and pumped is not None and gravity == 0 and pumped == 0:
                row_errors.append(ImportError_(line, "gravity_acres", Message.of(gettext_noop("los acres por gravedad y por bombeo no pueden ser ambos cero"))))

            inclusion = INCLUSIONS.get(_folded(cell["inclusion"]), "")
            if not inclusion:
                row_errors.append(ImportError_(line, "inclusion", Message.of(gettext_noop("inclusión desconocida «%(v)s» (permanente, prueba o excluido)"), v=cell["inclusion"])))

            water_since = None
            if cell["water_since"]:
                try:
                    water_since = date.fromisoformat(cell["water_since"])
                    if len(cell["water_since"]) != 10:
                        raise ValueError
                except ValueError:
                    row_errors.append(ImportError_(line, "water_since", Message.of(gettext_noop("fecha inválida «%(v)s» (AAAA-MM-DD)"), v=cell["water_since"])))
                    water_since = None

            credit = _number(cell["credit_percent"] or "0", "credit_percent", line, row_errors)
            if credit is not None and (
                not credit.is_finite() or credit < 0 or credit > 100 or credit.as_tuple().exponent < -2  # type: ignore[operator]
            ):
                row_errors.append(ImportError_(line, "credit_percent", Message.of(gettext_noop("crédito fuera de 0–100 o con más de 2 decimales «%(v)s»"), v=cell["credit_percent"])))

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
                    owner_address=address,
                    owner_care_of=care_of,
                    owner_language=language,
                    gravity_acres=gravity,  # type: ignore[arg-type]
                    pumped_acres=pumped,  # type: ignore[arg-type]
                    inclusion=inclusion,
                    water_since=water_since,
                    credit_percent=credit,  # type: ignore[arg-type]
                )
            )
    except csv.Error as exc:  # the reader has read up to the line where it stopped
        errors.append(ImportError_(max(reader.line_num, line + 1), "", _csv_problem(exc)))
    if example_lines:
        errors.insert(0, _example_rows_error(example_lines))
    if not rows and not errors:
        errors.append(ImportError_(2, "", Message.of(gettext_noop("el archivo no tiene filas de datos"))))
    if errors:
        return ParsedFile((), tuple(errors))
    return ParsedFile(tuple(rows), ())
