"""Issue 19: RF payment references (ISO 11649) round-trip and catch a mistyped digit."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billing.references import (
    InvalidReference,
    charge_id_from_reference,
    looks_like_reference,
    payment_reference,
    reference_display,
)


@given(st.integers(min_value=1, max_value=10**15))
def test_a_reference_reads_back_as_its_charge_however_it_is_written(charge_id):
    reference = payment_reference(charge_id)
    assert reference.startswith("RF") and looks_like_reference(reference)
    assert charge_id_from_reference(reference) == charge_id
    assert charge_id_from_reference(reference_display(reference).lower()) == charge_id


@given(st.integers(min_value=1, max_value=10**9), st.data())
def test_one_mistyped_digit_is_caught_by_the_check_digits(charge_id, data):
    reference = payment_reference(charge_id)
    position = data.draw(st.integers(min_value=2, max_value=len(reference) - 1))
    wrong = data.draw(st.sampled_from([d for d in "0123456789" if d != reference[position]]))
    mistyped = reference[:position] + wrong + reference[position + 1:]
    with pytest.raises(InvalidReference):
        charge_id_from_reference(mistyped)


@pytest.mark.parametrize("text", ["", "LAJ-000001", "RF", "RF00", "12345678"])
def test_what_is_not_a_reference_is_refused(text):
    with pytest.raises(InvalidReference):
        charge_id_from_reference(text)
