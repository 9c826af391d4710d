"""Dated legal parameters never rewrite the past (issue 11, finding 4; ``docs/interpretations.md``).

Worked example 1, finalized on 2026-06-30: P4's halves are 6,930.90 each, the July half due
2026-07-01 with last day 2026-08-31 (D = 2026-09-01, periods on the 1st of each month), the January
half due 2027-01-01 with last day 2027-03-02 (D = 2027-03-03, periods on the 3rd)."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.db import DatabaseError, transaction
from django.urls import reverse

from billing import accounts
from billing.models import Charge
from billing.services import counter, installments, water
from levy import services as levy_services
from levy.models import LegalParameterSet, Levy
from levy.services import estimate_certify, estimate_enter, levy_compute
from parcels.models import Parcel
from tests.billing.conftest import statement
from tests.clock import move_clock_to
from tests.commands import run_command

PR = ZoneInfo("America/Puerto_Rico")
STATUTE = date(1953, 6, 10)


def on(monkeypatch, day: date) -> None:
    move_clock_to(monkeypatch, datetime(day.year, day.month, day.day, 9, 0, tzinfo=PR))


def add(*args: str) -> tuple[int, str, str]:
    return run_command("levy", "parameters", "add", *args)


@pytest.mark.django_db
def test_finding_4_a_one_percent_row_from_2028_leaves_earlier_periods_and_payments_as_they_were(
    district_1, staff, monkeypatch
):
    p4 = Parcel.objects.get(parcel_id="P4")
    on(monkeypatch, date(2027, 11, 15))
    # 15 periods begun (2026-09-01 … 2027-11-01): ½% × 15 × 6,930.90 = 519.8175 -> 519.82 first,
    # then 480.18 of principal; 6,450.72 of the July half stays unpaid.
    receipt = counter.payment_record(acting_user=staff["collector"], parcel=p4, amount=Decimal("1000.00"),
                                      paid_on=date(2027, 11, 15))
    applied = receipt.snapshot["applications"][0]
    assert (applied["number"], applied["surcharge"], applied["principal_paid"]) == (1, "519.82", "480.18")

    before_dec = statement("P4", "2027-12-31")
    before_feb = statement("P4", "2028-02-15")
    # ½% × (15 × 6,930.90 + 3 × 6,450.72) = ½% × 123,315.66 = 616.5783 -> 616.58.
    assert before_feb["installments"][0]["surcharge"] == "616.58"
    # January half: 12 periods (2027-03-03 … 2028-02-03), ½% × 12 × 6,930.90 = 415.854 -> 415.85.
    assert before_feb["installments"][1]["surcharge"] == "415.85"

    on(monkeypatch, date(2027, 12, 1))
    code, out, err = add("--effective-from", "2028-01-01", "--surcharge-rate", "0.01",
                         "--reason", "Ley 99-2027: recargo de 1 % mensual", "--user", "hac")
    assert code == 0, err
    assert out.strip() == "legal parameters in force from 2028-01-01 added by hac: surcharge_rate 0.0100"

    # Nothing that began before 2028-01-01 changes: the statement to 2027-12-31 is the same.
    assert statement("P4", "2027-12-31") == before_dec
    # ½% × 6,930.90 × 15 + ½% × 6,450.72 = 552.0711 -> 552.07 (as before).
    assert before_dec["installments"][0]["surcharge"] == "552.07"
    after_feb = statement("P4", "2028-02-15")
    july, january = after_feb["installments"]
    # Periods of 2028-01-01 and 2028-02-01 at 1 %: ½% × (15 × 6,930.90 + 6,450.72) + 1 % × 2 × 6,450.72
    # = 552.0711 + 129.0144 = 681.0855 -> 681.09 (finding 4 had every period at 1 %: 1,233.16).
    assert july["surcharge"] == "681.09"
    assert july["surcharge_basis"] == "½% × 15 meses sobre $6,930.90 + ½% × 1 mes sobre $6,450.72 + 1% × 2 meses sobre $6,450.72"
    # January half: ½% × 10 × 6,930.90 + 1 % × 2 × 6,930.90 = 346.545 + 138.618 = 485.163 -> 485.16.
    assert january["surcharge"] == "485.16"
    # The payment is applied as its receipt says, whatever the new row.
    account = accounts.account_state(parcel=p4, as_of=date(2028, 2, 15))
    (mine,) = [a for a in account.state.applications if a.payment_key == accounts.payment_key(receipt.payment_id)]
    assert (mine.surcharge, mine.principal) == (Decimal("519.82"), Decimal("480.18"))
    assert july["paid"] == "1000.00" and january["paid"] == "0.00"
    code, out, err = run_command("verify_books")
    assert code == 0 and out.startswith("books balance"), out + err


@pytest.mark.django_db
def test_grace_days_are_those_in_force_on_each_due_date(district_1, staff, monkeypatch):
    on(monkeypatch, date(2026, 12, 1))
    code, _out, err = add("--effective-from", "2027-01-01", "--grace-days", "90", "--reason", "Reforma", "--user", "hac")
    assert code == 0, err
    july, january = statement("P4", "2027-03-10")["installments"]
    assert july["last_day_to_pay"] == "2026-08-31"  # due 2026-07-01: 60 days, as printed
    assert january["last_day_to_pay"] == "2027-04-01"  # due 2027-01-01: + 90 days (was 2027-03-02)
    assert january["surcharge"] == "0.00"
    # The stored bill date is not rewritten; the replay gives the longer term.
    assert Charge.objects.get(parcel__parcel_id="P4", number=2).last_day_to_pay == date(2027, 3, 2)


@pytest.mark.django_db
def test_a_levy_stores_the_row_in_force_on_its_july_1(district_1, staff, monkeypatch):
    statute = LegalParameterSet.objects.get(effective_from=STATUTE)
    assert district_1.parameter_set == statute
    on(monkeypatch, date(2026, 12, 1))
    code, _out, err = add("--effective-from", "2027-07-01", "--safety-margin-rate", "0.03", "--reason", "Ley 12-2027",
                          "--user", "hac")
    assert code == 0, err
    reform = LegalParameterSet.objects.get(effective_from=date(2027, 7, 1))
    assert (reform.safety_margin_rate, reform.reason, reform.created_by.username) == (Decimal("0.0300"), "Ley 12-2027", "hac")
    assert reform.surcharge_rate == statute.surcharge_rate and reform.grace_days == statute.grace_days  # copied
    estimate_enter(acting_user=staff["authority"], fiscal_year="2027-2028", om_estimate=Decimal("100000.00"),
                   reserve=Decimal("1500.00"), misc_income=Decimal("7500.00"), surplus=Decimal("4000.00"))
    estimate_certify(acting_user=staff["authority"], fiscal_year="2027-2028")
    levy = levy_compute(acting_user=staff["hacienda"], fiscal_year="2027-2028")
    assert levy.parameter_set == reform and levy.parameters["safety_margin_rate"] == "0.0300"
    # ¶3 with the 3 % margin: 100,000 − 4,000 + 1,500 − 7,500 = 90,000 (+ credits 0) -> margin 2,700.00.
    assert levy.safety_margin.amount == Decimal("2700.00")
    assert Levy.objects.get(pk=district_1.pk).parameter_set_id == statute.pk  # the final levy keeps its row


@pytest.mark.django_db
def test_the_late_roll_rule_is_the_one_of_the_finalization_date(district_1, staff, monkeypatch):
    on(monkeypatch, date(2026, 12, 1))
    code, _out, err = add("--effective-from", "2027-07-02", "--late-roll-due-on-finalization", "no", "--reason",
                          "Reforma", "--user", "hac")
    assert code == 0, err
    estimate_enter(acting_user=staff["authority"], fiscal_year="2027-2028", om_estimate=Decimal("100000.00"),
                   reserve=Decimal("1500.00"), misc_income=Decimal("7500.00"), surplus=Decimal("4000.00"))
    estimate_certify(acting_user=staff["authority"], fiscal_year="2027-2028")
    levy_compute(acting_user=staff["hacienda"], fiscal_year="2027-2028")
    # Finalized late on 2027-08-15, when the row of 2027-07-02 says the July half stays due on July 1.
    installments.roll_finalize(acting_user=staff["hacienda"], fiscal_year="2027-2028", today=date(2027, 8, 15))
    july = Charge.objects.get(parcel__parcel_id="P4", fiscal_year__label="2027-2028", number=1)
    assert july.due_date == date(2027, 7, 1)  # the July 1 row would have said 2027-08-15


@pytest.mark.django_db
def test_parameters_add_refusals(district_1, staff, make_user, monkeypatch):
    make_user("col9", "collector")
    on(monkeypatch, date(2026, 12, 1))
    code, _out, err = add("--effective-from", "2026-11-30", "--surcharge-rate", "0.01", "--reason", "x", "--user", "hac")
    assert (code, err.strip()) == (
        1, "error: La fecha de vigencia 2026-11-30 ya pasó (hoy es 2026-12-01): una ley nueva rige desde hoy o después; "
           "el pasado no se recalcula.")
    code, _out, err = add("--effective-from", "2027-01-01", "--surcharge-rate", "0.01", "--reason", "x", "--user", "col9")
    assert (code, err.strip()) == (1, "error: El usuario col9 no tiene el rol hacienda.")
    code, _out, err = add("--effective-from", "2027-01-01", "--surcharge-rate", "0.01", "--reason", " ", "--user", "hac")
    assert (code, err.strip()) == (1, "error: Un cambio de parámetros legales requiere una razón.")
    code, _out, err = add("--effective-from", "2027-01-01", "--reason", "x", "--user", "hac")
    assert (code, err.strip()) == (1, "error: give at least one parameter to change, e.g. --surcharge-rate 0.01")
    code, _out, err = add("--effective-from", "2027-01-01", "--surcharge-rate", "0.005", "--reason", "x", "--user", "hac")
    assert (code, err.strip()) == (1, "error: Los valores dados son los vigentes el 2027-01-01: la fila nueva no cambiaría nada.")
    code, _out, err = add("--effective-from", "2027-01-01", "--saturdays-move-last-day", "maybe", "--reason", "x", "--user", "hac")
    assert (code, err.strip()) == (1, "error: write yes or no, not 'maybe'")
    code, _out, err = add("--effective-from", "2027-01-01", "--surcharge-rate", "1.5", "--reason", "x", "--user", "hac")
    assert code == 1 and "surcharge_rate" in err
    code, _out, err = add("--effective-from", "2026-12-01", "--surcharge-rate", "0.01", "--reason", "x", "--user", "hac")
    assert code == 0, err  # today is allowed
    code, _out, err = add("--effective-from", "2026-12-01", "--grace-days", "90", "--reason", "x", "--user", "hac")
    assert (code, err.strip()) == (
        1, "error: Ya hay parámetros legales vigentes desde el 2026-12-01; una fila no se cambia: elija otra fecha.")
    assert LegalParameterSet.objects.count() == 2


@pytest.mark.django_db
def test_no_row_contradicts_a_final_roll(district_1, staff, monkeypatch):
    on(monkeypatch, date(2026, 6, 30))  # the roll of 2026-2027 is final, its July 1 still ahead
    code, _out, err = add("--effective-from", "2026-07-01", "--pumped-weight", "0.6", "--reason", "x", "--user", "hac")
    assert (code, err.strip()) == (
        1, "error: El padrón de 2026-2027 ya está finalizado con los parámetros vigentes el 2026-07-01: una fila desde el "
           "2026-07-01 lo contradiría. Elija una fecha posterior al 2026-07-01.")
    code, _out, err = add("--effective-from", "2026-07-02", "--pumped-weight", "0.6", "--reason", "x", "--user", "hac")
    assert code == 0, err


@pytest.mark.django_db
def test_rows_never_change_and_list_prints_them(district_1, staff, monkeypatch):
    on(monkeypatch, date(2026, 12, 1))
    row = levy_services.legal_parameters_add(acting_user=staff["hacienda"], effective_from=date(2028, 1, 1),
                                             changes={"surcharge_rate": Decimal("0.01")}, reason="Ley 99-2027")
    with pytest.raises(DatabaseError), transaction.atomic():
        LegalParameterSet.objects.filter(pk=row.pk).update(surcharge_rate=Decimal("0.02"))
    with pytest.raises(DatabaseError), transaction.atomic():
        LegalParameterSet.objects.filter(pk=row.pk).delete()
    code, out, err = run_command("levy", "parameters", "list")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "from 2028-01-01 by hac: Ley 99-2027"
    assert "  surcharge_rate                 0.0100" in lines
    assert any(line.startswith("from 1953-06-10: 22 LPRA") for line in lines)


@pytest.mark.django_db
def test_parameters_page_shows_who_added_a_row_and_why(client, district_1, staff, monkeypatch, tmp_path):
    on(monkeypatch, date(2026, 12, 1))
    levy_services.legal_parameters_add(acting_user=staff["hacienda"], effective_from=date(2028, 1, 1),
                                       changes={"surcharge_rate": Decimal("0.01")}, reason="Ley 99-2027")
    client.force_login(staff["hacienda"])
    page = client.get(reverse("levy:parameters")).content.decode()
    assert "Fuente: <cite translate=\"no\">Ley 99-2027</cite>" in page and "Razón: Ley 99-2027 (hac)" in page and "1.00 %" in page and "0.50 %" in page
    # The 1953 row is in force today, not the 2028 one (newest first on the page).
    assert page.count("en vigor hoy") == 1 and page.index("en vigor hoy") > page.index("1.00 %")
    (tmp_path / "parameters.html").write_text(page)


@pytest.mark.django_db
def test_water_is_priced_with_the_rates_of_the_delivery_date(staff, make_parcel, owner_a, monkeypatch):
    on(monkeypatch, date(2026, 12, 1))
    code, _out, err = add("--effective-from", "2027-01-01", "--water-first-year-rate", "2.50", "--reason", "Tarifa 2027",
                          "--user", "hac")
    assert code == 0, err
    new = make_parcel("W1", owner_a, gravity="10", water_since=date(2026, 10, 1))  # first 12 months of water
    december = water.water_delivery_record(acting_user=staff["authority"], parcel=new, delivered_on=date(2026, 12, 1),
                                              acre_feet=Decimal("10"))
    on(monkeypatch, date(2027, 1, 5))
    january = water.water_delivery_record(acting_user=staff["authority"], parcel=new, delivered_on=date(2027, 1, 5),
                                             acre_feet=Decimal("10"))
    assert (december.rate, december.amount) == (Decimal("2.00"), Decimal("20.00"))  # 10 acre-feet × $2.00
    assert (january.rate, january.amount) == (Decimal("2.50"), Decimal("25.00"))  # 10 acre-feet × $2.50
