"""The levy workflow through the services and the ``levy`` command, on districts built by hand."""

from __future__ import annotations

import csv
import io
import json
from datetime import date
from decimal import Decimal

import pytest
from django.db import DatabaseError, connection, transaction

from billing.services.installments import roll_finalize
from levy.models import Estimate, Levy, RollCorrection, RollLine
from levy.services import LevyError, estimate_certify, estimate_enter, levy_compute
from parcels import review
from tests.clock import on_day
from tests.commands import run_command


def levy_cmd(*args: str) -> tuple[int, str, str]:
    return run_command("levy", *args)


@pytest.fixture
def officers(make_user):
    return {
        "authority": make_user("aut", "authority"),
        "hacienda": make_user("hac", "hacienda"),
        "hacienda_certifier": make_user("hac_aut", "hacienda"),
    }


@pytest.mark.django_db
def test_example_1_through_the_command_line(example_1, officers):
    assert levy_cmd("estimates", "--fiscal-year", "2026-2027", "--om-estimate", "100000.00", "--reserve", "1500.00",
                    "--misc-income", "7500.00", "--surplus", "4000.00", "--user", "aut")[0] == 0
    assert levy_cmd("certify", "--fiscal-year", "2026-2027", "--user", "aut")[0] == 0
    code, out, err = levy_cmd("compute", "--fiscal-year", "2026-2027", "--user", "hac")
    assert code == 0, err
    assert "91800.00" in out
    code, out, _ = levy_cmd("show", "--fiscal-year", "2026-2027", "--format", "json")
    shown = json.loads(out)
    assert shown["status"] == "draft"
    assert {k: shown[k] for k in ("subtotal", "safety_margin", "total_levy", "credits", "rate_gravity", "rate_pumped",
                                   "equivalent_acres", "parcels_levied", "roll_total", "roll_net")} == {
        "subtotal": "90000.00", "safety_margin": "1800.00", "total_levy": "91800.00", "credits": "0.00",
        "rate_gravity": "183.600000", "rate_pumped": "91.800000", "equivalent_acres": "500.0",
        "parcels_levied": 5, "roll_total": "91800.00", "roll_net": "91800.00",
    }
    code, out, _ = levy_cmd("export", "--fiscal-year", "2026-2027", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    p4 = next(r for r in rows if r["parcel_id"] == "P4")
    assert (p4["om_charge"], p4["net"], p4["first_installment"], p4["second_installment"], p4["levied"]) == (
        "13861.80", "13861.80", "6930.90", "6930.90", "yes")
    assert levy_cmd("finalize", "--fiscal-year", "2026-2027", "--user", "hac")[0] == 0
    assert json.loads(levy_cmd("show", "--fiscal-year", "2026-2027", "--format", "json")[1])["status"] == "final"


@pytest.mark.django_db
def test_example_2_credits_solved_and_pumped_land(example_2, officers):
    estimate_enter(acting_user=officers["authority"], fiscal_year="2027-2028", om_estimate=Decimal("250000.00"),
                   reserve=Decimal("5000.00"), misc_income=Decimal("20000.00"), deficit=Decimal("12345.67"))
    estimate_certify(acting_user=officers["authority"], fiscal_year="2027-2028")
    levy = levy_compute(acting_user=officers["hacienda"], fiscal_year="2027-2028")
    assert (levy.credits.amount, levy.subtotal.amount, levy.safety_margin.amount, levy.total_levy.amount) == (
        Decimal("33020.14"), Decimal("280365.81"), Decimal("5607.32"), Decimal("285973.13"))
    assert (levy.rate_gravity, levy.rate_pumped) == (Decimal("604.211135"), Decimal("302.105567"))
    lines = {line.parcel_code: line for line in levy.lines.all()}
    assert [(lines[p].om_charge, lines[p].credit, lines[p].net, lines[p].first_installment, lines[p].second_installment) for p in "ABDE"] == [
        (Decimal("72505.34"), Decimal("18126.34"), Decimal("54379.00"), Decimal("27189.50"), Decimal("27189.50")),
        (Decimal("24168.44"), Decimal("0.00"), Decimal("24168.44"), Decimal("12084.22"), Decimal("12084.22")),
        (Decimal("120842.23"), Decimal("0.00"), Decimal("120842.23"), Decimal("60421.12"), Decimal("60421.11")),
        (Decimal("20120.23"), Decimal("10060.12"), Decimal("10060.11"), Decimal("5030.06"), Decimal("5030.05")),
    ]
    assert levy.roll_credits.amount == Decimal("33020.15") and levy.roll_total.amount == Decimal("285973.13")
    # the snapshot keeps what the charge was computed from
    assert (lines["C"].gravity_acres, lines["C"].pumped_acres, lines["C"].credit_percent, lines["C"].owner_key) == (
        Decimal("60.0000"), Decimal("40.0000"), Decimal("10.00"), "OWN-B")


def _certified(officers, year="2026-2027", certifier="authority"):
    estimate_enter(acting_user=officers["authority"], fiscal_year=year, om_estimate=Decimal("100000.00"),
                   reserve=Decimal("1500.00"), misc_income=Decimal("7500.00"), surplus=Decimal("4000.00"))
    return estimate_certify(acting_user=officers[certifier], fiscal_year=year)


@pytest.mark.django_db
def test_bad_input_exits_1_and_changes_nothing(example_1, officers):
    cases = [
        ("estimates", "--fiscal-year", "2026-2028", "--om-estimate", "1", "--reserve", "0", "--misc-income", "0", "--user", "aut"),
        ("estimates", "--fiscal-year", "2026", "--om-estimate", "1", "--reserve", "0", "--misc-income", "0", "--user", "aut"),
        ("estimates", "--fiscal-year", "2026-2027", "--om-estimate", "100000.00", "--reserve", "2000.01", "--misc-income", "0", "--user", "aut"),
        ("estimates", "--fiscal-year", "2026-2027", "--om-estimate", "-5", "--reserve", "0", "--misc-income", "0", "--user", "aut"),
        ("estimates", "--fiscal-year", "2026-2027", "--om-estimate", "100", "--reserve", "0", "--misc-income", "0", "--deficit", "1", "--surplus", "1", "--user", "aut"),
        ("estimates", "--fiscal-year", "2026-2027", "--om-estimate", "100", "--reserve", "0", "--misc-income", "0", "--user", "hac"),
        ("certify", "--fiscal-year", "2026-2027", "--user", "aut"),
        ("compute", "--fiscal-year", "2026-2027", "--user", "hac"),
        ("finalize", "--fiscal-year", "2026-2027", "--user", "hac"),
    ]
    for args in cases:
        code, out, err = levy_cmd(*args)
        assert code == 1, (args, out, err)
        assert err.strip() and len(err.strip().splitlines()) == 1, (args, err)
    assert not Estimate.objects.exists() and not Levy.objects.exists()
    # exactly 2% is allowed
    assert levy_cmd("estimates", "--fiscal-year", "2026-2027", "--om-estimate", "100000.00", "--reserve", "2000.00",
                    "--misc-income", "0", "--user", "aut")[0] == 0


@pytest.mark.django_db
def test_no_paying_acreage_is_refused(make_parcel, owner_a, officers):
    make_parcel("T1", owner_a, inclusion="trial")
    make_parcel("N1", owner_a, water_since=date(2026, 6, 1))
    _certified(officers)
    with pytest.raises(LevyError):
        levy_compute(acting_user=officers["hacienda"], fiscal_year="2026-2027")
    assert not Levy.objects.exists()


@pytest.mark.django_db
def test_certifier_cannot_finalize_and_registry_change_blocks(example_1, officers, make_user):
    certifier = make_user("both", "hacienda")
    certifier.groups.add(officers["authority"].groups.get())
    estimate_enter(acting_user=certifier, fiscal_year="2026-2027", om_estimate=Decimal("1000.00"), reserve=Decimal("0"),
                   misc_income=Decimal("0"))
    estimate_certify(acting_user=certifier, fiscal_year="2026-2027")
    levy_compute(acting_user=certifier, fiscal_year="2026-2027")
    with pytest.raises(LevyError, match="certificó"):
        roll_finalize(acting_user=certifier, fiscal_year="2026-2027")
    from parcels.models import Parcel

    Parcel.objects.filter(parcel_id="P1").update(gravity_acres=Decimal("101"))
    with pytest.raises(LevyError, match="registro"):
        roll_finalize(acting_user=officers["hacienda"], fiscal_year="2026-2027")
    levy_compute(acting_user=officers["hacienda"], fiscal_year="2026-2027")
    levy = roll_finalize(acting_user=officers["hacienda"], fiscal_year="2026-2027", today=date(2026, 7, 2))
    assert levy.finalized_late is True
    with pytest.raises(LevyError):
        roll_finalize(acting_user=officers["hacienda"], fiscal_year="2026-2027")
    with pytest.raises(LevyError):
        levy_compute(acting_user=officers["hacienda"], fiscal_year="2026-2027")


@pytest.mark.django_db
def test_replacing_certified_estimates_needs_a_reason(example_1, officers):
    first = _certified(officers)
    with pytest.raises(LevyError, match="razón"):
        estimate_enter(acting_user=officers["authority"], fiscal_year="2026-2027", om_estimate=Decimal("1"),
                       reserve=Decimal("0"), misc_income=Decimal("0"))
    second = estimate_enter(acting_user=officers["authority"], fiscal_year="2026-2027", om_estimate=Decimal("1"),
                            reserve=Decimal("0"), misc_income=Decimal("0"), reason="Error en la cifra de O&M")
    first.refresh_from_db()
    assert first.status == "withdrawn" and second.supersedes == first and second.status == "entered"
    with pytest.raises(DatabaseError), transaction.atomic():
        Estimate.objects.filter(pk=first.pk).update(om_estimate=Decimal("5"))


@pytest.mark.django_db
def test_uncertified_estimates_entered_again_are_withdrawn_not_refused(example_1, officers):
    """¶1: until they are certified the Authority may correct its estimates; the first entry is
    kept, withdrawn, and the database still requires who and when of a certified one."""
    first = estimate_enter(acting_user=officers["authority"], fiscal_year="2026-2027", om_estimate=Decimal("100000.00"),
                           reserve=Decimal("1000.00"), misc_income=Decimal("0"))
    second = estimate_enter(acting_user=officers["authority"], fiscal_year="2026-2027", om_estimate=Decimal("100500.00"),
                            reserve=Decimal("1000.00"), misc_income=Decimal("0"))
    first.refresh_from_db()
    assert (first.status, first.certified_by, second.supersedes, second.status) == ("withdrawn", None, first, "entered")
    with pytest.raises(DatabaseError), transaction.atomic():
        Estimate.objects.filter(pk=second.pk).update(status="certified")


@pytest.mark.django_db
def test_database_refuses_changes_to_a_finalized_roll(example_1, officers):
    _certified(officers)
    levy_compute(acting_user=officers["hacienda"], fiscal_year="2026-2027")
    levy = roll_finalize(acting_user=officers["hacienda_certifier"], fiscal_year="2026-2027", today=date(2026, 6, 30))
    assert levy.finalized_late is False
    line = levy.lines.first()
    line.om_charge = Decimal("1.00")
    with pytest.raises(DatabaseError), transaction.atomic():
        line.save()
    with pytest.raises(DatabaseError), transaction.atomic():
        RollLine.objects.filter(levy=levy).update(credit=Decimal("0.00"))
    with pytest.raises(DatabaseError), transaction.atomic():
        RollLine.objects.filter(levy=levy).delete()
    for sql in (
        "UPDATE levy_rollline SET om_charge = 0, net = 0, first_installment = 0, second_installment = 0 WHERE levy_id = %s",
        "DELETE FROM levy_rollline WHERE levy_id = %s",
        "UPDATE levy_levy SET status = 'draft' WHERE id = %s",
        "DELETE FROM levy_levy WHERE id = %s",
    ):
        with pytest.raises(Exception) as info, transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, [levy.pk])
        assert "final" in str(info.value) or "protect" in str(info.value).lower(), sql
    with pytest.raises(DatabaseError), transaction.atomic():
        RollLine.objects.create(**{**{f.attname: getattr(line, f.attname) for f in RollLine._meta.fields if f.attname != "id"}})
    assert Levy.objects.get(pk=levy.pk).status == "final"


@pytest.mark.django_db
def test_correction_page(client, example_1, officers):
    from django.urls import reverse

    _certified(officers)
    levy_compute(acting_user=officers["hacienda"], fiscal_year="2026-2027")
    roll_finalize(acting_user=officers["hacienda_certifier"], fiscal_year="2026-2027", today=date(2026, 6, 30))
    url = reverse("levy:corrections", args=["2026-2027"])
    client.force_login(officers["authority"])
    assert client.get(url).status_code == 403
    client.force_login(officers["hacienda"])
    bad = client.post(url, {"parcel_id": "NOPE", "om_charge_delta": "10", "credit_delta": "0", "reason": "x", "due_date": "2026-12-01"})
    assert "NOPE" in bad.content.decode() or "padrón" in bad.content.decode()
    # made on 2026-11-01, so 2026-12-01 is a later due date, not an earlier one (¶9), whatever day the suite runs
    with on_day(date(2026, 11, 1)):
        data = {"parcel_id": "p 3", "om_charge_delta": "10.00", "credit_delta": "0", "reason": "Área", "due_date": "2026-12-01"}
        review_page = client.post(url, data)  # issue 18: the review page first
        assert review_page.status_code == 200 and not RollCorrection.objects.exists()
        response = client.post(url, {**data, review.FIELD: review_page.context["fingerprint"]})
        assert response.status_code == 302  # the number as typed: case and spaces do not matter
        page = client.get(url).content.decode()
    assert '<th scope="row">1</th><td>P3</td><td class="num">$10.00</td>' in page  # numbered as the documents cite it
