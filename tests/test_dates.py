"""One date order, day first, on pages, inputs and hints, in Spanish and in English (issue 12)."""

from __future__ import annotations

from datetime import date

import pytest
from django import forms
from django.template import Context, Template
from django.utils import translation

from parcels.forms import DateInput


class DayForm(forms.Form):
    day = forms.DateField(widget=DateInput(), help_text="Día cerrado")


@pytest.mark.parametrize("language", ["es-pr", "en"])
@pytest.mark.parametrize("typed", ["01/12/2026", "1/12/2026", "2026-12-01"])
def test_a_typed_date_is_day_first_in_both_languages(language, typed):
    with translation.override(language):
        form = DayForm({"day": typed})
        assert form.is_valid(), form.errors
        assert form.cleaned_data["day"] == date(2026, 12, 1)  # never January 12


@pytest.mark.parametrize("language, hint", [("es-pr", "dd/mm/aaaa"), ("en", "dd/mm/yyyy")])
def test_the_box_shows_day_first_with_its_hint_announced(language, hint):
    with translation.override(language):
        html = str(DayForm(initial={"day": date(2026, 12, 1)})["day"])
    assert 'type="text"' in html and 'value="01/12/2026"' in html and 'inputmode="numeric"' in html
    assert 'aria-describedby="id_day_helptext id_day_format"' in html
    assert f'<span class="hint date-format" id="id_day_format">{hint}</span>' in html


@pytest.mark.parametrize("language, long", [("es-pr", "1 de diciembre de 2026"), ("en", "1 December 2026")])
def test_pages_print_day_first(language, long):
    template = Template('{{ d|date:"SHORT_DATE_FORMAT" }} · {{ d|date:"DATE_FORMAT" }}')
    with translation.override(language):
        assert template.render(Context({"d": date(2026, 12, 1)})) == f"01/12/2026 · {long}"
