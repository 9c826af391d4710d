"""Both languages all the way (issue 12): every page of the axe sweep
(tests/browser/test_accessibility.py) and every document kind (receipt, bill, debt certificate,
seizure notice, read back with pdfplumber) is read in English and in Spanish. English text holds
no Spanish month or day name, no "plazo" and no "d de Month de Y" date; Spanish text holds no
English month or day name. Charge names stored in Spanish ("2026-2027 plazo 1 (julio)") are
rendered in the reader's language from the charge's fields (``billing.wording.charge_label``)."""

from __future__ import annotations

import html as html_lib
import io
import re
from datetime import date
from decimal import Decimal

import pdfplumber
import pytest
from django.contrib.auth import get_user_model
from django.utils import translation

from billing import documents, pdf, wording
from billing.models import BooksCheck, Charge, IssuedDocument
from billing.services import bills, books_checks, collection, counter
from billing.services.corrections import roll_correction_create
from levy.models import RollLine
from parcels.models import Owner, Parcel
from parcels.services import user_create
from tests.browser.test_accessibility import pages
from tests.browser.test_journeys import PASSWORD, _finalized_district
from tests.clock import on_day

SPANISH_MONTHS = "enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre noviembre diciembre".split()
SPANISH_DAYS = "lunes martes miércoles jueves viernes sábado domingo".split()
ENGLISH_MONTHS = "January February March April May June July August September October November December".split()
ENGLISH_DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
# Spanish in an English text: a month or day name, "plazo", or a Spanish date pattern whatever
# language its month is in ("2 de March de 2027", "1 de julio").
SPANISH_IN_ENGLISH = re.compile(
    r"\b(?:" + "|".join(SPANISH_MONTHS + SPANISH_DAYS) + r"|plazos?|descendente)\b|\b\d{1,2} de [A-Za-zé]+(?: de \d{4})?\b", re.IGNORECASE,
)
# English in a Spanish text: a month or day name (always capitalized in English; "May" alone is
# not a Spanish word), or an English date pattern ("March 2, 2027").
ENGLISH_IN_SPANISH = re.compile(r"\b(?:" + "|".join(ENGLISH_MONTHS + ENGLISH_DAYS) + r")\b")
# English dates are written one way, day first: "2 March 2027", "1 July" (issue 18); never month
# first ("March 2, 2027", "July 1").
MONTH_FIRST = re.compile(r"(?<!\d )\b(?:" + "|".join(ENGLISH_MONTHS) + r") \d{1,2}\b")  # not "1 January 2 March" (two cells)

CORRECTION_REASON = "Cabida medida de nuevo"


def visible_text(page_html: str) -> str:
    """What a reader sees: the body without scripts, styles and tags, entities decoded."""
    body = page_html.split("<body", 1)[-1]
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.DOTALL | re.IGNORECASE)
    # as typed, never translated: a law's citation typed by staff (``translate="no"``, one element deep)
    body = re.sub(r"<(\w+)\b[^>]*\btranslate=\"no\"[^>]*>.*?</\1>", " ", body, flags=re.DOTALL)
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", body)))


def pdf_text(data: bytes) -> str:
    with pdfplumber.open(io.BytesIO(data)) as document:
        return re.sub(r"\s+", " ", " ".join(page.extract_text() or "" for page in document.pages))


def wrong_language(text: str, language: str) -> list[str]:
    """The words of ``text`` that belong to the other language, with a little context."""
    patterns = (SPANISH_IN_ENGLISH, MONTH_FIRST) if language == "en" else (ENGLISH_IN_SPANISH,)
    return [text[max(0, m.start() - 40): m.end() + 40] for pattern in patterns for m in pattern.finditer(text)]


def test_the_patterns_catch_what_they_are_meant_to_catch():
    """The sweep below cannot pass for patterns that find nothing."""
    assert wrong_language("Pay by 2 de March de 2027.", "en")
    assert wrong_language("2026-2027 plazo 1 (julio)", "en")
    assert wrong_language("Issued on miércoles", "en")
    assert not wrong_language("2026-2027 installment 1 (July), due 1 July 2026 · 01/07/2026", "en")
    assert wrong_language("due July 1, 2026", "en") and wrong_language("on July 1 and January 1", "en")
    assert not wrong_language("due 1 January 2 March 2027 not yet due", "en")  # two table cells, each day first
    assert wrong_language("vence el 1 de July de 2026", "es")
    assert wrong_language("el lunes, Monday", "es")
    assert not wrong_language("2026-2027 plazo 1 (julio), vence el 1 de julio de 2026 · Mayagüez", "es")


@pytest.mark.django_db
def test_charge_labels_are_rendered_in_the_readers_language(system_user):
    cases = [
        (dict(kind="installment", fiscal_year="2026-2027", number=1, description="2026-2027 plazo 1 (julio)"),
         "2026-2027 plazo 1 (julio)", "2026-2027 installment 1 (July)"),
        (dict(kind="installment", fiscal_year="2026-2027", number=2, description="2026-2027 plazo 2 (enero)"),
         "2026-2027 plazo 2 (enero)", "2026-2027 installment 2 (January)"),
        # the facts of a name are stored fields (billing.models.charge_names), never read from the description
        (dict(kind="correction", fiscal_year="2026-2027", number=1, correction=3, description="texto guardado"),
         "Corrección n.º 3 del padrón 2026-2027 (¶9): plazo 1 (julio)",
         "Correction no. 3 of the 2026-2027 roll (¶9): installment 1 (July)"),
        (dict(kind="correction", fiscal_year="2026-2027", reason="cabida medida de nuevo", description="texto guardado"),
         "Corrección 2026-2027: cabida medida de nuevo", "Correction 2026-2027: cabida medida de nuevo"),
        # a line frozen before its facts were: the stored Spanish name in Spanish, its fields' name in English
        (dict(kind="correction", fiscal_year="2026-2027", number=2, description="Corrección n.º 1 del padrón 2026-2027 (¶9): plazo 2 (enero)"),
         "Corrección n.º 1 del padrón 2026-2027 (¶9): plazo 2 (enero)", "Supplementary correction 2026-2027: installment 2 (January)"),
        (dict(kind="correction", fiscal_year="2026-2027", description=""), "Corrección suplementaria 2026-2027",
         "Supplementary correction 2026-2027"),
        # a water sale of October 2026 is due on 1 November (billing.services.water)
        (dict(kind="water", fiscal_year="2026-2027", due_date="2026-11-01", water_month="2026-10", acre_feet=Decimal("4.000"),
              description="texto guardado"),
         "Agua 10/2026: 4.000 acres-pie (sec. 374a)", "Water 10/2026: 4.000 acre-feet (sec. 374a)"),
        (dict(kind="water", fiscal_year="2026-2027", due_date="2026-11-01", description="Agua 10/2026: 4.00 acres-pie (sec. 374a)"),
         "Agua 10/2026: 4.00 acres-pie (sec. 374a)", "Water 10/2026 (sec. 374a)"),
        (dict(kind="water", fiscal_year="2026-2027", due_date=date(2027, 1, 1), description=""),
         "Agua 12/2026 (sec. 374a)", "Water 12/2026 (sec. 374a)"),
        (dict(kind="refund", fiscal_year="2026-2027", description="Reembolso de crédito"), "Reembolso de crédito", "Credit refund"),
        (dict(kind="", fiscal_year="", description="texto guardado"), "texto guardado", "texto guardado"),
    ]
    for fields, spanish, english in cases:
        with translation.override("es-pr"):
            assert wording.charge_label(**fields) == spanish
        with translation.override("en"):
            assert wording.charge_label(**fields) == english


@pytest.mark.django_db
def test_every_page_and_document_in_each_language_holds_none_of_the_other(client):
    _finalized_district()
    owner = Owner.objects.get(owner_key="OW-1")
    for role in ("collector", "landowner"):
        user_create(username=f"lang_{role}", role=role, password=PASSWORD, owner=owner if role == "landowner" else None)
    users = {user.username: user for user in get_user_model().objects.all()}
    p1 = Parcel.objects.get(parcel_id="P1")
    # a correction raising P1's charge (its own charge, named from its fields), and a payment
    roll_correction_create(acting_user=users["u_hac_a"], roll_line=RollLine.objects.get(parcel=p1), om_charge_delta=Decimal("10.00"),
                           credit_delta=Decimal("0"), reason=CORRECTION_REASON, made_on=date(2026, 7, 5))
    with on_day(date(2026, 7, 10)):
        receipt = counter.payment_record(acting_user=users["lang_collector"], parcel=p1, amount=Decimal("100.00"), paid_on=date(2026, 7, 10))
    # a second correction lowering P1's charge on 20 October: the statement shows its dated entries
    # under the charges it lowered (after the certificate's date below, which stays as it was)
    roll_correction_create(acting_user=users["u_hac_a"], roll_line=RollLine.objects.get(parcel=p1), om_charge_delta=Decimal("-20.00"),
                           credit_delta=Decimal("0"), reason=CORRECTION_REASON, made_on=date(2026, 10, 20))
    # P2's July half paid in full (250 ac × 183.60 $/ac / 2 = 22,950.00): the landowner's home reads
    # "by <its January half's last day>", the line that once read "by 2 de March de 2027"
    with on_day(date(2026, 7, 10)):
        counter.payment_record(acting_user=users["lang_collector"], parcel=Parcel.objects.get(parcel_id="P2"), amount=Decimal("22950.00"), paid_on=date(2026, 7, 10))
    # /auditoria/libros/: a passed nightly check below a failed one (as the axe sweep has them)
    books_checks.books_check_run(acting_user=None, trigger=BooksCheck.Trigger.NIGHTLY)
    books_checks.books_check_run(acting_user=users["lang_collector"], trigger=BooksCheck.Trigger.COMMAND,
                                 expected_totals={"payments": "0 (0)"}, compared_with="lajas-20261201T063000Z.totals.json")
    logins = {"authority": "u_authority", "hacienda": "u_hac_a", "collector": "lang_collector", "landowner": "lang_landowner"}
    found: list[str] = []
    read: dict[str, str] = {}
    for language in ("es-pr", "en"):
        key = "en" if language == "en" else "es"
        for role, urls in pages(p1, owner, receipt.pk).items():
            client.logout()
            client.cookies["django_language"] = language
            if role != "anonymous":
                client.force_login(users[logins[role]])
            for url in urls:
                response = client.get(url)
                assert response.status_code == 200, (role, url, response.status_code)
                text = visible_text(response.content.decode())
                read[f"{key} {role} {url}"] = text
                found += [f"{key} {role} {url}: …{hit}…" for hit in wrong_language(text, key)]
    # the documents, rendered in each language (P4: unpaid, delinquent on 15 October 2026)
    p4 = Parcel.objects.get(parcel_id="P4")
    july = Charge.objects.get(parcel=p4, kind="installment", number=1)
    with on_day(date(2026, 10, 15)):  # issued that day, of that day (a past day reads the books as they stood then)
        bill = bills.bill_issue(acting_user=users["u_hac_a"], charge=july, issued_on=date(2026, 10, 15))
        certificate = collection.certificate_issue(acting_user=users["u_hac_a"], parcel=p1, as_of=date(2026, 10, 15))
        step = collection.seizure_step_issue(acting_user=users["u_hac_a"], parcel=p4, kind="notice", on=date(2026, 10, 15))
    for key in ("es", "en"):
        rendered = {
            "receipt": documents.render_receipt(receipt, lang=key),
            "bill": documents.render_bill(bill, lang=key),
            "certificate": pdf.render_certificate(certificate=certificate, lang=key),
            "seizure notice": pdf.render_seizure_notice(step=step, parcel=p4, lang=key),
        }
        for kind, data in rendered.items():
            text = pdf_text(data)
            read[f"{key} {kind}"] = text
            found += [f"{key} {kind}: …{hit}…" for hit in wrong_language(text, key)]
    # the public verification pages of the stored documents (their QR codes open them)
    for language in ("es-pr", "en"):
        key = "en" if language == "en" else "es"
        client.logout()
        client.cookies["django_language"] = language
        for document in IssuedDocument.objects.order_by("pk"):
            url = f"/verificar/{document.verification_code}/"
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
            text = visible_text(response.content.decode())
            read[f"{key} verify {document.kind}"] = text
            found += [f"{key} verify {document.kind}: …{hit}…" for hit in wrong_language(text, key)]
    assert not found, "\n".join(found)
    # the names of the charges were read, in each language (the sweep read real content)
    statement = f"/colecturia/predio/{p1.pk}/estado/"
    assert "2026-2027 plazo 1 (julio)" in read[f"es collector {statement}"]
    assert "2026-2027 installment 1 (July)" in read[f"en collector {statement}"]
    assert "Correction no. 1 of the 2026-2027 roll (¶9): installment 1 (July)" in read[f"en landowner {statement}"]
    assert "Entries that changed this charge Correction no. 2 of the 2026-2027 roll (¶9), 20/10/2026: −$" in read[f"en landowner {statement}"]
    assert "Entradas que cambiaron este cargo Corrección n.º 2 del padrón 2026-2027 (¶9), 20/10/2026: −$" in read[f"es collector {statement}"]
    # (a PDF's narrow table cell wraps the name over lines read between the other columns' text)
    for document in ("en certificate", "en seizure notice"):
        assert "installment" in read[document] and "(July)" in read[document], document
    assert "Correction" in read["en certificate"]
    assert "½% × 2 months on $6,930.90" in read["en seizure notice"]
    # new snapshots freeze the surcharge's basis as structured runs (¶12: 9,080.00 × ½% × 2 months = 90.80)
    assert certificate.snapshot["installments"][0]["surcharge_runs"] == [[2, "0.0050", "9080.00"]]
    # issued while the test's last request left English active: still worded in Spanish from its fields
    assert "2026-2027 plazo 1" in read["es certificate"] and "½% × 2 meses sobre $9,080.00" in read["es certificate"]
    assert "first semester (July)" in read["en receipt"]
    assert "2026-2027 installment 1 (July)" in read["en verify receipt"]
    assert "2026-2027 plazo 1 (julio)" in read["es verify receipt"]
    assert "$22,950.00 by 2 March 2027" in read["en landowner /"]
    assert "$22,950.00 a más tardar el 2 de marzo de 2027" in read["es landowner /"]
    assert "de julio de 2026" in read["es bill"] and "1 July 2026" in read["en bill"]


@pytest.mark.django_db
def test_a_water_sale_billed_in_an_english_session_is_stored_in_spanish_and_read_in_each_language(make_parcel, owner_a, make_user):
    """The stored description stays the Spanish fallback whatever the session's language; each
    reader sees the charge named in theirs. 3 acre-feet delivered 14 September 2026 (inside the
    first 12 months of water since 15 September 2025: the first-year rate), billed for 09/2026."""
    from billing.services import water

    authority = make_user("aut_lang", "authority")
    parcel = make_parcel("M1", owner_a, gravity="6", pumped="4", inclusion="trial", water_since=date(2025, 9, 15))
    water.water_delivery_record(acting_user=authority, parcel=parcel, delivered_on=date(2026, 9, 14), acre_feet=Decimal("3"),
                                land="pumped")
    with translation.override("en"):
        assert water.water_charges_issue(acting_user=authority, year=2026, month=9) == 1
    charge = Charge.objects.get(parcel=parcel, kind="water")
    assert charge.description == "Agua 09/2026: 3.000 acres-pie (sec. 374a)"
    assert charge.due_date == date(2026, 10, 1)
    with translation.override("en"):
        assert charge.label == "Water 09/2026: 3.000 acre-feet (sec. 374a)"
    with translation.override("es-pr"):
        assert charge.label == "Agua 09/2026: 3.000 acres-pie (sec. 374a)"
