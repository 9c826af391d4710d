"""The public verification page of issued documents (no login): a QR code on a receipt, bill
debt certificate or seizure notice opens ``/verificar/<code>/``, which confirms the document's kind, number,
parcel, amounts and status from what was stored when it was issued, and its place in the chain of
its series (``billing.chain``: position, previous and own hash, whether the chain holds). Any other code is "not
recognized" with status 404; the page never says why, so it cannot be used to probe codes. Every page publishes
the public key the books' anchors are signed with (``billing.anchors``), as ``/verificar/clave-publica/`` does alone."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from .. import anchors, chain, documents
from ..models import SeizureStep


def series_title(series: str) -> str:
    """A chain series as a reader names it (issue 18: the page showed "seizure_notice 2026"): "receipt
    LAJ 2026-2027" → "Recibos de la colecturía LAJ, 2026-2027"; "seizure_notice 2026" →
    "Notificación de embargo (plazo de 30 días), 2026"."""
    kind, _space, rest = series.partition(" ")
    if kind.startswith("seizure_") and kind.removeprefix("seizure_") in SeizureStep.Kind.values:
        return f"{SeizureStep.Kind(kind.removeprefix('seizure_')).label}, {rest}"
    if kind == "receipt":
        office, _space, year = rest.partition(" ")
        return _("Recibos de la colecturía %(office)s, %(year)s") % {"office": office, "year": year}
    titles = {chain.BILL: _("Avisos de contribución"), chain.CERTIFICATE: _("Certificaciones de deuda"),
              chain.STATEMENT: _("Estados de cuenta")}
    return f"{titles[kind]}, {rest}" if kind in titles else series


@require_safe
@never_cache
def document(request: HttpRequest, code: str) -> HttpResponse:
    found = documents.verification(code)
    if found is None:
        return render(request, "billing/verify_unknown.html", {"code": code[:80], "anchor_key": anchors.published_key()},
                      status=404)
    document = found["document"]
    kind = {"receipt": chain.RECEIPT, "bill": chain.BILL, "certificate": chain.CERTIFICATE, documents.SEIZURE: chain.SEIZURE,
            "statement": chain.STATEMENT}[document.kind]
    found["chain"] = chain.place(kind, getattr(document, f"{document.kind}_id"))  # its link of the tamper-evident chain
    found["series_title"] = series_title(found["chain"].series) if found["chain"] else ""
    found["anchor_key"] = anchors.published_key()
    return render(request, "billing/verify.html", found)


@require_safe
@never_cache
def public_key(request: HttpRequest) -> HttpResponse:
    """The anchors' public key alone (README "Anchors"), for auditors: its fingerprint and PEM."""
    return render(request, "billing/verify_key.html", {"anchor_key": anchors.published_key()})
