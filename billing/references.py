"""Payment references on bills (issue 19): ISO 11649 structured creditor references (``RF``).

A reference is ``RF`` + two check digits + the charge's numeric id (at least 8 digits, zero
padded), computed and checked with ``python-stdnum`` (``stdnum.iso11649``, ISO 7064 Mod 97-10).
Money a bank brings with a reference is applied to the parcel of that charge in the usual order
(¶12, ¶13: oldest charge first), like money at the counter; the reference only says whose account.

``payment_reference(charge_id)`` makes one; ``charge_id_from_reference(text)`` reads one back
(spaces and case do not matter) and raises ``InvalidReference`` with a reason a person can act on
when the text is not a reference or a digit was mistyped (the check digits catch it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stdnum import iso11649
from stdnum.exceptions import InvalidChecksum, ValidationError
from stdnum.iso7064 import mod_97_10

BODY_DIGITS = 8


class InvalidReference(ValueError):
    """The text is not an RF reference of a charge (``str(exc)`` says why, in Spanish)."""


def payment_reference(charge_id: int) -> str:
    """The compact RF reference of charge ``charge_id`` (e.g. ``RF4800000123``)."""
    if charge_id <= 0:
        raise ValueError(f"a charge id is positive, not {charge_id}")
    body = f"{charge_id:0{BODY_DIGITS}d}"
    return f"RF{mod_97_10.calc_check_digits(body + 'RF')}{body}"


def reference_display(reference: str) -> str:
    """The reference in groups of four, as printed on bills (``RF48 0000 0123``)."""
    return iso11649.format(reference)


def looks_like_reference(text: str) -> bool:
    """Whether ``text`` is written as an RF reference (valid or not), rather than a cadastre number."""
    return iso11649.compact(text or "").startswith("RF")


def charge_id_from_reference(text: str) -> int:
    """The charge id an RF reference encodes; ``InvalidReference`` if it is malformed or mistyped."""
    try:
        number = iso11649.validate(text or "")
    except InvalidChecksum as exc:
        raise InvalidReference(f"la referencia {text!r} no cuadra con sus dígitos de control (¿un dígito mal escrito?)") from exc
    except ValidationError as exc:
        raise InvalidReference(f"{text!r} no es una referencia RF (ISO 11649)") from exc
    body = number[4:]
    if not body.isdigit() or int(body) == 0:
        raise InvalidReference(f"la referencia {number} no es de un cargo de este distrito")
    return int(body)


@dataclass(frozen=True)
class TransferDetails:
    """¶13, issue 19: where a landowner sends a bank transfer (the collecting bank, its account and
    routing number) and the reference to write in the transfer's memo, as a bill froze them."""

    reference: str
    bank: str
    account: str
    routing: str

    @property
    def reference_display(self) -> str:
        return reference_display(self.reference)

    def to_json(self) -> dict[str, Any]:
        return {"bank": self.bank, "account": self.account, "routing": self.routing}


def transfer_details(charge_id: int) -> TransferDetails:
    """The transfer instructions of charge ``charge_id`` with today's bank details
    (``settings.PAYMENT_TRANSFER_*``, read at call time)."""
    from django.conf import settings

    return TransferDetails(reference=payment_reference(charge_id), bank=settings.PAYMENT_TRANSFER_BANK,
                           account=settings.PAYMENT_TRANSFER_ACCOUNT, routing=settings.PAYMENT_TRANSFER_ROUTING)
