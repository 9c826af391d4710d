"""Issue 17 §6: a 10 MB field in an import was refused with Python's English "field larger than
field limit (131072)" inside the Spanish page. The csv module's refusals now read in the
interface's language, with the line they stopped at."""

from __future__ import annotations

import pytest
from django.utils import translation

from parcels.models import Parcel

from .test_import import HEADER, run

BIG = "x" * (10 * 1024 * 1024)


@pytest.mark.django_db
def test_a_10_mb_field_is_refused_in_spanish_with_its_line():
    data = f"{HEADER}\nP-1,Ana,,privado,1,0,permanente,,0\nP-2,{BIG},,privado,1,0,permanente,,0\n"
    with translation.override("es-pr"):
        result = run(data)
        assert not result.ok and not Parcel.objects.exists()
        (error,) = result.errors
        assert (error.line, error.column) == (3, "")
        assert error.message == "un campo tiene más de 131072 caracteres (¿unas comillas sin cerrar?)"
        assert str(error) == "línea 3, columna -: un campo tiene más de 131072 caracteres (¿unas comillas sin cerrar?)"
    with translation.override("en"):
        assert run(data).errors[0].message == "a field has more than 131072 characters (an unclosed quote?)"


@pytest.mark.django_db
def test_an_unclosed_quote_in_the_header_is_in_spanish_too():
    with translation.override("es-pr"):
        (header,) = run(f'"{BIG}\n').errors
        assert header.line == 1 and header.message == "un campo tiene más de 131072 caracteres (¿unas comillas sin cerrar?)"
