"""The levy pages through the Django test client: roles, the whole yearly flow and its refusals,
the worksheet and its chart, the roll with its totals, reconciliation and exports, the what-if."""

from __future__ import annotations

import csv
import io
import re
from datetime import date
from decimal import Decimal

import pytest
from django.urls import reverse

from billing.services.installments import roll_finalize
from levy import rules
from levy.exports import ROLL_COLUMNS
from levy.models import Estimate, FiscalYear, Levy, RollLine
from levy.services import estimate_certify, estimate_enter, levy_compute
from levy.views import WORKSHEET_LINES
from parcels.models import Job, Parcel
from parcels.roles import ROLES
from parcels.services import owner_create
from tests.review import post_reviewed

YEAR = "2026-2027"
EXAMPLE_1_ESTIMATES = {"om_estimate": "100,000.00", "reserve": "1500.00", "surplus": "4000.00", "misc_income": "$7,500.00"}


def amounts(**values: str) -> dict[str, Decimal]:
    return {name: Decimal(value) for name, value in values.items()}


@pytest.fixture
def draft_1(example_1, users):
    """Example 1 entered, certified and computed through the services."""
    estimate_enter(acting_user=users["authority"], fiscal_year=YEAR,
                   **amounts(om_estimate="100000.00", reserve="1500.00", surplus="4000.00", misc_income="7500.00"))
    estimate_certify(acting_user=users["authority"], fiscal_year=YEAR)
    return levy_compute(acting_user=users["hacienda"], fiscal_year=YEAR)


def url(name: str, **kwargs) -> str:
    return reverse(f"levy:{name}", kwargs=kwargs)


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]] if response.context else []


# ---------------------------------------------------------------------------------------------
# Roles
# ---------------------------------------------------------------------------------------------

READ_PAGES = {
    "year-list": ({}, {"authority", "hacienda", "auditor"}),
    "estimates": ({"year": YEAR}, {"authority", "hacienda", "auditor"}),
    "worksheet": ({"year": YEAR}, {"hacienda", "auditor"}),
    "roll": ({"year": YEAR}, {"hacienda", "auditor"}),
    "whatif": ({"year": YEAR}, {"hacienda", "authority"}),
    "parameters": ({}, {"authority", "hacienda", "auditor", "collector", "supervisor"}),
}
POST_ACTIONS = {
    "estimate-certify": {"authority"},
    "compute": {"hacienda"},
    "finalize": {"hacienda"},
}


@pytest.mark.django_db
@pytest.mark.parametrize("name", [*READ_PAGES, *POST_ACTIONS, "year-start", "compute-progress"])
def test_anonymous_visitors_are_sent_to_login(client, name):
    kwargs = READ_PAGES[name][0] if name in READ_PAGES else {} if name == "year-start" else {"year": YEAR}
    if name == "compute-progress":
        kwargs["pk"] = 1
    path = url(name, **kwargs)
    response = client.post(path) if name in POST_ACTIONS else client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login")) and "next=" in response["Location"]


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_each_role_reads_only_its_pages(client, users, draft_1, role):
    client.force_login(users[role])
    for name, (kwargs, allowed) in READ_PAGES.items():
        response = client.get(url(name, **kwargs))
        assert response.status_code == (200 if role in allowed else 403), (name, role)
    job = Job.objects.create(kind="levy_compute", payload={"fiscal_year": YEAR}, created_by=users["hacienda"])
    progress = client.get(url("compute-progress", year=YEAR, pk=job.pk))
    assert progress.status_code == (200 if role in {"hacienda", "auditor"} else 403), role
    start = client.get(url("year-start"), {"year": "2027-2028"})
    assert start.status_code == (302 if role == "authority" else 403), role


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_each_role_may_only_do_its_own_actions(client, users, example_1, role):
    client.force_login(users[role])
    for name, allowed in POST_ACTIONS.items():
        response = client.post(url(name, year=YEAR))
        assert (response.status_code == 403) == (role not in allowed), (name, role)
    posted = client.post(url("estimates", year=YEAR), {"om_estimate": "1000.00", "reserve": "0", "misc_income": "0"})
    assert (posted.status_code == 403) == (role != "authority"), role
    assert Estimate.objects.exists() == (role == "authority")
    assert not Levy.objects.exists()


@pytest.mark.django_db
def test_landowner_never_sees_the_roll_or_its_exports(client, users, draft_1):
    client.force_login(users["landowner"])
    for query in ("", "?format=csv", "?format=xlsx"):
        assert client.get(url("roll", year=YEAR) + query).status_code == 403


@pytest.mark.django_db
def test_navigation_and_home_links_follow_the_role(client, users):
    client.force_login(users["hacienda"])
    home = client.get(reverse("home")).content.decode()
    assert f'href="{url("year-list")}"' in home and f'href="{url("parameters")}"' in home
    client.force_login(users["collector"])
    home = client.get(reverse("home")).content.decode()
    assert f'href="{url("year-list")}"' not in home and f'href="{url("parameters")}"' in home


@pytest.mark.django_db
def test_unknown_or_malformed_years(client, users):
    client.force_login(users["hacienda"])
    assert client.get("/contribucion/2026-2028/hoja/").status_code == 404
    assert client.get("/contribucion/2026/hoja/").status_code == 404
    assert client.get(url("roll", year="2030-2031")).status_code == 404
    page = client.get(url("worksheet", year="2030-2031"))
    assert page.status_code == 200 and "todavía no ha registrado estimados" in page.content.decode()


# ---------------------------------------------------------------------------------------------
# The yearly flow through the pages
# ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_whole_year_through_the_pages(client, users, example_1, django_capture_on_commit_callbacks):
    # Authority starts the year and enters the estimates (amounts typed with $ and commas).
    client.force_login(users["authority"])
    assert client.get(url("year-start"), {"year": YEAR})["Location"] == url("estimates", year=YEAR)
    response = client.post(url("estimates", year=YEAR), EXAMPLE_1_ESTIMATES, follow=True)
    assert response.redirect_chain[-1][0] == url("estimates", year=YEAR)
    estimate = Estimate.objects.get()
    assert (estimate.status, estimate.om_estimate.amount, estimate.misc_income.amount) == (
        "entered", Decimal("100000.00"), Decimal("7500.00"))
    page = response.content.decode()
    assert "no están certificados" in page and "Revisar y certificar…" in page

    # Hacienda cannot compute before certification: the job reports the refusal.
    client.force_login(users["hacienda"])
    with django_capture_on_commit_callbacks(execute=True):
        queued = client.post(url("compute", year=YEAR))
    refused = client.get(queued["Location"])
    assert "no están certificados" in refused.content.decode()
    assert not Levy.objects.exists()

    # Authority certifies; the page then says who and when.
    client.force_login(users["authority"])
    response = post_reviewed(client, url("estimate-certify", year=YEAR), {"estimate": estimate.pk}, follow=True)
    page = response.content.decode()
    assert "Certificados al Secretario de Hacienda por u_authority" in page
    assert "Revisar y certificar…</button>" not in page

    # Hacienda sees the certified estimate before computing, then computes through a job.
    client.force_login(users["hacienda"])
    page = client.get(url("worksheet", year=YEAR)).content.decode()
    assert "$100,000.00" in page and "$4,000.00" in page and "Calcular el padrón borrador" in page
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        queued = client.post(url("compute", year=YEAR))
    assert len(callbacks) == 1
    job = Job.objects.get(kind="levy_compute", status="done", result__levy_id__isnull=False)
    assert queued["Location"] == url("compute-progress", year=YEAR, pk=job.pk)
    done = client.get(queued["Location"], follow=True)
    assert done.redirect_chain[-1][0] == url("worksheet", year=YEAR)
    page = done.content.decode()
    assert "Padrón borrador de 2026-2027 calculado" in page
    assert "$91,800.00" in page and "183.600000" in page and "91.800000" in page and "500.0000" in page
    assert "$90,000.00" in page and "$1,800.00" in page  # subtotal and margin (¶3)

    # Finalizing shows its review page first (nothing final yet); its confirmation finalizes.
    response = client.post(url("finalize", year=YEAR))
    assert "Esto no se puede deshacer." in response.content.decode()
    assert Levy.objects.get().status == "draft"
    response = post_reviewed(client, url("finalize", year=YEAR), follow=True)
    levy = Levy.objects.get()
    assert levy.status == "final" and levy.finalized_by == users["hacienda"]
    page = response.content.decode()
    assert "Padrón finalizado" in page and "Revisar y finalizar…</button>" not in page
    assert levy.finalized_late == (date.today() > date(2026, 7, 1))

    # A finalized year refuses new estimates with the service's message, writing nothing.
    client.force_login(users["authority"])
    page = client.get(url("estimates", year=YEAR)).content.decode()
    assert "ya no se pueden cambiar" in page and 'name="om_estimate"' not in page
    response = client.post(url("estimates", year=YEAR), {**EXAMPLE_1_ESTIMATES, "reason": "otra"})
    assert "ya está finalizado" in response.content.decode()
    assert Estimate.objects.count() == 1


@pytest.mark.django_db
def test_reserve_above_two_percent_is_refused_and_nothing_is_written(client, users, example_1):
    client.force_login(users["authority"])
    response = client.post(url("estimates", year=YEAR), {**EXAMPLE_1_ESTIMATES, "reserve": "2,000.01"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "El fondo de reserva ($2,000.01) excede el 2% del estimado de O&amp;M (tope $2,000.00) (¶1(2))" in page
    assert list(response.context["form"].errors) == ["reserve"]  # the service's refusal, shown beside its field
    assert 'value="2,000.01"' in page and 'value="100,000.00"' in page  # nothing typed is lost
    assert "el tope es $2,000.00" in page
    assert not Estimate.objects.exists() and not FiscalYear.objects.exists()
    # exactly 2% is allowed
    client.post(url("estimates", year=YEAR), {**EXAMPLE_1_ESTIMATES, "reserve": "2000.00"})
    assert Estimate.objects.get().reserve.amount == Decimal("2000.00")


@pytest.mark.django_db
def test_estimate_form_errors_are_shown_per_field(client, users, example_1):
    client.force_login(users["authority"])
    response = client.post(url("estimates", year=YEAR), {
        "om_estimate": "mucho", "reserve": "10.001", "deficit": "5.00", "surplus": "6.00", "misc_income": "-1",
    })
    form = response.context["form"]
    assert set(form.errors) == {"om_estimate", "reserve", "deficit", "surplus", "misc_income"}
    assert "no ambos (¶2)" in form.errors["deficit"][0]
    page = response.content.decode()
    assert 'value="mucho"' in page and 'id="id_surplus_error"' in page
    assert not Estimate.objects.exists()


@pytest.mark.django_db
def test_replacing_certified_estimates_needs_a_reason_and_keeps_the_history(client, users, example_1):
    client.force_login(users["authority"])
    client.post(url("estimates", year=YEAR), EXAMPLE_1_ESTIMATES)
    first = Estimate.objects.get()
    post_reviewed(client, url("estimate-certify", year=YEAR), {"estimate": first.pk})
    page = client.get(url("estimates", year=YEAR)).content.decode()
    assert "Reemplazar los estimados certificados" in page and 'value="100,000.00"' in page  # pre-filled
    response = client.post(url("estimates", year=YEAR), {**EXAMPLE_1_ESTIMATES, "om_estimate": "100500.00"})
    assert set(response.context["form"].errors) == {"reason"}
    # with another error on the form, the ¶1(2) cap is reported at once too (same words as the service)
    response = client.post(url("estimates", year=YEAR), {**EXAMPLE_1_ESTIMATES, "reserve": "2500.00"})
    errors = response.context["form"].errors
    assert set(errors) == {"reason", "reserve"} and "excede el 2% del estimado de O&M (tope $2,000.00)" in errors["reserve"][0]
    assert Estimate.objects.count() == 1
    client.post(url("estimates", year=YEAR), {**EXAMPLE_1_ESTIMATES, "om_estimate": "100500.00",
                                              "reason": "Se omitió el contrato de dragado"})
    first.refresh_from_db()
    assert first.status == "withdrawn"
    page = client.get(url("estimates", year=YEAR)).content.decode()
    assert "Se omitió el contrato de dragado" in page and "$100,500.00" in page
    history = client.get(url("estimates", year=YEAR)).context["history"]
    assert [e.pk for e in history] == [first.pk]


@pytest.mark.django_db
def test_certify_refuses_when_the_estimates_changed_meanwhile(client, users, example_1):
    client.force_login(users["authority"])
    client.post(url("estimates", year=YEAR), EXAMPLE_1_ESTIMATES)
    response = client.post(url("estimate-certify", year=YEAR), {"estimate": "999999"}, follow=True)
    assert any("cambiaron" in m for m in messages_of(response))
    assert Estimate.objects.get().status == "entered"


@pytest.mark.django_db
def test_the_certifier_cannot_finalize(client, users, example_1, make_user, django_capture_on_commit_callbacks):
    both = make_user("both", "hacienda")
    both.groups.add(users["authority"].groups.get())
    client.force_login(both)
    client.post(url("estimates", year=YEAR), EXAMPLE_1_ESTIMATES)
    post_reviewed(client, url("estimate-certify", year=YEAR), {"estimate": Estimate.objects.get().pk})
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url("compute", year=YEAR))
    response = post_reviewed(client, url("finalize", year=YEAR), follow=True)
    assert any("Quien certificó los estimados no puede finalizar" in m for m in messages_of(response))
    assert "Quien certificó los estimados no puede finalizar" in response.content.decode()
    assert Levy.objects.get().status == "draft"
    client.force_login(users["hacienda"])
    post_reviewed(client, url("finalize", year=YEAR))
    assert Levy.objects.get().status == "final"


@pytest.mark.django_db
def test_a_changed_registry_marks_the_draft_stale_and_blocks_finalizing(client, users, draft_1):
    Parcel.objects.filter(parcel_id="P1").update(gravity_acres=Decimal("101"))
    client.force_login(users["hacienda"])
    page = client.get(url("worksheet", year=YEAR)).content.decode()
    assert "El registro de predios cambió desde que se calculó este borrador" in page
    response = post_reviewed(client, url("finalize", year=YEAR), follow=True)
    assert any("registro de predios cambió" in m for m in messages_of(response))
    assert Levy.objects.get().status == "draft"


@pytest.mark.django_db
def test_worksheet_shows_each_line_with_its_paragraph_and_running_total(client, users, draft_1):
    client.force_login(users["auditor"])
    response = client.get(url("worksheet", year=YEAR))
    lines = response.context["lines"]
    assert [(line.paragraph, line.amount, line.running) for line in lines] == [
        ("¶1(1)", Decimal("100000.00"), Decimal("100000.00")),
        ("¶1(2)", Decimal("1500.00"), Decimal("101500.00")),
        ("¶1(3)", Decimal("0.00"), Decimal("101500.00")),
        ("¶2", Decimal("0.00"), Decimal("101500.00")),
        ("¶2", Decimal("4000.00"), Decimal("97500.00")),
        ("¶3", Decimal("7500.00"), Decimal("90000.00")),
        ("¶3", Decimal("90000.00"), Decimal("90000.00")),
        ("¶3", Decimal("1800.00"), Decimal("91800.00")),
        ("¶4", Decimal("91800.00"), Decimal("91800.00")),
    ]
    page = response.content.decode()
    assert "$91,800.00" in page and "$183.600000" in page and "$91.800000" in page
    assert "1 de julio de 2026" in page  # ¶11 deadline
    # read-only for the auditor: no action buttons
    assert "Calcular de nuevo" not in page and "Revisar y finalizar…</button>" not in page


@pytest.mark.django_db
def test_worksheet_chart_is_an_accessible_svg_with_a_text_equivalent(client, users, draft_1):
    client.force_login(users["hacienda"])
    response = client.get(url("worksheet", year=YEAR))
    page = response.content.decode()
    assert '<svg class="chart chart-wide"' in page and 'role="img"' in page
    assert '<title id="waterfall-title">' in page and '<desc id="waterfall-desc">' in page
    # the chart is drawn by the server: the page's one script is base.html's table stacking (phones)
    assert re.findall(r"<script[^>]*>", page) == ['<script src="/static/js/responsive-tables.js" defer>']
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert svg.count("<rect") == 8 and "−$4,000.00" in svg and "$91,800.00" in svg
    steps = response.context["chart"].steps
    assert [(s.key, s.start, s.end) for s in steps][-3:] == [
        ("subtotal", Decimal("0.00"), Decimal("90000.00")),
        ("safety_margin", Decimal("90000.00"), Decimal("91800.00")),
        ("total_levy", Decimal("0.00"), Decimal("91800.00")),
    ]
    assert "Tabla equivalente del gráfico" in page


def test_worksheet_lines_follow_the_rules_order_paragraphs_and_signs():
    parcels = [rules.ParcelInput(parcel_id="X", inclusion="permanent", gravity_acres=Decimal("10"),
                                 pumped_acres=Decimal("0"), water_since=date(2000, 1, 1))]
    sheet = rules.compute_levy(fiscal_year=date(2026, 7, 1), om_estimate=Decimal("1000.00"), reserve=Decimal("0"),
                               misc_income=Decimal("0"), parcels=parcels).worksheet
    assert [(key, paragraph, sign) for key, paragraph, sign, _label in WORKSHEET_LINES] == [
        (line.key, line.paragraph, line.sign) for line in sheet.lines]


# ---------------------------------------------------------------------------------------------
# The roll, its totals, reconciliation, exports and query budget
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def draft_2(example_2, users):
    estimate_enter(acting_user=users["authority"], fiscal_year="2027-2028",
                   **amounts(om_estimate="250000.00", reserve="5000.00", misc_income="20000.00", deficit="12345.67"))
    estimate_certify(acting_user=users["authority"], fiscal_year="2027-2028")
    return levy_compute(acting_user=users["hacienda"], fiscal_year="2027-2028")


@pytest.mark.django_db
def test_roll_totals_row_and_reconciliation(client, users, draft_2):
    client.force_login(users["hacienda"])
    response = client.get(url("roll", year="2027-2028"))
    totals, rec = response.context["totals"], response.context["rec"]
    assert (totals["lines"], totals["om_charge"], totals["credit"], totals["net"]) == (
        5, Decimal("285973.13"), Decimal("33020.15"), Decimal("252952.98"))
    assert rec["charges_ok"] and rec["net_credits_ok"] and rec["halves_ok"] and rec["stored_ok"]
    assert (rec["factor_3"], rec["granted"], rec["gap"]) == (Decimal("33020.14"), Decimal("33020.15"), Decimal("-0.01"))
    page = response.content.decode()
    tfoot = page[page.index("<tfoot>"):page.index("</tfoot>")]
    assert "$285,973.13" in tfoot and "$33,020.15" in tfoot and "$252,952.98" in tfoot and "473.3000" in tfoot
    assert page.count("✓") == 5 and "✗" not in page and rec["acres_ok"]
    assert "diferencia $0.01" in page and "solo del redondeo" in page


@pytest.mark.django_db
def test_roll_filters_sort_and_total_over_the_filtered_lines(client, users, draft_2):
    client.force_login(users["auditor"])
    response = client.get(url("roll", year="2027-2028"), {"credit": "yes", "o": "-net"})
    assert [line.parcel_code for line in response.context["page"].object_list] == ["A", "C", "E"]
    assert response.context["totals"]["credit"] == Decimal("33020.15")
    assert response.context["totals"]["om_charge"] == Decimal("140962.46")
    assert response.context["whole"]["om_charge"] == Decimal("285973.13")  # reconciliation ignores filters
    response = client.get(url("roll", year="2027-2028"), {"q": "luis", "o": "charge"})
    assert [line.parcel_code for line in response.context["page"].object_list] == ["E", "C", "D"]
    response = client.get(url("roll", year="2027-2028"), {"levied": "no"})
    assert response.context["totals"]["lines"] == 0 and "Ninguna línea cumple" in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_roll_page_keeps_its_sums_for_as_long_as_its_levy(client, users, draft_2, monkeypatch):
    """Issue 20: a levy's lines never change once stored, so the roll page keeps the sums of each
    filter in the shared cache (two aggregate queries over every line a view, 70 ms each at
    100,000 parcels); a levy computed again is new lines and new sums."""
    from levy import selectors

    client.force_login(users["auditor"])
    first = client.get(url("roll", year="2027-2028"), {"credit": "yes"})

    def not_again(*args, **kwargs):
        raise AssertionError("summed again")

    real = selectors.roll_totals
    monkeypatch.setattr(selectors, "roll_totals", not_again)
    again = client.get(url("roll", year="2027-2028"), {"credit": "yes"})
    assert again.context["totals"] == first.context["totals"] and again.context["whole"] == first.context["whole"]
    assert again.context["totals"]["credit"] == Decimal("33020.15") and again.context["whole"]["lines"] == 5
    with pytest.raises(AssertionError, match="summed again"):
        client.get(url("roll", year="2027-2028"), {"credit": "no"})  # another filter: its own sums
    monkeypatch.setattr(selectors, "roll_totals", real)
    recomputed = levy_compute(acting_user=users["hacienda"], fiscal_year="2027-2028")
    assert recomputed.pk != draft_2.pk
    monkeypatch.setattr(selectors, "roll_totals", not_again)
    with pytest.raises(AssertionError, match="summed again"):
        client.get(url("roll", year="2027-2028"), {"credit": "yes"})


@pytest.mark.django_db
def test_roll_shows_parcels_that_do_not_pay_yet_with_the_reason(client, users, make_parcel, owner_a, draft_1):
    make_parcel("Q3", owner_a, gravity="60", water_since=date(2026, 7, 3))
    levy_compute(acting_user=users["hacienda"], fiscal_year=YEAR)
    client.force_login(users["hacienda"])
    response = client.get(url("roll", year=YEAR), {"levied": "no"})
    assert [line.parcel_code for line in response.context["page"].object_list] == ["Q3"]
    assert "no paga (¶10)</span>" in response.content.decode()
    assert client.get(url("roll", year=YEAR), {"reason": "water_too_recent"}).context["totals"]["lines"] == 1


@pytest.mark.django_db
def test_certified_credits_gap_explains_the_effect_on_collections(client, users, example_2):
    estimate_enter(acting_user=users["authority"], fiscal_year="2027-2028",
                   **amounts(om_estimate="250000.00", reserve="5000.00", misc_income="20000.00",
                             deficit="12345.67", certified_credits="30000.00"))
    estimate_certify(acting_user=users["authority"], fiscal_year="2027-2028")
    levy = levy_compute(acting_user=users["hacienda"], fiscal_year="2027-2028")
    client.force_login(users["hacienda"])
    response = client.get(url("roll", year="2027-2028"))
    rec = response.context["rec"]
    assert rec["factor_3"] == Decimal("30000.00") and rec["gap"] == Decimal("30000.00") - levy.roll_credits.amount
    assert rec["gap"] < 0
    page = response.content.decode()
    assert "certificó créditos por $30,000.00" in page and "déficit del Fondo de Explotación" in page


@pytest.mark.django_db
def test_roll_page_stays_within_its_query_budget(client, users, make_parcel, owner_a, owner_b, django_assert_max_num_queries):
    for number in range(130):
        make_parcel(f"R{number:04d}", owner_a if number % 2 else owner_b, gravity=str(5 + number), credit="10" if number % 3 else "0")
    estimate_enter(acting_user=users["authority"], fiscal_year=YEAR,
                   **amounts(om_estimate="100000.00", reserve="0", misc_income="0"))
    estimate_certify(acting_user=users["authority"], fiscal_year=YEAR)
    levy_compute(acting_user=users["hacienda"], fiscal_year=YEAR)
    client.force_login(users["hacienda"])
    for params in ({}, {"page": "3"}, {"credit": "yes", "o": "-charge", "page": "2"}, {"q": "carmen", "levied": "yes"}):
        with django_assert_max_num_queries(11):  # 10, and the second-factor device of the session
            response = client.get(url("roll", year=YEAR), params)
        assert response.status_code == 200
    assert len(response.context["page"].object_list) == 50
    assert response.context["page"].paginator.num_pages == 2


def test_roll_counts_its_lines_with_thousands_grouped(client, users, owner_a):
    """Issue 18 point 12: the roll said "1363 lines"; counts read as the amounts do (1,001)."""
    from tests.factories import ParcelFactory

    for number in range(1001):
        ParcelFactory(parcel_id=f"M{number:04d}", owner=owner_a, gravity_area=Decimal("2"), pumped_area=Decimal("0"),
                      credit_percent=Decimal("0"))
    estimate_enter(acting_user=users["authority"], fiscal_year=YEAR,
                   **amounts(om_estimate="100000.00", reserve="0", misc_income="0"))
    estimate_certify(acting_user=users["authority"], fiscal_year=YEAR)
    levy_compute(acting_user=users["hacienda"], fiscal_year=YEAR)
    client.force_login(users["hacienda"])
    page = client.get(url("roll", year=YEAR)).content.decode()
    assert "1,001 líneas" in page and "Total del padrón (1,001 líneas)" in page
    filtered = client.get(url("roll", year=YEAR), {"q": "M000"}).content.decode()
    assert "10 líneas de 1,001 en el padrón" in filtered


@pytest.fixture
def hyperlink_owner(make_parcel):
    owner = owner_create(acting_user=None, name='=HYPERLINK("http://x")', owner_key="OWN-X")
    make_parcel("P6", owner, gravity="3", water_since=None)  # on the roll, not paying (¶8)
    return owner


@pytest.mark.django_db
def test_csv_export_has_every_line_and_neutralizes_formulas(client, users, hyperlink_owner, draft_1):
    client.force_login(users["hacienda"])
    response = client.get(url("roll", year=YEAR), {"format": "csv", "credit": "yes"})
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="padron-2026-2027-borrador.csv"' in response["Content-Disposition"]
    text = b"".join(response.streaming_content).decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0].keys()) == ROLL_COLUMNS
    assert [row["parcel_id"] for row in rows] == ["P1", "P2", "P3", "P4", "P5", "P6"]  # all lines, filters ignored
    p4 = next(row for row in rows if row["parcel_id"] == "P4")
    assert (p4["om_charge"], p4["net"], p4["first_installment"], p4["second_installment"]) == (
        "13861.80", "13861.80", "6930.90", "6930.90")
    p6 = next(row for row in rows if row["parcel_id"] == "P6")
    assert p6["owner_name"] == '\'=HYPERLINK("http://x")'
    assert sum(Decimal(row["om_charge"]) for row in rows) == Decimal("91800.00")


@pytest.mark.django_db
def test_xlsx_export_opens_with_numbers_and_safe_text(client, users, hyperlink_owner, draft_1):
    from openpyxl import load_workbook

    client.force_login(users["auditor"])
    response = client.get(url("roll", year=YEAR), {"format": "xlsx"})
    assert response["Content-Type"] == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    book = load_workbook(io.BytesIO(b"".join(response.streaming_content)))
    sheet = book.worksheets[0]
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0] == ROLL_COLUMNS and len(rows) == 7
    p4 = dict(zip(ROLL_COLUMNS, rows[4], strict=True))
    assert p4["parcel_id"] == "P4" and Decimal(str(p4["om_charge"])) == Decimal("13861.80")
    assert isinstance(p4["equivalent_acres"], (int, float))
    p6 = dict(zip(ROLL_COLUMNS, rows[6], strict=True))
    assert p6["owner_name"].startswith("'=") and sheet.cell(row=7, column=2).data_type == "s"
    assert {row[0]: row[1] for row in book.worksheets[1].iter_rows(values_only=True)}["total_levy"] == "91800.00"


# ---------------------------------------------------------------------------------------------
# What-if and parameters
# ---------------------------------------------------------------------------------------------


def simulate(client, year: str, figures: dict, capture) -> object:
    """Ask for a what-if: the form queues a job (issue 20) and comes back with ``job=<pk>``; the
    job runs on commit; the page then shows its result."""
    with capture(execute=True) as callbacks:
        queued = client.get(url("whatif", year=year), {"run": "1", **figures})
    assert queued.status_code == 302 and "job=" in queued["Location"] and len(callbacks) == 1
    return client.get(queued["Location"])


@pytest.mark.django_db
def test_whatif_compares_with_last_years_final_roll_and_writes_nothing(client, users, example_1, make_user,
                                                                      django_capture_on_commit_callbacks):
    last = "2025-2026"
    estimate_enter(acting_user=users["authority"], fiscal_year=last,
                   **amounts(om_estimate="100000.00", reserve="1500.00", surplus="4000.00", misc_income="7500.00"))
    estimate_certify(acting_user=users["authority"], fiscal_year=last)
    levy_compute(acting_user=users["hacienda"], fiscal_year=last)
    roll_finalize(acting_user=users["hacienda"], fiscal_year=last, today=date(2025, 6, 30))
    estimate_enter(acting_user=users["authority"], fiscal_year=YEAR,
                   **amounts(om_estimate="100000.00", reserve="1500.00", surplus="4000.00", misc_income="7500.00"))
    counts = (Levy.objects.count(), RollLine.objects.count(), Estimate.objects.count(), FiscalYear.objects.count())

    client.force_login(users["authority"])
    page = client.get(url("whatif", year=YEAR)).content.decode()
    assert "Simulación: no cambia ningún padrón" in page and 'value="100,000.00"' in page  # pre-filled
    assert 'name="surplus" value="4,000.00"' in page and 'name="deficit" inputmode' in page  # a zero deficit stays blank
    response = simulate(client, YEAR, {"om_estimate": "110,000.00", "reserve": "1500.00", "surplus": "4000.00",
                                       "misc_income": "7500.00"}, django_capture_on_commit_callbacks)
    assert response.status_code == 200
    job = response.context["job"]
    assert job.kind == "levy_whatif" and job.status == "done" and job.created_by == users["authority"]
    result = response.context["result"]
    # subtotal 100,000.00 + 2% = 102,000.00 over 500 acres
    assert result["worksheet"].total_levy == Decimal("102000.00") and result["worksheet"].rate_gravity == Decimal("204.000000")
    page = response.content.decode()
    assert "$102,000.00" in page and "204.000000" in page and "Simulación: no cambia ningún padrón" in page
    assert 'value="110,000.00"' in page  # the figures simulated stay in the form
    assert "Cambio por predio frente al padrón final de 2025-2026" in page and "No hay un padrón final" not in page
    assert "Los 5 predios con el mayor cambio en el neto" in page and "+$5,100.00" in page
    assert response.context["counts"] == {"up": 5, "down": 0, "same": 0, "new": 0, "gone": 0}
    changes = response.context["changes"]
    assert changes[0].parcel_id == "P2" and changes[0].delta == Decimal("5100.00")  # 250 acres × 20.40
    assert response.context["total_delta"] == Decimal("10200.00")
    # the books are as they were: only the job's record was written
    assert (Levy.objects.count(), RollLine.objects.count(), Estimate.objects.count(), FiscalYear.objects.count()) == counts
    assert Job.objects.filter(kind="levy_whatif").count() == 1
    again = client.get(f"{url('whatif', year=YEAR)}?run=1&om_estimate=1&reserve=0&misc_income=0&job={job.pk}")
    assert again.status_code == 200 and Job.objects.filter(kind="levy_whatif").count() == 1  # shown, not run again

    # a year with no estimates yet is simulated without creating it; the reserve cap is checked
    client.force_login(users["hacienda"])
    response = client.get(url("whatif", year="2027-2028"), {"run": "1", "om_estimate": "1000.00", "reserve": "20.01",
                                                             "misc_income": "0"})
    assert "reserve" in response.context["form"].errors and response.context["result"] is None
    assert Job.objects.filter(kind="levy_whatif").count() == 1  # an invalid form queues nothing
    response = simulate(client, "2027-2028", {"om_estimate": "1000.00", "reserve": "20.00", "misc_income": "0"},
                        django_capture_on_commit_callbacks)
    assert response.context["result"]["worksheet"].total_levy == Decimal("1040.40")
    assert "No hay un padrón final de 2026-2027" in response.content.decode()
    assert not FiscalYear.objects.filter(label="2027-2028").exists()
    assert (Levy.objects.count(), RollLine.objects.count(), Estimate.objects.count()) == counts[:3]


@pytest.mark.django_db
def test_whatif_waits_for_its_job_and_is_only_its_askers(client, users, example_1, draft_1):
    """Issue 20: while the job is queued the page shows its progress and refreshes itself; the
    job is shown to whoever asked for it, a 404 to anyone else."""
    client.force_login(users["hacienda"])
    queued = client.get(url("whatif", year=YEAR), {"run": "1", "om_estimate": "100000.00", "reserve": "1500.00",
                                                   "misc_income": "0"})
    job = Job.objects.get(kind="levy_whatif")
    assert queued.status_code == 302 and queued["Location"].endswith(f"job={job.pk}") and job.status == "queued"
    stored = job.payload["amounts"]
    assert job.payload["fiscal_year"] == YEAR and stored["certified_credits"] is None  # the figures as the form read them
    assert {name: Decimal(stored[name]) for name in ("om_estimate", "reserve", "misc_income", "deficit", "surplus")} == {
        "om_estimate": Decimal("100000"), "reserve": Decimal("1500"), "misc_income": 0, "deficit": 0, "surplus": 0}
    page = client.get(queued["Location"]).content.decode()
    assert "En cola: esperando al proceso de fondo" in page and 'http-equiv="refresh"' in page
    assert "Resultado de la simulación" not in page
    client.force_login(users["authority"])
    assert client.get(queued["Location"]).status_code == 404


@pytest.mark.django_db
def test_parameters_page_lists_the_dated_parameters_with_their_paragraphs(client, users):
    client.force_login(users["collector"])
    page = client.get(url("parameters")).content.decode()
    assert "Tope del fondo de reserva ¶1(2)" in page and "2.00 %" in page
    assert "Margen de seguridad ¶3" in page and "Recargo por mes o fracción ¶12" in page and "0.50 %" in page
    assert "10 de junio de 1953" in page and "en vigor hoy" in page


@pytest.mark.django_db
def test_year_list_shows_each_years_status(client, users, draft_1):
    estimate_enter(acting_user=users["authority"], fiscal_year="2027-2028",
                   **amounts(om_estimate="1000.00", reserve="0", misc_income="0"))
    client.force_login(users["auditor"])
    response = client.get(url("year-list"))
    rows = {row.year.label: row for row in response.context["rows"]}
    assert rows[YEAR].estimate.status == "certified" and rows[YEAR].draft is not None and rows[YEAR].final is None
    assert rows[YEAR].overdue == (date.today() > date(2026, 7, 1))
    assert rows["2027-2028"].estimate.status == "entered" and rows["2027-2028"].draft is None
    page = response.content.decode()
    assert "$91,800.00" in page and url("roll", year=YEAR) in page and url("worksheet", year="2027-2028") in page


@pytest.mark.django_db
def test_a_second_compute_of_the_year_is_refused_while_one_runs(client, users, example_1, make_user):
    from django.utils import timezone

    client.force_login(users["hacienda"])
    first = client.post(url("compute", year=YEAR))  # queued: no worker runs it in this transaction
    job = Job.objects.get()
    assert first["Location"] == url("compute-progress", year=YEAR, pk=job.pk) and job.key == YEAR
    started = timezone.make_aware(timezone.datetime(2026, 6, 20, 9, 5))
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, started_at=started, progress=126, total=200)

    client.force_login(make_user("u_hacienda2", "hacienda"))
    second = client.post(url("compute", year=YEAR), follow=True)
    assert second.redirect_chain[0][0] == url("compute-progress", year=YEAR, pk=job.pk)  # the running one's page
    page = second.content.decode()
    assert ("Ya hay un proceso en curso para el cálculo del padrón de 2026-2027: lo pidió Oficial U Hacienda Prueba el 20/06/2026 09:05 "
            "y va por el 63 % (en proceso). Espere a que termine.") in page
    assert "Calculando… 126 de 200 líneas del padrón" in page and 'value="63"' in page
    assert Job.objects.count() == 1
    other = client.post(url("compute", year="2027-2028"))  # another year is another compute
    assert other.status_code == 302 and Job.objects.count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("certified", "total", "warned"),
    [
        # K0 = 100,000 + 1,500 − 4,000 − 7,500 = 90,000; 1.02 × K0 = 91,800; 1.5 × that = 137,700.
        ("40000.00", "$132,600.00", False),  # 130,000 + 2% = 132,600: below the limit
        ("50000.00", "$142,800.00", True),  # 140,000 + 2% = 142,800: 142,800 / 91,800 = 1.56 times
    ],
)
def test_worksheet_warns_when_credits_multiply_the_levy(client, users, example_1, certified, total, warned):
    estimate_enter(acting_user=users["authority"], fiscal_year=YEAR, **amounts(
        om_estimate="100000.00", reserve="1500.00", surplus="4000.00", misc_income="7500.00", certified_credits=certified))
    estimate_certify(acting_user=users["authority"], fiscal_year=YEAR)
    levy_compute(acting_user=users["hacienda"], fiscal_year=YEAR)
    client.force_login(users["auditor"])
    page = client.get(url("worksheet", year=YEAR)).content.decode()
    assert total in page
    if warned:
        assert "Los créditos multiplican la contribución" in page
        assert "es 1.56 veces la que habría sin créditos (1.02 × K0 = 1.02 × $90,000.00 = $91,800.00, ¶3)" in page
        assert "límite de revisión de 1.5 veces ($137,700.00)" in page
        assert "son los que certificó la Autoridad (¶1(3))" in page
    else:
        assert "Los créditos multiplican la contribución" not in page


@pytest.mark.django_db
def test_worksheet_shows_certified_credits_as_zero_when_nothing_is_levied(client, users, example_1):
    # K0 = 10,000 − 12,000 = −2,000; certified 1,500 leaves the subtotal at 0: credits 0.00.
    estimate_enter(acting_user=users["authority"], fiscal_year=YEAR, **amounts(
        om_estimate="10000.00", reserve="0.00", misc_income="12000.00", certified_credits="1500.00"))
    estimate_certify(acting_user=users["authority"], fiscal_year=YEAR)
    levy = levy_compute(acting_user=users["hacienda"], fiscal_year=YEAR)
    assert (levy.credits.amount, levy.subtotal.amount, levy.total_levy.amount) == (0, 0, 0)
    client.force_login(users["auditor"])
    response = client.get(url("worksheet", year=YEAR))
    credits_line = next(line for line in response.context["lines"] if line.key == "credits")
    assert credits_line.amount == Decimal("0.00")
    assert "La Autoridad certificó $1,500.00" in response.content.decode()


@pytest.mark.django_db
def test_exports_are_streamed_from_a_file_with_their_length(client, users, hyperlink_owner, draft_1):
    """Issue 20: the CSV and the XLSX are written whole into a temporary file, then streamed from
    it with their length (never held whole in memory, never cut silently)."""
    from openpyxl import load_workbook

    client.force_login(users["hacienda"])
    for export in ("csv", "xlsx"):
        response = client.get(url("roll", year=YEAR), {"format": export})
        assert response.status_code == 200 and response.streaming
        body = b"".join(response.streaming_content)
        assert int(response["Content-Length"]) == len(body) > 0
        assert f'filename="padron-2026-2027-borrador.{export}"' in response["Content-Disposition"]
        if export == "csv":
            assert [row["parcel_id"] for row in csv.DictReader(io.StringIO(body.decode()))] == ["P1", "P2", "P3", "P4", "P5", "P6"]
        else:
            rows = list(load_workbook(io.BytesIO(body)).worksheets[0].iter_rows(values_only=True))
            assert [row[0] for row in rows[1:]] == ["P1", "P2", "P3", "P4", "P5", "P6"]


@pytest.mark.django_db
def test_a_roll_longer_than_an_xlsx_sheet_is_refused_and_the_page_offers_the_csv(client, users, hyperlink_owner, draft_1,
                                                                                  monkeypatch):
    """Issue 20: XLSX stops at 1,048,576 rows; with the limit patched to 6 rows, a roll of 6 lines
    (7 rows with the header) no longer fits: the page says so before anything is asked, the
    XLSX request comes back to the page with the message, and the CSV still has every line."""
    from levy import exports

    client.force_login(users["hacienda"])
    page = client.get(url("roll", year=YEAR)).content.decode()
    assert "?format=xlsx" in page and 'id="xlsx-too-long"' not in page
    monkeypatch.setattr(exports, "XLSX_MAX_ROWS", 6)
    monkeypatch.setattr("levy.views.XLSX_MAX_ROWS", 6)
    page = client.get(url("roll", year=YEAR)).content.decode()
    assert "?format=xlsx" not in page and 'id="xlsx-too-long"' in page
    assert "a lo sumo 6 filas y este padrón tiene 6 líneas" in page and "?format=csv" in page
    response = client.get(url("roll", year=YEAR), {"format": "xlsx"}, follow=True)
    assert response.redirect_chain == [(url("roll", year=YEAR), 302)]
    assert "descargue el CSV" in response.content.decode()
    response = client.get(url("roll", year=YEAR), {"format": "csv"})
    assert len(b"".join(response.streaming_content).decode().splitlines()) == 7
    monkeypatch.setattr(exports, "XLSX_MAX_ROWS", 7)  # exactly full: the header and 6 lines
    monkeypatch.setattr("levy.views.XLSX_MAX_ROWS", 7)
    response = client.get(url("roll", year=YEAR), {"format": "xlsx"})
    assert response.status_code == 200 and response.streaming
