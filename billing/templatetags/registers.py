"""A register's cell (``billing.registers``) as the page and the PDF print it: dates d/m/Y
(Puerto Rico, in both languages), amounts ``$1,234.56``, the rest as text."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from django import template

from parcels.money import money_text as money

register = template.Library()


@register.filter
def register_cell(value: Any) -> str:
    if isinstance(value, date):
        return value.strftime("%d/%m/%Y")
    if isinstance(value, Decimal):
        return money(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)
