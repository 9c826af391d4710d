"""The bill (*aviso*, ¶12, ¶13) read back from its stored PDF: one *Total a pagar* (what is due
on the bill's date plus this installment if not yet due) and the last day it holds, its
breakdown, the owner's mailing address inside the #10 envelope's window area, the Collector's
office (address, phone, hours, ways to pay) and the owner's language."""

from __future__ import annotations

import io
import re
from datetime import date
from decimal import Decimal

import pdfplumber
import pytest
from django.urls import reverse
from pghistory.models import Events

from billing import documents, pdf, rules
from billing.accounts import _account_state_of
from billing.errors import BillingError
from billing.models import Bill, BillBatch, Charge, Office
from billing.services import bills, offices
from parcels.models import Owner, Parcel
from tests.billing import ledger_counter

INCH = 72  # PDF points per inch
# The window area on the sheet (templates/billing/pdf/bill.html): 7/8"–4 3/8" from the left edge,
# 2"–3 1/8" from the top.
WINDOW = (0.875 * INCH, 2.0 * INCH, 4.375 * INCH, 3.125 * INCH)


PANEL_BOTTOM = (13 + 69) / 25.4 * INCH  # the envelope panel: the page's top margin and the panel's height
SIDE_LEFT = (15 + 98) / 25.4 * INCH  # the panel's right column (title, numbers, Total a pagar)


def text_of(data: bytes) -> str:
    """The page's words in reading order: the panel's left column (return address, window), its
    right column, then the rest of the page; whitespace flattened."""
    with pdfplumber.open(io.BytesIO(data)) as document:
        assert len(document.pages) == 1
        page = document.pages[0]
        parts = [page.within_bbox((0, 0, SIDE_LEFT, PANEL_BOTTOM)), page.within_bbox((SIDE_LEFT, 0, page.width, PANEL_BOTTOM)),
                 page.within_bbox((0, PANEL_BOTTOM, page.width, page.height))]
        return re.sub(r"\s+", " ", " ".join(part.extract_text() for part in parts))


@pytest.fixture
def lajas_office(db):
    office = Office.objects.get(code="LAJ")
    office.address_line1, office.town, office.zip_code = "Calle Principal 12", "Lajas", "00667"
    office.phone, office.on_bills = "(787) 555-0100", True
    office.hours_es, office.hours_en = "Lunes a viernes, 8:00 a. m. a 4:30 p. m.", "Monday to Friday, 8:00 a.m. to 4:30 p.m."
    office.ways_to_pay_es, office.ways_to_pay_en = "Efectivo, cheque o giro.", "Cash, check or money order."
    office.save()
    return office


@pytest.fixture
def addressed(owner_a):
    owner_a.address_line1, owner_a.address_line2 = "HC 1 Box 123", "Bo. Palmarejo"
    owner_a.address_town, owner_a.address_zip = "Lajas", "00667-1234"
    owner_a.save()
    return owner_a


# --- the rule (pure) ----------------------------------------------------------------------------

D = Decimal


CHARGES = [rules.ChargeRecord(key="C1", principal=D("100.00"), due=date(2026, 7, 1), last_day=date(2026, 8, 31)),
           rules.ChargeRecord(key="C2", principal=D("100.00"), due=date(2027, 1, 1), last_day=date(2027, 3, 2))]


def account(on: date, *, july_paid: bool = False, payments=()) -> rules.AccountState:
    """Two installments of 100.00: July (due 2026-07-01, last day 2026-08-31) and January (due
    2027-01-01, last day 2027-03-02); July paid on 2026-07-10 when asked. The account the bill
    reads: the ledger (payments stored as the counter stores them) in the shape pages read."""
    if july_paid:
        payments = [ledger_counter.Paid(key="P1", paid_on=date(2026, 7, 10), amount=D("100.00"))]
    state, stored = ledger_counter.account(charges=CHARGES, payments=payments, as_of=on)
    return _account_state_of(state, stored)


@pytest.mark.parametrize(("on", "key", "july_paid", "amount", "through", "owed"), [
    # A July bill on its due date, nothing else owed: the installment, until its last day.
    (date(2026, 7, 1), "C1", False, "100.00", date(2026, 8, 31), ("C1",)),
    # A July bill issued before it is due: the same.
    (date(2026, 6, 30), "C1", False, "100.00", date(2026, 8, 31), ("C1",)),
    # The finding's case: a January bill in December while July is overdue (4 periods begun:
    # 100.00 + 4 × 0.50); July's fifth period begins 2027-01-01, so the amount holds to 2026-12-31.
    (date(2026, 12, 15), "C2", False, "202.00", date(2026, 12, 31), ("C1", "C2")),
    # On January 1 itself, five periods: 102.50 + 100.00, through the day before 2027-02-01.
    (date(2027, 1, 1), "C2", False, "202.50", date(2027, 1, 31), ("C1", "C2")),
    # July paid: only January, until its own last day.
    (date(2026, 12, 15), "C2", True, "100.00", date(2027, 3, 2), ("C2",)),
    # The billed installment itself delinquent (2 periods: 101.00), until its third period.
    (date(2026, 10, 15), "C1", False, "101.00", date(2026, 10, 31), ("C1",)),
])
def test_amount_to_pay_and_the_last_day_it_holds(on, key, july_paid, amount, through, owed):
    to_pay = rules.amount_to_pay(account=account(on, july_paid=july_paid), charge_key=key)
    assert to_pay == rules.AmountToPay(amount=D(amount), valid_through=through, owed_keys=owed)


def test_the_day_after_the_amount_expires_it_no_longer_pays_everything():
    """Paying the amount on its last day leaves nothing due; a day later it falls short."""
    to_pay = rules.amount_to_pay(account=account(date(2026, 12, 15)), charge_key="C2")
    for day, left in ((to_pay.valid_through, D("0.00")), (date(2027, 1, 1), D("0.50"))):
        paid = account(day, payments=[ledger_counter.Paid(key="P", paid_on=day, amount=to_pay.amount)])
        assert paid.total_balance == left


# --- the bill as printed --------------------------------------------------------------------------


def words_in(data: bytes, box: tuple[float, float, float, float]) -> list[str]:
    with pdfplumber.open(io.BytesIO(data)) as document:
        page = document.pages[0]
        x0, top, x1, bottom = box
        return [w["text"] for w in page.extract_words() if w["x0"] >= x0 and w["x1"] <= x1 and w["top"] >= top
                and w["bottom"] <= bottom]


def largest_words(data: bytes) -> list[str]:
    with pdfplumber.open(io.BytesIO(data)) as document:
        words = document.pages[0].extract_words(extra_attrs=["size"])
    biggest = max(w["size"] for w in words)
    return [w["text"] for w in words if w["size"] == biggest]


@pytest.mark.django_db
def test_a_january_bill_with_july_overdue_asks_for_both(district_1, staff, lajas_office, addressed):
    """The finding: P4's January bill printed in December while July is unpaid. July: 6,930.90 +
    ½% × 4 months (Sep 1, Oct 1, Nov 1, Dec 1) = 138.62 → 7,069.52; January 6,930.90, not yet due;
    total 14,000.42, valid until the day before July's fifth period (2027-01-01)."""
    january = Charge.objects.get(parcel__parcel_id="P4", number=2)
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=january, issued_on=date(2026, 12, 15))
    data = bytes(bill.document.pdf)
    text = text_of(data)
    assert largest_words(data) == ["$14,000.42"]
    assert "Total a pagar $14,000.42 Pague $14,000.42 a más tardar el 31 de diciembre de 2026." in text
    assert "Plazo 1 del año fiscal 2026-2027 — moroso 01/07/2026 $6,930.90 $138.62 $7,069.52 ½% × 4 meses sobre $6,930.90" in text
    assert "Plazo 2 del año fiscal 2026-2027 — este aviso 01/01/2027 $6,930.90 $0.00 $6,930.90" in text
    assert "Total a pagar $14,000.42" in text.split("Desglose del total a pagar")[1]
    snap = bill.snapshot
    assert (snap["amount_to_pay"], snap["pay_by"]) == ("14000.42", "2026-12-31")
    assert [(line["number"], line["balance"], line["billed"]) for line in snap["owed"]] == [(1, "7069.52", False), (2, "6930.90", True)]


@pytest.mark.django_db
def test_a_current_july_bill_asks_for_the_installment_until_its_last_day(district_1, staff, lajas_office, addressed):
    july = Charge.objects.get(parcel__parcel_id="P4", number=1)
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=july, issued_on=date(2026, 7, 1))
    data = bytes(bill.document.pdf)
    text = text_of(data)
    assert largest_words(data) == ["$6,930.90"]
    # 2026-07-01 + 60 days is Sunday 2026-08-30, so the last day moves to Monday the 31st (¶12).
    assert "Total a pagar $6,930.90 Pague $6,930.90 a más tardar el 31 de agosto de 2026." in text
    assert "— moroso" not in text and bill.snapshot["pay_by"] == "2026-08-31"


@pytest.mark.django_db
def test_the_mailing_address_lies_in_the_window_and_the_office_is_printed(district_1, staff, lajas_office, addressed):
    july = Charge.objects.get(parcel__parcel_id="P4", number=1)
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=july, issued_on=date(2026, 7, 1))
    data = bytes(bill.document.pdf)
    block = ["CARMEN IRIZARRY VELEZ", "HC 1 BOX 123", "BO PALMAREJO", "LAJAS PR 00667-1234"]
    assert bill.snapshot["mailing_block"] == block
    assert words_in(data, WINDOW) == " ".join(block).split()  # the address, and nothing else, in the window
    text = text_of(data)
    assert "COLECTURIA DE LAJAS CALLE PRINCIPAL 12 LAJAS PR 00667" in text  # the return address
    assert "Dónde y cómo pagar4: Colecturía de Lajas" in text
    assert "Dirección: CALLE PRINCIPAL 12, LAJAS PR 00667" in text and "Teléfono: (787) 555-0100" in text
    assert "Horario: Lunes a viernes, 8:00 a. m. a 4:30 p. m." in text and "Formas de pago: Efectivo, cheque o giro." in text
    # Today's amount is on the numbered estado de cuenta, which the bill points to (no account needed).
    assert "Sin crear cuenta: lo que debe hoy, y un estado de cuenta numerado si lo pide, en " in text
    open("/tmp/bill.pdf", "wb").write(data)
    assert "cuanto-" in text and "debo/ con el mismo número y código." in text  # the URL wraps beside the QR code
    # Frozen: the owner moves and the office changes its phone; the bill does not.
    addressed.address_line1 = "Calle 5 #20"
    addressed.save()
    lajas_office.phone = "(787) 555-0199"
    lajas_office.save()
    again = text_of(documents.render_bill(bill))
    assert "HC 1 BOX 123" in again and "(787) 555-0100" in again and "CALLE 5" not in again and "0199" not in again


@pytest.mark.django_db
def test_an_english_owner_gets_the_bill_in_english_on_demand_and_in_bulk(district_1, staff, lajas_office, addressed):
    addressed.preferred_language = "en"
    addressed.save()
    july = Charge.objects.get(parcel__parcel_id="P4", number=1)
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=july, issued_on=date(2026, 7, 1))
    text = text_of(bytes(bill.document.pdf))
    assert "Total to pay $6,930.90 Pay $6,930.90 by 31 August 2026." in text
    assert "Where and how to pay4: Colecturía de Lajas" in text
    assert "Hours: Monday to Friday, 8:00 a.m. to 4:30 p.m." in text and "Ways to pay: Cash, check or money order." in text
    assert "Aviso de contribución" not in text and "agosto" not in text and bill.snapshot["language"] == "en"
    batch = BillBatch.objects.create(fiscal_year=july.fiscal_year, number=2, filters={"parcel_ids": ["P4", "P1"]},
                                     created_by=staff["hacienda"])
    Owner.objects.create(owner_key="OWN-S", name="Ana Ruiz")  # Spanish by default
    Parcel.objects.filter(parcel_id="P1").update(owner=Owner.objects.get(owner_key="OWN-S"))
    assert bills.bill_batch_number(batch=batch, issued_on=date(2026, 12, 15)) == 2
    assert bills.bill_documents_render(bill_ids=list(batch.bills.values_list("pk", flat=True)),
                                       render_many=lambda htmls: [pdf.html_to_fitting_pdf(html) for html in htmls]) == 2
    printed = {b.parcel.parcel_id: text_of(bytes(b.document.pdf)) for b in Bill.objects.filter(batch=batch).select_related("parcel")}
    assert "Total to pay" in printed["P4"] and "Total a pagar" not in printed["P4"]
    assert "Total a pagar" in printed["P1"] and "Total to pay" not in printed["P1"]


@pytest.mark.django_db
def test_a_bill_frozen_before_the_total_to_pay_still_renders_as_it_did(district_1, staff):
    july = Charge.objects.get(parcel__parcel_id="P4", number=1)
    bill = bills.bill_issue(acting_user=staff["hacienda"], charge=july, issued_on=date(2026, 10, 15))
    old = {key: value for key, value in bill.snapshot.items()
           if key not in ("amount_to_pay", "pay_by", "owed", "mailing_block", "language", "office")}
    text = text_of(pdf.html_to_fitting_pdf(documents.bill_html(number=bill.number, snapshot=old, issued_on=bill.issued_on, code="")))
    assert "Total a pagar" not in text and "Desglose" not in text
    assert "Balance del plazo al 15 de octubre de 2026 $7,000.21" in text and "CARMEN IRIZARRY VÉLEZ" not in text


# --- the office's details, edited by staff ----------------------------------------------------------


@pytest.mark.django_db
def test_hacienda_edits_the_office_with_validation_and_history(client, staff):
    office = Office.objects.get(code="LAJ")
    assert office.on_bills and office.return_block() == ("COLECTURIA DE LAJAS", "CALLE PRINCIPAL", "LAJAS PR 00667")  # seeded
    url = reverse("collections:office-edit", kwargs={"code": "LAJ"})
    client.force_login(staff["collector"])
    assert client.get(url).status_code == 403
    client.force_login(staff["supervisor"])
    data = {"name": "Colecturía de Lajas", "address_line1": "Calle Principal 12", "address_line2": "", "town": "Lajas",
            "zip_code": "01234", "phone": "899", "hours_es": "Lunes a viernes", "hours_en": "", "ways_to_pay_es": "",
            "ways_to_pay_en": "", "on_bills": "on"}
    page = client.post(url, data)
    assert page.status_code == 200
    errors = page.context["form"].errors
    assert "006, 007 o 009" in errors["zip_code"][0] and "código de área" in errors["phone"][0]
    assert client.post(url, {**data, "town": "", "zip_code": "00667", "phone": "(787) 555-0100"}).context["form"].errors == {
        "town": ["Escriba el pueblo."]}
    assert Office.objects.get(code="LAJ").phone == ""  # nothing saved
    response = client.post(url, {**data, "zip_code": "00667-1234", "phone": "(787) 555-0100"})
    assert response.status_code == 302
    office.refresh_from_db()
    assert (office.address_line1, office.zip_code, office.phone) == ("Calle Principal 12", "00667-1234", "(787) 555-0100")
    page = client.get(url).content.decode()
    assert "sup" in page and "(787) 555-0100" in page  # the history names who changed what
    event = Events.objects.tracks(office).order_by("-pgh_created_at").first()
    assert event.pgh_context["username"] == "sup" and event.pgh_diff["phone"] == ["", "(787) 555-0100"]
    # The mark moves: another office on the bills takes it from Lajas.
    other = Office.objects.create(code="CAB", name="Colecturía de Cabo Rojo")
    offices.office_update(acting_user=staff["hacienda"], office=other, on_bills=True)
    assert list(Office.objects.filter(on_bills=True).values_list("code", flat=True)) == ["CAB"]
    with pytest.raises(BillingError):
        offices.office_update(acting_user=staff["collector"], office=other, phone="(787) 555-0101")


@pytest.mark.django_db
def test_supervisors_reach_the_offices_from_the_menu_and_the_audit_names_the_office(client, staff):
    """¶13: supervisors edit what the bills print, so their menu leads there; the audit page names
    the office by its code, as people know it, not by the table's internal id."""
    offices.office_update(acting_user=staff["supervisor"], office=Office.objects.get(code="LAJ"), phone="(787) 555-0100")
    client.force_login(staff["supervisor"])
    home = client.get("/").content.decode()
    assert f'href="{reverse("collections:offices")}"' in home
    client.force_login(staff["collector"])
    assert f'href="{reverse("collections:offices")}"' not in client.get("/").content.decode()
    client.force_login(staff["authority"])
    page = client.get("/auditoria/", {"event": "changes", "what": "billing.OfficeEvent"}).content.decode()
    assert "Cambio · oficina del Colector LAJ" in page
    assert "billing.Office #" not in page
