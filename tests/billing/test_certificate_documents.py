"""Certificates and seizure notices that add up on paper, signed by a person with a title; a
seizure notice's QR; ANULADO on every download of a voided payment's receipt (issue 12)."""

from __future__ import annotations

import io
import os
import re
from datetime import date
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

import pdfplumber
import pytest
from django.conf import settings
from django.urls import reverse

from billing import documents, pdf
from billing.errors import BillingError
from billing.models import DebtCertificate, SeizureStep
from billing.services import collection, counter
from parcels.models import Parcel
from parcels.services import staff_profile_set
from tests.billing.test_documents import flat, qr_url, text_of
from tests.clock import on_day

MONEY = re.compile(r"^\$[\d,]+\.\d\d$")


def keep(data: bytes, name: str) -> None:
    """With ``LAJAS_KEEP_PDFS=<dir>`` the documents are kept there to be read as images."""
    target = os.environ.get("LAJAS_KEEP_PDFS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        (Path(target) / name).write_bytes(data)


def dollars(word: str) -> Decimal:
    return Decimal(word.lstrip("$").replace(",", ""))


def debt_table(data: bytes) -> dict:
    """The certificate's or notice's table read back from the PDF: each row's status and its
    Principal, Recargo, Pagado and Saldo amounts (the words right-aligned under each heading), and
    the two total rows ("Adeudado hoy", "Gravamen total")."""
    with pdfplumber.open(io.BytesIO(data)) as document:
        words = document.pages[0].extract_words(keep_blank_chars=False, use_text_flow=False)
    heads = {}
    for name in ("Estado", "Principal", "Recargo", "Pagado", "Saldo"):
        heads[name] = next(w for w in words if w["text"].startswith(name))
    header_bottom = heads["Saldo"]["bottom"]
    due_label = next(w for w in words if w["text"] == "Adeudado" and w["top"] > header_bottom)
    lien_label = next(w for w in words if w["text"] == "Gravamen" and w["top"] > due_label["top"])

    def column(name: str) -> list[tuple[float, Decimal]]:
        right = heads[name]["x1"] if name != "Recargo" else heads[name]["x1"] + 3.5  # the heading carries its footnote mark
        return sorted((w["top"], dollars(w["text"])) for w in words
                      if MONEY.match(w["text"]) and abs(w["x1"] - right) < 4 and header_bottom < w["top"] < lien_label["bottom"] + 2)

    columns = {name: column(name) for name in ("Principal", "Recargo", "Pagado", "Saldo")}
    row_tops = [top for top, _amount in columns["Saldo"] if top < due_label["top"] - 2]
    status_words = [w for w in words if heads["Estado"]["x0"] - 1 < w["x0"] < heads["Principal"]["x0"] - 10
                    and header_bottom < w["top"] < due_label["top"] - 2 and not MONEY.match(w["text"])]

    def at(name: str, top: float) -> Decimal:
        # a row's first line: the amount whose top is the row's; the surcharge's explanation lines below are smaller text
        return next(amount for t, amount in columns[name] if abs(t - top) < 3)

    rows = []
    for top in row_tops:
        status = " ".join(w["text"] for w in status_words if abs(w["top"] - top) < 4)
        rows.append({"status": status, **{name: at(name, top) for name in columns}})
    totals = {key: {name: at(name, label["top"]) for name in columns} for key, label in (("due", due_label), ("lien", lien_label))}
    return {"rows": rows, "totals": totals}


def sum_of(rows: list[dict], column: str) -> Decimal:
    return sum((row[column] for row in rows), Decimal("0.00"))


@pytest.mark.django_db
def test_certificate_rows_add_up_to_both_totals_signed_by_name_and_title(district_1, staff, make_user, tmp_path):
    # Worked example 1, P4 (75.5 ac × 183.60 = 13,861.80; halves of 6,930.90). On 15 October 2026 the
    # July half is delinquent since 1 September: ½ % × 2 months (September, October) = 34.65 + 34.66
    # = 69.31 by the ¶12 rounding of the rules; balance 7,000.21. The January half is not due yet:
    # 6,930.90 of lien, nothing owed today. The rows: 7,000.21 + 6,930.90 = 13,931.11 (lien).
    officer = make_user("gladys", "hacienda", full_name="Gladys Montalvo Seda", title="Directora de Recaudaciones")
    p4 = Parcel.objects.get(parcel_id="P4")
    certificate = collection.certificate_issue(acting_user=officer, parcel=p4, as_of=date(2026, 10, 15))
    assert (certificate.snapshot["officer_name"], certificate.snapshot["officer_title"]) == (
        "Gladys Montalvo Seda", "Directora de Recaudaciones")
    data = bytes(certificate.document.pdf)
    keep(data, "certificate.pdf")
    table = debt_table(data)
    assert [(row["status"], row["Principal"], row["Recargo"], row["Pagado"], row["Saldo"]) for row in table["rows"]] == [
        ("moroso", Decimal("6930.90"), Decimal("69.31"), Decimal("0.00"), Decimal("7000.21")),
        ("por vencer", Decimal("6930.90"), Decimal("0.00"), Decimal("0.00"), Decimal("6930.90")),
    ]
    due_rows = [row for row in table["rows"] if row["status"] in ("vencido", "moroso")]
    for column in ("Principal", "Recargo", "Pagado", "Saldo"):
        assert table["totals"]["due"][column] == sum_of(due_rows, column), column
        assert table["totals"]["lien"][column] == sum_of(table["rows"], column), column
    assert table["totals"]["due"]["Saldo"] == Decimal("7000.21")
    assert table["totals"]["lien"]["Saldo"] == Decimal("13931.11")
    text = flat(text_of(data))
    assert "Adeudado hoy (15 de octubre de 2026) $7,000.21" in text and "Gravamen total sobre el predio $13,931.11" in text
    assert "Gladys Montalvo Seda" in text and "Directora de Recaudaciones" in text and "gladys" not in text
    assert "OWN-A" not in text  # no internal owner key on the landowner's paper
    # the law in footnotes, not inline in the text and headings
    assert "(¶11, ¶12)" not in text and "Recargo (¶12)" not in text and "(¶11)." in text
    english = pdf.render_certificate_pdf(certificate=certificate, lang="en")
    keep(english, "certificate_en.pdf")
    text_en = flat(text_of(english))
    assert "Owed today (15 October 2026) $7,000.21" in text_en and "Total lien on the parcel $13,931.11" in text_en
    assert "delinquent" in text_en and "not yet due" in text_en and "Gravamen" not in text_en and "moroso" not in text_en
    # the public verification page states both totals and who signed
    page_table = documents.verification(certificate.document.verification_code)
    assert ("Adeudado hoy", "$7,000.21") in page_table["facts"] and ("Gravamen total", "$13,931.11") in page_table["facts"]


@pytest.mark.django_db
def test_certificate_page_shows_the_same_table_and_refuses_an_officer_without_a_title(client, district_1, staff, make_user):
    nameless = make_user("sintitulo", "hacienda", full_name="Pedro Ruiz Colón", title="")
    p4 = Parcel.objects.get(parcel_id="P4")
    with pytest.raises(BillingError, match="le falta el cargo"):
        collection.certificate_issue(acting_user=nameless, parcel=p4, as_of=date(2026, 10, 15))
    with pytest.raises(BillingError, match="le falta el cargo"):
        collection.seizure_step_issue(acting_user=nameless, parcel=p4, kind="notice", on=date(2026, 10, 15))
    client.force_login(nameless)
    url = reverse("collections:certificates", args=[p4.pk])
    response = client.post(url, {"as_of": "2026-10-15"})
    page = response.content.decode()
    assert response.status_code == 200 and "No se puede emitir: al usuario «sintitulo» le falta el cargo para firmar" in page
    assert not DebtCertificate.objects.exists() and not SeizureStep.objects.exists()
    staff_profile_set(acting_user=staff["authority"], user=nameless, title="Oficial de Recaudaciones")
    assert client.post(url, {"as_of": "2026-10-15"}).status_code == 302
    page = client.get(url).content.decode()
    assert "Pedro Ruiz Colón, Oficial de Recaudaciones" in page
    assert "Adeudado hoy: filas vencidas y morosas" in page and "Gravamen total: todas las filas" in page
    assert "moroso" in page and "por vencer" in page


@pytest.mark.django_db
def test_seizure_notice_has_its_qr_verification_page_totals_and_signature(client, district_1, staff, make_user, tmp_path):
    # P2 (250 ac): the July half 22,950.00, delinquent on 10 September 2026: ½ % × 1 month = 114.75;
    # balance 23,064.75 owed today; the January half 22,950.00 is lien not yet due: 46,014.75.
    officer = make_user("hector", "hacienda", full_name="Héctor Nazario Bonilla", title="Subdirector de Recaudaciones")
    p2 = Parcel.objects.get(parcel_id="P2")
    step = collection.seizure_step_issue(acting_user=officer, parcel=p2, kind="notice", on=date(2026, 9, 10))
    data = bytes(step.pdf)
    keep(data, "seizure_notice.pdf")
    url = qr_url(data, tmp_path)
    assert url == f"{settings.SITE_URL}/verificar/{step.verification_code}/" and step.verification_code.startswith("E-NE-2026-")
    text = flat(text_of(data))
    assert url in text.replace(" ", "") or step.verification_code in text.replace(" ", "")
    assert "Héctor Nazario Bonilla" in text and "Subdirector de Recaudaciones" in text
    table = debt_table(data)
    assert [(row["status"], row["Saldo"]) for row in table["rows"]] == [("moroso", Decimal("23064.75")), ("por vencer", Decimal("22950.00"))]
    assert table["totals"]["due"]["Saldo"] == Decimal("23064.75") and table["totals"]["lien"]["Saldo"] == Decimal("46014.75")
    for column in ("Principal", "Recargo", "Pagado", "Saldo"):
        assert table["totals"]["lien"][column] == sum_of(table["rows"], column), column
    response = client.get(urlsplit(url).path)  # public, nobody signed in
    page = response.content.decode()
    assert response.status_code == 200 and "DOCUMENTO VÁLIDO" in page and step.number in page
    assert "Notificación de embargo" in page and "$23,064.75" in page and "$46,014.75" in page and "Cadena íntegra" in page
    assert "Carmen" not in page  # no owner name on a public page
    assert "Notificación de embargo (plazo de 30 días), 2026" in page and "seizure_notice" not in page  # issue 18
    assert client.get(f"/verificar/{step.verification_code[:-1]}x/").status_code == 404


@pytest.mark.django_db
def test_every_download_of_a_voided_receipt_says_anulado_and_a_valid_one_does_not(client, district_1, staff):
    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(date(2026, 7, 3)):
        valid = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("100.00"), paid_on=date(2026, 7, 3))
        voided = counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=Decimal("200.00"), paid_on=date(2026, 7, 3))
    stored = bytes(voided.document.pdf)
    counter.payment_void(acting_user=staff["supervisor"], payment=voided.payment, reason="Cheque devuelto por el banco",
                         voided_on=date(2026, 7, 9))
    client.force_login(staff["collector"])
    banner = client.get(reverse("billing:receipt", args=[voided.pk])).content.decode()
    # the officer by name and title, not the username "sup" (issue 18)
    assert "el 9 de julio de 2026, por Oficial Sup Prueba, Oficial de Pruebas." in banner and "por sup." not in banner
    first = client.get(reverse("billing:receipt-pdf", args=[voided.pk])).content
    keep(first, "receipt_voided.pdf")
    text = flat(text_of(first))
    assert "ANULADO" in text and "PAGO ANULADO el 9 de julio de 2026: Cheque devuelto por el banco" in text and "COPIA —" not in text
    copy = flat(text_of(client.get(reverse("billing:receipt-pdf", args=[voided.pk]) + "?copia=1").content))
    assert "COPIA — reimpreso el" in copy and "PAGO ANULADO el 9 de julio de 2026" in copy
    voided.document.refresh_from_db()
    assert bytes(voided.document.pdf) == stored  # the stored bytes never change
    fine = client.get(reverse("billing:receipt-pdf", args=[valid.pk])).content
    keep(fine, "receipt_valid.pdf")
    assert fine == bytes(valid.document.pdf) and "ANULADO" not in flat(text_of(fine))


@pytest.mark.django_db
def test_receipt_is_received_by_the_collectors_full_name_without_owner_key(district_1, staff, make_user):
    ana = make_user("ana", "collector", full_name="Ana Rivera Soto", title="Colectora de Rentas Internas")
    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(date(2026, 7, 3)):
        receipt = counter.payment_record(acting_user=ana, parcel=p1, amount=Decimal("9180.00"), paid_on=date(2026, 7, 3))
    assert (receipt.snapshot["collector"], receipt.snapshot["collector_name"]) == ("ana", "Ana Rivera Soto")
    text = flat(text_of(bytes(receipt.document.pdf)))
    assert "Recibido por Ana Rivera Soto" in text and "OWN-A" not in text and "Acres equivalentes (¶5)" not in text
    # a receipt issued before the name was frozen keeps its username
    old = {**receipt.snapshot}
    old.pop("collector_name")
    from billing.snapshots import ReceiptSnapshot

    assert ReceiptSnapshot.from_json(old).received_by == "ana"

