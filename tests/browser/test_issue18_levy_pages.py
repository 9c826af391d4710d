"""Issue 18, points 16, 17 and 18, in Chromium at 390 px (a phone) and, for the chart, 1280 px.

16. The auditor finds the history of an owner typed without accents ("Munoz" for "Muñoz") and of
    a parcel, and reads each change in their language: the field's label and the choice's label
    ("Language of documents: Spanish → English"), not ``preferred_language: es → en``.
17. The Authority's estimates page: last year's certified figure beside each amount, no reason
    asked to correct a draft, `$` on the amounts of the ¶1(2) refusal (shown first, focused), and
    no second "start a fiscal year" form (the years page has the one).
18. The worksheet's waterfall: the reserve (¶1(2)), credits (¶1(3)), deficit (¶2), income (¶3) and
    margin (¶3) are bars with a visible height, each labelled with its amount as PR writes it.

Screenshots go to /tmp/issue18-levy-*.png."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from parcels.services import owner_create, owner_update, parcel_create, user_create
from tests.browser.test_journeys import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH, HEIGHT = 390, 844


def _open(visit, language: str, username: str, *, width: int = WIDTH, height: int = HEIGHT) -> None:
    visit.page.set_viewport_size({"width": width, "height": height})
    visit.page.context.clear_cookies()
    visit.page.context.add_cookies([{"name": "django_language", "value": language, "url": visit.base}])
    visit.login(username, PASSWORD)


def _shot(visit, name: str) -> None:
    visit.page.screenshot(path=f"/tmp/issue18-levy-{name}.png", full_page=True)


def _user(username: str, role: str):
    from django.contrib.auth import get_user_model

    user_create(username=username, role=role, password=PASSWORD)
    return get_user_model().objects.get(username=username)


def _parcel(parcel_id: str, owner, credit: str = "0"):
    return parcel_create(acting_user=None, parcel_id=parcel_id, owner=owner, area_unit="acre", gravity_area=Decimal("100"),
                         pumped_area=Decimal("0"), inclusion="permanent", water_since=date(2000, 1, 1),
                         credit_percent=Decimal(credit))


# --- 16. The audit page ------------------------------------------------------------------------


@pytest.mark.parametrize("language", ["en", "es-pr"])
def test_the_auditor_finds_an_owner_typed_without_accents_and_reads_the_change(visit, language):
    authority = _user("u_authority", "authority")
    _user("u_auditor", "auditor")
    munoz = owner_create(acting_user=None, name="José Muñoz Ortiz", owner_key="OW-M")
    toro = owner_create(acting_user=None, name="Luis Toro Ramos", owner_key="OW-T")
    _parcel("LAJ-000006", munoz)
    _parcel("LAJ-000007", toro)
    owner_update(acting_user=authority, owner=munoz, preferred_language="en")
    owner_update(acting_user=authority, owner=toro, preferred_language="en")
    english = language == "en"

    _open(visit, language, "u_auditor")
    visit.go("/auditoria/")
    page = visit.page
    assert page.get_attribute("html", "lang") == ("en" if english else "es-PR")
    page.get_by_label("Owner or parcel" if english else "Dueño o predio").fill("Munoz")
    page.get_by_role("button", name="Filter" if english else "Filtrar").click()
    page.wait_for_load_state()
    visit.check()
    _shot(visit, f"audit-{language}")
    # the page opens at the results, under the eight filter boxes: the heading and the first change on screen
    assert page.url.endswith("#changes"), page.url
    heading = page.locator("#changes").bounding_box()
    assert 0 <= heading["y"] < HEIGHT / 2, heading  # scrolled as far as the short page lets it
    first = page.locator("main table.table tbody tr").first.bounding_box()
    assert first["y"] + first["height"] <= HEIGHT, first
    rows = page.locator("main table.table tbody tr")
    texts = [rows.nth(i).inner_text() for i in range(rows.count())]
    assert texts and all("OW-M" in text or "LAJ-000006" in text for text in texts), texts
    assert not any("OW-T" in text or "LAJ-000007" in text for text in texts), texts
    change = page.locator("main ul.diff li", has_text="Spanish" if english else "Español").first
    assert change.inner_text() == ("Language of documents: Spanish → English" if english
                                   else "Idioma de los documentos: Español → Inglés")
    main = page.inner_text("main")
    assert "preferred_language" not in main and "owner_id" not in main
    assert page.locator("#access-events").count() == 0  # a search by owner is about changes
    # on the phone each change is a stacked card within the screen's width, its label beside it
    box = page.locator("main table.table").first.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH + 0.5, box
    label = page.locator("main ul.diff li .field-label").first.bounding_box()
    assert label["x"] >= 0 and label["x"] + label["width"] <= WIDTH, label
    # the parcel by its number without prefix finds the parcel's rows only
    page.get_by_label("Owner or parcel" if english else "Dueño o predio").fill("000006")
    page.get_by_role("button", name="Filter" if english else "Filtrar").click()
    page.wait_for_load_state()
    texts = [rows.nth(i).inner_text() for i in range(rows.count())]
    assert texts and all("LAJ-000006" in text for text in texts), texts


# --- 17. The estimates page --------------------------------------------------------------------


def _estimates(authority, year: str, *, certify: bool, **values: str) -> None:
    from levy.services import estimate_certify, estimate_enter

    estimate_enter(acting_user=authority, fiscal_year=year, **{name: Decimal(v) for name, v in values.items()})
    if certify:
        estimate_certify(acting_user=authority, fiscal_year=year)


@pytest.mark.parametrize("language", ["es-pr", "en"])
def test_the_estimates_page_compares_with_last_year_and_asks_no_reason_for_a_draft(visit, language):
    english = language == "en"
    authority = _user("u_authority", "authority")
    _estimates(authority, "2025-2026", certify=True, om_estimate="1200000.00", reserve="24000.00", deficit="15000.00",
               misc_income="38000.00")
    _estimates(authority, "2026-2027", certify=False, om_estimate="1250000.00", reserve="25000.00", deficit="30000.00",
               misc_income="40000.00")
    _open(visit, language, "u_authority")
    visit.go("/contribucion/2026-2027/estimados/")
    page = visit.page
    _shot(visit, f"estimates-{language}")
    certified = "Certified for 2025-2026:" if english else "Certificado para 2025-2026:"
    for field, amount in (("om_estimate", "$1,200,000.00"), ("reserve", "$24,000.00"), ("deficit", "$15,000.00"),
                          ("misc_income", "$38,000.00")):
        previous = page.locator(f".previous-year[data-field={field}]")
        assert previous.inner_text() == f"{certified} {amount}"
        # beside its field: in the same field block, just above the box one types in
        field_box, text_box = page.locator(f"#id_{field}").bounding_box(), previous.bounding_box()
        assert 0 <= field_box["y"] - (text_box["y"] + text_box["height"]) < 80, (field, field_box, text_box)
        assert page.locator(f"#id_{field}").get_attribute("aria-describedby").startswith(f"id_{field}_helptext")
    # correcting a draft asks no reason; there is one way to start a year, on the years page
    assert page.locator("textarea[name=reason]").count() == 0
    assert page.locator("form[action='/contribucion/nuevo/']").count() == 0
    # a reserve above 2 % of O&M: the refusal first on the page, focused, with dollars
    page.fill("#id_reserve", "25,000.01")
    page.fill("#id_om_estimate", "1,250,000.00")
    page.get_by_role("button", name="Save without certifying" if english else "Guardar sin certificar").click()
    page.wait_for_load_state()
    visit.check()
    _shot(visit, f"estimates-refused-{language}")
    summary = page.locator("#error-summary")
    assert summary.evaluate("(e) => e === document.activeElement")
    box = summary.bounding_box()
    assert box["y"] + box["height"] <= HEIGHT, box
    message = page.locator("#id_reserve_error").inner_text()
    assert ("($25,000.01)" in message and "(cap $25,000.00)" in message) if english else (
        "($25,000.01)" in message and "(tope $25,000.00)" in message), message
    visit.go("/contribucion/")
    assert page.locator("form[action='/contribucion/nuevo/']").count() == 1
    # certified figures: now a replacement, with its reason
    from levy.services import estimate_certify

    estimate_certify(acting_user=authority, fiscal_year="2026-2027")
    visit.go("/contribucion/2026-2027/estimados/")
    assert page.locator("textarea[name=reason]").count() == 1


# --- 18. The waterfall chart -------------------------------------------------------------------

STEPS = {"reserve": "+$25,000.00", "deficit": "+$30,000.00", "misc_income": "\u2212$40,000.00"}


@pytest.mark.parametrize("width", [WIDTH, 1280])
def test_the_waterfall_shows_every_small_step_as_a_labelled_bar(visit, width):
    from levy.models import Levy
    from levy.services import levy_compute

    authority = _user("u_authority", "authority")
    hacienda = _user("u_hacienda", "hacienda")
    owner = owner_create(acting_user=None, name="Carmen Irizarry Vélez", owner_key="OW-1")
    for index in range(1, 6):
        _parcel(f"LAJ-00000{index}", owner, credit="25" if index == 1 else "0")
    # the demo's estimates: O&M $1,250,000.00 with steps of 2 to 3 % of it
    _estimates(authority, "2026-2027", certify=True, om_estimate="1250000.00", reserve="25000.00", deficit="30000.00",
               misc_income="40000.00")
    levy = levy_compute(acting_user=hacienda, fiscal_year="2026-2027")
    levy = Levy.objects.get(pk=levy.pk)
    assert levy.credits.amount > 0
    _open(visit, "es-pr", "u_hacienda", width=width, height=HEIGHT if width == WIDTH else 900)
    visit.go("/contribucion/2026-2027/hoja/")
    page = visit.page
    phone = width == WIDTH
    chart = page.locator("svg.chart-phone" if phone else "svg.chart-wide")
    assert chart.is_visible() and not page.locator("svg.chart-wide" if phone else "svg.chart-phone").is_visible()
    chart.scroll_into_view_if_needed()
    _shot(visit, f"waterfall-{width}")
    chart.screenshot(path=f"/tmp/issue18-levy-waterfall-chart-{width}.png")
    box = chart.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
    labels = {**STEPS, "credits": f"+${levy.credits.amount:,.2f}", "safety_margin": f"+${levy.safety_margin.amount:,.2f}"}
    for key, label in labels.items():
        bar = chart.locator(f"rect[data-step={key}]").bounding_box()
        visible = "width" if phone else "height"  # the bars run sideways on the phone
        assert bar[visible] >= 2.5 and bar["height"] >= 2.5, (key, bar)
        value = chart.locator(f"text.bar-value[data-step={key}]")
        assert value.text_content() == label
        text = value.bounding_box()
        assert text["height"] >= (12 if phone else 10), (key, text)  # read at its size, not a third of it
        assert text["y"] + text["height"] <= bar["y"] + 1, (key, text, bar)  # above its bar
        if phone:  # on the bar's row, at its right end
            assert bar["y"] - (text["y"] + text["height"]) < 12 and text["x"] + text["width"] <= width, (key, text)
        else:
            assert abs((text["x"] + text["width"] / 2) - (bar["x"] + bar["width"] / 2)) < 2, key
    # the axis starts above zero and says so; the cut bars carry the break mark
    caption = page.locator("figure.chart-figure figcaption .axis-start").inner_text()
    assert caption.startswith("El eje empieza en $") and "no en cero" in caption
    assert chart.locator("path").count() == 3
    assert "$0" not in chart.locator("text").all_text_contents()
