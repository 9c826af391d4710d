"""Pages of the parcel registry. Views bind a form or filter, fetch through ``access``, call one
service, then redirect or render."""

from __future__ import annotations

from datetime import date, datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import formats
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from . import selectors, services
from .access import get_parcel_for_user
from .forms import ImportUploadForm, OwnerForm, ParcelForm, TransferForm
from .imports import stored_error_message, template_csv
from .models import AccessEvent, ImportUpload, Job, Owner, Parcel
from .roles import AUDITOR, AUTHORITY, COLLECTOR, HACIENDA, STAFF_ROLES, SUPERVISOR, has_role, role_required
from .search import owners_matching
from .templatetags.audit_history import related_names_prime

REGISTRY_READERS = (AUTHORITY, HACIENDA, COLLECTOR, SUPERVISOR, AUDITOR)
PAGE_SIZE = 50
IMPORT_ERRORS_SHOWN = 500  # a rejected file's errors listed on its page
CHANGES = "changes"  # the audit page's event type for the registry history (the rest are AccessEvent kinds)


@role_required(*REGISTRY_READERS)
def parcel_list(request: HttpRequest) -> HttpResponse:
    filterset = selectors.parcel_list(params=request.GET)
    page = Paginator(filterset.qs, PAGE_SIZE).get_page(request.GET.get("page"))
    searched = any(request.GET.get(name) for name in (*filterset.form.fields, "page"))
    return render(request, "parcels/parcel_list.html", {
        "filter": filterset, "page": page, "searched": searched, "active_filters": filterset.filters_applied(),
    })


@login_required
def parcel_detail(request: HttpRequest, pk: int) -> HttpResponse:
    parcel = get_parcel_for_user(request.user, pk)
    staff = has_role(request.user, *STAFF_ROLES)
    context = {"parcel": parcel, "staff": staff}
    if staff:
        context["history"] = related_names_prime(selectors.parcel_history(parcel=parcel)[:50])
        context["transfers"] = parcel.transfers.select_related("from_owner", "to_owner", "recorded_by")
    return render(request, "parcels/parcel_detail.html", context)


def _parcel_service_kwargs(data: dict) -> dict:
    return {
        "area_unit": data["area_unit"], "gravity_area": data["gravity_area"], "pumped_area": data["pumped_area"],
        "inclusion": data["inclusion"], "water_since": data["water_since"], "credit_percent": data["credit_percent"],
    }


@role_required(AUTHORITY)
def parcel_create(request: HttpRequest) -> HttpResponse:
    form = ParcelForm(request.POST or None, initial={"owner_key": request.GET.get("owner", "")})
    if request.method == "POST" and form.is_valid():
        try:
            parcel = services.parcel_create(
                acting_user=request.user, parcel_id=form.cleaned_data["parcel_id"], owner=form.owner,
                **_parcel_service_kwargs(form.cleaned_data),
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, _("Predio %(p)s creado.") % {"p": parcel.parcel_id})
            return redirect("parcels:parcel-detail", pk=parcel.pk)
    return render(request, "parcels/parcel_form.html", {"form": form, "parcel": None})


@role_required(AUTHORITY)
def parcel_edit(request: HttpRequest, pk: int) -> HttpResponse:
    parcel = get_object_or_404(Parcel.objects.select_related("owner"), pk=pk)
    initial = {
        "parcel_id": parcel.parcel_id, "owner_key": parcel.owner.owner_key, "area_unit": parcel.area_unit,
        "gravity_area": parcel.gravity_area_entered if parcel.gravity_area_entered is not None else parcel.gravity_acres,
        "pumped_area": parcel.pumped_area_entered if parcel.pumped_area_entered is not None else parcel.pumped_acres,
        "inclusion": parcel.inclusion, "water_since": parcel.water_since, "credit_percent": parcel.credit_percent,
    }
    form = ParcelForm(request.POST or None, initial=initial, parcel=parcel)
    if request.method == "POST" and form.is_valid():
        try:
            services.parcel_update(acting_user=request.user, parcel=parcel, **_parcel_service_kwargs(form.cleaned_data))
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, _("Predio %(p)s actualizado.") % {"p": parcel.parcel_id})
            return redirect("parcels:parcel-detail", pk=parcel.pk)
    return render(request, "parcels/parcel_form.html", {"form": form, "parcel": parcel})


@role_required(AUTHORITY)
def parcel_transfer(request: HttpRequest, pk: int) -> HttpResponse:
    parcel = get_object_or_404(Parcel.objects.select_related("owner"), pk=pk)
    form = TransferForm(request.POST or None, initial={"effective_on": date.today()})
    if request.method == "POST" and form.is_valid():
        try:
            services.parcel_transfer(
                acting_user=request.user, parcel=parcel, to_owner=form.to_owner,
                effective_on=form.cleaned_data["effective_on"], deed_reference=form.cleaned_data["deed_reference"],
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, _("Traspaso registrado."))
            return redirect("parcels:parcel-detail", pk=parcel.pk)
    return render(request, "parcels/transfer_form.html", {"form": form, "parcel": parcel})


@role_required(*REGISTRY_READERS)
def owner_list(request: HttpRequest) -> HttpResponse:
    """The owners; ``?devuelto=1`` lists only those flagged by returned mail (issue 19), whose
    count the page always shows with a link."""
    owners = Owner.objects.order_by("name", "owner_key")
    query = request.GET.get("q", "").strip()
    returned = request.GET.get("devuelto") == "1"
    if returned:
        owners = owners.filter(returned_mail=True)
    if query:
        owners = owners_matching(owners, query)
    page = Paginator(owners, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "parcels/owner_list.html", {
        "page": page, "q": query, "returned": returned, "returned_count": Owner.objects.filter(returned_mail=True).count(),
    })


@role_required(*REGISTRY_READERS)
def owner_detail(request: HttpRequest, pk: int) -> HttpResponse:
    owner = get_object_or_404(Owner, pk=pk)
    return render(request, "parcels/owner_detail.html", {
        "owner": owner, "parcels": owner.parcels.order_by("parcel_id")[:500],
        "history": related_names_prime(
            selectors.audit_events().filter(pgh_obj_model="parcels.Owner", pgh_obj_id=str(owner.pk))[:50]),
        "returns": owner.returned_mails.select_related("parcel", "recorded_by")[:50],
        "can_edit": has_role(request.user, AUTHORITY),
    })


@role_required(AUTHORITY)
@require_POST
def owner_address_confirm(request: HttpRequest, pk: int) -> HttpResponse:
    """Issue 19: staff confirmed the address on file with the owner; the returned-mail flag clears."""
    owner = get_object_or_404(Owner, pk=pk)
    try:
        services.owner_address_confirm(acting_user=request.user, owner=owner)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, _("Dirección confirmada hoy."))
    return redirect("parcels:owner-detail", pk=owner.pk)


@role_required(AUTHORITY)
def owner_create(request: HttpRequest) -> HttpResponse:
    form = OwnerForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        owner = services.owner_create(acting_user=request.user, **form.cleaned_data)
        messages.success(request, _("Dueño %(k)s creado.") % {"k": owner.owner_key})
        return redirect("parcels:owner-detail", pk=owner.pk)
    return render(request, "parcels/owner_form.html", {"form": form, "owner": None})


@role_required(AUTHORITY)
def owner_edit(request: HttpRequest, pk: int) -> HttpResponse:
    owner = get_object_or_404(Owner, pk=pk)
    form = OwnerForm(request.POST or None, instance=Owner.objects.get(pk=pk))
    if request.method == "POST" and form.is_valid():
        services.owner_update(acting_user=request.user, owner=owner, **form.cleaned_data)
        messages.success(request, _("Dueño actualizado."))
        return redirect("parcels:owner-detail", pk=owner.pk)
    return render(request, "parcels/owner_form.html", {"form": form, "owner": owner})


@role_required(AUTHORITY)
def import_upload(request: HttpRequest) -> HttpResponse:
    form = ImportUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = services.import_upload_create(acting_user=request.user, file=form.cleaned_data["file"])
        return redirect("parcels:import-detail", pk=upload.pk)
    recent = ImportUpload.objects.select_related("uploaded_by").order_by("-uploaded_at")[:10]
    return render(request, "parcels/import_upload.html", {"form": form, "recent": recent})


@role_required(AUTHORITY)
def import_template(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(template_csv(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="plantilla_predios.csv"'
    return response


IMPORT_FIELD_LABELS = {
    "gravity_acres": Parcel._meta.get_field("gravity_acres").verbose_name,
    "pumped_acres": Parcel._meta.get_field("pumped_acres").verbose_name,
    "inclusion": Parcel._meta.get_field("inclusion").verbose_name,
    "water_since": Parcel._meta.get_field("water_since").verbose_name,
    "credit_percent": Parcel._meta.get_field("credit_percent").verbose_name,
    "owner": Parcel._meta.get_field("owner").verbose_name,
    "name": Owner._meta.get_field("name").verbose_name,
    "email": Owner._meta.get_field("email").verbose_name,
    "kind": Owner._meta.get_field("kind").verbose_name,
    **{name: Owner._meta.get_field(name).verbose_name for name in (
        "preferred_language", "care_of", "address_line1", "address_line2", "address_town", "address_state", "address_zip",
    )},
}
IMPORT_VALUE_LABELS = {
    "inclusion": dict(Parcel.Inclusion.choices), "kind": dict(Owner.Kind.choices),
    "preferred_language": dict(Owner.Language.choices),
}


def _import_value(name: str, value: str) -> str:
    """A stored import value as the page shows it: coded values in words, a date as d/m/Y."""
    if name == "water_since" and value:
        try:
            return formats.date_format(date.fromisoformat(value), "SHORT_DATE_FORMAT")
        except ValueError:
            return value
    return str(IMPORT_VALUE_LABELS.get(name, {}).get(value, value))


def _import_changes(entries: list[dict]) -> list[dict]:
    """The stored ``[[field, old, new], …]`` of each entry with the field's label and coded values in words."""
    words = _import_value

    return [
        {**entry, "fields": [{"label": IMPORT_FIELD_LABELS.get(name, name), "old": words(name, old), "new": words(name, new)}
                             for name, old, new in entry["fields"]]}
        for entry in entries
    ]


@role_required(AUTHORITY)
def import_detail(request: HttpRequest, pk: int) -> HttpResponse:
    upload = get_object_or_404(ImportUpload.objects.select_related("job"), pk=pk)
    summary = upload.summary or {}
    created_rows = [
        {**row, "inclusion": IMPORT_VALUE_LABELS["inclusion"].get(row["inclusion"], row["inclusion"]),
         "owner_kind": IMPORT_VALUE_LABELS["kind"].get(row["owner_kind"], row["owner_kind"]),
         "owner_language": IMPORT_VALUE_LABELS["preferred_language"].get(row.get("owner_language", ""), ""),
         "water_since": _import_value("water_since", row.get("water_since") or "")}
        for row in summary.get("created_rows", [])
    ]
    # stored as msgid and values (parsed by a worker, in Spanish), read in the reader's language
    errors = [{"line": e.get("line"), "column": e.get("column"), "message": stored_error_message(e)}
              for e in (upload.errors or [])[:IMPORT_ERRORS_SHOWN]]
    return render(request, "parcels/import_detail.html", {
        "upload": upload, "job": upload.job, "created_rows": created_rows, "errors": errors,
        "changes": _import_changes(summary.get("changes", [])),
        "owner_changes": _import_changes(summary.get("owner_changes", [])),
    })


@require_POST
@role_required(AUTHORITY)
def import_confirm(request: HttpRequest, pk: int) -> HttpResponse:
    upload = get_object_or_404(ImportUpload, pk=pk)
    try:
        services.import_upload_apply(acting_user=request.user, upload=upload)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    return redirect("parcels:import-detail", pk=upload.pk)


@login_required
def job_status(request: HttpRequest, pk: int) -> JsonResponse:
    job = get_object_or_404(Job, pk=pk, created_by=request.user)
    return JsonResponse({"status": job.status, "percent": job.percent, "progress": job.progress, "total": job.total})


@role_required(*REGISTRY_READERS)
def audit(request: HttpRequest) -> HttpResponse:
    """The history of the registry and the access log. ``event`` narrows to the registry changes
    (``changes``) or to one kind of access event; ``who``, ``since`` and ``until`` apply to both."""
    params = request.GET
    since = _parse_date(params.get("since"))
    until = _parse_date(params.get("until"))
    who = params.get("who", "").strip()
    event = params.get("event", "")
    if event != CHANGES and event not in AccessEvent.Kind.values:
        event = ""
    page = access_page = None
    if event in ("", CHANGES):
        model = params.get("what", "")
        events = selectors.audit_events(user=who, model=model if model in _event_models() else "", since=since, until=until,
                                        query=params.get("q", ""))
        page = Paginator(events, PAGE_SIZE).get_page(params.get("page"))
        page.object_list = related_names_prime(page.object_list)
    # The access log is about users, not parcels: a search by owner or parcel shows the changes only.
    if event != CHANGES and not (event == "" and params.get("q", "").strip()):
        accesses = selectors.access_events(user=who, kind=event, since=since, until=until)
        access_page = Paginator(accesses, PAGE_SIZE).get_page(params.get("apage"))
    event_types = {CHANGES: _("Cambios del registro"), **dict(AccessEvent.Kind.choices)}
    return render(request, "parcels/audit.html", {
        "page": page, "access_page": access_page, "event_models": _event_models(), "event_types": event_types,
        "params": params,
    })


def _event_models() -> dict[str, str]:
    return {
        "parcels.ParcelEvent": _("Predio"),
        "parcels.OwnerEvent": _("Dueño"),
        "parcels.OwnershipTransferEvent": _("Traspaso"),
        "parcels.SecondFactorResetEvent": _("Verificación en dos pasos"),
        "parcels.StaffProfileEvent": _("Cargo de funcionario"),
    }


def _parse_date(value: str | None) -> date | None:
    """A date typed day first (01/12/2026), as every date box takes it, or YYYY-MM-DD; else None."""
    for form in ("%d/%m/%Y", "%Y-%m-%d"):
        try:
            return datetime.strptime((value or "").strip(), form).date()
        except ValueError:
            continue
    return None
