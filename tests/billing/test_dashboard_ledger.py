"""Issue 11: the collections dashboard (``billing.charts``, ``/cobros/resumen/``) reads the stored
allocation, not one derived again: its billed, collected and delinquent per semester are the
statement's, after a void, a correction's fall that frees money (¶9) and the *crédito aplicado*
that takes it to the January half, and an office closure that moves a last day to pay (¶12).

Worked example 1, finalized 2026-06-30 (no credits): each half is P1 9,180.00, P2 22,950.00,
P3 4,590.00, P4 6,930.90, P5 2,249.10, together 45,900.00. The July half is due 2026-07-01, its
last day to pay Monday 2026-08-31 (+60 days is a Sunday), its first surcharge period begins
2026-09-01 (½% a month or fraction); the January half is due 2027-01-01, last day 2027-03-02."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from billing import accounts, charts
from billing.services import collection, corrections, counter
from levy.models import RollLine
from parcels.models import Parcel
from tests.billing import delinquent
from tests.clock import move_clock_to

D = Decimal
FY = "2026-2027"
LEVY = charts.LEVY_KINDS
pytestmark = pytest.mark.django_db


def on(monkeypatch, day: date) -> None:
    """It is ``day`` at 10:00 in Lajas: payments, voids and corrections are made on their day."""
    move_clock_to(monkeypatch, timezone.make_aware(datetime(day.year, day.month, day.day, 10, 0)))


def pay(staff, code: str, amount: str, **kwargs):
    return counter.payment_record(acting_user=staff["collector"], parcel=Parcel.objects.get(parcel_id=code), amount=D(amount),
                                  paid_on=timezone.localdate(), **kwargs)


def figures(as_of: date) -> dict[tuple[str, int | None], tuple[Decimal, Decimal, Decimal, int]]:
    """(billed, collected, delinquent, delinquent parcels) per row of the dashboard."""
    return {(row.fiscal_year, row.number): (row.billed, row.collected, row.delinquent, row.delinquent_parcels)
            for row in charts.dashboard(as_of=as_of).rows}


def from_the_accounts(as_of: date) -> dict[tuple[str, int | None], tuple[Decimal, Decimal, Decimal, int]]:
    """The same figures summed over every parcel's statement as of ``as_of``: its lines' principal,
    and the principal paid on each charge of the account it is built from (a statement line's
    ``paid`` is principal and surcharge together), unpaid principal past the last day to pay."""
    found: dict[tuple[str, int | None], list] = {}
    for parcel in Parcel.objects.all():
        for line in accounts.statement(parcel=parcel, as_of=as_of).lines:
            if line.kind in LEVY:
                found.setdefault((line.fiscal_year, line.number), [D("0"), D("0"), D("0"), set()])[0] += line.principal
        account = accounts.account_state(parcel=parcel, as_of=as_of)
        for state in account.state.charges:
            charge = account.charges[state.key]
            if charge.kind not in LEVY:
                continue
            row = found[(charge.fiscal_year.label, charge.number)]
            row[1] += state.principal_paid
            unpaid = state.principal - state.principal_paid
            if state.accrues_surcharge and state.last_day < as_of and unpaid > 0:
                row[2] += unpaid
                row[3].add(parcel.pk)
    return {key: (billed, paid, late, len(parcels)) for key, (billed, paid, late, parcels) in found.items()}


def test_a_void_a_fall_and_the_credit_it_frees_count_as_the_statement_counts_them(monkeypatch, client, district_1, staff):
    on(monkeypatch, date(2026, 8, 1))
    pay(staff, "P4", "6930.90")  # P4's July half, on time
    on(monkeypatch, date(2026, 8, 15))
    check = pay(staff, "P1", "9180.00", method="check", reference="1234")  # P1's July half, by check
    on(monkeypatch, date(2026, 8, 20))
    pay(staff, "P5", "3000.00")  # July's 2,249.10, and 750.90 early to January
    on(monkeypatch, date(2026, 9, 10))
    counter.payment_void(acting_user=staff["supervisor"], payment=check.payment, reason="Cheque devuelto")
    on(monkeypatch, date(2026, 9, 15))
    pay(staff, "P3", "4612.95")  # late: 4,590.00 and ½% × 4,590.00 = 22.95 of surcharge (one period)
    on(monkeypatch, date(2026, 10, 1))
    # ¶9: −1,861.80 of O&M charge: each of P4's halves falls 930.90 to 6,000.00. July had been paid
    # 6,930.90 on time (no surcharge to give back): 930.90 of principal is released to the credit
    # and applied to January, not yet due.
    corrections.roll_correction_create(acting_user=staff["hacienda"], om_charge_delta=D("-1861.80"), reason="Área corregida",
                                       roll_line=RollLine.objects.get(parcel__parcel_id="P4", levy__status="final"))
    on(monkeypatch, date(2026, 10, 15))

    july, january = (FY, 1), (FY, 2)
    # before the void: P1 paid; P2 and P3 are past 31/08 unpaid
    assert figures(date(2026, 9, 1))[july] == (D("45900.00"), D("6930.90") + D("9180.00") + D("2249.10"),
                                               D("22950.00") + D("4590.00"), 2)
    # the day of the void P1's payment never paid (its allocation reversed as of its date)
    assert figures(date(2026, 9, 10))[july] == (D("45900.00"), D("6930.90") + D("2249.10"),
                                                D("9180.00") + D("22950.00") + D("4590.00"), 3)
    # the day before the fall, January has P5's 750.90 only
    assert figures(date(2026, 9, 30))[january] == (D("45900.00"), D("750.90"), D("0.00"), 0)
    # after the fall: each half billed 45,900.00 − 930.90; July collected P4's 6,930.90 less the
    # 930.90 given back, P5's 2,249.10 and P3's 4,590.00 (its 22.95 of surcharge is not principal);
    # January P5's 750.90 and the 930.90 applied to P4's half
    after = figures(date(2026, 10, 15))
    assert after[july] == (D("44969.10"), D("6000.00") + D("2249.10") + D("4590.00"), D("9180.00") + D("22950.00"), 2)
    assert after[january] == (D("44969.10"), D("930.90") + D("750.90"), D("0.00"), 0)
    assert set(after) == {july, january}
    for day in (date(2026, 8, 31), date(2026, 9, 1), date(2026, 9, 10), date(2026, 9, 30), date(2026, 10, 1),
                date(2026, 10, 15)):
        assert figures(day) == from_the_accounts(day), day

    # the statements' lines say the same: July paid 12,839.10 of principal and P3's 22.95 of surcharge
    lines = [line for parcel in Parcel.objects.all() for line in accounts.statement(parcel=parcel, as_of=date(2026, 10, 15)).lines
             if line.number == 1]
    assert sum((line.paid for line in lines), D("0")) == D("12839.10") + D("22.95")
    assert sum((line.principal for line in lines), D("0")) == D("44969.10")

    client.force_login(staff["hacienda"])
    data = client.get(reverse("collections:dashboard")).context["data"]  # as of today, 15/10/2026
    assert (data.totals.billed, data.totals.collected, data.totals.delinquent) == (
        D("89938.20"), D("12839.10") + D("1681.80"), D("32130.00"))
    assert [split.collected for split in data.split] == [D("14520.90")]  # ¶1(2), ¶2: the split of what was collected
    row = next(row for row in data.rows if row.number == 1)
    assert (row.pending, row.surcharges) == (D("0.00"), D("22.95"))


def test_a_closure_moves_the_last_day_as_the_account_moves_it(monkeypatch, district_1, staff):
    """¶12: offices closed on Monday 31/08/2026, the July half's last day, recorded on 03/09: every
    unpaid July half's last day moves to Tuesday 01/09 (a dated ``LastDayMove``). The dashboard of a
    past day reads the books as they stood at its end, as the statements do (issue 17 §1): on
    01/09 the closure was not known yet, so the four unpaid halves were late that day, and stay
    so in the figures of 01/09 read later; today's statement shows the moved last day."""
    on(monkeypatch, date(2026, 8, 3))
    pay(staff, "P2", "22950.00")
    on(monkeypatch, date(2026, 9, 3))
    _closure, moved = collection.office_closure_record(acting_user=staff["hacienda"], day=date(2026, 8, 31), reason="Huracán")
    assert moved == 5  # the five July halves, P2's paid one too
    july = (FY, 1)
    unpaid = D("45900.00") - D("22950.00")
    assert figures(date(2026, 9, 1))[july] == (D("45900.00"), D("22950.00"), unpaid, 4)
    assert figures(date(2026, 9, 2))[july] == (D("45900.00"), D("22950.00"), unpaid, 4)
    for day in (date(2026, 8, 31), date(2026, 9, 1), date(2026, 9, 2), date(2026, 9, 3)):
        assert figures(day) == from_the_accounts(day), day
    first = accounts.statement(parcel=Parcel.objects.get(parcel_id="P1"), as_of=date(2026, 9, 3)).lines[0]
    assert first.last_day_to_pay == date(2026, 9, 1)
    late = delinquent(as_of=date(2026, 9, 2))
    assert sum((item.state.principal - item.state.principal_paid for item in late), D("0")) == unpaid


def test_a_rise_counts_in_the_row_of_the_half_it_raises(monkeypatch, district_1, staff):
    """¶9, ¶12: +1,000.00 of O&M charge on P1 on 01/10/2026 raises each half 500.00 by a correction
    charge of its own (due 01/10/2026, the January one 01/01/2027); each is billed with its half."""
    on(monkeypatch, date(2026, 10, 1))
    corrections.roll_correction_create(acting_user=staff["hacienda"], om_charge_delta=D("1000.00"), reason="Área corregida",
                                       roll_line=RollLine.objects.get(parcel__parcel_id="P1", levy__status="final"))
    on(monkeypatch, date(2026, 10, 15))
    pay(staff, "P1", "9500.00")  # late: 9,180.00 + ½% × 2 × 9,180.00 = 91.80 of surcharge, then 228.20 of the rise
    found = figures(date(2026, 10, 15))
    assert set(found) == {(FY, 1), (FY, 2)}
    assert found[(FY, 1)] == (D("46400.00"), D("9180.00") + D("228.20"), D("45900.00") - D("9180.00"), 4)
    assert found[(FY, 2)][0] == D("46400.00")
    assert found == from_the_accounts(date(2026, 10, 15))


def test_surcharge_given_back_is_not_collected_and_the_money_freed_is_januarys(monkeypatch, district_1, staff):
    """¶9, ¶12: P4 pays 7,000.21 on 15/10/2026: July's 6,930.90 and ½% × 2 periods (Sep 1, Oct 1) ×
    6,930.90 = 69.31 of surcharge. On 01/11 a correction lowers each half 930.90 to 6,000.00: the
    same two periods on 6,000.00 owe 60.00, so 9.31 of surcharge and 930.90 of principal are given
    back, and the 940.21 freed is applied to January's principal. Every cent received is counted
    once: 6,000.00 July principal + 940.21 January principal + 60.00 surcharge = 7,000.21."""
    on(monkeypatch, date(2026, 10, 15))
    pay(staff, "P4", "7000.21")
    on(monkeypatch, date(2026, 11, 1))
    corrections.roll_correction_create(acting_user=staff["hacienda"], om_charge_delta=D("-1861.80"), reason="Área corregida",
                                       roll_line=RollLine.objects.get(parcel__parcel_id="P4", levy__status="final"))
    rows = {row.number: row for row in charts.dashboard(as_of=date(2026, 11, 1)).rows}
    assert (rows[1].collected, rows[1].surcharges, rows[2].collected) == (D("6000.00"), D("60.00"), D("940.21"))
    assert rows[1].collected + rows[1].surcharges + rows[2].collected == D("7000.21")
    before = {row.number: row for row in charts.dashboard(as_of=date(2026, 10, 31)).rows}
    assert (before[1].collected, before[1].surcharges, before[2].collected) == (D("6930.90"), D("69.31"), D("0.00"))
    july = next(line for line in accounts.statement(parcel=Parcel.objects.get(parcel_id="P4"), as_of=date(2026, 11, 1)).lines
                if line.number == 1)
    assert july.paid - rows[1].collected == rows[1].surcharges == july.surcharge  # the statement's surcharge paid
    assert figures(date(2026, 11, 1)) == from_the_accounts(date(2026, 11, 1))
