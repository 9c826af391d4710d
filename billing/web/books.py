"""The page of the recorded checks of the books (``BooksCheck``) for auditors and every staff role:
the latest run in full (passed or not, when, what differed, the control totals), older runs below,
a page at a time. Landowners get 403 (``role_required``)."""

from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_safe

from parcels.roles import STAFF_ROLES, role_required

from .. import selectors
from ..models import BooksCheck

PAGE_SIZE = 20  # older runs per page
# The parts of the books each finding's ``check`` names (billing.books's invariants 1–5).
CHECK_LABELS = {
    "levy": _("Contribución y padrón (¶4, ¶9)"),
    "corrections": _("Correcciones del padrón"),
    "installments": _("Plazos (¶12)"),
    "ledger": _("Estados de cuenta"),
    "receipts": _("Numeración de recibos"),
    "numbering": _("Numeración de documentos"),
    "documents": _("Documentos guardados"),
    "totals": _("Totales de control comparados"),
}


def with_labels(check: BooksCheck) -> BooksCheck:
    """``check.finding_rows``: (part of the books, message) for the template."""
    check.finding_rows = [(CHECK_LABELS.get(f["check"], f["check"]), f["message"]) for f in check.findings]  # type: ignore[attr-defined]
    return check


@require_safe
@role_required(*STAFF_ROLES)
def checks(request: HttpRequest) -> HttpResponse:
    runs = selectors.books_check_list()
    latest = runs.first()
    older = runs.exclude(pk=latest.pk) if latest else runs.none()
    page = Paginator(older, PAGE_SIZE).get_page(request.GET.get("page"))
    for check in [latest, *page.object_list] if latest else []:
        with_labels(check)
    return render(request, "billing/books_checks.html", {"latest": latest, "page": page, "cron": settings.BOOKS_CHECK_CRON})
