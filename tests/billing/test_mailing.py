"""Issue 19, mailing: the mailing list (sorted by ZIP then address, counts per ZIP), the merged
PDF in the same order, e-mail owners skipped from paper and e-mailed a link, the confirmation
link of an e-mail address, returned mail flagging an owner on the registry page, and the public
verification page saying where a bill was sent (¶13: a bill is a courtesy, not a condition)."""

from __future__ import annotations

import csv
import re
from datetime import date
from decimal import Decimal
from pathlib import Path

import pdfplumber
import pytest
from django.core import mail, signing
from django.urls import reverse

from billing import bulk, mailing
from billing.errors import BillingError
from billing.models import Bill, BillEmail, Charge
from billing.services import bills
from billing.services import mailing as mailing_services
from billing.services.installments import roll_finalize
from levy.services import estimate_certify, estimate_enter, levy_compute
from parcels.models import Owner, ReturnedMail
from parcels.services import owner_update
from tests.billing.conftest import billing_cmd
from tests.clock import on_day
from tests.conftest import EXAMPLE_1
from tests.factories import OwnerFactory

# cadastre number → (owner name, line 1, town, ZIP); P3 chooses e-mail, P5 has no postal address
ADDRESSES = {
    "P1": ("Ana Ruiz", "Calle 5 #20", "Lajas", "00667"),
    "P2": ("Beto Cruz", "HC 1 Box 10", "Cabo Rojo", "00623"),
    "P3": ("Celia Mora", "Calle 9 #1", "Cabo Rojo", "00623"),
    "P4": ("Diana Soto", "Calle 1 #3", "Lajas", "00667"),
    "P5": ("Elba Vega", "", "", ""),
}
MAIL_ORDER = ["P2", "P4", "P1", "P5"]  # 00623, then 00667 by address (Calle 1 before Calle 5), then no address


def email_confirmed(owner: Owner, capture, user=None) -> Owner:
    """The portal's path: enter the address, open the link sent to it (sent after the commit), choose e-mail."""
    mail.outbox.clear()
    with capture(execute=True):
        mailing_services.delivery_email_request(acting_user=user, owner=owner, email=f"{owner.owner_key.lower()}@example.pr")
    token = re.search(r"/portal/entrega/confirmar/([^/\s]+)/", mail.outbox[-1].body).group(1)
    mailing_services.delivery_email_confirm(token=token)
    return mailing_services.delivery_choose(acting_user=user, owner=owner, delivery="email")


@pytest.fixture
def mail_district(make_parcel, staff, django_capture_on_commit_callbacks):
    owners = {}
    for code, (name, line1, town, zip_code) in ADDRESSES.items():
        owners[code] = OwnerFactory(name=name, owner_key=f"OWN-{code}", address_line1=line1, address_town=town,
                                    address_zip=zip_code)
    email_confirmed(owners["P3"], django_capture_on_commit_callbacks)
    with on_day(date(2026, 6, 30)):
        for code, gravity in EXAMPLE_1:
            make_parcel(code, owners[code], gravity=gravity)
        estimate_enter(acting_user=staff["authority"], fiscal_year="2026-2027", om_estimate=Decimal("100000.00"),
                       reserve=Decimal("1500.00"), misc_income=Decimal("7500.00"), surplus=Decimal("4000.00"))
        estimate_certify(acting_user=staff["authority"], fiscal_year="2026-2027")
        levy_compute(acting_user=staff["hacienda"], fiscal_year="2026-2027")
        roll_finalize(acting_user=staff["hacienda"], fiscal_year="2026-2027", today=date(2026, 6, 30))
    mail.outbox.clear()
    return owners


@pytest.fixture
def printed(mail_district, staff, monkeypatch, inline_jobs):
    """Hacienda's bulk print of the July half, run by the worker (the batch's job)."""
    monkeypatch.setattr(bulk, "PART_PAGES", 3)  # two parts: the order must run across them
    batch = bills.bill_batch_start(staff["hacienda"], "2026-2027", 1)
    assert inline_jobs.run() >= 2  # the job, then a task per part (issue 20)
    assert set(inline_jobs.statuses()) == {"succeeded"}
    batch.refresh_from_db()
    batch.job.refresh_from_db()
    assert batch.job.status == "done" and batch.finished_at is not None, batch.job.error
    return batch, {**batch.job.result, **bulk.batch_summary(batch)}


def read_csv(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle))


def parts_parcels(batch) -> list[str]:
    codes = []
    for part in batch.parts.order_by("index"):
        with part.pdf.open("rb") as handle, pdfplumber.open(handle) as document:
            for page in document.pages:
                found = re.findall(r"Número de catastro:?\s*(P\d)", page.extract_text() or "")
                assert found, "a page without its cadastre number"
                codes.append(found[0])
    return codes


def test_mailing_list_is_sorted_by_zip_then_address_with_counts_per_zip(printed, tmp_path):
    batch, result = printed
    out = tmp_path / "lista.csv"
    code, stdout, err = billing_cmd("mailing-list", "--fiscal-year", "2026-2027", "--installment", "1", "--out", str(out))
    assert code == 0, err
    rows = read_csv(out)
    assert rows[0] == list(mailing.MAILING_COLUMNS)
    assert [row[1] for row in rows[1:]] == MAIL_ORDER  # P3 chose e-mail: not on the list
    first = rows[1]
    bill_p2 = Bill.objects.get(charge__parcel__parcel_id="P2", charge__number=1)
    assert first == [bill_p2.number, "P2", "Beto Cruz", "", "HC 1 Box 10", "", "Cabo Rojo", "PR", "00623"]
    assert rows[-1][1:] == ["P5", "Elba Vega", "", "", "", "", "", ""]  # no postal address: last
    assert read_csv(tmp_path / "lista-por-zip.csv") == [["zip", "bills"], ["00623", "1"], ["00667", "2"], ["", "1"], ["total", "4"]]
    assert stdout.strip().endswith(f"counts per ZIP: {tmp_path / 'lista-por-zip.csv'}")
    assert stdout.startswith("4 paper bills in 3 ZIP code(s)")


def test_merged_pdf_holds_the_paper_bills_in_the_mailing_list_order(printed, client, staff):
    batch, result = printed
    assert result["bills"] == 5 and result["paper"] == 4 and result["parts"] == 2
    assert [part.pages for part in batch.parts.order_by("index")] == [3, 1]
    listed = [row.parcel_id for row in bulk.batch_rows(batch)]
    assert listed == MAIL_ORDER
    assert parts_parcels(batch) == listed  # the stack of envelopes matches the list line by line
    # the batch page offers the same list
    client.force_login(staff["hacienda"])
    page = client.get(reverse("collections:bill-batch", args=[batch.pk]))
    assert page.status_code == 200 and "Lista de correo (CSV)" in page.content.decode()
    response = client.get(reverse("collections:bill-batch-mailing", args=[batch.pk, "lista"]))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert [line.split(",")[1] for line in response.content.decode().splitlines()[1:]] == MAIL_ORDER
    counts = client.get(reverse("collections:bill-batch-mailing", args=[batch.pk, "por-zip"])).content.decode()
    assert counts.splitlines() == ["zip,bills", "00623,1", "00667,2", ",1", "total,4"]


def test_a_restart_merges_nothing_again_and_sends_no_second_email(printed):
    batch, _result = printed
    assert len(mail.outbox) == 1
    again = bulk.bill_batch_run(batch=batch, processes=1)
    assert again["issued"] == 0 and again["emailed"] == 0 and batch.parts.count() == 2
    assert len(mail.outbox) == 1 and BillEmail.objects.count() == 1


def test_email_owners_bill_is_issued_and_stored_but_not_printed_and_is_emailed(printed, mail_district):
    batch, result = printed
    bill = Bill.objects.select_related("document").get(charge__parcel__parcel_id="P3", charge__number=1)
    assert bill.batch_id == batch.pk and bill.document.pdf  # issued and stored like the others
    assert bill.snapshot["delivery"]["method"] == "email" and bill.snapshot["delivery"]["email"] == "own-p3@example.pr"
    assert "P3" not in parts_parcels(batch)
    assert result["emailed"] == 1
    [message] = mail.outbox
    assert message.to == ["own-p3@example.pr"] and bill.number in message.subject
    assert reverse("billing:document-pdf", args=[bill.document.pk]) in message.body
    sent = BillEmail.objects.get()
    assert (sent.bill_id, sent.to, sent.status) == (bill.pk, "own-p3@example.pr", "sent")
    paper = Bill.objects.get(charge__parcel__parcel_id="P1", charge__number=1)
    assert paper.snapshot["delivery"] == {"method": "paper", "name": "Ana Ruiz", "care_of": "", "line1": "Calle 5 #20", "line2": "",
                                          "town": "Lajas", "state": "PR", "zip": "00667", "email": ""}


def test_a_failed_email_is_logged_and_sent_by_the_next_run(mail_district, staff, monkeypatch, inline_jobs):
    batch = bills.bill_batch_start(staff["hacienda"], "2026-2027", 1)

    def refused(*args, **kwargs):
        raise OSError("relay refused")

    monkeypatch.setattr(mailing_services, "send_mail", refused)
    first = bulk.bill_batch_run(batch=batch, processes=1)
    assert first["emailed"] == 0 and first["email_failed"] == 1
    assert list(BillEmail.objects.values_list("status", "error")) == [("failed", "relay refused")]
    monkeypatch.undo()
    second = bulk.bill_batch_run(batch=batch, processes=1)
    assert second["emailed"] == 1 and len(mail.outbox) == 1
    assert list(BillEmail.objects.values_list("status", flat=True)) == ["failed", "sent"]


def test_the_confirmation_link_confirms_and_a_tampered_one_is_refused(db, make_user, client, django_capture_on_commit_callbacks):
    owner = OwnerFactory(name="Fe Luna", owner_key="OWN-F", address_line1="Calle 2", address_town="Lajas", address_zip="00667")
    landowner = make_user("fe", "landowner", owner)
    client.force_login(landowner)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("portal:delivery"), {"action": "email", "email-email": "fe@example.pr"})
    assert response.status_code == 302
    owner.refresh_from_db()
    assert owner.email == "fe@example.pr" and owner.email_confirmed_at is None
    # e-mail delivery is refused before the address is confirmed, by the service and the database
    response = client.post(reverse("portal:delivery"), {"action": "delivery", "delivery-delivery": "email"})
    assert response.status_code == 200 and "Confirme primero su correo" in response.content.decode()
    owner.refresh_from_db()
    assert owner.delivery == "paper"
    [message] = mail.outbox
    assert message.to == ["fe@example.pr"]
    url = re.search(r"https?://\S+/portal/entrega/confirmar/\S+/", message.body).group(0)
    path = url[url.index("/portal/"):]
    token = path.rstrip("/").rsplit("/", 1)[1]
    tampered = path.replace(token, token[:-1] + ("A" if token[-1] != "A" else "B"))
    client.logout()  # the link works without signing in: it is its own proof
    refused = client.get(tampered)
    assert refused.status_code == 400 and "no es válido" in refused.content.decode()
    owner.refresh_from_db()
    assert owner.email_confirmed_at is None
    forged = signing.TimestampSigner(salt="another-purpose").sign_object({"owner": owner.pk, "email": owner.email})
    with pytest.raises(BillingError, match="no es válido"):
        mailing_services.delivery_email_confirm(token=forged)
    confirmed = client.get(path)
    assert confirmed.status_code == 200 and "quedó confirmado" in confirmed.content.decode()
    owner.refresh_from_db()
    assert owner.email_confirmed_at is not None
    client.force_login(landowner)
    assert client.post(reverse("portal:delivery"), {"action": "delivery", "delivery-delivery": "email"}).status_code == 302
    owner.refresh_from_db()
    assert owner.delivery == "email"
    # a new address is not confirmed: delivery goes back to paper, and the old link no longer works
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("portal:delivery"), {"action": "email", "email-email": "fe2@example.pr"})
    owner.refresh_from_db()
    assert (owner.email, owner.email_confirmed_at, owner.delivery) == ("fe2@example.pr", None, "paper")
    assert client.get(path).status_code == 400


def test_the_database_refuses_email_delivery_to_an_unconfirmed_address(db):
    from django.db import IntegrityError, transaction

    owner = OwnerFactory(name="Gil Paz", owner_key="OWN-G", email="gil@example.pr")
    with pytest.raises(IntegrityError), transaction.atomic():
        Owner.objects.filter(pk=owner.pk).update(delivery="email")


def test_returned_mail_flags_the_owner_and_the_registry_lists_flagged_owners(printed, mail_district, staff, client):
    bill = Bill.objects.get(charge__parcel__parcel_id="P1", charge__number=1)
    client.force_login(staff["hacienda"])
    response = client.post(reverse("collections:returned-mail"), {"reference": bill.number.lower(), "note": "Dirección insuficiente"})
    assert response.status_code == 302
    returned = ReturnedMail.objects.get()
    assert (returned.owner.owner_key, returned.parcel.parcel_id, returned.bill_number) == ("OWN-P1", "P1", bill.number)
    assert returned.address == "Calle 5 #20, Lajas PR 00667" and returned.recorded_by == staff["hacienda"]
    assert returned.note == "Dirección insuficiente"
    # by cadastre number, recorded by the Authority's clerk
    mailing_services.returned_mail_record(acting_user=staff["authority"], reference="P2")
    with pytest.raises(BillingError, match="Autoridad o de Hacienda"):
        mailing_services.returned_mail_record(acting_user=staff["collector"], reference="P4")
    with pytest.raises(BillingError, match="AV-2026-999999"):
        mailing_services.returned_mail_record(acting_user=staff["hacienda"], reference="AV-2026-999999")
    assert set(Owner.objects.filter(returned_mail=True).values_list("owner_key", flat=True)) == {"OWN-P1", "OWN-P2"}
    page = client.get(reverse("parcels:owner-list") + "?devuelto=1").content.decode()
    assert "2 dueños con correo devuelto" in page and "Ana Ruiz" in page and "Beto Cruz" in page and "Diana Soto" not in page
    assert "Dirección insuficiente" in client.get(reverse("collections:returned-mail")).content.decode()
    registry = client.get(reverse("parcels:parcel-list"), {"returned_mail": "yes"}).content.decode()
    assert "2 predios" in registry and ">P1<" in registry and ">P2<" in registry and ">P4<" not in registry
    detail = client.get(reverse("parcels:owner-detail", args=[mail_district["P1"].pk])).content.decode()
    assert "Sí: necesita una dirección nueva" in detail and bill.number in detail
    # a new address clears the flag (and dates it); confirming the one on file clears it too
    owner_update(acting_user=staff["authority"], owner=Owner.objects.get(owner_key="OWN-P1"), address_line1="Calle 6 #2")
    p2 = Owner.objects.get(owner_key="OWN-P2")
    assert p2.returned_mail
    client.force_login(staff["authority"])
    assert client.post(reverse("parcels:owner-address-confirm", args=[p2.pk])).status_code == 302
    assert not Owner.objects.filter(returned_mail=True).exists()
    assert Owner.objects.get(owner_key="OWN-P2").address_confirmed_on is not None
    assert ReturnedMail.objects.count() == 2  # the history stays


def test_the_verification_page_says_where_each_bill_was_sent(printed, client):
    paper = Bill.objects.select_related("document").get(charge__parcel__parcel_id="P1", charge__number=1)
    emailed = Bill.objects.select_related("document").get(charge__parcel__parcel_id="P3", charge__number=1)
    nowhere = Bill.objects.select_related("document").get(charge__parcel__parcel_id="P5", charge__number=1)
    page = client.get(reverse("verify:document", args=[paper.document.verification_code])).content.decode()
    assert "Por correo postal a Lajas PR 00667" in page and "Calle 5" not in page  # town and ZIP only
    page = client.get(reverse("verify:document", args=[emailed.document.verification_code])).content.decode()
    assert "Por correo electrónico a o•••3@e•••e.pr" in page and "own-p3@example.pr" not in page
    page = client.get(reverse("verify:document", args=[nowhere.document.verification_code])).content.decode()
    assert "no tenía dirección postal" in page


def test_an_older_bill_without_its_delivery_still_verifies_and_reads_its_printed_address():
    older = {"owner_name": "Ana Ruiz", "mailing_block": ["ANA RUIZ", "C/O JUAN RUIZ", "CALLE 5 #20", "LAJAS PR 00667"]}
    assert mailing.where_sent(older) is None  # the page says nothing it does not know
    delivery = mailing.bill_delivery(older)
    assert (delivery.method, delivery.care_of, delivery.line1, delivery.town, delivery.zip_code) == (
        "paper", "JUAN RUIZ", "CALLE 5 #20", "LAJAS", "00667")
    assert mailing.bill_delivery({"owner_name": "X", "mailing_block": []}).method == "none"
    assert mailing.mask_email("carmen@example.pr") == "c•••n@e•••e.pr"


def test_mailing_list_command_refuses_bad_input(db, tmp_path):
    code, _out, err = billing_cmd("mailing-list", "--fiscal-year", "1999-2000", "--installment", "1", "--out", str(tmp_path / "x.csv"))
    assert code == 1 and "1999-2000" in err and len(err.strip().splitlines()) == 1


def test_an_on_demand_bill_freezes_the_delivery_of_its_day(mail_district, staff):
    charge = Charge.objects.get(parcel__parcel_id="P3", number=2)
    with on_day(date(2026, 11, 20)):
        bill = bills.bill_issue(acting_user=staff["hacienda"], charge=charge, issued_on=date(2026, 11, 20))
    assert bill.snapshot["delivery"]["method"] == "email"


def test_confirmation_links_are_limited_per_owner_and_hour(db, make_user, client, django_capture_on_commit_callbacks):
    from billing.web.mailing import CONFIRM_LINKS_PER_HOUR

    owner = OwnerFactory(name="Hugo Paz", owner_key="OWN-H")
    client.force_login(make_user("hugo", "landowner", owner))
    with django_capture_on_commit_callbacks(execute=True):
        for n in range(CONFIRM_LINKS_PER_HOUR + 1):
            response = client.post(reverse("portal:delivery"), {"action": "email", "email-email": f"h{n}@example.pr"})
    assert len(mail.outbox) == CONFIRM_LINKS_PER_HOUR
    assert response.status_code == 200 and "muchos enlaces de confirmación" in response.content.decode()
    owner.refresh_from_db()
    assert owner.email == f"h{CONFIRM_LINKS_PER_HOUR - 1}@example.pr"  # the refused one changed nothing
