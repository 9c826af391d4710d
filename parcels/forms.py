import codecs
from decimal import Decimal
from typing import Any

from django import forms
from django.conf import settings
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from .models import Owner, Parcel


class DateInput(forms.DateInput):
    """A date typed as Puerto Rico writes it, day first (``01/12/2026``), in both languages.

    A text box, not the browser's date picker: the picker shows the order of the browser's own
    locale (12/01/2026 in an English browser) beside pages that print d/m/Y. The format hint
    ("dd/mm/aaaa") follows the box and is announced with it; the forms accept d/m/Y and, for
    scripts and old links, YYYY-MM-DD (``DATE_INPUT_FORMATS`` in ``lajas_portal/formats``)."""

    input_type = "text"

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs={"inputmode": "numeric", "autocomplete": "off", "size": "10", **(attrs or {})},
                         format="%d/%m/%Y")

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        widget_attrs = context["widget"]["attrs"]
        if widget_attrs.get("id"):
            described = [widget_attrs.get("aria-describedby", ""), f"{widget_attrs['id']}_format"]
            widget_attrs["aria-describedby"] = " ".join(part for part in described if part)
        return context

    def render(self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None) -> str:
        html = super().render(name, value, attrs, renderer)
        element_id = (attrs or {}).get("id") or self.attrs.get("id")
        if not element_id:
            return html
        return html + format_html(' <span class="hint date-format" id="{}_format">{}</span>', element_id, _("dd/mm/aaaa"))


class AmountField(forms.DecimalField):
    """Dollars and cents as Puerto Rico writes them: ``1,250,000.00`` or ``$1250000`` (not
    negative unless ``min_value`` says otherwise). Every amount typed in the app goes through it."""

    widget = forms.TextInput

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", Decimal("0"))
        super().__init__(max_digits=14, decimal_places=2, **kwargs)

    def widget_attrs(self, widget: forms.Widget) -> dict[str, str]:
        # A text box, not type=number: the browser would refuse the thousands separators.
        return {"inputmode": "decimal", "autocomplete": "off", "spellcheck": "false"}

    def to_python(self, value: Any) -> Decimal | None:
        if isinstance(value, str):
            value = value.strip().replace("$", "").replace(",", "").replace(" ", "")
        return super().to_python(value)


class ParcelForm(forms.Form):
    """Create or edit a parcel. Areas may be typed in acres or cuerdas; the unit is kept."""

    parcel_id = forms.CharField(label=_("Número de catastro"), max_length=40)
    owner_key = forms.CharField(
        label=_("Clave del dueño"), max_length=40, help_text=_("Por ejemplo DL-000123. Cree el dueño primero si es nuevo.")
    )
    area_unit = forms.ChoiceField(label=_("Unidad de área"), choices=Parcel.AreaUnit.choices, initial=Parcel.AreaUnit.ACRE)
    gravity_area = forms.DecimalField(
        label=_("Área regada por gravedad"), min_value=Decimal("0"), max_digits=12, decimal_places=4,
        help_text=_("¶5: terrenos que se riegan por gravedad."),
    )
    pumped_area = forms.DecimalField(
        label=_("Área regada con bombas del terrateniente"), min_value=Decimal("0"), max_digits=12, decimal_places=4,
        help_text=_("¶5–¶6: cuenta la mitad en el reparto."),
    )
    inclusion = forms.ChoiceField(label=_("Inclusión en el Distrito"), choices=Parcel.Inclusion.choices)
    water_since = forms.DateField(
        label=_("Recibió agua (o se le ofreció) desde"), required=False, widget=DateInput(),
        help_text=_("¶8, ¶10: paga a partir del 1 de julio siguiente a 12 meses de agua."),
    )
    credit_percent = forms.DecimalField(
        label=_("Crédito por derechos de agua cedidos (%)"), min_value=Decimal("0"), max_value=Decimal("100"),
        max_digits=5, decimal_places=2, initial=Decimal("0"), help_text=_("¶7: porcentaje fijado por la Autoridad (sec. 372)."),
    )

    def __init__(self, *args, parcel: Parcel | None = None, **kwargs):
        self.parcel = parcel
        super().__init__(*args, **kwargs)
        if parcel is not None:
            self.fields["parcel_id"].disabled = True
            self.fields["owner_key"].disabled = True
            self.fields["owner_key"].help_text = _("Para cambiar el dueño registre un traspaso.")

    def clean_parcel_id(self):
        value = self.cleaned_data["parcel_id"].strip()
        if self.parcel is None and Parcel.objects.filter(parcel_id=value).exists():
            raise forms.ValidationError(_("Ya existe un predio con ese número de catastro."))
        return value

    def clean_owner_key(self):
        value = self.cleaned_data["owner_key"].strip()
        owner = Owner.objects.filter(owner_key=value).first()
        if owner is None:
            raise forms.ValidationError(_("No hay un dueño con la clave «%(key)s».") % {"key": value})
        self.owner = owner
        return value

    def clean(self):
        data = super().clean()
        if data.get("gravity_area") == 0 and data.get("pumped_area") == 0:
            raise forms.ValidationError(_("El área por gravedad y el área por bombeo no pueden ser ambas cero."))
        return data


class OwnerForm(forms.ModelForm):
    """An owner's name, kind, language and mailing address in parts. The old free-text address
    (if the owner has one) is shown beside the form to copy from; it is no longer edited."""

    class Meta:
        model = Owner
        fields = [
            "name", "kind", "email", "preferred_language", "care_of", "address_line1", "address_line2",
            "address_town", "address_state", "address_zip",
        ]
        widgets = {
            "care_of": forms.TextInput(attrs={"autocomplete": "off"}),
            "address_line1": forms.TextInput(attrs={"autocomplete": "address-line1"}),
            "address_line2": forms.TextInput(attrs={"autocomplete": "address-line2"}),
            "address_town": forms.TextInput(attrs={"autocomplete": "address-level2"}),
            "address_zip": forms.TextInput(attrs={"autocomplete": "postal-code", "inputmode": "numeric", "size": "10"}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Select boxes that always send a value from the page; a scripted post without them gets the defaults.
        self.fields["preferred_language"].required = False
        self.fields["address_state"].required = False

    def clean_preferred_language(self) -> str:
        return self.cleaned_data.get("preferred_language") or Owner.Language.SPANISH

    def clean_address_zip(self) -> str:
        # "006671234" typed without the hyphen is read as 00667-1234; spaces around are dropped.
        value = "".join(self.cleaned_data.get("address_zip", "").split())
        if len(value) == 9 and value.isdigit():
            value = f"{value[:5]}-{value[5:]}"
        return value

    def clean_address_state(self) -> str:
        return (self.cleaned_data.get("address_state") or "PR").upper()


class TransferForm(forms.Form):
    to_owner_key = forms.CharField(label=_("Clave del nuevo dueño"), max_length=40)
    effective_on = forms.DateField(label=_("Fecha del traspaso"), widget=DateInput())
    deed_reference = forms.CharField(label=_("Escritura (número y notario)"), max_length=120, required=False)

    def clean_to_owner_key(self):
        value = self.cleaned_data["to_owner_key"].strip()
        owner = Owner.objects.filter(owner_key=value).first()
        if owner is None:
            raise forms.ValidationError(_("No hay un dueño con la clave «%(key)s».") % {"key": value})
        self.to_owner = owner
        return value


class ImportUploadForm(forms.Form):
    file = forms.FileField(label=_("Archivo CSV (UTF-8)"), help_text=_("Hasta 20 MB."))

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > settings.MAX_UPLOAD_BYTES:
            raise forms.ValidationError(_("El archivo pasa de 20 MB."))
        name = upload.name.lower()
        if not name.endswith((".csv", ".txt")):
            raise forms.ValidationError(_("Suba un archivo .csv."))
        if not _is_utf8_text(upload):
            # Refused here, before anything is stored: an image, a program or an Excel book
            # renamed .csv is not a CSV (the parser would only reject it after it was saved).
            raise forms.ValidationError(_(
                "El archivo no es un CSV de texto en UTF-8. Si es una hoja de Excel, guárdela como "
                "«CSV UTF-8 (delimitado por comas)» y súbala de nuevo."
            ))
        return upload


def _is_utf8_text(upload) -> bool:
    """The whole file decodes as UTF-8 and has no NUL byte (read in chunks, then rewound)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for chunk in upload.chunks():
            if b"\x00" in chunk:
                return False
            decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    finally:
        upload.seek(0)
    return True
