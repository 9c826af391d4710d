"""Bills on demand (issue 12): one *aviso* per installment, issued once by whoever asks first (the
landowner from the portal, the collector at the counter, or bulk printing) and reused by the
others; reprints stamped COPIA. The numbered *estado de cuenta* (``EC-<year>-n``), stored,
chained and verifiable. The public "¿cuánto debo?" with its throttles."""

from __future__ import annotations

import io
from datetime import date

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.html import strip_tags
from pypdf import PdfReader

from billing import accounts, bulk, chain, documents, public
from billing.errors import BillingError
from billing.models import AccountStatement, Bill, Charge, IssuedDocument
from billing.services import bills, statements
from levy.models import ChainLink
from parcels.models import Parcel

pytestmark = pytest.mark.django_db


def pdf_text(data: bytes) -> str:
    return "".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)


def july(code: str) -> Charge:
    return Charge.objects.get(parcel__parcel_id=code, fiscal_year__label="2026-2027", number=1, kind="installment")


def access_code(code: str) -> str:
    parcel = Parcel.objects.select_related("owner").get(parcel_id=code)
    return documents.portal_access_code(parcel.parcel_id, parcel.owner.owner_key)


# --- one aviso per installment -------------------------------------------------------------------


def test_bulk_printing_after_an_on_demand_bill_reuses_it(district_1, staff):
    on_demand, created = bills.bill_get_or_issue(acting_user=staff["collector"], charge=july("P2"))
    assert created and on_demand.batch_id is None and on_demand.number == f"AV-{timezone.localdate().year}-000001"
    batch = bills.bill_batch_start(staff["hacienda"], "2026-2027", 1)
    result = bulk.bill_batch_run(batch=batch, processes=1)
    assert result["bills"] == 5 and result["issued"] == 4  # P2's bill was not issued again
    assert Bill.objects.filter(charge=july("P2")).count() == 1 and Bill.objects.count() == 5
    assert batch.bills.count() == 4 and not batch.bills.filter(charge=july("P2")).exists()
    part = batch.parts.get(index=0)
    assert part.pages == 5
    text = pdf_text(part.pdf.read())
    assert on_demand.number in text  # the batch printed the one on file
    # and on demand afterwards, the bill on file again
    again, created = bills.bill_get_or_issue(acting_user=staff["collector"], charge=july("P2"))
    assert not created and again.pk == on_demand.pk


def test_an_on_demand_request_after_bulk_printing_gets_the_printed_bill(district_1, staff):
    batch = bills.bill_batch_start(staff["hacienda"], "2026-2027", 1, {"parcel_ids": ["P3"]})
    bulk.bill_batch_run(batch=batch, processes=1)
    printed = batch.bills.get()
    got, created = bills.bill_get_or_issue(acting_user=staff["collector"], charge=july("P3"))
    assert not created and got.pk == printed.pk
    with pytest.raises(BillingError, match=printed.number):
        bills.bill_issue(acting_user=staff["hacienda"], charge=july("P3"))
    assert Bill.objects.count() == 1


def test_the_database_refuses_a_second_bill_of_an_installment(district_1, staff):
    first = bills.bill_issue(acting_user=staff["hacienda"], charge=july("P1"))
    with pytest.raises(IntegrityError), transaction.atomic():
        Bill.objects.create(number="AV-2026-999999", charge=first.charge, parcel_id=first.parcel_id, issued_on=first.issued_on,
                            snapshot=first.snapshot, issued_by=staff["hacienda"])


# --- the numbered estado de cuenta ---------------------------------------------------------------


def test_the_estado_de_cuenta_is_numbered_stored_chained_and_reads_back_its_total(district_1, staff):
    p4 = Parcel.objects.get(parcel_id="P4")
    # P4's July half (6,930.90) unpaid on 15/10/2026: ½ % a month for 2 months → 6,930.90 × 1.01 = 7,000.21
    issued = statements.statement_issue(parcel=p4, channel="counter", acting_user=staff["collector"], as_of=date(2026, 10, 15))
    assert issued.number == "EC-2026-000001" and issued.snapshot["total_due"] == "7000.21"
    assert issued.snapshot == accounts.statement(parcel=p4, as_of=date(2026, 10, 15)).to_json()
    document = IssuedDocument.objects.get(statement=issued)
    assert document.kind == "statement" and document.number == "EC-2026-000001"
    text = pdf_text(bytes(document.pdf))
    assert "EC-2026-000001" in text and "7,000.21" in text and "P4" in text
    assert "Carmen" not in text  # no owner name: the public page issues it too
    link = chain.link_of(chain.STATEMENT, issued.pk)
    assert link.series == "statement 2026" and link.position == 1
    second = statements.statement_issue(parcel=p4, channel="public", as_of=date(2026, 10, 15))
    assert second.number == "EC-2026-000002" and second.issued_by is None
    assert ChainLink.objects.filter(series="statement 2026").count() == 2
    # the verification page shows it
    page = documents.verification(document.verification_code)
    facts = dict(page["facts"])
    assert facts["Total adeudado"] == "$7,000.21" and page["status"].valid


def test_only_the_owner_or_the_office_issues_a_statement(district_1, staff, make_user, owner_b):
    p1 = Parcel.objects.get(parcel_id="P1")
    with pytest.raises(BillingError):
        statements.statement_issue(parcel=p1, channel="portal", acting_user=make_user("luis", "landowner", owner_b))
    with pytest.raises(BillingError):
        statements.statement_issue(parcel=p1, channel="counter", acting_user=make_user("aud", "auditor"))
    with pytest.raises(IntegrityError), transaction.atomic():
        AccountStatement.objects.create(number="EC-2026-999999", parcel=p1, as_of=date(2026, 7, 1), snapshot={},
                                        channel="portal", issued_by=None)


# --- the downloads: portal and counter ------------------------------------------------------------


def test_the_landowner_downloads_the_bill_once_then_copies_and_never_anothers(client, district_1, staff, make_user, owner_a,
                                                                             owner_b, make_parcel):
    mine = make_user("carmen", "landowner", owner_a)
    other = make_parcel("LAJ-B9", owner_b)
    client.force_login(mine)
    statement_page = client.get(reverse("billing:statement", args=[Parcel.objects.get(parcel_id="P2").pk])).content.decode()
    url = reverse("portal:installment-bill", args=[july("P2").pk])
    assert f'action="{url}"' in statement_page
    assert client.get(url).status_code == 405
    first = client.post(url)
    assert first.status_code == 200 and first["Content-Type"] == "application/pdf"
    bill = Bill.objects.get(charge=july("P2"))
    assert bill.issued_by == mine and first.content == bytes(bill.document.pdf)
    assert "COPIA" not in pdf_text(first.content)
    second = client.post(url)
    assert "COPIA" in pdf_text(second.content) and Bill.objects.count() == 1
    assert "copia" in second["Content-Disposition"]
    # another owner's parcel: 404, nothing issued
    assert client.post(reverse("portal:statement-pdf", args=[other.pk])).status_code == 404
    assert not AccountStatement.objects.exists()
    home = client.get("/").content.decode()
    assert url in home and reverse("portal:statement-pdf", args=[july("P2").parcel_id]) in home
    pdf = client.post(reverse("portal:statement-pdf", args=[july("P2").parcel_id]))
    issued = AccountStatement.objects.get()
    assert issued.channel == "portal" and issued.issued_by == mine and pdf.content == bytes(issued.document.pdf)


def test_the_collector_downloads_from_the_counter_page(login, district_1, staff):
    client = login(staff["collector"])
    p3 = Parcel.objects.get(parcel_id="P3")
    page = client.get(reverse("billing:counter-parcel", args=[p3.pk])).content.decode()
    url = reverse("portal:installment-bill", args=[july("P3").pk])
    assert f'action="{url}"' in page
    response = client.post(url)
    assert response.status_code == 200 and Bill.objects.get().issued_by == staff["collector"]
    response = client.post(reverse("portal:statement-pdf", args=[p3.pk]))
    assert AccountStatement.objects.get().channel == "counter"
    assert AccountStatement.objects.get().number in pdf_text(response.content)


# --- the public ¿cuánto debo? ---------------------------------------------------------------------


def test_public_lookup_shows_todays_statement_without_name_and_issues_the_pdf_on_request(client, district_1):
    url = reverse("owed:lookup")
    p2 = Parcel.objects.get(parcel_id="P2")
    total = accounts.statement(parcel=p2, as_of=timezone.localdate()).total_due
    for typed in ("P2", "p-2", " 2 "):  # with or without the prefix and dashes
        response = client.post(url, {"parcel_id": typed, "access_code": access_code("P2").lower()})
        body = response.content.decode()
        assert response.status_code == 200 and "Predio P2" in strip_tags(body), typed
        assert f"${total:,.2f}" in body and "Carmen" not in body and "OWN-A" not in body
    assert not AccountStatement.objects.exists()  # the page alone issues nothing
    response = client.post(url, {"parcel_id": "P2", "access_code": access_code("P2"), "pdf": "1"})
    issued = AccountStatement.objects.get()
    assert response["Content-Type"] == "application/pdf" and issued.channel == "public" and issued.issued_by is None
    assert issued.number in pdf_text(response.content)


def test_public_lookup_refuses_alike_and_is_throttled_per_number_and_per_client(client, district_1):
    url = reverse("owed:lookup")
    wrong = client.post(url, {"parcel_id": "P2", "access_code": "AAAAA-AAAAA"}).content.decode()
    unknown = client.post(url, {"parcel_id": "ZZ-404", "access_code": access_code("P2")}).content.decode()
    message = "El número de catastro o el código de acceso no coinciden."
    assert message in wrong and message in unknown and "Predio P2" not in strip_tags(wrong)
    for _n in range(public.FAILURE_LIMIT - 1):
        client.post(url, {"parcel_id": "p2", "access_code": "AAAAA-AAAAA"})
    refused = client.post(url, {"parcel_id": "P2", "access_code": access_code("P2")})
    assert refused.status_code == 429 and "demasiados intentos" in refused.content.decode()
    # another parcel from another address still answers; from this address, after enough failures, nothing does
    other = client.post(url, {"parcel_id": "P3", "access_code": access_code("P3")}, REMOTE_ADDR="10.0.0.9")
    assert other.status_code == 200 and "Predio P3" in strip_tags(other.content.decode())
    for n in range(public.CLIENT_FAILURE_LIMIT):
        client.post(url, {"parcel_id": f"X{n}", "access_code": "AAAAA-AAAAA"}, REMOTE_ADDR="10.0.0.7")
    assert client.post(url, {"parcel_id": "P3", "access_code": access_code("P3")}, REMOTE_ADDR="10.0.0.7").status_code == 429


@pytest.mark.django_db
def test_the_statement_pdf_sums_its_balance_column_as_well_as_what_is_due_today(client, district_1, monkeypatch):
    """Worked example 1's P2 on 2026-12-01: July (22,950.00 + ½% × 4 months = 459.00) is overdue and
    January (22,950.00) not yet due: today 23,409.00 is due, and the column sums 46,359.00 (¶11)."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from tests.clock import move_clock_to

    move_clock_to(monkeypatch, datetime(2026, 12, 1, 10, tzinfo=ZoneInfo("America/Puerto_Rico")))
    response = client.post(reverse("owed:lookup"), {"parcel_id": "P2", "access_code": access_code("P2"), "pdf": "1"})
    text = " ".join(pdf_text(response.content).split())
    assert "$23,409.00 2026-2027 plazo 2 (enero)" in text and "$0.00 $0.00 $22,950.00 Total a pagar" in text  # the two rows
    assert "Total a pagar al 1 de diciembre de 2026 $23,409.00" in text
    assert "Saldo total: la suma de la columna, con los plazos que aún no vencen (¶11) $46,359.00" in text
