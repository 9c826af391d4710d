import django_filters
from django import forms
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from .models import Parcel
from .search import parcels_matching


class OrderingFilter(django_filters.OrderingFilter):
    """django-filter's ordering, with its descending labels worded in the reader's language:
    django-filter formats "%s (descending)" once, when the FilterSet class is built, in the
    language active at import (Spanish), so English pages read "Número de catastro (descendente)"."""

    def build_choices(self, fields, labels):
        ascending = [(param, labels.get(field, param)) for field, param in fields.items()]
        descending = [(f"-{param}", labels.get(f"-{param}", format_lazy("{} ({})", label, _("descendente"))))
                      for param, label in ascending]
        return [choice for pair in zip(ascending, descending, strict=True) for choice in pair]


class ParcelFilter(django_filters.FilterSet):
    q = django_filters.CharFilter(label=_("Buscar (catastro o dueño)"), method="search",
                                  widget=forms.TextInput(attrs={"type": "search"}))
    inclusion = django_filters.ChoiceFilter(label=_("Inclusión"), choices=Parcel.Inclusion.choices, empty_label=_("Todas"))
    irrigation = django_filters.ChoiceFilter(
        label=_("Riego"),
        choices=[("gravity", _("Solo gravedad")), ("pumped", _("Solo bombeo")), ("mixed", _("Mixto"))],
        method="by_irrigation", empty_label=_("Todos"),
    )
    owner = django_filters.CharFilter(label=_("Clave del dueño"), field_name="owner__owner_key")
    has_credit = django_filters.ChoiceFilter(label=_("Con crédito (¶7)"), choices=[("yes", _("Sí")), ("no", _("No"))],
                                             method="by_credit", empty_label=_("Todos"))
    # issue 19: parcels whose owner's mail came back (the owner list shows the owners themselves)
    returned_mail = django_filters.ChoiceFilter(label=_("Dueño con correo devuelto"), choices=[("yes", _("Sí"))],
                                               field_name="owner__returned_mail", method="by_returned_mail", empty_label=_("Todos"))
    water_after = django_filters.DateFilter(label=_("Agua desde (inicio)"), field_name="water_since", lookup_expr="gte")
    water_before = django_filters.DateFilter(label=_("Agua desde (fin)"), field_name="water_since", lookup_expr="lte")
    o = OrderingFilter(
        label=_("Orden"),
        fields=(("parcel_id", "parcel_id"), ("owner__name", "owner"), ("gravity_acres", "gravity_acres"),
                ("pumped_acres", "pumped_acres"), ("water_since", "water_since"), ("credit_percent", "credit_percent")),
        field_labels={"parcel_id": _("Número de catastro"), "owner__name": _("Dueño"), "gravity_acres": _("Acres por gravedad"),
                      "pumped_acres": _("Acres por bombeo"), "water_since": _("Agua desde"), "credit_percent": _("Crédito (%)")},
    )

    class Meta:
        model = Parcel
        fields: list[str] = []

    form_id = "parcel-search"  # the page's one form: the search field is in it, the filters below the results join it
    search_field = "q"
    not_filters = ("q", "o")  # not counted as filters applied

    @property
    def form(self):
        form = super().form
        for name, field in form.fields.items():
            if name != self.search_field:
                field.widget.attrs["form"] = self.form_id
        return form

    def filters_applied(self) -> int:
        """How many filters (besides the search words and the order) narrow the list."""
        return sum(1 for name in self.form.fields if name not in self.not_filters and self.data.get(name))

    def search(self, queryset, name, value):
        return parcels_matching(queryset, value)

    def by_irrigation(self, queryset, name, value):
        if value == "gravity":
            return queryset.filter(pumped_acres=0)
        if value == "pumped":
            return queryset.filter(gravity_acres=0)
        return queryset.filter(gravity_acres__gt=0, pumped_acres__gt=0)

    def by_returned_mail(self, queryset, name, value):
        return queryset.filter(owner__returned_mail=True) if value == "yes" else queryset

    def by_credit(self, queryset, name, value):
        if value == "yes":
            return queryset.filter(credit_percent__gt=0)
        return queryset.filter(credit_percent=0) if value == "no" else queryset
