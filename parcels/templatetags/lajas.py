"""Display filters shared by every page and document: money as ``$1,234.56`` in both languages."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from ..money import as_decimal, money_text

register = template.Library()


@register.filter
def money(value: Any) -> str:
    """``Decimal("1234.5")`` → ``$1,234.50``; negatives as ``-$12.00`` (``parcels.money``)."""
    return money_text(value)


@register.filter
def officer_name(user: Any) -> str:
    """An officer as the public reads them (issue 18: the void banner said "supervisor", a username):
    full name and title, "Ana Rivera Soto, Supervisora de colecturía"; whichever of the two is on
    record; "la Oficina del Colector" when neither is."""
    name = " ".join(user.get_full_name().split()) if user is not None else ""
    profile = getattr(user, "staff_profile", None) if user is not None else None
    title = " ".join((profile.title if profile is not None else "").split())
    return ", ".join(part for part in (name, title) if part) or str(_("la Oficina del Colector"))


@register.filter
def unbroken(value: Any) -> str:
    """A code the line must not break at its hyphen ("LAJ-" / "000004" at 390 px, issue 18), as a
    span that ``.nowrap`` keeps whole; escaped like any value."""
    return format_html('<span class="nowrap">{}</span>', value)


@register.filter
def number(value: Any, places: int = 2) -> str:
    """A plain number with thousands separators and a fixed number of places (acres, rates)."""
    amount = as_decimal(value)
    if amount is None:
        return ""
    quantum = Decimal(1).scaleb(-int(places))
    return f"{amount.quantize(quantum, rounding=ROUND_HALF_UP):,.{int(places)}f}"


@register.simple_tag(takes_context=True)
def sort_link(context: dict, field: str) -> str:
    """The query string that sorts a list by ``field`` (toggling direction), keeping filters."""
    request = context["request"]
    params = request.GET.copy()
    current = params.get("o", "")
    params["o"] = f"-{field}" if current == field else field
    params.pop("page", None)
    return "?" + params.urlencode()


@register.simple_tag(takes_context=True)
def page_link(context: dict, page: int, param: str = "") -> str:
    """The current query with page ``param`` (``page`` unless the page has two lists) set to ``page``."""
    params = context["request"].GET.copy()
    params[param or "page"] = page
    return "?" + params.urlencode()


@register.simple_tag(takes_context=True)
def aria_sort(context: dict, field: str) -> str:
    current = context["request"].GET.get("o", "")
    if current == field:
        return "ascending"
    if current == f"-{field}":
        return "descending"
    return "none"


HISTORY_ACTIONS = {"insert": _("Alta"), "update": _("Cambio"), "delete": _("Baja")}
HISTORY_MODELS = {"parcels.Parcel": _("predio"), "parcels.Owner": _("dueño"), "parcels.OwnershipTransfer": _("traspaso"),
                  "billing.Office": _("oficina del Colector")}
# The field that names a row of each model in words (the cadastre number, the owner key, the office code).
HISTORY_NAMES = {"parcels.Parcel": "parcel_id", "parcels.Owner": "owner_key", "billing.Office": "code"}


@register.filter
def history_what(event: Any) -> str:
    """An audit row's "what" in words: "Alta · predio LAJ-000123" (the cadastre number or owner
    key, which people know, rather than the internal id)."""
    data = event.pgh_data or {}
    if event.pgh_obj_model == "parcels.SecondFactorReset":
        label = _("Verificación en dos pasos restablecida")
        return f"{label} · {data.get('username')}"
    action = HISTORY_ACTIONS.get(event.pgh_label, event.pgh_label)
    if event.pgh_obj_model == "parcels.StaffProfile":  # the title an officer signs with (user id, title)
        return f"{action} · {_('cargo de funcionario')} «{data.get('title', '')}» (#{data.get('user_id', event.pgh_obj_id)})"
    name = data.get(HISTORY_NAMES.get(event.pgh_obj_model, ""))
    if not name:
        name = f"#{event.pgh_obj_id}"
    return f"{action} · {HISTORY_MODELS.get(event.pgh_obj_model, event.pgh_obj_model)} {name}"
