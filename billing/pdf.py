"""PDF documents rendered with WeasyPrint from our own templates only (never user HTML); user
data is escaped by the template engine and only bundled static files may be fetched.
Rendering never writes to the database: callers store the bytes once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.template.loader import render_to_string

STATIC_DIR = Path(settings.BASE_DIR) / "static"


def _local_only(url: str, timeout: int = 10, ssl_context: Any = None) -> dict:
    """WeasyPrint URL fetcher that serves bundled static files and refuses everything else."""
    from weasyprint import default_url_fetcher

    if url.startswith("file://"):
        path = Path(url[len("file://"):]).resolve()
        if STATIC_DIR.resolve() in path.parents:
            return default_url_fetcher(url, timeout=timeout, ssl_context=ssl_context)
    raise ValueError(f"refused to fetch {url!r} while rendering a PDF")


def render_pdf(template: str, context: dict[str, Any], *, title: str, lang: str = "es") -> bytes:
    from weasyprint import HTML

    html = render_to_string(template, {**context, "pdf_title": title, "pdf_lang": lang})
    document = HTML(string=html, base_url=STATIC_DIR.as_uri() + "/", url_fetcher=_local_only)
    return document.write_pdf(pdf_variant="pdf/ua-1", metadata=True)


def render_seizure_notice(*, step: Any, parcel: Any) -> bytes:
    """¶14: a seizure notice (notice of attachment, certificate, auction notice)."""
    return render_pdf("billing/pdf/seizure_notice.html", {"step": step, "parcel": parcel, "debt": step.debt},
                      title=f"{step.get_kind_display()} {step.number}")


def render_certificate(*, certificate: Any) -> bytes:
    """¶11: a debt certificate as of its date."""
    return render_pdf("billing/pdf/certificate.html", {"certificate": certificate, "data": certificate.snapshot},
                      title=f"Certificación de deuda {certificate.number}")
