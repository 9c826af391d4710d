"""Issue 11: the statement shows the dated entries a correction or a closure posted, under the
charge each changed, with the figures of its stored record, in both languages; charge names come
from stored fields (the correction's number, the water deliveries), never from the description.
Worked example 1 (P4 75.5 acres: net 13,861.80, halves 6,930.90; P1 100 acres: halves 9,180.00;
no credits), finalized 2026-06-30: the July half's last day is 2026-08-31, its first surcharge
period begins 2026-09-01 (¶12: ½% a month or fraction)."""

from __future__ import annotations

import io
import re
from datetime import date
from decimal import Decimal

import pdfplumber
import pytest
from django.db.models import Sum
from django.urls import reverse
from django.utils import timezone, translation

from billing import accounts, books, wording
from billing.accounts import Statement, StatementEvent
from billing.models import Charge, IssuedDocument, LedgerEntry
from billing.services import collection, corrections, counter, statements, water
from parcels.models import Parcel
from tests.billing.conftest import billing_cmd
from tests.billing.conftest import statement as cli_statement
from tests.billing.test_ledger_findings import line
from tests.clock import on_day

D = Decimal
pytestmark = pytest.mark.django_db


def lines_of(data: dict) -> dict[tuple[str, int], dict]:
    return {(item["kind"], item["number"]): item for item in data["installments"] + data["other_charges"]}


def events_of(item: dict) -> list[tuple]:
    return [(e["kind"], e["entry_date"], e["source"], e["principal"], e["surcharge"], e["correction"], e["roll"])
            for e in item["events"]]


def pdf_text(data: bytes) -> str:
    with pdfplumber.open(io.BytesIO(data)) as document:
        return re.sub(r"\s+", " ", " ".join(page.extract_text() or "" for page in document.pages))


def page_text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def lower_p4_after_its_july_half_was_paid(staff) -> None:
    """Finding 2's figures: 7,000.21 paid on 15/10/2026 = July's 6,930.90 + ½% × 2 months (Sep 1,
    Oct 1) × 6,930.90 = 69.31 of surcharge; on 01/11/2026 correction n.º 1 takes 1,861.80 off
    the O&M charge: each half falls 930.90 to 6,000.00."""
    p4 = Parcel.objects.get(parcel_id="P4")
    with on_day(date(2026, 10, 15)):
        counter.payment_record(acting_user=staff["collector"], parcel=p4, amount=D("7000.21"), paid_on=date(2026, 10, 15))
    with on_day(date(2026, 11, 1)):
        corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line("P4"), om_charge_delta=D("-1861.80"),
                                           reason="Área corregida", made_on=date(2026, 11, 1))


def test_a_fall_after_a_payment_shows_the_lowering_the_give_back_and_the_credit_applied(district_1, staff):
    lower_p4_after_its_july_half_was_paid(staff)
    p4 = Parcel.objects.get(parcel_id="P4")
    data = accounts.statement(parcel=p4, as_of=date(2026, 11, 1)).to_json()
    july, january = lines_of(data)[("installment", 1)], lines_of(data)[("installment", 2)]
    # July: surcharge for the same two periods on 6,000.00 is 60.00, not 69.31: 9.31 recalculated
    # away and given back (it had been paid), with the 930.90 of principal paid beyond 6,000.00
    assert events_of(july) == [
        ("lowered", "2026-11-01", "correction", "930.90", "9.31", 1, "2026-2027"),
        ("given_back", "2026-11-01", "correction", "930.90", "9.31", 1, "2026-2027"),
    ]
    assert (july["principal"], july["surcharge"], july["paid"], july["balance"]) == ("6000.00", "60.00", "6060.00", "0.00")
    # January: not due, no surcharge to recalculate; the 9.31 + 930.90 = 940.21 freed goes to it
    assert events_of(january) == [
        ("lowered", "2026-11-01", "correction", "930.90", "0.00", 1, "2026-2027"),
        ("credit_applied", "2026-11-01", "correction", "940.21", "0.00", 1, "2026-2027"),
    ]
    assert (january["principal"], january["paid"], january["balance"]) == ("6000.00", "940.21", "5059.79")
    assert [e["text"] for e in july["events"] + january["events"]] == [
        "Corrección n.º 1 del padrón 2026-2027 (¶9), 01/11/2026: −$930.90; recargo recalculado: −$9.31",
        "Recargo devuelto por la corrección n.º 1 del padrón 2026-2027, 01/11/2026: $9.31; "
        "principal liberado al crédito: $930.90",
        "Corrección n.º 1 del padrón 2026-2027 (¶9), 01/11/2026: −$930.90",
        "Crédito aplicado de la corrección n.º 1 del padrón 2026-2027, 01/11/2026: $940.21",
    ]
    # exactly the ledger's entries: two lowerings of 930.90 (its CORRECTION credits) and the 9.31
    # given back (its GIVE_BACK credit); 13,861.80 − 7,000.21 + 69.31 − 1,861.80 − 9.31 = 5,059.79
    ledger = LedgerEntry.objects.filter(parcel=p4)
    assert ledger.filter(kind="correction").aggregate(s=Sum("credit"))["s"] == D("1861.80")
    assert ledger.filter(kind="give_back").aggregate(s=Sum("credit"))["s"] == D("9.31")
    assert accounts.ledger_balance(p4) == D("5059.79") == D(january["balance"])
    # the recalculated surcharge is the surcharge without the lowering less the surcharge with it
    before = accounts.statement(parcel=p4, as_of=date(2026, 10, 31)).lines[0]
    assert (before.surcharge, before.events) == (D("69.31"), ())
    # in English, from the same stored figures
    with translation.override("en"):
        texts = [event.text for statement_line in Statement.from_json(data).lines for event in statement_line.events]
    assert texts == [
        "Correction no. 1 of the 2026-2027 roll (¶9), 01/11/2026: −$930.90; surcharge recalculated: −$9.31",
        "Surcharge given back by correction no. 1 of the 2026-2027 roll, 01/11/2026: $9.31; "
        "principal released to the credit: $930.90",
        "Correction no. 1 of the 2026-2027 roll (¶9), 01/11/2026: −$930.90",
        "Credit applied from correction no. 1 of the 2026-2027 roll, 01/11/2026: $940.21",
    ]
    # the command line prints the same JSON, and its text form the entries under their charge
    assert cli_statement("P4", "2026-11-01") == data
    code, out, _err = billing_cmd("statement", "--parcel", "P4", "--as-of", "2026-11-01")
    assert code == 0
    assert "\n      Crédito aplicado de la corrección n.º 1 del padrón 2026-2027, 01/11/2026: $940.21\n" in out
    assert books.verify() == []


def test_a_fall_on_an_unpaid_half_recalculates_its_surcharge(district_1, staff):
    """−1,000.00 of O&M charge on 15/10/2026: each half falls 500.00 (July 6,930.90 → 6,430.90).
    Two periods have begun (Sep 1, Oct 1): ½% × 2 × 6,930.90 = 69.31 before, ½% × 2 × 6,430.90 =
    64.31 after: 5.00 recalculated away. Nothing was paid, so nothing is given back or applied."""
    p4 = Parcel.objects.get(parcel_id="P4")
    with on_day(date(2026, 10, 15)):
        corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line("P4"), om_charge_delta=D("-1000.00"),
                                           reason="Área", made_on=date(2026, 10, 15))
    found = accounts.statement(parcel=p4, as_of=date(2026, 10, 15))
    july, january = found.lines
    assert (july.principal, july.surcharge) == (D("6430.90"), D("64.31"))
    assert july.events == (StatementEvent(kind="lowered", entry_date=date(2026, 10, 15), source="correction",
                                          principal=D("500.00"), surcharge=D("5.00"), correction=1, roll="2026-2027"),)
    assert july.events[0].text == "Corrección n.º 1 del padrón 2026-2027 (¶9), 15/10/2026: −$500.00; recargo recalculado: −$5.00"
    assert [e.text for e in january.events] == ["Corrección n.º 1 del padrón 2026-2027 (¶9), 15/10/2026: −$500.00"]
    # a month later a third period has begun on the lower principal only: ½% × 3 × 500.00 = 7.50
    later = accounts.statement(parcel=p4, as_of=date(2026, 11, 1)).lines[0]
    assert (later.surcharge, later.events[0].surcharge) == (D("96.46"), D("7.50"))  # ½% × 3 × 6,430.90 = 96.4635
    # a statement read back from its JSON is the same statement, entries and all
    assert Statement.from_json(found.to_json()) == found
    assert books.verify() == []


def test_the_entries_show_on_the_landowners_and_the_staffs_page_and_in_the_pdf(client, district_1, staff, make_user,
                                                                              owner_a):
    lower_p4_after_its_july_half_was_paid(staff)
    p4 = Parcel.objects.get(parcel_id="P4")
    url = reverse("billing:statement", args=[p4.pk]) + "?as_of=01/11/2026"
    spanish = "Corrección n.º 1 del padrón 2026-2027 (¶9), 01/11/2026: −$930.90; recargo recalculado: −$9.31"
    english = "Correction no. 1 of the 2026-2027 roll (¶9), 01/11/2026: −$930.90; surcharge recalculated: −$9.31"
    for user in (make_user("carmen", "landowner", owner_a), staff["collector"]):
        client.force_login(user)
        for language, wanted, heading in (("es-pr", spanish, "Entradas que cambiaron este cargo"),
                                          ("en", english, "Entries that changed this charge")):
            client.cookies["django_language"] = language
            response = client.get(url)
            assert response.status_code == 200
            text = page_text(response.content.decode())
            assert wanted in text and heading in text, (user.username, language)
            assert text.count(heading) == 2  # under July and under January, nowhere else
        client.logout()
    issued = statements.statement_issue(parcel=p4, channel="counter", acting_user=staff["collector"], as_of=date(2026, 11, 1))
    assert issued.snapshot["installments"][0]["events"][0]["surcharge"] == "9.31"
    text = pdf_text(bytes(IssuedDocument.objects.get(statement=issued).pdf))
    for wanted in ("−$930.90; recargo recalculado: −$9.31", "Recargo devuelto por la corrección n.º 1 del padrón 2026-2027",
                   "principal liberado al crédito: $930.90", "Crédito aplicado de la corrección n.º 1 del padrón 2026-2027, "
                   "01/11/2026: $940.21"):
        assert wanted in text, wanted
    english_pdf = pdf_text(statements.pdf.html_to_pdf(statements.statement_html(statement=issued, code="", lang="en")))
    assert "Credit applied from correction no. 1 of the 2026-2027 roll, 1 November 2026: $940.21" in english_pdf


def test_a_closure_shows_its_moved_last_day_and_the_surcharge_it_gave_back(district_1, staff):
    """Finding 5's figures: 7,000.21 paid on 01/09/2026, the first delinquent day: 34.65 of
    surcharge (½% × 6,930.90), 34.66 to January; then Aug 31 is recorded closed (a hurricane)."""
    p4 = Parcel.objects.get(parcel_id="P4")
    with on_day(date(2026, 9, 1)):
        counter.payment_record(acting_user=staff["collector"], parcel=p4, amount=D("7000.21"), paid_on=date(2026, 9, 1))
    collection.office_closure_record(acting_user=staff["hacienda"], day=date(2026, 8, 31), reason="Huracán")
    today = timezone.localdate()  # the closure is recorded today, dated entries and all
    july, january = accounts.statement(parcel=p4, as_of=today).lines
    assert [(e.kind, e.surcharge, e.principal, e.closure_day, e.last_day) for e in july.events] == [
        ("last_day_moved", D("0.00"), D("0.00"), date(2026, 8, 31), date(2026, 9, 1)),
        ("given_back", D("34.65"), D("0.00"), date(2026, 8, 31), None),
    ]
    day = today.strftime("%d/%m/%Y")
    assert [e.text for e in july.events] == [
        f"Cierre de oficinas del 31/08/2026 (¶12), {day}: último día para pagar movido al 01/09/2026",
        f"Recargo devuelto por el cierre de oficinas del 31/08/2026, {day}: $34.65",
    ]
    assert [e.text for e in january.events] == [f"Crédito aplicado del cierre de oficinas del 31/08/2026, {day}: $34.65"]
    with translation.override("en"):
        assert july.events[0].text == (f"Office closure of 31/08/2026 (¶12), {day}: last day to pay moved to 01/09/2026")
        assert january.events[0].text == f"Credit applied from the office closure of 31/08/2026, {day}: $34.65"


def test_a_rise_is_named_by_its_correction_number_in_both_languages(district_1, staff, client, make_user, owner_a):
    """A first correction on P2, then one raising P1's O&M charge by 120.00 (60.00 a half) on
    01/11/2026: P1's is correction n.º 2 of the 2026-2027 roll, read from levy.RollCorrection."""
    with on_day(date(2026, 10, 1)):
        corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line("P2"), om_charge_delta=D("-10.00"),
                                           reason="Área", made_on=date(2026, 10, 1))
    with on_day(date(2026, 11, 1)):
        corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line("P1"), om_charge_delta=D("120.00"),
                                           reason="Área mal medida", made_on=date(2026, 11, 1))
    p1 = Parcel.objects.get(parcel_id="P1")
    data = accounts.statement(parcel=p1, as_of=date(2026, 11, 1)).to_json()
    raised = lines_of(data)[("correction", 1)], lines_of(data)[("correction", 2)]
    assert [(item["correction"], item["principal"], item["due_date"]) for item in raised] == [
        (2, "60.00", "2026-11-01"), (2, "60.00", "2027-01-01")]
    found = Statement.from_json(data).lines
    named = [item.label for item in found if item.kind == "correction"]
    assert named == ["Corrección n.º 2 del padrón 2026-2027 (¶9): plazo 1 (julio)",
                     "Corrección n.º 2 del padrón 2026-2027 (¶9): plazo 2 (enero)"]
    with translation.override("en"):
        assert [item.label for item in found if item.kind == "correction"] == [
            "Correction no. 2 of the 2026-2027 roll (¶9): installment 1 (July)",
            "Correction no. 2 of the 2026-2027 roll (¶9): installment 2 (January)"]
    # the name is the stored number's, whatever the description says
    for item in raised:
        item["description"] = "texto guardado"
    with translation.override("en"):
        assert wording.line_label(raised[0]) == "Correction no. 2 of the 2026-2027 roll (¶9): installment 1 (July)"
    client.force_login(make_user("carmen", "landowner", owner_a))
    client.cookies["django_language"] = "en"
    text = page_text(client.get(reverse("billing:statement", args=[p1.pk])).content.decode())
    assert "Correction no. 2 of the 2026-2027 roll (¶9): installment 1 (July)" in text
    assert "Corrección n.º" not in text and "plazo" not in text


def test_a_water_sale_is_named_from_its_deliveries(make_parcel, owner_a, make_user, client):
    """1.250 + 1.750 acre-feet delivered in September 2026 (inside the first 12 months of water
    since 15/09/2025: $2.00 an acre-foot): one charge of 3.000 acre-feet, $6.00, for 09/2026."""
    authority = make_user("aut_w", "authority")
    parcel = make_parcel("M1", owner_a, gravity="6", pumped="4", inclusion="trial", water_since=date(2025, 9, 15))
    with on_day(date(2026, 10, 1)):  # recorded when September's deliveries are billed
        for day, feet in ((3, "1.250"), (14, "1.750")):
            water.water_delivery_record(acting_user=authority, parcel=parcel, delivered_on=date(2026, 9, day),
                                        acre_feet=D(feet), land="pumped")
        assert water.water_charges_issue(acting_user=authority, year=2026, month=9) == 1
    charge = Charge.objects.get(parcel=parcel, kind="water")
    assert charge.principal.amount == D("6.00")
    item = accounts.statement(parcel=parcel, as_of=date(2026, 10, 1)).to_json()["other_charges"][0]
    assert (item["water_month"], item["acre_feet"]) == ("2026-09", "3.000")
    item["description"] = "texto guardado"  # the name does not read it
    with translation.override("en"):
        assert wording.line_label(item) == "Water 09/2026: 3.000 acre-feet (sec. 374a)"
        assert Charge.objects.get(pk=charge.pk).label == "Water 09/2026: 3.000 acre-feet (sec. 374a)"
    with translation.override("es-pr"):
        assert wording.line_label(item) == "Agua 09/2026: 3.000 acres-pie (sec. 374a)"
    client.force_login(make_user("carmen", "landowner", owner_a))
    client.cookies["django_language"] = "en"
    text = page_text(client.get(reverse("billing:statement", args=[parcel.pk])).content.decode())
    assert "Water 09/2026: 3.000 acre-feet (sec. 374a)" in text and "acres-pie" not in text


def test_a_statement_stored_before_entries_and_name_facts_reads_as_before():
    """JSON frozen by certificates before this change has neither ``events`` nor the name's facts."""
    old = {"parcel_id": "P4", "as_of": "2026-10-15", "total_due": "7000.21", "total_balance": "13930.21",
           "credit_balance": "0.00", "other_charges": [],
           "installments": [{"fiscal_year": "2026-2027", "number": 1, "kind": "installment", "description": "2026-2027 plazo 1 (julio)",
                             "due_date": "2026-07-01", "last_day_to_pay": "2026-08-31", "principal": "6930.90",
                             "surcharge": "69.31", "surcharge_basis": "½% × 2 meses sobre $6,930.90", "paid": "0.00",
                             "balance": "7000.21"}]}
    (found,) = Statement.from_json(old).lines
    assert (found.events, found.correction, found.acre_feet, found.balance) == ((), None, None, D("7000.21"))
    assert found.to_json()["events"] == []
