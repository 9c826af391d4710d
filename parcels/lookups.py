"""The two SQL functions of search (``lajas_fold``, ``lajas_code``; migration ``parcels.0003_search``)
as Django transforms, registered on every text field. ``parcels.models`` indexes them and
``parcels.search`` queries with them; this module imports nothing of the app, so neither of those
imports the other to get them."""

from __future__ import annotations

from django.db.models import CharField, TextField
from django.db.models.lookups import Transform


class Fold(Transform):
    """``lajas_fold(expression)``: lower case, without accents; also the lookup ``name__lajas_fold``."""

    lookup_name = function = "lajas_fold"
    output_field = TextField()


class CodeKey(Transform):
    """``lajas_code(expression)``: upper-case letters and digits only; also ``parcel_id__lajas_code``."""

    lookup_name = function = "lajas_code"
    output_field = TextField()


for _field in (CharField, TextField):
    _field.register_lookup(Fold)
    _field.register_lookup(CodeKey)
