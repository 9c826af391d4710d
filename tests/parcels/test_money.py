"""Money is written one way everywhere (``parcels.money.money_text``): on pages through the
``money`` filter, and in every sentence that names an amount (the counter's refusals, the ledger's
wording, the commands' summaries). Copies of ``f"${x:,.2f}"`` had grown in a dozen modules and
wrote a negative amount as ``$-5.00``; this keeps them from coming back."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest
from djmoney.money import Money
from hypothesis import given
from hypothesis import strategies as st

from parcels.money import money_text
from parcels.templatetags.lajas import money

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize(("value", "written"), [
    (Decimal("1234.5"), "$1,234.50"),
    (Decimal("0"), "$0.00"),
    (Decimal("-5"), "-$5.00"),
    (Decimal("1234567.894"), "$1,234,567.89"),
    (Decimal("0.005"), "$0.01"),  # half-up, as the rules round (not Python's half-even "$0.00")
    (Decimal("-0.005"), "-$0.01"),
    (Money("25.10", "USD"), "$25.10"),
    ("7", "$7.00"),
    (None, ""),
])
def test_an_amount_is_written_as_the_office_writes_it(value, written):
    assert money_text(value) == written
    assert money(value) == written  # the template filter is the same function


@given(st.decimals(min_value=Decimal("-10000000"), max_value=Decimal("10000000"), places=2))
def test_a_written_amount_reads_back_as_itself(amount):
    written = money_text(amount)
    assert re.fullmatch(r"-?\$\d{1,3}(,\d{3})*\.\d{2}", written)
    assert Decimal(written.replace("$", "").replace(",", "")) == amount


def test_no_module_writes_money_its_own_way():
    """No source of the three apps formats ``$`` and ``:,.2f`` itself, but ``parcels/money.py``."""
    copies = []
    for app in ("parcels", "levy", "billing"):
        for path in sorted((ROOT / app).rglob("*.py")):
            if path == ROOT / "parcels" / "money.py":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if re.search(r"\$\{[^}]*:,\.2f\}", line):
                    copies.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert copies == []
