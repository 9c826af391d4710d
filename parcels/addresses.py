"""Mailing addresses as the U.S. Postal Service reads them (Puerto Rico is a U.S. postal area).

Pure: no Django models, no database. ``Owner`` keeps the parts (lines, town, state, ZIP, c/o)
and documents print ``usps_block``: upper case, no punctuation but the ZIP+4 hyphen, the "/" of
"C/O" and "#", no accents (USPS Publication 28, sec. 2: the automated readers want the block in
capitals without punctuation; the Postal Service's own city names in Puerto Rico are written
without accents, "MAYAGUEZ", "CATANO"). ``parse_address`` reads the one-cell form the import and
the old free-text field hold: ``"HC 1 Box 123, Bo. Palmarejo, Lajas, PR 00667-1234"``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

# States, the District of Columbia, the territories and the armed forces' postal "states" (an
# absentee owner may live anywhere the Postal Service delivers); Puerto Rico first, the default.
STATES = (
    "PR", "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS",
    "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC", "ND",
    "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY",
    "VI", "GU", "AS", "MP", "AA", "AE", "AP",
)
ZIP_PATTERN = r"^[0-9]{5}(-[0-9]{4})?$"
# Puerto Rico's ZIP codes are 006xx, 007xx and 009xx (008xx is the U.S. Virgin Islands); the
# database allows 006–009 as the brief for the registry says, the form says which ones are real.
PR_ZIP_PATTERN = r"^00[6-9]"
ZIP_RE = re.compile(ZIP_PATTERN)
PR_ZIP_RE = re.compile(PR_ZIP_PATTERN)

# The Spanish source of each message (the import keeps it and translates it when read) and the message.
ZIP_FORMAT_TEXT = gettext_noop("El código postal (ZIP) se escribe con 5 dígitos (00667) o con 9, así: 00667-1234.")
PR_ZIP_TEXT = gettext_noop("Los códigos postales (ZIP) de Puerto Rico empiezan con 006, 007 o 009 (por ejemplo 00667 para Lajas).")
STATE_TEXT = gettext_noop("Estado desconocido «%(v)s»: use la abreviatura postal de dos letras (PR, FL, NY…).")
ZIP_FORMAT_MESSAGE = _(ZIP_FORMAT_TEXT)
PR_ZIP_MESSAGE = _(PR_ZIP_TEXT)
STATE_MESSAGE = _(STATE_TEXT)


@dataclass(frozen=True)
class Address:
    """The delivery part of a mailing address; ``state`` is a two-letter postal code."""

    line1: str = ""
    line2: str = ""
    town: str = ""
    state: str = "PR"
    zip_code: str = ""

    @property
    def is_empty(self) -> bool:
        return not (self.line1 or self.line2 or self.town or self.zip_code)


def zip_problem(zip_code: str, state: str) -> str:
    """The Spanish message for a ZIP that cannot be, or "" when it is fine (an empty ZIP is fine here)."""
    if not zip_code:
        return ""
    if not ZIP_RE.match(zip_code):
        return str(ZIP_FORMAT_MESSAGE)
    if state == "PR" and not PR_ZIP_RE.match(zip_code):
        return str(PR_ZIP_MESSAGE)
    return ""


def usps_text(value: str) -> str:
    """``"Urb. Santa Rosa, Calle 3 #12"`` → ``"URB SANTA ROSA CALLE 3 #12"``: capitals, no accents,
    no punctuation but "-", "/" and "#", single spaces."""
    decomposed = unicodedata.normalize("NFKD", value)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    plain = re.sub(r"[.'’`]", "", plain)  # "P.O." → "PO", "O'Neill" → "ONEILL"
    plain = re.sub(r"[^0-9A-Za-z/#\- ]", " ", plain)  # commas, semicolons, quotes, parentheses
    return " ".join(plain.upper().split())


def care_of_text(care_of: str) -> str:
    """The c/o line: "C/O" and the name, whether the clerk typed "a/c", "c/o" or nothing before it."""
    name = re.sub(r"^\s*(?:a/c|c/o|attn:?)\s+", "", care_of, flags=re.IGNORECASE)
    return f"C/O {usps_text(name)}" if name.strip() else ""


def last_line(address: Address) -> str:
    """``"LAJAS PR 00667-1234"``: town, state and ZIP on one line, as Pub 28 places them."""
    return " ".join(part for part in (usps_text(address.town), address.state, address.zip_code) if part)


def usps_block(address: Address, *, care_of: str = "", name: str = "") -> tuple[str, ...]:
    """The lines of the address block, top to bottom: the name when given, "C/O …", line 1, line 2,
    then town, state and ZIP. Empty when there is no address."""
    if address.is_empty:
        return ()
    lines = [usps_text(name), care_of_text(care_of), usps_text(address.line1), usps_text(address.line2),
             last_line(address)]
    return tuple(line for line in lines if line)


_STATE_WORDS = {"PUERTO RICO": "PR", "P R": "PR", "PR": "PR"}
# "…, Lajas, PR 00667-1234", "… Lajas PR 00667", "… Lajas P.R. 00667", "… Lajas, Puerto Rico 00667",
# "… Lajas 00667" (no state: Puerto Rico): the tail that holds the state and the ZIP.
_TAIL = re.compile(
    r"[\s,]*(?:\b(?P<state>[A-Za-z]{2}|P\.\s?R\.?|Puerto\s+Rico)\.?)?[\s,]*(?P<zip>[0-9]{5}(?:-?[0-9]{4})?)\s*$",
    re.IGNORECASE,
)


def parse_address(text: str) -> Address | None:
    """Read ``"line 1[, line 2…], town[,] STATE ZIP"`` (commas or line breaks between the parts);
    None when it cannot be read so (no ZIP at the end, or no town before it). A missing state
    is Puerto Rico; ``"006671234"`` is read as ``"00667-1234"``."""
    text = text.strip()
    match = _TAIL.search(text)
    if not match:
        return None
    state = (match.group("state") or "PR").upper()
    state = _STATE_WORDS.get(" ".join(state.replace(".", " ").split()), state)
    zip_code = match.group("zip")
    if len(zip_code) == 9:
        zip_code = f"{zip_code[:5]}-{zip_code[5:]}"
    parts = [" ".join(part.split()) for part in re.split(r"[,\n;]", text[: match.start()])]
    parts = [part for part in parts if part]
    if len(parts) < 2:
        return None
    town = parts[-1]
    line1 = parts[0]
    line2 = ", ".join(parts[1:-1])
    return Address(line1=line1, line2=line2, town=town, state=state, zip_code=zip_code)
