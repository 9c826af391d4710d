"""Issue 18, points 17 and 18, through the test client and on the chart's geometry.

17: the estimates page shows beside each amount what was certified for the year before, writes
`$` on the amounts of the ¶1(2) refusal, asks a reason only to replace certified figures (¶1: a
draft is corrected, not replaced), and leaves "start a fiscal year" to the years page alone.
18: the waterfall's axis starts above zero when a step would otherwise be a sliver, so the
reserve (¶1(2)), credits (¶1(3)), deficit (¶2), income (¶3) and margin (¶3) are all bars one sees,
each labelled with its amount as Puerto Rico writes it."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.urls import reverse

from levy import charts
from levy.models import Estimate
from levy.services import estimate_certify, estimate_enter

YEAR, LAST_YEAR = "2026-2027", "2025-2026"
DEMO = {"om_estimate": "1250000.00", "reserve": "25000.00", "credits": "3120.55", "deficit": "30000.00", "surplus": "0",
        "misc_income": "40000.00", "subtotal": "1268120.55", "safety_margin": "25362.41", "total_levy": "1293482.96"}
SMALL_STEPS = ("reserve", "credits", "deficit", "misc_income", "safety_margin")


def _levy(**values: str) -> SimpleNamespace:
    return SimpleNamespace(**{name: Decimal(value) for name, value in values.items()})


def test_the_axis_starts_above_zero_so_every_small_step_is_a_visible_bar():
    chart = charts.waterfall(charts.worksheet_steps(_levy(**DEMO)))
    bars = {bar.step.key: bar for bar in chart.bars}
    # On an axis from zero the $3,120.55 of credits were 0.8 px of 314 and the reserve 6 px.
    assert chart.broken and Decimal("0") < chart.axis_start <= Decimal("1250000")
    for key in SMALL_STEPS:
        assert bars[key].height >= charts.VISIBLE / 3 and not bars[key].cut, (key, bars[key])
    assert bars["reserve"].height > 30 and bars["misc_income"].height > 50  # to scale, not just a minimum
    # the first amount and the results start at zero, below the axis: drawn cut, with the break mark
    assert [key for key, bar in bars.items() if bar.cut] == ["om_estimate", "subtotal", "total_levy"]
    assert all(bar.y + bar.height <= chart.zero_y + 0.1 for bar in bars.values())
    assert [bar.value_label for bar in chart.bars] == [
        "$1,250,000.00", "+$25,000.00", "+$3,120.55", "+$30,000.00", "\u2212$40,000.00", "$1,268,120.55",
        "+$25,362.41", "$1,293,482.96",
    ]


def test_the_axis_stays_at_zero_when_every_step_shows_without_a_break():
    chart = charts.waterfall(charts.worksheet_steps(_levy(
        om_estimate="1000.00", reserve="20.00", credits="300.00", deficit="0", surplus="400.00", misc_income="200.00",
        subtotal="720.00", safety_margin="14.40", total_levy="734.40",
    )))
    assert not chart.broken and chart.axis_start == 0 and not any(bar.cut for bar in chart.bars)


def test_a_step_too_small_even_for_a_broken_axis_still_shows():
    chart = charts.waterfall(charts.worksheet_steps(_levy(**{**DEMO, "credits": "1.00", "subtotal": "1265001.00"})))
    credits = next(bar for bar in chart.bars if bar.step.key == "credits")
    assert credits.height >= charts.MIN_BAR and credits.value_label == "+$1.00"


@pytest.mark.django_db
def test_the_worksheet_chart_is_drawn_with_its_broken_axis_and_labels(client, users, example_1):
    from levy.services import levy_compute

    estimate_enter(acting_user=users["authority"], fiscal_year=YEAR, om_estimate=Decimal("100000.00"),
                   reserve=Decimal("1500.00"), misc_income=Decimal("7500.00"), surplus=Decimal("4000.00"))
    estimate_certify(acting_user=users["authority"], fiscal_year=YEAR)
    levy_compute(acting_user=users["hacienda"], fiscal_year=YEAR)
    client.force_login(users["hacienda"])
    page = client.get(reverse("levy:worksheet", kwargs={"year": YEAR})).content.decode()
    assert 'class="bar-value" data-step="reserve">+$1,500.00<' in page
    assert 'data-step="surplus">\u2212$4,000.00<' in page
    assert 'class="axis-start">El eje empieza en $' in page


def _enter(users, year: str, *, certify: bool, **values: str) -> None:
    estimate_enter(acting_user=users["authority"], fiscal_year=year, **{k: Decimal(v) for k, v in values.items()})
    if certify:
        estimate_certify(acting_user=users["authority"], fiscal_year=year)


@pytest.mark.django_db
def test_the_estimates_page_shows_last_years_certified_figures_beside_each_field(client, users):
    _enter(users, LAST_YEAR, certify=True, om_estimate="1200000.00", reserve="24000.00", deficit="15000.00",
           misc_income="38000.00")
    client.force_login(users["authority"])
    form = client.get(reverse("levy:estimates", kwargs={"year": YEAR})).context["form"]
    helps = {name: str(form.fields[name].help_text) for name in ("om_estimate", "reserve", "deficit", "surplus",
                                                                  "misc_income", "certified_credits")}
    assert "Certificado para 2025-2026: $1,200,000.00" in helps["om_estimate"]
    assert "Certificado para 2025-2026: $24,000.00" in helps["reserve"]
    assert "Certificado para 2025-2026: $15,000.00" in helps["deficit"]
    assert "Certificado para 2025-2026: $0.00" in helps["surplus"]
    assert "Certificado para 2025-2026: $38,000.00" in helps["misc_income"]
    assert "Certificado para 2025-2026: calculados por Hacienda (¶7)" in helps["certified_credits"]


@pytest.mark.django_db
def test_a_year_with_nothing_certified_before_shows_no_comparison(client, users):
    _enter(users, LAST_YEAR, certify=False, om_estimate="1200000.00", reserve="24000.00", misc_income="38000.00")
    client.force_login(users["authority"])
    page = client.get(reverse("levy:estimates", kwargs={"year": YEAR})).content.decode()
    assert "previous-year" not in page and "Certificado para" not in page


@pytest.mark.django_db
def test_a_draft_is_corrected_without_a_reason_and_certified_figures_need_one(client, users):
    _enter(users, YEAR, certify=False, om_estimate="1250000.00", reserve="25000.00", misc_income="40000.00")
    client.force_login(users["authority"])
    url = reverse("levy:estimates", kwargs={"year": YEAR})
    page = client.get(url).content.decode()
    assert 'name="reason"' not in page and "Corregir los estimados" in page
    response = client.post(url, {"om_estimate": "1,260,000.00", "reserve": "25,000.00", "misc_income": "40,000.00"})
    assert response.status_code == 302
    assert Estimate.objects.exclude(status="withdrawn").get().om_estimate.amount == Decimal("1260000.00")
    estimate_certify(acting_user=users["authority"], fiscal_year=YEAR)
    page = client.get(url).content.decode()
    assert 'name="reason"' in page and "Reemplazar los estimados certificados" in page


@pytest.mark.django_db
def test_the_reserve_refusal_writes_dollars(client, users):
    client.force_login(users["authority"])
    response = client.post(reverse("levy:estimates", kwargs={"year": YEAR}),
                           {"om_estimate": "1,250,000.00", "reserve": "25,000.01", "misc_income": "40,000.00"})
    [error] = response.context["form"].errors["reserve"]
    assert error == "El fondo de reserva ($25,000.01) excede el 2% del estimado de O&M (tope $25,000.00) (¶1(2))."


@pytest.mark.django_db
def test_start_a_fiscal_year_is_one_form_on_the_years_page(client, users):
    _enter(users, YEAR, certify=False, om_estimate="1250000.00", reserve="25000.00", misc_income="40000.00")
    client.force_login(users["authority"])
    start = reverse("levy:year-start")
    assert client.get(reverse("levy:year-list")).content.decode().count(f'action="{start}"') == 1
    assert f'action="{start}"' not in client.get(reverse("levy:estimates", kwargs={"year": YEAR})).content.decode()
