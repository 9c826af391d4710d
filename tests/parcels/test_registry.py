import re
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.urls import reverse

from parcels.models import Parcel, cuerdas_to_acres
from parcels.selectors import parcel_history
from parcels.services import acting, parcel_transfer, parcel_update


def test_cuerda_conversion_is_exact_to_four_places():
    # 1 cuerda = 3,930.395625 m2 / 4,046.8564224 m2 per acre = 0.97122…
    assert cuerdas_to_acres(Decimal("1")) == Decimal("0.9712")
    assert cuerdas_to_acres(Decimal("100")) == Decimal("97.1222")
    assert cuerdas_to_acres(Decimal("4046.8564224")) == Decimal("3930.3956")


@pytest.mark.django_db
def test_parcel_in_cuerdas_keeps_the_unit_typed(make_parcel, owner_a):
    parcel = make_parcel("C-1", owner_a, gravity="100", pumped="10", unit="cuerda")
    parcel.refresh_from_db()
    assert parcel.area_unit == "cuerda"
    assert parcel.gravity_area_entered == Decimal("100") and parcel.gravity_acres == Decimal("97.1222")
    assert parcel.pumped_acres == Decimal("9.7122")


@pytest.mark.django_db
def test_database_refuses_bad_parcels(parcel_a):
    with pytest.raises(IntegrityError), transaction.atomic():
        Parcel.objects.filter(pk=parcel_a.pk).update(credit_percent=Decimal("101"))
    with pytest.raises(IntegrityError), transaction.atomic():
        Parcel.objects.filter(pk=parcel_a.pk).update(gravity_acres=0, pumped_acres=0)


@pytest.mark.django_db
def test_history_records_who_changed_what(parcel_a, users):
    parcel_update(acting_user=users["authority"], parcel=parcel_a, area_unit="acre", gravity_area=Decimal("50"),
                  pumped_area=Decimal("0"), inclusion="permanent", water_since=date(2000, 1, 1), credit_percent=Decimal("25"))
    events = list(parcel_history(parcel=parcel_a))
    update = next(e for e in events if e.pgh_label == "update")
    assert update.pgh_context["username"] == users["authority"].username
    before, after = update.pgh_diff["gravity_acres"]
    assert (Decimal(str(before)), Decimal(str(after))) == (Decimal("42.5"), Decimal("50"))


@pytest.mark.django_db
def test_history_catches_bulk_and_raw_updates(parcel_a, users):
    with acting(users["hacienda"]):
        Parcel.objects.filter(pk=parcel_a.pk).update(inclusion="excluded")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE parcels_parcel SET credit_percent = 5 WHERE id = %s", [parcel_a.pk])
    updates = [e for e in parcel_history(parcel=parcel_a) if e.pgh_label == "update"]
    # Both writes bypass the ORM's save(); the triggers still record each one.
    assert sorted(e.pgh_diff.popitem()[0] for e in updates) == ["credit_percent", "inclusion"]
    assert all(e.pgh_context["username"] == users["hacienda"].username for e in updates)


@pytest.mark.django_db
def test_transfer_moves_the_parcel_to_the_new_owner(parcel_a, owner_b, users):
    transfer = parcel_transfer(acting_user=users["authority"], parcel=parcel_a, to_owner=owner_b, effective_on=date(2026, 1, 15))
    parcel_a.refresh_from_db()
    assert parcel_a.owner == owner_b and transfer.from_owner.owner_key == "OWN-A"
    with pytest.raises(ValidationError):
        parcel_transfer(acting_user=users["authority"], parcel=parcel_a, to_owner=owner_b, effective_on=date(2026, 1, 16))


@pytest.mark.django_db
def test_create_user_command(owner_a, capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("Una-Clave-Larga-2026\n"))
    call_command("create_user", "maria", "--role", "landowner", "--owner", "OWN-A", "--email", "m@example.pr", "--password-stdin")
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username="maria")
    assert list(user.groups.values_list("name", flat=True)) == ["landowner"]
    assert user.owner_account.owner == owner_a and user.check_password("Una-Clave-Larga-2026")
    with pytest.raises(CommandError, match="unknown role"):
        call_command("create_user", "pepe", "--role", "king")
    with pytest.raises(CommandError, match="unknown owner"):
        call_command("create_user", "pepe", "--role", "landowner", "--owner", "NOPE")
    assert not get_user_model().objects.filter(username="pepe").exists()


@pytest.mark.django_db
def test_parcel_list_filters_and_query_budget(client, users, parcel_a, parcel_b, django_assert_max_num_queries):
    client.force_login(users["hacienda"])
    with django_assert_max_num_queries(9):  # 8, and the second-factor device of the session
        response = client.get(reverse("parcels:parcel-list"), {"irrigation": "pumped"})
    assert response.status_code == 200
    content = response.content.decode()
    assert "LAJ-B1" in content and "LAJ-A1" not in content
    response = client.get(reverse("parcels:parcel-list"), {"q": "carmen"})
    assert "LAJ-A1" in response.content.decode() and "LAJ-B1" not in response.content.decode()
    for value, shown, hidden in [("yes", "LAJ-A1", "LAJ-B1"), ("no", "LAJ-B1", "LAJ-A1")]:  # parcel_a has a 25 % credit
        content = client.get(reverse("parcels:parcel-list"), {"has_credit": value}).content.decode()
        assert shown in content and hidden not in content, value
    content = client.get(reverse("parcels:parcel-list"), {"o": "-gravity_acres"}).content.decode()
    assert content.index("LAJ-A1") < content.index("LAJ-B1")
    assert ">Acres por gravedad (descendente)</option>" in content and "Gravity acres" not in content and "Desconocido" not in content


@pytest.mark.django_db
def test_seed_demo_refuses_production(settings):
    settings.DEMO_DATA_ALLOWED = False
    with pytest.raises(CommandError, match="production"):
        call_command("seed_demo")


@pytest.mark.django_db
def test_seed_demo_builds_a_district_with_a_finalized_levy_and_payments(capsys, settings):
    from billing.models import Payment
    from levy.models import Levy

    call_command("seed_demo", "--parcels", "80")
    out = capsys.readouterr().out
    assert "terrateniente" in out and "Lajas-2026-landowner" in out
    # each demo staff user has an app with the fixed secret printed beside the password
    from base64 import b32encode

    from django_otp.plugins.otp_totp.models import TOTPDevice

    from parcels.second_factor import demo_totp_key

    device = TOTPDevice.objects.get(user__username="hacienda", confirmed=True)
    assert device.key == demo_totp_key("hacienda")
    secret = b32encode(bytes.fromhex(demo_totp_key("hacienda"))).decode()
    assert re.search(rf"hacienda\s+Lajas-2026-hacienda\s+{secret}\s+\(hacienda\)", out)
    assert re.search(r"terrateniente\s+Lajas-2026-landowner\s+\(password only\)", out)
    assert not TOTPDevice.objects.filter(user__username="terrateniente").exists()
    assert Parcel.objects.count() == 82  # 80 imported, 2 registered by hand (issue 18)
    assert Levy.objects.get(fiscal_year__label="2026-2027").status == "final"
    assert Payment.objects.filter(parcel__parcel_id="LAJ-000001").exists()
    assert not Payment.objects.filter(parcel__parcel_id="LAJ-000002").exists()
    # the demo staff sign with a name and a title; the demo receipts say who received them by name
    from parcels.officers import officer_signature

    staff = get_user_model().objects
    assert officer_signature(staff.get(username="hacienda")) == ("Gladys Montalvo Seda", "Directora de Recaudaciones")
    assert officer_signature(staff.get(username="colector")) == ("Ana Rivera Soto", "Colectora de Rentas Internas")
    assert officer_signature(staff.get(username="auditor")) == ("Noemí Cintrón Padilla", "Auditora Interna")
    # the season is recorded on seeding day, so its payments are back-dated: by the demo supervisor,
    # with the reason on each receipt (issue 11, finding 7)
    first = Payment.objects.first()
    assert first.backdated and first.backdate_reason == "Datos de demostración"
    assert (first.receipt.snapshot["collector_name"], first.receipt.snapshot["backdate_reason"]) == (
        "Edwin Figueroa Ramos", "Datos de demostración")
    # `make run` shows which step of the demo it is at, and the address the receipts link to.
    steps = [line for line in out.splitlines() if line.startswith("demo ")]
    assert [line.split(":")[0] for line in steps] == [f"demo {n} of 5" for n in range(1, 6)]
    assert steps[0].startswith("demo 1 of 5: the parcel registry (80 parcels)... 80 parcels (")
    # step 5 records the English owner's and the bank's (issue 19)
    season = Payment.objects.exclude(parcel__parcel_id="LAJ-000082").exclude(office__kind="bank").count()
    assert f"linking to {settings.SITE_URL}... {season} payments recorded (" in steps[3]
    assert steps[4].startswith("demo 5 of 5: the documents a newcomer looks for... built; where each one is:")
    call_command("seed_demo", "--parcels", "80")  # a second run changes nothing
    assert Parcel.objects.count() == 82
    again = capsys.readouterr().out
    assert "demo parcels left as they are" in again
    assert "demo 5 of 5: the documents a newcomer looks for... left as they are; where each one is:" in again
    assert again.splitlines()[-6:] == out.splitlines()[-6:]  # where each one is, printed again


def _pdf_text(data: bytes) -> str:
    from io import BytesIO

    from pypdf import PdfReader

    return " ".join(" ".join((page.extract_text() or "").split()) for page in PdfReader(BytesIO(bytes(data))).pages)


@pytest.mark.django_db
def test_seed_demo_reaches_every_document(capsys):
    """Issue 18: the demo holds, each with its document, what a newcomer could not reach: a parcel
    at 100 % credit with its ¶9 notice, a seizure case past its 30-day term (¶14: the auction
    notice can be issued today), an English-language owner's bill, receipt and estado, a voided
    receipt (¶13), a roll correction (¶9) and an office closure (¶12); the summary says where."""
    from django.utils import timezone

    from billing.models import AccountStatement, Bill, Charge, LastDayMove, OfficeClosure, PaymentVoid, Receipt, SeizureCase
    from billing.services.collection import seizure_step_issue
    from levy.models import RollCorrection

    call_command("seed_demo", "--parcels", "80")
    out = capsys.readouterr().out
    where = {line[2:].split(":")[0]: line for line in out.splitlines() if line.startswith("  ")}
    today = timezone.localdate()
    # ¶9: the demo landowner's third parcel, at 100 % credit: its yearly notice, issued at finalization
    zero = Bill.objects.get(snapshot__nothing_to_pay=True)
    assert (zero.parcel.parcel_id, zero.parcel.owner.owner_key, zero.parcel.credit_percent) == ("LAJ-000081", "DEMO-LANDOWNER", 100)
    assert zero.issued_on == date(2026, 6, 26) and zero.parcel.owner.accounts.get().user.username == "terrateniente"
    assert "Nada que pagar en el año fiscal 2026-2027." in _pdf_text(zero.document.pdf)
    assert not Charge.objects.filter(parcel=zero.parcel).exists()
    assert f"LAJ-000081 (Carmen Irizarry Vélez, user terrateniente): notice {zero.number}" in where["100 % credit, nothing to pay (¶9)"]
    # ¶14: LAJ-000002's notice 40 days ago, its term run, the certificate after it; the auction is next
    case = SeizureCase.objects.get(status="open")
    notice, certificate = case.steps.order_by("pk")
    assert case.parcel.parcel_id == "LAJ-000002" and (notice.kind, certificate.kind) == ("notice", "certificate")
    assert notice.issued_on == today - timedelta(days=40) and notice.term_ends < certificate.issued_on < today
    assert bytes(notice.pdf).startswith(b"%PDF") and bytes(certificate.pdf).startswith(b"%PDF")
    assert f"LAJ-000002: {notice.number}, {certificate.number} (term ended {notice.term_ends:%d/%m/%Y})" in (
        where["seizure case, 30-day term run (¶14)"])
    auction = seizure_step_issue(acting_user=get_user_model().objects.get(username="hacienda"), parcel=case.parcel, kind="auction")
    assert auction.number.startswith("AS-") and bytes(auction.pdf).startswith(b"%PDF")
    # the English-language owner: her receipt, bill and estado, the bill and estado in English
    ellison = get_user_model().objects.get(username="mellison").owner_account.owner
    assert (ellison.name, ellison.preferred_language) == ("Margaret Ellison", "en")
    parcel = ellison.parcels.get()
    assert parcel.parcel_id == "LAJ-000082"
    receipt = Receipt.objects.get(payment__parcel=parcel)
    assert receipt.payment.backdated and bytes(receipt.document.pdf).startswith(b"%PDF")
    bill = Bill.objects.get(parcel=parcel)
    assert bill.charge.number == 2 and "Total to pay" in (bill_text := _pdf_text(bill.document.pdf))
    assert "(787) 555-0134" in bill_text  # ¶13: the office the bill names, with the demo office's phone
    estado = AccountStatement.objects.get(parcel=parcel, channel="portal")
    assert "Account statement" in _pdf_text(estado.document.pdf)
    assert f"LAJ-000082 (Margaret Ellison, user mellison): bill {bill.number}, receipt {receipt.display_number}, estado {estado.number}" in (
        where["English-language owner"])
    # ¶13: a check the bank returned, voided by the supervisor; its receipt stays, stamped ANULADO
    void = PaymentVoid.objects.get(payment__method="check")  # (the other: the bank's NSF return, below)
    assert (void.payment.method, void.voided_by.username, void.voided_on) == ("check", "supervisor", today)
    assert f"receipt {void.payment.receipt.display_number}" in where["voided receipt (¶13)"]
    # ¶9: a correction lowering a paid line by 10 %: the July half's overpayment goes to the January half
    correction = RollCorrection.objects.numbered().get()
    assert correction.om_charge_delta.amount == -(correction.roll_line.om_charge * Decimal("0.10")).quantize(Decimal("0.01"))
    assert correction.roll_line.parcel.payments.exists()
    assert f"{correction.roll_line.parcel_code}: correction no. 1 of the 2026-2027 roll" in where["roll correction (¶9)"]
    # ¶12: the storm of the July half's last day: every July half's last day moved to the next open day
    closure = OfficeClosure.objects.get()
    july = Charge.objects.filter(kind="installment", number=1, fiscal_year__label="2026-2027")
    assert set(july.values_list("last_day_to_pay", flat=True)) == {closure.day}
    moved = LastDayMove.objects.filter(closure=closure)
    assert moved.count() == july.count() and all(move.last_day > closure.day for move in moved)
    assert f"{closure.day:%d/%m/%Y}, {moved.count()} last days moved" in where["office closure (¶12)"]
    # ¶13 (issue 19): Banco Popular's file (two applied, one exception) and its return voiding the second
    from billing.models import BankFile

    sent, returned = BankFile.objects.order_by("pk")
    assert (sent.applied_count, sent.exception_count, returned.returned_count) == (2, 1, 1)
    bounced = returned.lines.get().payment
    assert bounced.office.code == "BPPR" and bounced.void.voided_on == today and bounced.receipt.display_number.startswith("BPPR-")
    assert f"{sent.original_name} (2 applied, 1 exception(s), 0 returned)" in where["bank payment files (¶13)"]
    # issue 19's registers: the bounced check's day closed $5.00 short in cash, its receipt reprinted (a logged COPIA)
    from billing import registers
    from billing.models import DayClose, ReprintLog

    close = DayClose.objects.get(office=void.payment.office, day=void.payment.paid_on)
    assert close.day == void.payment.paid_on and "Faltan $5.00" in close.explanation
    reprint = ReprintLog.objects.get()
    assert (reprint.document.number, reprint.printed_by.username) == (void.payment.receipt.display_number, "supervisor")
    assert registers.register_build("reprints", today, today).rows[0][3] == reprint.document.number
    assert f"(the COPIA of receipt {reprint.document.number})" in where["registers for auditors (issue 19)"]
