"""The public "¿cuánto debo?" page (no login): the cadastre number and the bill's access code
show today's statement, without the owner's name or address; the button asks for a numbered
*estado de cuenta* PDF (``services.statements``). The lookup and its throttles are ``billing.public``."""

from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters

from parcels.middleware import client_ip

from .. import accounts, documents, public, selectors
from ..errors import BillingError
from ..models import AccountStatement
from ..services import statements


class OwedForm(forms.Form):
    parcel_id = forms.CharField(
        label=_("Número de catastro"), max_length=40,
        help_text=_("Como aparece en su aviso, con o sin el prefijo y los guiones (por ejemplo LAJ-000123 o 000123)."),
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false", "autocapitalize": "characters"}),
    )
    access_code = forms.CharField(
        label=_("Código de acceso"), max_length=20,
        help_text=_("Diez letras y números impresos en su aviso de contribución, por ejemplo ABCDE-12345."),
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false", "autocapitalize": "characters"}),
    )


@never_cache
@sensitive_post_parameters("access_code")
def owed(request: HttpRequest) -> HttpResponse:
    form = OwedForm(request.POST or None)
    context: dict = {"form": form}
    status = 200
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            found = public.lookup(parcel_id=data["parcel_id"], access_code=data["access_code"], client=client_ip(request))
        except public.LookupRefused as exc:
            form.add_error(None, str(exc))
            status = 429 if exc.code == "throttled" else 200
        else:
            if request.POST.get("pdf") == "1":
                try:
                    issued = statements.statement_issue(parcel=found.parcel, channel=AccountStatement.Channel.PUBLIC)
                except BillingError as exc:
                    form.add_error(None, str(exc))
                else:
                    response = HttpResponse(documents.document_pdf(issued.document), content_type="application/pdf")
                    response["Content-Disposition"] = f'attachment; filename="estado-de-cuenta-{issued.number}.pdf"'
                    return response
            today = timezone.localdate()
            context.update(statement=accounts.statement(parcel=found.parcel, as_of=today), today=today,
                           holds_through=selectors.owed_today_holds_through(parcel=found.parcel, as_of=today),
                           parcel_id=data["parcel_id"], access_code=data["access_code"])
    return render(request, "portal/owed.html", context, status=status)
