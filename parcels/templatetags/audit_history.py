"""The history of a change as a person reads it (issue 18, point 16): each field by its label in
the reader's language (the model field's ``verbose_name``), each value as the pages show it (a
choice's label, a date d/m/Y, an owner by name), not ``preferred_language: es → en``.

History rows (django-pghistory) store the columns as JSON: ``owner_id``, ``"2026-07-01"``,
``"en"``. The model is found by name in the app registry, so this module imports no model and
works for every tracked one (the office of the Collector too)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django import template
from django.apps import apps
from django.db import models
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy as _lazy

register = template.Library()

# Columns every row has that say nothing to a reader (the history row has its own time and author).
HIDDEN = {"id", "created_at", "updated_at", "recorded_at"}
NONE = "—"
# Fields declared without a label of their own (Django would call them "from owner"): named here
# rather than by a migration that only relabels columns.
LABELS = {
    "parcel": _lazy("predio"), "from_owner": _lazy("dueño anterior"), "to_owner": _lazy("dueño nuevo"),
    "recorded_by": _lazy("registrado por"), "user": _lazy("usuario"), "username": _lazy("usuario"),
    "devices_removed": _lazy("dispositivos quitados"), "reset_at": _lazy("cuándo"),
}


@dataclass(frozen=True)
class FieldChange:
    label: str
    before: str
    after: str
    typed: bool  # the values are as someone typed them (names, hours): never translated (translate="no")


@dataclass(frozen=True)
class FieldValue:
    label: str
    value: str
    typed: bool


def _model(event: Any) -> type[models.Model] | None:
    try:
        return apps.get_model(event.pgh_obj_model)
    except (LookupError, ValueError):
        return None


def _field(model: type[models.Model] | None, column: str) -> models.Field | None:
    """The model field stored in ``column`` (``owner_id`` is the field ``owner``)."""
    if model is None:
        return None
    for field in model._meta.concrete_fields:
        if column in (field.attname, field.name, field.column):
            return field
    return None


def field_label(model: type[models.Model] | None, column: str) -> str:
    field = _field(model, column)
    if field is None:
        return column
    label = str(field.verbose_name)
    if label == field.name.replace("_", " ") and field.name in LABELS:  # no label declared
        label = str(LABELS[field.name])
    return label[:1].upper() + label[1:]


def value_is_typed(model: type[models.Model] | None, column: str) -> bool:
    """Whether the field's values are shown as typed (not a choice, a yes/no or a date the
    reader's language words)."""
    field = _field(model, column)
    return field is None or not (field.choices or isinstance(field, (models.BooleanField, models.DateField)))


def related_names_prime(events: Iterable[Any]) -> list[Any]:
    """Looks up, in one query per related model, the records the events' foreign keys name (an
    owner by name, a user by username) and keeps them on each event (``related_names``), so a page
    of history costs the same few queries whatever its length (issue 20: query budgets). Returns
    the events as a list."""
    events = list(events)
    wanted: dict[type[models.Model], set[Any]] = {}
    for event in events:
        model = _model(event)
        pairs = list((event.pgh_data or {}).items())
        pairs += [(column, value) for column, change in (event.pgh_diff or {}).items() for value in change]
        for column, value in pairs:
            field = _field(model, column)
            if isinstance(field, models.ForeignKey) and value not in (None, ""):
                wanted.setdefault(field.related_model, set()).add(value)
    names: dict[tuple[type[models.Model], str], str] = {}
    for related_model, pks in wanted.items():
        for pk, record in related_model._default_manager.in_bulk(pks).items():
            names[(related_model, str(pk))] = str(record)
    for event in events:
        event.related_names = names
    return events


def field_value(model: type[models.Model] | None, column: str, value: Any, names: dict | None = None) -> str:
    """A stored value as the pages show it (``names``: what ``related_names_prime`` looked up)."""
    if value is None or value == "":
        return NONE
    field = _field(model, column)
    if field is None:
        return str(value)
    if field.choices:
        return str(dict(field.flatchoices).get(value, value))
    if isinstance(field, models.BooleanField):
        return _("Sí") if value else _("No")
    if isinstance(field, models.DateTimeField):
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            return str(value)
        if timezone.is_aware(moment):
            moment = timezone.localtime(moment)
        return date_format(moment, "d/m/Y H:i")
    if isinstance(field, models.DateField):
        try:
            return date_format(date.fromisoformat(str(value)), "d/m/Y")
        except ValueError:
            return str(value)
    if isinstance(field, models.ForeignKey):
        if names is not None:
            name = names.get((field.related_model, str(value)))
            return name if name is not None else f"#{value}"
        related = field.related_model._default_manager.filter(pk=value).first()
        return str(related) if related is not None else f"#{value}"
    return str(value)


@register.filter
def history_changes(event: Any) -> list[FieldChange]:
    """An update's changed fields, each with its label and its values before and after."""
    model = _model(event)
    names = getattr(event, "related_names", None)
    return [
        FieldChange(field_label(model, column), field_value(model, column, change[0], names),
                    field_value(model, column, change[1], names), value_is_typed(model, column))
        for column, change in (event.pgh_diff or {}).items() if column not in HIDDEN
    ]


@register.filter
def history_fields(event: Any) -> list[FieldValue]:
    """An insert's or delete's fields, each with its label and its value."""
    model = _model(event)
    names = getattr(event, "related_names", None)
    return [
        FieldValue(field_label(model, column), field_value(model, column, value, names), value_is_typed(model, column))
        for column, value in (event.pgh_data or {}).items() if column not in HIDDEN
    ]
