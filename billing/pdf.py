"""PDF documents rendered with WeasyPrint from our own templates only (never user HTML); user
data is escaped by the template engine and only bundled files may be fetched: the static
directory and the Source Sans Pro fonts of the ``font-source-sans-pro`` package (lesson 15).
Rendering never writes to the database: callers store the bytes once (``billing.documents``).

Documents are tagged PDF/UA-1 with a title and a language. They are written in Spanish unless
English is asked for (the owner's *idioma de los documentos*, frozen in the document's snapshot
when it is issued); the template strings go through ``{% translate %}`` under
``translation.override``, so the words follow ``lang`` and not the request that happens to be
active."""

from __future__ import annotations

import atexit
import ctypes
import io
import os
import re
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext as _

# Dates spelled out in full, per language: "1 de julio de 2026" / "1 July 2026".
from .wording import LONG_DATE, long_dates_only  # noqa: E402  (one table of long dates, shared with billing.wording)


class PDFRenderError(Exception):
    """A document did not come out as designed (e.g. a one-page document ran to two pages)."""


PR_SET_PDEATHSIG = 1  # prctl(2)


def die_with_parent(parent: int) -> None:
    """Pool initializer: a rendering process ends when the process that started it dies, even
    by SIGKILL (a killed worker leaves no renderer behind). On Linux the kernel sends SIGKILL
    (prctl PR_SET_PDEATHSIG); elsewhere, and as a backstop, a thread watches the parent."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (AttributeError, OSError):
        pass

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(1.0)
        os._exit(1)

    if os.getppid() != parent:  # the parent died before prctl
        os._exit(1)
    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def static_dir() -> Path:
    return Path(settings.BASE_DIR) / "static"


@cache
def font_dir() -> Path:
    """The TrueType files bundled by the ``font-source-sans-pro`` package."""
    import font_source_sans_pro

    return Path(os.path.dirname(font_source_sans_pro.__file__)).resolve() / "files"


@cache
def _fetcher_class() -> type:
    from weasyprint.urls import URLFetcher

    class LocalOnlyFetcher(URLFetcher):
        """Serves ``data:`` URIs our code built (the QR code) and files under ``roots`` (the
        static directory and the fonts); refuses everything else, and a refusal stops the
        rendering."""

        def __init__(self, roots: tuple[Path, ...]) -> None:
            super().__init__(allowed_protocols=("file", "data"), allow_redirects=False, fail_on_errors=True)
            self.roots = roots

        def fetch(self, url: str, headers: Any = None) -> Any:
            if url.startswith("data:"):
                return super().fetch(url, headers)
            if url.startswith("file://"):
                path = Path(unquote(urlsplit(url).path)).resolve()
                if any(root in path.parents for root in self.roots):
                    return super().fetch(url, headers)
            raise ValueError(f"refused to fetch {url!r} while rendering a PDF")

    return LocalOnlyFetcher


def _fetcher(static_root: str | None = None) -> Any:
    static = Path(static_root) if static_root else static_dir()
    return _fetcher_class()((static.resolve(), font_dir()))


@dataclass(frozen=True)
class RenderSetup:
    """What turning our HTML into PDF needs besides the HTML: the static directory and the shared
    stylesheet (``billing/pdf/document.css``, fonts filled in). Plain strings, so the bulk
    printing job hands it to worker processes that never set Django up."""

    static_root: str
    css: str


@cache
def render_setup() -> RenderSetup:
    return RenderSetup(static_root=str(static_dir()),
                       css=render_to_string("billing/pdf/document.css", {"pdf_font_dir": font_dir().as_uri()}))


_compiled = threading.local()
_all_compiled: list[dict] = []


@atexit.register
def _forget_stylesheets() -> None:
    """Let the font configurations go while WeasyPrint is still loaded (not at interpreter teardown)."""
    for compiled in _all_compiled:
        compiled.clear()


def _stylesheet(setup: RenderSetup) -> tuple[Any, Any]:
    """The shared stylesheet parsed once per process and thread, with the font configuration that
    holds its ``@font-face`` fonts (WeasyPrint lets documents share both; threads do not share
    them, Pango and fontconfig objects being what they are)."""
    compiled = getattr(_compiled, "sheets", None)
    if compiled is None:
        compiled = _compiled.sheets = {}
        _all_compiled.append(compiled)
    if setup not in compiled:
        from weasyprint import CSS
        from weasyprint.text.fonts import FontConfiguration

        font_config = FontConfiguration()
        css = CSS(string=setup.css, base_url=Path(setup.static_root).as_uri() + "/", url_fetcher=_fetcher(setup.static_root),
                  font_config=font_config)
        compiled[setup] = (css, font_config)
    return compiled[setup]


def _local_only(url: str, timeout: int = 10, ssl_context: Any = None) -> Any:
    """Fetch ``url`` if it is a bundled file or a ``data:`` URI; raise ``ValueError`` otherwise."""
    return _fetcher().fetch(url)


def pdf_language(lang: str | None) -> str:
    """The language code to activate: Spanish (the project's) unless English is asked for."""
    return "en" if (lang or "").lower().startswith("en") else settings.LANGUAGE_CODE


@contextmanager
def document_language(lang: str | None) -> Iterator[str]:
    """Activate the document's language; yields ``es`` or ``en`` (the key of ``LONG_DATE``). An
    English document writes every date in one form, "2 March 2027" (``wording.long_dates_only``)."""
    code = pdf_language(lang)
    with translation.override(code), long_dates_only(code == "en"):
        yield "en" if code == "en" else "es"


def font_context() -> dict[str, str]:
    return {"pdf_font_dir": font_dir().as_uri()}


def html_for(template: str, context: dict[str, Any], *, title: str, lang: str = "es", density: str = "") -> str:
    """The HTML of a document; call it inside ``document_language`` so the words match ``lang``."""
    return render_to_string(template, {
        **context, **font_context(), "pdf_title": title, "pdf_lang": "en" if lang == "en" else "es-PR",
        "long_date": LONG_DATE[lang], "density": density,
    })


def _layout(html: str, setup: RenderSetup | None = None, cache: dict | None = None) -> Any:
    """``html`` laid out in pages. ``cache`` (a dict) lets the layouts of one document at several
    densities decode its images (the QR code) once."""
    from weasyprint import HTML

    setup = setup or render_setup()
    css, font_config = _stylesheet(setup)
    return HTML(string=html, base_url=Path(setup.static_root).as_uri() + "/", url_fetcher=_fetcher(setup.static_root)).render(
        stylesheets=[css], font_config=font_config, pdf_variant="pdf/ua-1", cache=cache)


def html_to_pdf(html: str, *, pages: int | None = None, setup: RenderSetup | None = None) -> bytes:
    """Tagged PDF/UA-1 bytes of ``html`` (one of our templates). With ``pages``, a document that
    does not come out with exactly that many pages is refused. With ``setup`` given it needs
    neither the database nor the settings, so the bulk printing job runs it in worker processes."""
    document = _layout(html, setup)
    if pages is not None and len(document.pages) != pages:
        raise PDFRenderError(f"the document has {len(document.pages)} pages instead of {pages}")
    return document.write_pdf(pdf_variant="pdf/ua-1")


DENSITIES = ("", "compact", "dense", "tight")  # classes of ``<body>`` in billing/pdf/base.html, roomiest first
_BODY_CLASS = re.compile(r'<body class="[^"]*">')


def with_density(html: str, density: str) -> str:
    """``html`` (one of our documents, ``billing/pdf/base.html``) set at ``density``."""
    return _BODY_CLASS.sub(f'<body class="{density}">', html, count=1)


_BODY_START = re.compile(r'<body class="([^"]*)">\s*<(\w+)(?: class="([^"]*)")?')
_fitting_start: dict[str, int] = {}  # a document's shape -> the index in DENSITIES its last one of that shape needed


def _shape(html: str) -> tuple[str, int]:
    """What documents of one kind share (the first element of the body: a bill's envelope, a
    receipt's header; and how many tables: a zero notice has two fewer than a bill), only a guess
    of where to start the density search, never its result; and the density the document was
    written at (``<body class>``), the roomiest it may be set at."""
    match = _BODY_START.search(html)
    if not match:
        return "", 0
    written = DENSITIES.index(match[1]) if match[1] in DENSITIES else 0
    return f"{match[2]}.{match[3]}.{html.count('<table')}", written


def html_to_fitting_pdf(html: str, *, pages: int = 1, setup: RenderSetup | None = None) -> bytes:
    """Render ``html`` at the roomiest density that fits in ``pages`` pages, never roomier than
    the density it was written at (its ``<body class>``: a bill is written dense, see
    ``documents.bill_html``). A document that does not fit even when tight comes out longer
    rather than not at all (a payment is never refused, nor a semester's bulk printing stopped,
    because one document is long). With ``setup`` given it needs neither the database nor the
    settings: the bulk printing job runs it in worker processes.

    A denser setting is never longer, so the search starts at the density the last document of
    the same shape needed (``_shape``): when it fits there, only the next roomier density is tried
    (and the roomier ones after it while they fit); when it does not, the denser ones. The result
    is the one trying every density from the roomiest allowed would give, whatever came before
    (the same bytes whoever renders it, whenever), but a roomy receipt is laid out once and a
    bill, written dense, once. Layouts that do not fit are thrown away: only the chosen one is
    written."""
    shape, roomiest = _shape(html)
    cache: dict = {}  # the QR code decoded once for all the layouts of this document
    index = max(_fitting_start.get(shape, roomiest), roomiest)
    layouts: dict[int, Any] = {}

    def fits(at: int) -> bool:
        if at not in layouts:
            layouts[at] = _layout(with_density(html, DENSITIES[at]), setup, cache)
        return len(layouts[at].pages) <= pages

    if fits(index):
        while index > roomiest and fits(index - 1):
            index -= 1
    else:
        while index < len(DENSITIES) - 1 and not fits(index + 1):
            index += 1
        index = min(index + 1, len(DENSITIES) - 1)
    _fitting_start[shape] = index
    return layouts[index].write_pdf(pdf_variant="pdf/ua-1")


def merge_pdfs(datas: list[bytes], path: str, title: str = "", lang: str = "es-PR") -> int:
    """Write the pages of ``datas`` (PDFs), in order, to the file ``path`` titled ``title``;
    return the page count.
    Needs neither Django nor the database (the bulk printing job runs it in a worker process).
    qpdf (through pikepdf) copies a page in about a millisecond, pypdf took twenty: it was a fifth
    of the bulk printing's time. The merged part is a file for the print shop: its pages keep
    their content, not the bills' structure trees (each bill's own stored PDF stays tagged)."""
    import pikepdf

    with pikepdf.Pdf.new() as merged:
        sources = []
        try:
            for data in datas:
                source = pikepdf.Pdf.open(io.BytesIO(data))
                sources.append(source)
                merged.pages.extend(source.pages)
            if title:
                merged.docinfo["/Title"] = title
            merged.Root.Lang = pikepdf.String(lang)
            merged.save(path, compress_streams=True, object_stream_mode=pikepdf.ObjectStreamMode.generate)
        finally:
            for source in sources:
                source.close()
        return len(merged.pages)


def render_pdf(template: str, context: dict[str, Any], *, title: str, lang: str | None = None,
               pages: int | None = None) -> bytes:
    """Render one of our templates in ``lang`` (Spanish by default)."""
    with document_language(lang) as key:
        html = html_for(template, context, title=str(title), lang=key)
    return html_to_pdf(html, pages=pages)


def qr_data_uri(url: str) -> str:
    """The QR code of ``url`` as a small PNG data URI, drawn without smoothing (``image-rendering:
    pixelated``) so it prints sharp; a PNG is several times quicker to lay out than an SVG path."""
    import segno

    # A fixed mask skips segno's scoring of the eight masks (a third of the time); any mask reads.
    return segno.make(url, error="m", micro=False, mask=0).png_data_uri(scale=3, border=4)


def _debt_context(data: dict[str, Any], *, owing_only: bool) -> dict[str, Any]:
    """A stored statement (``accounts.Statement.to_json()``, as a certificate or seizure step froze
    it) as its table with two totals (``selectors.debt_table``), the signature frozen beside it and
    the surcharge rate of the footnote."""
    from .accounts import Statement, delinquency_parameters
    from .selectors import debt_table
    from .wording import rate_label

    debt = Statement.from_json(data)
    return {
        "table": debt_table(debt, owing_only=owing_only), "officer_name": data.get("officer_name", ""),
        "officer_title": data.get("officer_title", ""), "rate": rate_label(delinquency_parameters(debt.as_of).surcharge_rate),
    }


def render_seizure_notice(*, step: Any, parcel: Any, verify_url: str = "", code: str = "", lang: str | None = None) -> bytes:
    """¶14: a seizure notice (notice of attachment, certificate, auction notice), listing the
    charges with a balance and its two totals, signed, with its QR code; in ``lang`` or else the
    owner's document language frozen in ``step.debt`` at issue (Spanish before it was frozen)."""
    with document_language(lang or step.debt.get("language")) as key:
        title = f"{step.get_kind_display()} {step.number}"
        notes = [_("Procedimiento: el de embargo de las contribuciones sobre la propiedad, que la ley aplica a la contribución de "
                   "riego no pagada (¶14); el plazo para pagar de la notificación es de 30 días.")]
        html = html_for("billing/pdf/seizure_notice.html", {
            "step": step, "parcel": parcel, **_debt_context(step.debt, owing_only=True), "extra_notes": notes,
            "verify_url": verify_url, "verify_code": code, "qr": qr_data_uri(verify_url) if verify_url else "",
        }, title=title, lang=key)
    return html_to_pdf(html)


def render_certificate(*, certificate: Any, lang: str | None = None) -> bytes:
    """¶11: a debt certificate as of its date. An issued certificate is served as stored (the
    bytes written when it was issued, with its verification code); only one without stored
    bytes, from before documents were stored, is rendered from its immutable snapshot."""
    from .models import IssuedDocument

    if lang is None:
        stored = IssuedDocument.objects.filter(certificate_id=certificate.pk).values_list("pdf", "sha256", "number").first()
        if stored is not None:
            from .storage import stored_pdf

            return stored_pdf(stored[0], sha256=stored[1], label=stored[2])
    return render_certificate_pdf(certificate=certificate, lang=lang)


def render_certificate_pdf(*, certificate: Any, verify_url: str = "", code: str = "", lang: str | None = None) -> bytes:
    """¶11: in ``lang`` or else the owner's document language frozen in the snapshot at issue
    (``CertificateSnapshot.language``; Spanish before it was frozen)."""
    data = certificate.snapshot
    with document_language(lang or data.get("language")) as key:
        title = _("Certificación de deuda %(n)s") % {"n": certificate.number}
        html = html_for("billing/pdf/certificate.html", {
            "certificate": certificate, "data": data, **_debt_context(data, owing_only=False), "verify_url": verify_url,
            "verify_code": code,
            "qr": qr_data_uri(verify_url) if verify_url else "",
        }, title=title, lang=key)
    return html_to_pdf(html)


def render_stamp(*, text: str, mark: str = "", lang: str | None = None) -> bytes:
    """A one-page letter PDF holding only ``text`` as a band and ``mark`` (COPIA, ANULADO) across
    the page, to lay over an issued document."""
    with document_language(lang) as key:
        html = html_for("billing/pdf/stamp.html", {"stamp_text": text, "mark": mark or _("COPIA")}, title=text, lang=key)
    from weasyprint import HTML

    return HTML(string=html, base_url=static_dir().as_uri() + "/", url_fetcher=_fetcher()).write_pdf()
