"""Issue 18, points 1 and 5: the bill of a later installment asks for every charge that falls due
up to and including it, oldest first (payments go oldest first, ¶12, ¶13), is offered only from
``BILL_OFFER_DAYS`` before its due date, and a bill issued after its last day says it is overdue,
since when and with what surcharge (¶12). Read back from the stored PDF."""

from __future__ import annotations

import io
import os
import re
from datetime import date
from decimal import Decimal

import pdfplumber
import pytest

from billing import rules
from billing.accounts import _account_state_of
from billing.errors import BillingError
from billing.models import Charge
from billing.portal import installment_bills
from billing.services import bills
from billing.services.installments import roll_finalize
from levy.services import estimate_certify, estimate_enter, levy_compute
from tests.billing import ledger_counter
from tests.billing.conftest import example_1_finalize
from tests.billing.test_bill_total import PANEL_BOTTOM, text_of
from tests.clock import on_day

D = Decimal
SAVE = os.environ.get("BILL_PDF_DIR")  # to look at the PDFs: BILL_PDF_DIR=/tmp/x pytest …


def keep(name: str, data: bytes) -> None:
    if SAVE:
        with open(os.path.join(SAVE, f"{name}.pdf"), "wb") as out:
            out.write(data)


@pytest.fixture
def two_rolls(make_parcel, owner_a, staff):
    """Example 1's 2026-2027 roll finalized on time (2026-06-30), and 2027-2028's, with the same
    estimates, finalized early on 2026-12-01 (the issue's case): each of P4's four installments is
    $6,930.90; due 2026-07-01, 2027-01-01, 2027-07-01, 2028-01-01."""
    with on_day(date(2026, 6, 30)):
        example_1_finalize(make_parcel, owner_a, staff, finalized_on=date(2026, 6, 30))
    with on_day(date(2026, 12, 1)):
        estimate_enter(acting_user=staff["authority"], fiscal_year="2027-2028", om_estimate=D("100000.00"),
                       reserve=D("1500.00"), misc_income=D("7500.00"), surplus=D("4000.00"))
        estimate_certify(acting_user=staff["authority"], fiscal_year="2027-2028")
        levy_compute(acting_user=staff["hacienda"], fiscal_year="2027-2028")
        roll_finalize(acting_user=staff["hacienda"], fiscal_year="2027-2028", today=date(2026, 12, 1))


def left_column(data: bytes) -> str:
    """The words of the page's left half below the envelope panel, in reading order (the boxes
    side by side at the foot of the bill would otherwise interleave)."""
    with pdfplumber.open(io.BytesIO(data)) as document:
        page = document.pages[0]
        return re.sub(r"\s+", " ", page.within_bbox((0, PANEL_BOTTOM, page.width / 2, page.height)).extract_text())


def p4(year: str, number: int) -> Charge:
    return Charge.objects.get(parcel__parcel_id="P4", fiscal_year__label=year, number=number, kind="installment")


# --- the rule (pure) ----------------------------------------------------------------------------


CHARGES = (rules.ChargeRecord(key="C1", principal=D("100.00"), due=date(2026, 7, 1), last_day=date(2026, 8, 31)),
           rules.ChargeRecord(key="C2", principal=D("100.00"), due=date(2027, 1, 1), last_day=date(2027, 3, 2)),
           rules.ChargeRecord(key="C3", principal=D("100.00"), due=date(2027, 7, 1), last_day=date(2027, 8, 30)))


def three_installments(on: date, payments: tuple[ledger_counter.Paid, ...] = ()) -> rules.AccountState:
    state, stored = ledger_counter.account(charges=CHARGES, payments=payments, as_of=on)
    return _account_state_of(state, stored)


def test_a_later_installments_total_includes_the_ones_before_it_not_yet_due():
    """The finding's shape: on 2026-12-15 the July 2027 bill. July 2026 is overdue (4 periods:
    100.00 + 4 × 0.50 = 102.00); January 2027 (100.00) is not due yet but is paid before July
    2027, which is 100.00: 302.00 (the old total, 202.00, skipped January). It holds through
    2026-12-31 (July 2026's fifth period begins 2027-01-01)."""
    to_pay = rules.amount_to_pay(account=three_installments(date(2026, 12, 15)), charge_key="C3")
    assert to_pay == rules.AmountToPay(amount=D("302.00"), valid_through=date(2026, 12, 31), owed_keys=("C1", "C2", "C3"))
    # Paid that day, oldest first, it leaves the billed installment paid and nothing owing.
    paid = three_installments(date(2026, 12, 15), (ledger_counter.Paid(key="P", paid_on=date(2026, 12, 15), amount=to_pay.amount),))
    assert paid.charges[2].balance == 0 and paid.total_balance == 0


def test_a_late_bill_leaves_out_what_falls_due_after_its_installment():
    """The July 2026 bill issued on 2027-04-15: July owes 100.00 + ½% × 8 (Sep 1 … Apr 1) = 104.00;
    January (due 2027-01-01, delinquent from 2027-03-03: 2 periods, 101.00) comes after it and is
    asked by its own bill: ``later_due``."""
    to_pay = rules.amount_to_pay(account=three_installments(date(2027, 4, 15)), charge_key="C1")
    assert (to_pay.amount, to_pay.owed_keys, to_pay.later_due) == (D("104.00"), ("C1",), D("101.00"))
    assert to_pay.valid_through == date(2027, 4, 30)  # July's ninth period begins 2027-05-01


@pytest.mark.parametrize(("on", "through"), [
    (date(2026, 12, 15), date(2026, 12, 31)),  # July's fifth period begins 2027-01-01 (January falls due too)
    (date(2027, 1, 15), date(2027, 1, 31)),  # July's sixth period begins 2027-02-01
    (date(2026, 7, 15), date(2026, 8, 31)),  # July delinquent from 2026-09-01
])
def test_what_is_owed_today_holds_until_the_day_before_it_changes(on, through):
    assert rules.owed_today_holds_through(account=three_installments(on)) == through


def test_a_bill_is_offered_from_the_set_days_before_its_due_date():
    assert rules.bill_offered_from(due=date(2028, 1, 1), offer_days=45) == date(2027, 11, 17)
    with pytest.raises(rules.BillingRuleError):
        rules.bill_offered_from(due=date(2028, 1, 1), offer_days=-1)


# --- the bills, issued and read back -----------------------------------------------------------------


@pytest.mark.django_db
def test_the_january_2028_bill_asks_for_all_four_installments_oldest_first(two_rolls, staff):
    """P4's 2027-2028 January bill issued on 2027-11-20 (offered from 2027-11-17). Each
    installment $6,930.90 (½% a month = $34.6545 a period):
    - 2026-2027 plazo 1, delinquent from 2026-09-01: 15 periods (Sep 1 … Nov 1) → $519.82;
    - 2026-2027 plazo 2, last day 2027-03-02, delinquent from 03-03: 9 periods (Mar 3 … Nov 3) → $311.89;
    - 2027-2028 plazo 1, last day 2027-08-30, delinquent from 08-31: 3 periods (Aug 31, Sep 30, Oct 31) → $103.96;
    - 2027-2028 plazo 2 (this bill), not due: $6,930.90.
    Total 4 × 6,930.90 + 519.82 + 311.89 + 103.96 = $28,659.27, until the day before plazo 1 of
    2027-2028's fourth period (2027-11-30)."""
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=p4("2027-2028", 2), issued_on=date(2027, 11, 20))
    data = bytes(bill.document.pdf)
    keep("january-2028", data)
    text = text_of(data)
    assert "Total a pagar $28,659.27 Pague $28,659.27 a más tardar el 29 de noviembre de 2027." in text
    breakdown = text.split("Desglose del total a pagar")[1]
    rows = ["Plazo 1 del año fiscal 2026-2027 — moroso 01/07/2026 $6,930.90 $519.82 $7,450.72",
            "Plazo 2 del año fiscal 2026-2027 — moroso 01/01/2027 $6,930.90 $311.89 $7,242.79",
            "Plazo 1 del año fiscal 2027-2028 — moroso 01/07/2027 $6,930.90 $103.96 $7,034.86",
            "Plazo 2 del año fiscal 2027-2028 — este aviso 01/01/2028 $6,930.90 $0.00 $6,930.90"]
    places = [breakdown.index(row) for row in rows]
    assert places == sorted(places)  # oldest first, the order payments take
    assert "Total a pagar $28,659.27" in breakdown
    snap = bill.snapshot
    assert (snap["amount_to_pay"], snap["pay_by"], snap["later_due"]) == ("28659.27", "2027-11-29", "0.00")
    assert [(line["fiscal_year"], line["number"]) for line in snap["owed"]] == [
        ("2026-2027", 1), ("2026-2027", 2), ("2027-2028", 1), ("2027-2028", 2)]


@pytest.mark.django_db
def test_a_bill_is_not_issued_before_its_offer_date(two_rolls, staff, settings):
    """On 2026-12-01 (the issue's day) the January 2028 bill is 396 days early: refused, and not
    offered on the portal; the 2026-2027 installments are, this year first."""
    with pytest.raises(BillingError, match="se emite desde el 17 de noviembre de 2027, 45 días antes"):
        bills.bill_issue(acting_user=staff["hacienda"], charge=p4("2027-2028", 2), issued_on=date(2026, 12, 1))
    with pytest.raises(BillingError, match="se emite desde el 17 de mayo de 2027"):
        bills.bill_issue(acting_user=staff["hacienda"], charge=p4("2027-2028", 1), issued_on=date(2027, 5, 16))
    parcel = p4("2026-2027", 1).parcel
    offered = [(row["charge"].fiscal_year.label, row["charge"].number) for row in installment_bills(parcel, today=date(2026, 12, 1))]
    assert offered == [("2026-2027", 1), ("2026-2027", 2)]
    # On 2027-05-17 July 2027 is offered too, after this fiscal year's installments.
    offered = [(row["charge"].fiscal_year.label, row["charge"].number) for row in installment_bills(parcel, today=date(2027, 5, 17))]
    assert offered == [("2026-2027", 1), ("2026-2027", 2), ("2027-2028", 1)]
    # In July 2027 the new fiscal year comes first.
    offered = [(row["charge"].fiscal_year.label, row["charge"].number) for row in installment_bills(parcel, today=date(2027, 7, 2))]
    assert offered == [("2027-2028", 1), ("2026-2027", 1), ("2026-2027", 2)]
    settings.BILL_OFFER_DAYS = 400  # a longer window is a setting
    assert len(installment_bills(parcel, today=date(2026, 12, 1))) == 4
    bills.bill_issue(acting_user=staff["hacienda"], charge=p4("2027-2028", 2), issued_on=date(2026, 12, 1))


@pytest.mark.django_db
def test_a_bill_issued_after_the_last_day_says_it_is_overdue_since_when_and_its_surcharge(two_rolls, staff):
    """Point 5, AV-2026-000002: P4's July 2026 bill issued on 2026-12-01. Last day 2026-08-31, so
    delinquent from 2026-09-01; 4 periods begun (Sep 1, Oct 1, Nov 1, Dec 1): ½% × 4 × 6,930.90 =
    138.6180 → $138.62; total $7,069.52 until 2026-12-31 (the fifth period begins 2027-01-01)."""
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=p4("2026-2027", 1), issued_on=date(2026, 12, 1))
    data = bytes(bill.document.pdf)
    keep("late-july", data)
    text = text_of(data)
    # In the panel, under the amount: overdue, since when, and the surcharge.
    panel = text.split("Desglose del total a pagar")[0]
    assert ("Total a pagar $7,069.52 Pague $7,069.52 a más tardar el 31 de diciembre de 2026. Este plazo está moroso desde "
            "el 1 de septiembre de 2026: lleva $138.62 de recargo al 1 de diciembre de 2026.") in panel
    assert ("Este plazo está moroso desde el 1 de septiembre de 2026. Venció el 1 de julio de 2026 y no se pagó completo a más "
            "tardar el 31 de agosto de 2026, el último día sin recargo. Al 1 de diciembre de 2026 lleva $138.62 de recargo, ½% de "
            "lo no pagado por cada mes o fracción de mes, y sigue subiendo cada mes hasta que se pague.") in left_column(data)
    assert "Si el plazo no se paga" not in text and "se vuelve moroso" not in text
    # A bill issued on time keeps the warning of what happens after the last day.
    on_time = bills.bill_issue(acting_user=staff["hacienda"], charge=p4("2026-2027", 2), issued_on=date(2026, 12, 1))
    text = text_of(bytes(on_time.document.pdf))
    assert ("Si el plazo no se paga a más tardar el 2 de marzo de 2027, se vuelve moroso y desde el 3 de marzo de 2027"
            in left_column(bytes(on_time.document.pdf)))
    assert "está moroso desde" not in text.split("Desglose")[0].split("Total a pagar")[1]


@pytest.mark.django_db
def test_the_bill_cites_the_law_in_footnotes_not_in_its_labels(two_rolls, staff):
    """Point 6: no ¶ mark in the bill's text; the five footnotes at the foot of the page carry them."""
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=p4("2026-2027", 2), issued_on=date(2026, 12, 1))
    text = text_of(bytes(bill.document.pdf))
    body, notes = text.split("Acres por gravedad más la mitad de los acres por bombeo")
    assert "¶" not in body
    for mark in ("(¶5 de la ley)", "(¶6)", "(¶7)", "(¶9)", "(¶11, ¶12)", "(¶12)", "(¶13)", "(¶14)"):
        assert mark in notes
    english = text_of(bills.documents.render_bill(bill, lang="en"))
    assert "¶" not in english.split("Gravity acres plus half the pumped acres")[0]
