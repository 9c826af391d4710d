"""How the office writes an amount, on pages, documents and in messages alike: ``$1,234.56``, a
negative one ``-$5.00``. Puerto Rico writes money the same in Spanish and English, so this does not
follow the active language. The ``money`` template filter and every sentence that names an amount
(the counter's refusals, the ledger's wording, the commands' summaries) use this one function."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any


def as_decimal(value: Any) -> Decimal | None:
    """A Decimal, a djmoney ``Money`` or a number as a Decimal; ``None`` (or "") stays ``None``."""
    if value is None or value == "":
        return None
    amount = getattr(value, "amount", value)  # djmoney Money
    return amount if isinstance(amount, Decimal) else Decimal(str(amount))


def money_text(value: Any) -> str:
    """``Decimal("1234.5")`` → ``$1,234.50``; ``Decimal("-12")`` → ``-$12.00``; a ``Money`` as its
    amount; ``None`` → "". Shown to the cent, half-up, as the rules round."""
    amount = as_decimal(value)
    if amount is None:
        return ""
    amount = amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    sign = "-" if amount < 0 else ""
    return f"{sign}${abs(amount):,.2f}"
