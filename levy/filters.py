"""Filters of the roll page (django-filter)."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _

from parcels import search
from parcels.filters import OrderingFilter

from . import rules
from .models import RollLine

YES_NO = [("yes", _("Sí")), ("no", _("No"))]
REASONS = [
    (rules.REASON_LEVIED, _("Paga este año")),
    (rules.REASON_NO_WATER_DATE, _("Sin fecha de agua (¶8)")),
    (rules.REASON_WATER_TOO_RECENT, _("Menos de 12 meses de agua al 1 de julio (¶8, ¶10)")),
]
REASON_LABELS = dict(REASONS)
REASON_SHORT = {
    rules.REASON_NO_WATER_DATE: _("no paga (¶8)"),
    rules.REASON_WATER_TOO_RECENT: _("no paga (¶10)"),
}


class RollFilter(django_filters.FilterSet):
    q = django_filters.CharFilter(label=_("Buscar (catastro o dueño)"), method="search")
    levied = django_filters.ChoiceFilter(label=_("Paga"), choices=YES_NO, method="by_levied", empty_label=_("Todos"))
    reason = django_filters.ChoiceFilter(label=_("Razón"), choices=REASONS, empty_label=_("Todas"))
    credit = django_filters.ChoiceFilter(label=_("Con crédito (¶7)"), choices=YES_NO, method="by_credit", empty_label=_("Todos"))
    o = OrderingFilter(
        label=_("Orden"),
        fields=(("parcel_code", "parcel"), ("owner_name", "owner"), ("equivalent_acres", "equivalent"),
                ("om_charge", "charge"), ("net", "net")),
        field_labels={"parcel_code": _("Número de catastro"), "owner_name": _("Dueño"), "equivalent_acres": _("Acres equivalentes"),
                      "om_charge": _("Contribución de O&M"), "net": _("Neto")},
    )

    class Meta:
        model = RollLine
        fields: list[str] = []

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        for word in search.words(value):
            queryset = queryset.filter(search.code_matches("parcel_code", word) | search.name_matches("owner_name", word)
                                       | search.key_is("owner_key", word))
        return queryset

    def by_levied(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(levied=value == "yes") if value in ("yes", "no") else queryset

    def by_credit(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        if value == "yes":
            return queryset.filter(credit__gt=0)
        if value == "no":
            return queryset.filter(credit=0)
        return queryset

    @property
    def qs(self) -> QuerySet:
        queryset = super().qs
        # A stable order under every sort, so a page never repeats or skips a line.
        ordering = list(queryset.query.order_by) or ["parcel_code"]
        if "parcel_code" not in ordering and "-parcel_code" not in ordering:
            ordering.append("parcel_code")
        return queryset.order_by(*ordering)
