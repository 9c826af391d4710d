"""Issue 20 (bulk printing and the counter at page speed): what was cut from a bill's render and
a counter payment must not change what they print.

- The counter replays the account after a payment in memory (``accounts.account_with_payment``)
  instead of reading every record again: it must equal the account read back from the database
  (¶12, ¶13), for partial payments, surcharge, overpayment to credit and two payments a day.
- ``pdf.html_to_fitting_pdf`` starts its density search where the last document of the same
  shape ended: the density it picks must be the roomiest that fits (¶9, ¶12: one page), whatever
  came before, and never roomier than the document was written at: a bill is written dense and
  laid out once."""

from __future__ import annotations

import io
from datetime import date
from decimal import Decimal

import pytest
from pypdf import PdfReader

from billing import accounts, documents, pdf
from billing.models import Bill, Charge
from billing.services import bills, counter
from tests.billing.test_bill_total import addressed, lajas_office  # noqa: F401  (fixtures)
from tests.billing.test_pages import TODAY, district_1, frozen_today, pay  # noqa: F401  (fixtures)
from tests.clock import on_day

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("amounts", [
    ["100.00"],                      # partial: the surcharge of the late July half first (¶12)
    ["100.00", "2500.00"],           # two payments on one day, the second after the first
    ["99999.00"],                    # more than everything owed: the rest to credit
])
def test_the_account_after_a_payment_is_the_one_read_back(district_1, users, monkeypatch, amounts):  # noqa: F811
    seen = []
    real = accounts.account_with_payment

    def checked(account, payment):
        after = real(account, payment)
        seen.append((after, payment))
        return after

    monkeypatch.setattr(counter, "account_with_payment", checked)
    parcel = district_1["P4"]
    for amount in amounts:
        receipt = pay(users, parcel, amount)
        after, payment = seen[-1]
        read = accounts.account_state(parcel=parcel, as_of=TODAY, known_by=None)
        assert payment.key == accounts.payment_key(receipt.payment_id)
        assert after.state == read.state
        assert after.ledger == read.ledger
        assert after.state.total_due == Decimal(receipt.snapshot["total_due_after"])
    assert len(seen) == len(amounts)
    if amounts == ["99999.00"]:
        assert seen[-1][0].state.credit_balance > 0 and seen[-1][0].state.total_due == 0


def _pages_at(html: str) -> dict[str, int]:
    return {density: len(pdf._layout(pdf.with_density(html, density)).pages) for density in pdf.DENSITIES}


class Written:
    """Which density the PDF ``html_to_fitting_pdf`` wrote was laid out at (the layouts it threw
    away are not written)."""

    def __init__(self, monkeypatch) -> None:
        from weasyprint.document import Document

        self.layouts: dict[int, str] = {}
        self.density = None
        real_layout, real_write = pdf._layout, Document.write_pdf

        def layout(html, *args, **kwargs):
            document = real_layout(html, *args, **kwargs)
            self.layouts[id(document)] = pdf._BODY_CLASS.search(html)[0].split('"')[1]
            return document

        def write(document, *args, **kwargs):
            self.density = self.layouts[id(document)]
            return real_write(document, *args, **kwargs)

        monkeypatch.setattr(pdf, "_layout", layout)
        monkeypatch.setattr(Document, "write_pdf", write)

    def __call__(self, html: str) -> str:
        self.layouts.clear()
        self.data = pdf.html_to_fitting_pdf(html)
        return self.density


def _bill_html(district_1, users) -> str:  # noqa: F811
    charge = Charge.objects.filter(parcel=district_1["P4"], number=1).get()
    with on_day(date(2026, 7, 2)):
        bill = bills.bill_issue(acting_user=users["hacienda"], charge=charge)
    bill = Bill.objects.get(pk=bill.pk)
    return documents.bill_html(number=bill.number, snapshot=bill.snapshot, issued_on=bill.issued_on, code="x")


STARTS = (None, *range(len(pdf.DENSITIES)))  # a cold start, then every density a search may start at


def start_search_at(html: str, start: int | None) -> None:
    """Forget where every shape's search starts; with ``start``, start ``html``'s shape there."""
    pdf._fitting_start.clear()
    if start is not None:
        pdf._fitting_start[pdf._shape(html)[0]] = start


def test_the_fitting_search_picks_the_roomiest_density_whatever_came_before(district_1, users, monkeypatch):  # noqa: F811
    """¶12: a document is one page, at the roomiest density that fits. The search's start (the
    last document of its shape) changes how many layouts it takes, never the density it picks: a
    long document after a roomy one, a roomy one after a long one, and each from a cold start. (A
    bill written roomy stands for any document written at the roomiest density, a receipt.)"""
    html = pdf.with_density(_bill_html(district_1, users), "")
    pages = _pages_at(html)
    roomiest = next(density for density in pdf.DENSITIES if pages[density] == 1)
    assert roomiest != ""  # the bill needs a denser setting than roomy
    short = html.split("<h2>", 1)[0] + "<table></table>" * html.split("<h2>", 1)[1].count("<table") + "</body></html>"
    assert pdf._shape(short) == pdf._shape(html)  # the same shape (the envelope first, as many tables), one roomy page
    assert _pages_at(short)[""] == 1
    written = Written(monkeypatch)

    for start in STARTS:
        start_search_at(html, start)
        assert written(html) == roomiest
        assert written(short) == ""  # after the long one: back to roomy
        assert written(html) == roomiest  # after the roomy one
        assert written(html) == roomiest  # after a long one: the density it needed, and the roomier one
        assert len(written.layouts) == 2


def test_a_bill_is_written_dense_and_laid_out_once(district_1, users, monkeypatch):  # noqa: F811
    """Issue 20: every bill needs the dense setting to stay on one page (¶12), so it is written
    dense and laid out once (twice only right after a bill that needed tight); a document is never
    set roomier than it was written, even when a roomier setting would fit."""
    html = _bill_html(district_1, users)
    assert pdf._shape(html)[1] == pdf.DENSITIES.index("dense")
    short = html.split("<h2>", 1)[0] + "</body></html>"
    assert _pages_at(short)[""] == 1
    written = Written(monkeypatch)
    for start in STARTS:
        start_search_at(html, start)
        assert written(html) == "dense"
        tight = pdf.DENSITIES.index("tight")
        assert len(written.layouts) == (2 if start == tight else 1)  # after a tight one, dense is tried too
        assert written(short) == "dense"
        assert len(written.layouts) == 1
    assert len(PdfReader(io.BytesIO(written.data)).pages) == 1


def test_a_bill_that_fits_nowhere_comes_out_tight_and_longer(district_1, users, monkeypatch):  # noqa: F811
    long = _bill_html(district_1, users).replace("</body>", "<p>" + "Línea de relleno. " * 900 + "</p></body>")
    written = Written(monkeypatch)
    for start in STARTS:
        start_search_at(long, start)
        assert written(long) == "tight"
        assert len(PdfReader(io.BytesIO(written.data)).pages) >= 2


def test_an_english_bill_of_a_late_account_is_on_one_page(district_1, staff, lajas_office, addressed, monkeypatch):  # noqa: F811
    """¶12, ¶13: P4's January bill issued in December while July is unpaid, mailed to an
    address, with the office's block, in English, whose sentences run longer: one page, set tight
    if dense is not enough (a late English bill ran to a second page for its last lines)."""
    january = Charge.objects.get(parcel__parcel_id="P4", number=2)
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=january, issued_on=date(2026, 12, 15))
    html = documents.bill_html(number=bill.number, snapshot=bill.snapshot, issued_on=bill.issued_on, code="x" * 60, lang="en")
    assert "delinquent" in html and "Total to pay" in html
    written = Written(monkeypatch)
    assert written(html) in ("dense", "tight")
    assert len(PdfReader(io.BytesIO(written.data)).pages) == 1
