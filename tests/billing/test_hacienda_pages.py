"""Hacienda's and the Authority's collection pages through the Django test client: who may open
each, the delinquent list (¶12) and its CSV, the seizure procedure (¶14) step by step, debt
certificates (¶11), the dashboard's figures and ¶1(2)/¶2 split, water sold before the levy
starts (¶8, sec. 374a) and office closures."""

from __future__ import annotations

import csv
import io
from datetime import date
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from billing import accounts
from billing.models import Charge, DebtCertificate, OfficeClosure, SeizureStep, WaterDelivery
from billing.services import collection, counter
from parcels import review
from parcels.models import Parcel
from parcels.roles import ROLES
from parcels.services import owner_update
from tests.billing import delinquent
from tests.clock import localdate_on

HALF = {"P1": Decimal("9180.00"), "P2": Decimal("22950.00"), "P3": Decimal("4590.00"), "P4": Decimal("6930.90"),
        "P5": Decimal("2249.10")}  # each installment of worked example 1 (the two halves are equal)


@pytest.fixture
def clock(monkeypatch):
    """The pages and services read ``timezone.localdate()``; tests move it."""
    state = {"today": date(2026, 9, 1)}
    monkeypatch.setattr(timezone, "localdate", lambda *args, **kwargs: state["today"])
    return state


def parcel(code: str) -> Parcel:
    return Parcel.objects.get(parcel_id=code)


def pay(staff, code: str, amount: str | Decimal, on: date):
    """A payment at the counter on ``on``: the counter's today (``clock`` moves it), moved there for the call."""
    with localdate_on(on):
        return counter.payment_record(acting_user=staff["collector"], parcel=parcel(code), amount=Decimal(amount), paid_on=on)


# --- who may open what --------------------------------------------------------------------------


@pytest.mark.django_db
def test_role_access_for_every_page(client, users, staff, district_1, clock):
    p2 = parcel("P2")
    clock["today"] = date(2026, 9, 10)
    step = collection.seizure_step_issue(acting_user=staff["hacienda"], parcel=p2, kind="notice")
    certificate = collection.certificate_issue(acting_user=staff["hacienda"], parcel=p2, as_of=date(2026, 9, 10))
    pages = [  # url, method, roles allowed
        (reverse("collections:delinquent"), "get", {"hacienda", "auditor"}),
        (reverse("collections:seizure", args=[p2.pk]), "get", {"hacienda"}),
        (reverse("collections:seizure-pdf", args=[step.pk]), "get", {"hacienda"}),
        (reverse("collections:certificates", args=[p2.pk]), "get", {"hacienda", "collector", "supervisor"}),
        (reverse("collections:certificate-pdf", args=[certificate.pk]), "get", {"hacienda", "collector", "supervisor"}),
        (reverse("collections:dashboard"), "get", {"hacienda", "auditor", "authority"}),
        (reverse("collections:water"), "get", {"authority"}),
        (reverse("collections:water-import"), "post", {"authority"}),
        (reverse("collections:water-bill"), "post", {"authority"}),
        (reverse("collections:closures"), "get", {"hacienda"}),
    ]
    client.logout()
    for url, method, _allowed in pages:
        response = getattr(client, method)(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url
    for role in ROLES:
        client.force_login(users[role])
        for url, method, allowed in pages:
            response = getattr(client, method)(url)
            expected = 200 if role in allowed else 403
            assert response.status_code == expected, (role, url, response.status_code)
    assert "landowner" not in {role for _url, _method, allowed in pages for role in allowed}


@pytest.mark.django_db
def test_navigation_links_by_role(client, users, clock):
    client.force_login(users["hacienda"])
    html = client.get(reverse("home")).content.decode()
    assert reverse("collections:delinquent") in html and reverse("collections:closures") in html
    assert reverse("collections:water") not in html
    client.force_login(users["authority"])
    html = client.get(reverse("home")).content.decode()
    assert reverse("collections:water") in html and reverse("collections:dashboard") in html
    assert reverse("collections:delinquent") not in html
    client.force_login(users["collector"])
    html = client.get(reverse("home")).content.decode()
    assert "/cobros/" not in html


# --- 1. the delinquent list (¶12) ---------------------------------------------------------------


@pytest.mark.django_db
def test_delinquent_list_after_p1_pays(client, staff, district_1, clock):
    pay(staff, "P1", "9180.00", date(2026, 8, 1))
    client.force_login(staff["hacienda"])
    response = client.get(reverse("collections:delinquent"))  # as of today, 2026-09-01
    assert response.status_code == 200
    items = list(response.context["page"].object_list)
    assert sorted(item.parcel.parcel_id for item in items) == ["P2", "P3", "P4", "P5"]
    assert all(item.days_late == 1 and item.charge.number == 1 for item in items)
    assert response.context["totals"]["principal"] == Decimal("36720.00")
    html = response.content.decode()
    assert "$36,720.00" in html and "$22,950.00" in html
    for code in ("P2", "P3", "P4", "P5"):
        assert reverse("collections:seizure", args=[parcel(code).pk]) in html
    assert reverse("collections:seizure", args=[parcel("P1").pk]) not in html
    # the last day to pay itself is not late
    response = client.get(reverse("collections:delinquent"), {"as_of": "2026-08-31"})
    assert list(response.context["page"].object_list) == []


@pytest.mark.django_db
def test_delinquent_filters_and_sorting(client, staff, district_1, clock):
    client.force_login(staff["hacienda"])
    url = reverse("collections:delinquent")
    by_balance = client.get(url, {"as_of": "2026-09-01", "o": "-balance"}).context["page"].object_list
    assert [item.parcel.parcel_id for item in by_balance] == ["P2", "P1", "P4", "P3", "P5"]
    big = client.get(url, {"as_of": "2026-09-01", "min_balance": "10,000"}).context["page"].object_list
    assert [item.parcel.parcel_id for item in big] == ["P2"]
    assert list(client.get(url, {"as_of": "2026-09-01", "semester": "2"}).context["page"].object_list) == []
    assert list(client.get(url, {"as_of": "2026-09-01", "min_days_late": "2"}).context["page"].object_list) == []
    assert len(client.get(url, {"as_of": "2026-09-02", "min_days_late": "2", "fiscal_year": "2026-2027"})
               .context["page"].object_list) == 5
    bad = client.get(url, {"as_of": "not-a-date"})
    assert bad.status_code == 200 and not bad.context["valid"] and "as_of" in bad.context["form"].errors


@pytest.mark.django_db
def test_auditor_reads_the_list_without_seizure_links(client, users, staff, district_1, clock):
    client.force_login(users["auditor"])
    response = client.get(reverse("collections:delinquent"))
    assert len(response.context["page"].object_list) == 5
    assert reverse("collections:seizure", args=[parcel("P2").pk]) not in response.content.decode()


@pytest.mark.django_db
def test_delinquent_csv_export_neutralizes_formulas(client, staff, district_1, owner_a, clock):
    pay(staff, "P1", "9180.00", date(2026, 8, 1))
    owner_update(acting_user=staff["authority"], owner=owner_a, name='=HYPERLINK("x")')
    client.force_login(staff["hacienda"])
    response = client.get(reverse("collections:delinquent"), {"as_of": "2026-10-15", "format": "csv"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="morosos-2026-10-15.csv"' in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["parcel_id", "owner_name", "fiscal_year", "number", "last_day_to_pay", "days_late",
                       "principal", "surcharge", "paid", "balance"]
    by_parcel = {row[0]: row for row in rows[1:]}
    assert sorted(by_parcel) == ["P2", "P3", "P4", "P5"]
    assert by_parcel["P4"][2:] == ["2026-2027", "1", "2026-08-31", "45", "6930.90", "69.31", "0.00", "7000.21"]
    assert all(row[1] == "'=HYPERLINK(\"x\")" for row in rows[1:])
    assert all(row[1].startswith("'") for row in rows[1:])



@pytest.mark.django_db
def test_the_delinquent_csv_is_the_page_filtered_and_sorted(client, staff, district_1, clock):
    """Issue 20: the export is every line the page lists (¶12), in the page's order and with its
    search, read from the list the page keeps rather than filtered and sorted again in Python."""
    client.force_login(staff["hacienda"])
    url = reverse("collections:delinquent")
    query = {"as_of": "2026-10-15", "o": "-balance"}
    shown = [item.parcel.parcel_id for item in client.get(url, query).context["page"].object_list]
    rows = list(csv.reader(io.StringIO(client.get(url, {**query, "format": "csv"}).content.decode())))[1:]
    assert [row[0] for row in rows] == shown and len(shown) == 5
    balances = [Decimal(row[-1]) for row in rows]
    assert balances == sorted(balances, reverse=True) and len(set(balances)) > 1
    oldest_first = list(csv.reader(io.StringIO(client.get(url, {"as_of": "2026-10-15", "format": "csv"}).content.decode())))[1:]
    assert sorted(map(tuple, oldest_first)) == sorted(map(tuple, rows)) and oldest_first != rows
    searched = list(csv.reader(io.StringIO(client.get(url, {**query, "q": "P4", "format": "csv"}).content.decode())))[1:]
    assert [row[0] for row in searched] == ["P4"]

# --- 2. the seizure procedure (¶14) ---------------------------------------------------------------


@pytest.mark.django_db
def test_seizure_flow_through_the_pages(client, staff, district_1, clock):
    p2 = parcel("P2")
    url = reverse("collections:seizure", args=[p2.pk])
    client.force_login(staff["hacienda"])
    clock["today"] = date(2026, 9, 10)
    page = client.get(url)
    assert page.context["next_kind"] == "notice" and "$22,950.00" in page.content.decode()

    review_page = client.post(url, {"kind": "notice"})  # issue 18: the review page first, nothing issued
    assert review_page.status_code == 200 and not SeizureStep.objects.exists()
    response = client.post(url, {"kind": "notice", review.FIELD: review_page.context["fingerprint"]})
    assert response.status_code == 302 and response["Location"] == url
    notice = SeizureStep.objects.get(case__parcel=p2, kind="notice")
    assert notice.issued_on == date(2026, 9, 10) and notice.term_ends == date(2026, 10, 10)
    assert notice.issued_by == staff["hacienda"]

    clock["today"] = date(2026, 10, 10)  # the term's last day: too early for the certificate
    response = client.post(url, {"kind": "certificate"})
    assert response.status_code == 200
    assert "El plazo de 30 días de la notificación vence el 10/10/2026." in response.content.decode()
    assert not SeizureStep.objects.filter(kind="certificate").exists()

    clock["today"] = date(2026, 10, 11)
    review_page = client.post(url, {"kind": "certificate"})
    response = client.post(url, {"kind": "certificate", review.FIELD: review_page.context["fingerprint"]})
    assert response.status_code == 302
    certificate = SeizureStep.objects.get(case__parcel=p2, kind="certificate")
    html = client.get(url).content.decode()
    assert notice.number in html and certificate.number in html and "10/10/2026" in html
    assert reverse("collections:seizure-pdf", args=[notice.pk]) in html

    download = client.get(reverse("collections:seizure-pdf", args=[notice.pk]))
    assert download.status_code == 200 and download["Content-Type"] == "application/pdf"
    assert download.content.startswith(b"%PDF") and download.content == bytes(notice.pdf)  # the stored bytes
    assert f'filename="{notice.number}.pdf"' in download["Content-Disposition"]

    # ¶13, ¶14: paying the whole debt stops the procedure
    clock["today"] = date(2026, 10, 20)
    owed = accounts.parcel_debt(parcel=p2, as_of=date(2026, 10, 20))
    pay(staff, "P2", owed, date(2026, 10, 20))
    response = client.post(url, {"kind": "auction"})
    assert response.status_code == 200 and "se detiene" in response.content.decode()
    assert not SeizureStep.objects.filter(kind="auction").exists()


# --- 3. debt certificates (¶11) -------------------------------------------------------------------


@pytest.mark.django_db
def test_certificates_issue_list_and_pdf(client, staff, district_1, clock):
    p4 = parcel("P4")
    url = reverse("collections:certificates", args=[p4.pk])
    clock["today"] = date(2026, 10, 16)
    client.force_login(staff["collector"])
    assert client.post(url, {"as_of": "2026-10-15"}).status_code == 302
    first = DebtCertificate.objects.get(parcel=p4)
    assert first.snapshot["total_due"] == "7000.21" and first.issued_by == staff["collector"]
    client.force_login(staff["hacienda"])
    assert client.post(url, {"as_of": "2026-10-16"}).status_code == 302
    second = DebtCertificate.objects.exclude(pk=first.pk).get(parcel=p4)
    assert second.supersedes == first
    html = client.get(url).content.decode()
    assert f"sustituida por {second.number}" in html and "vigente" in html and "$7,000.21" in html
    assert client.post(url, {"as_of": ""}).status_code == 200  # the date is required
    download = client.get(reverse("collections:certificate-pdf", args=[first.pk]))
    assert download.status_code == 200 and download["Content-Type"] == "application/pdf"
    assert download.content.startswith(b"%PDF") and first.number in download["Content-Disposition"]


# --- 4. the dashboard -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_dashboard_numbers_and_split(client, staff, district_1, clock, django_assert_max_num_queries):
    client.force_login(staff["hacienda"])
    url = reverse("collections:dashboard")
    before = client.get(url).context["data"]
    assert before.totals.billed == Decimal("91800.00") and before.totals.collected == Decimal("0.00")

    pay(staff, "P1", "9180.00", date(2026, 8, 1))
    with django_assert_max_num_queries(15):  # 14, and the second-factor device of the session
        response = client.get(url)  # as of today, 2026-09-01
    data = response.context["data"]
    rows = {(row.fiscal_year, row.number): row for row in data.rows}
    first, second = rows[("2026-2027", 1)], rows[("2026-2027", 2)]
    assert data.totals.billed == Decimal("91800.00")
    assert (first.billed, first.collected, first.delinquent, first.pending) == (
        Decimal("45900.00"), Decimal("9180.00"), Decimal("36720.00"), Decimal("0.00"))
    assert (second.billed, second.collected, second.delinquent, second.pending) == (
        Decimal("45900.00"), Decimal("0.00"), Decimal("0.00"), Decimal("45900.00"))
    assert first.delinquent_parcels == 4
    # ¶1(2), ¶2: reserve $1,500.00 of a $91,800.00 levy
    [split] = data.split
    assert (split.collected, split.reserve, split.operating) == (Decimal("9180.00"), Decimal("150.00"), Decimal("9030.00"))
    html = response.content.decode()
    assert "$91,800.00" in html and "$9,180.00" in html and "$150.00" in html and "$9,030.00" in html
    assert 'role="img"' in html and "<title" in html and "<desc" in html and "<table" in html


@pytest.mark.django_db
def test_dashboard_agrees_with_the_account_replay(client, staff, district_1, clock):
    """The SQL allocation gives what ``account_state`` gives, partial and late payments included."""
    pay(staff, "P4", "1000.00", date(2026, 8, 1))  # partial, on time
    p3_due = accounts.parcel_debt(parcel=parcel("P3"), as_of=date(2026, 9, 15))
    pay(staff, "P3", p3_due, date(2026, 9, 15))  # late: principal and ½% surcharge
    pay(staff, "P5", "3000.00", date(2026, 9, 15))  # late, more than the first half: the rest goes to January
    clock["today"] = date(2026, 9, 20)
    client.force_login(staff["hacienda"])
    data = client.get(reverse("collections:dashboard")).context["data"]
    first = next(row for row in data.rows if row.number == 1)
    second = next(row for row in data.rows if row.number == 2)
    late = delinquent(as_of=date(2026, 9, 20))
    assert first.delinquent == sum((item.state.principal - item.state.principal_paid for item in late), Decimal("0"))
    assert first.delinquent == HALF["P1"] + HALF["P2"] + HALF["P4"] - Decimal("1000.00")
    p5_surcharge = Decimal("11.25")  # ½% of $2,249.10, one period begun on 2026-09-01
    assert first.surcharges == Decimal("22.95") + p5_surcharge
    assert first.collected == Decimal("1000.00") + HALF["P3"] + HALF["P5"]
    assert second.collected == Decimal("3000.00") - HALF["P5"] - p5_surcharge


# --- 5. water before the levy starts (¶8, sec. 374a) ---------------------------------------------


@pytest.mark.django_db
def test_water_delivery_through_the_page(client, staff, make_parcel, owner_a, district_1, clock):
    make_parcel("W1", owner_a, gravity="10", water_since=date(2026, 3, 10))
    clock["today"] = date(2026, 11, 2)
    client.force_login(staff["authority"])
    url = reverse("collections:water")
    response = client.post(url, {"parcel_id": "W1", "delivered_on": "2026-10-05", "acre_feet": "12.5"})
    assert response.status_code == 302
    delivery = WaterDelivery.objects.get(parcel__parcel_id="W1")
    assert (delivery.rate, delivery.amount, delivery.recorded_by) == (Decimal("2.00"), Decimal("25.00"), staff["authority"])
    html = client.get(url).content.decode()
    assert "W1" in html and "$2.00" in html and "$25.00" in html

    refused = client.post(url, {"parcel_id": "P1", "delivered_on": "2026-10-05", "acre_feet": "3"})
    assert refused.status_code == 200
    assert "El predio P1 ya paga la contribución: no se le vende agua por acre-pie (¶8)." in refused.content.decode()
    unknown = client.post(url, {"parcel_id": "NOPE", "delivered_on": "2026-10-05", "acre_feet": "3"})
    assert "Predio desconocido «NOPE»." in unknown.content.decode()
    assert WaterDelivery.objects.count() == 1

    billed = client.post(reverse("collections:water-bill"), {"month": "2026-10"})
    assert billed.status_code == 302
    charge = Charge.objects.get(parcel__parcel_id="W1", kind="water")
    assert charge.principal.amount == Decimal("25.00") and charge.due_date == date(2026, 11, 1)
    assert client.post(reverse("collections:water-bill"), {"month": "2026-13"}).status_code == 200


@pytest.mark.django_db
def test_water_csv_import_is_all_or_nothing(client, staff, make_parcel, owner_a, district_1, clock):
    make_parcel("W1", owner_a, gravity="10", water_since=date(2026, 3, 10))
    make_parcel("W2", owner_a, gravity="0", pumped="10", water_since=date(2025, 9, 15))
    client.force_login(staff["authority"])
    url = reverse("collections:water-import")
    bad = b"parcel_id,delivered_on,acre_feet\nW1,2026-10-05,4\nP1,2026-10-05,2\nNOPE,2026-10-06,1\n"
    response = client.post(url, {"file": SimpleUploadedFile("agua.csv", bad, content_type="text/csv")})
    html = response.content.decode()
    assert response.status_code == 200
    assert "línea 3: El predio P1 ya paga" in html and "línea 4: Predio desconocido" in html
    assert WaterDelivery.objects.count() == 0
    malformed = b"parcel_id,delivered_on,acre_feet\nW1,5/10/2026,4\nW2,2026-10-06\nW1,2026-10-07,1.23456\n"
    html = client.post(url, {"file": SimpleUploadedFile("agua.csv", malformed)}).content.decode()
    assert "línea 2: fecha" in html and "línea 3: falta acre_feet" in html and "línea 4: acres-pie" in html
    good = b"parcel_id,delivered_on,acre_feet\nW1,2026-10-05,4\nW2,2026-10-06,2.5\n"
    response = client.post(url, {"file": SimpleUploadedFile("agua.csv", good)})
    assert response.status_code == 302
    assert sorted(WaterDelivery.objects.values_list("parcel__parcel_id", "rate")) == [("W1", Decimal("2.00")), ("W2", Decimal("3.00"))]


# --- 6. office closures -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_closure_add_and_duplicate(client, staff, clock):
    client.force_login(staff["hacienda"])
    url = reverse("collections:closures")
    response = client.post(url, {"day": "2026-09-18", "reason": "Huracán María II"})
    assert response.status_code == 302
    closure = OfficeClosure.objects.get()
    assert (closure.day, closure.reason, closure.created_by) == (date(2026, 9, 18), "Huracán María II", staff["hacienda"])
    assert "Huracán María II" in client.get(url).content.decode()
    again = client.post(url, {"day": "2026-09-18", "reason": "otra vez"})
    assert again.status_code == 200 and again.context["form"].errors
    assert OfficeClosure.objects.count() == 1
    assert client.post(url, {"day": "", "reason": ""}).status_code == 200


@pytest.mark.django_db
def test_bulk_printing_from_the_page(client, district_1, staff, django_capture_on_commit_callbacks):
    from pypdf import PdfReader

    from billing.models import Bill, BillBatch

    client.force_login(staff["collector"])
    assert client.get(reverse("collections:bill-batches")).status_code == 403
    client.force_login(staff["hacienda"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("collections:bill-batches"), {"fiscal_year": "2026-2027", "number": "1"})
    batch = BillBatch.objects.get()
    assert response.status_code == 302 and Bill.objects.filter(batch=batch).count() == 5
    page = client.get(reverse("collections:bill-batch", args=[batch.pk])).content.decode()
    assert "5 avisos listos" in page
    part = client.get(reverse("collections:bill-batch-part", args=[batch.pk, batch.parts.first().index]))
    assert part["Content-Type"] == "application/pdf"
    assert len(PdfReader(io.BytesIO(b"".join(part.streaming_content))).pages) == 5
    bad = client.post(reverse("collections:bill-batches"), {"fiscal_year": "2030-2031", "number": "1"})
    assert bad.status_code == 200 and "2030-2031" in bad.content.decode()


@pytest.mark.django_db
def test_a_failed_bill_batch_is_resumed_from_its_page(client, district_1, staff, monkeypatch, django_capture_on_commit_callbacks):
    from billing import bulk
    from billing.models import Bill, BillBatch
    from parcels.models import Job

    client.force_login(staff["hacienda"])
    real_part_write = bulk.part_write

    def printer_jams(**kwargs):
        raise RuntimeError("se atascó la impresora")

    monkeypatch.setattr(bulk, "part_write", printer_jams)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("collections:bill-batches"), {"fiscal_year": "2026-2027", "number": "1"})
    batch = BillBatch.objects.get()
    assert batch.job.status == Job.Status.FAILED and batch.bills.count() == 5 and not batch.parts.exists()
    page = client.get(reverse("collections:bill-batch", args=[batch.pk])).content.decode()
    assert "El proceso falló" in page and "Reanudar el lote" in page

    client.force_login(staff["collector"])
    assert client.post(reverse("collections:bill-batch", args=[batch.pk])).status_code == 403
    client.force_login(staff["hacienda"])
    monkeypatch.setattr(bulk, "part_write", real_part_write)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("collections:bill-batch", args=[batch.pk]))
    assert response.status_code == 302
    batch.refresh_from_db()
    assert batch.job.status == Job.Status.DONE and batch.job.result["issued"] == 0  # the 5 bills were kept, not reissued
    assert Bill.objects.count() == 5 and batch.parts.count() == 1
    page = client.get(reverse("collections:bill-batch", args=[batch.pk])).content.decode()
    assert "5 avisos listos" in page and "Parte 1 (5 páginas, PDF)" in page and "Reanudar" not in page
    again = client.post(reverse("collections:bill-batch", args=[batch.pk]))  # nothing left to resume
    assert again.status_code == 200 and "no falló" in again.content.decode() and Job.objects.filter(kind="bill_batch").count() == 2


@pytest.mark.django_db
def test_a_second_batch_of_a_semester_is_refused_while_one_runs(client, district_1, staff):
    from django.utils import timezone

    from billing.models import BillBatch
    from parcels.models import Job

    client.force_login(staff["hacienda"])
    first = client.post(reverse("collections:bill-batches"), {"fiscal_year": "2026-2027", "number": "1"})
    batch = BillBatch.objects.get()  # queued: no worker runs it in this transaction
    assert first.status_code == 302 and batch.job.key == "2026-2027/1"
    started = timezone.make_aware(timezone.datetime(2026, 7, 1, 8, 30))
    Job.objects.filter(pk=batch.job_id).update(status=Job.Status.RUNNING, started_at=started, progress=2, total=5)

    # Even for part of the semester (a cadastre prefix): its bills would be numbered a second time.
    again = client.post(reverse("collections:bill-batches"), {"fiscal_year": "2026-2027", "number": "1", "parcel_prefix": "P"})
    assert again.status_code == 200
    assert ("Ya hay un proceso en curso para los avisos de 2026-2027, plazo 1: lo pidió Oficial Hac Prueba el 01/07/2026 08:30 y va por "
            "el 40 % (en proceso). Espere a que termine.") in again.content.decode()
    assert BillBatch.objects.count() == 1 and Job.objects.filter(kind="bill_batch").count() == 1
    other = client.post(reverse("collections:bill-batches"), {"fiscal_year": "2026-2027", "number": "2"})
    assert other.status_code == 302 and BillBatch.objects.count() == 2  # the other semester is not held up

    # Once it has failed, it may be resumed, and the other batches of the semester wait for that one.
    Job.objects.filter(pk=batch.job_id).update(status=Job.Status.FAILED)
    assert client.post(reverse("collections:bill-batch", args=[batch.pk])).status_code == 302
    batch.refresh_from_db()
    assert batch.job.status == Job.Status.QUEUED and batch.job.payload == {"batch_id": batch.pk}
    refused = client.post(reverse("collections:bill-batches"), {"fiscal_year": "2026-2027", "number": "1"})
    assert "Ya hay un proceso en curso para los avisos de 2026-2027, plazo 1" in refused.content.decode()
