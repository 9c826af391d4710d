"""The tamper-evident chain of issued records (``billing.chain``) and what ``verify_books`` proves
with it: each issued record is a link of its series' chain, hashed as documented; a day close
records every series' head; a passing check leaves a checkpoint the next checks must match. Each
kind of tampering a superuser can do behind the triggers' back (``session_replication_role =
replica``) is found and named."""

from __future__ import annotations

import hashlib
import io
import json
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.db import connection

from billing import books, chain
from billing.models import Bill, BooksCheck, BooksCheckpoint, DayClose, IssuedDocument, LedgerEntry, Office, Receipt
from billing.services import books_checks, counter
from levy.models import ChainLink, Levy
from tests.billing import conftest as billing_fixtures
from tests.clock import on_day
from tests.commands import run_command
from tests.test_books import build_books, forge_file

district_1 = billing_fixtures.district_1
staff = billing_fixtures.staff


@pytest.fixture
def books_district(district_1, staff):
    build_books(staff)
    counter.day_close(acting_user=staff["supervisor"], office=Office.objects.get(code="LAJ"), day=date(2026, 7, 2),
                       counted_cash=Decimal("9180.00"), counted_checks=Decimal("0.00"))
    return district_1


def behind_the_triggers(sql: str, params: list | None = None) -> None:
    """What a superuser can do: replica mode skips every trigger (append-only, TRUNCATE guard,
    foreign keys)."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the test's queued FK checks, as tests/test_database_guard.py
        cursor.execute("SET session_replication_role = replica")
        try:
            cursor.execute(sql, params or [])
        finally:
            cursor.execute("SET session_replication_role = origin")


def findings() -> list[str]:
    return [str(f) for f in books.verify()]


def verify_books(*args: str) -> tuple[int, list[str]]:
    try:
        code, out, err = run_command("verify_books", "--no-record", *args)
    except SystemExit as exc:  # pragma: no cover - run_command reports the code itself
        return int(exc.code), []
    return code, out.splitlines()


def hand_hash(previous: str, content: dict) -> str:
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(previous.encode() + text.encode()).hexdigest()


# --- Clean books ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_issued_record_is_a_link_of_its_series(books_district):
    links = list(ChainLink.objects.order_by("series", "position").values_list("series", "position", "kind"))
    by_series: dict[str, list] = {}
    for series, position, kind in links:
        by_series.setdefault(series, []).append((position, kind))
    assert {series: len(items) for series, items in by_series.items()} == {
        "roll": 1, "correction 2026-2027": 2, "receipt LAJ 2026-2027": 5, "void": 2, "refund": 1, "bill 2026": 1,
        "certificate 2026": 1, "statement 2026": 1, "seizure_notice 2026": 1, "day_close LAJ": 1,
    }
    assert all([p for p, _k in items] == list(range(1, len(items) + 1)) for items in by_series.values())
    # receipt n is link n of its series
    for receipt in Receipt.objects.all():
        assert chain.link_of("receipt", receipt.pk).position == receipt.number
    assert books.verify() == []


@pytest.mark.django_db
def test_the_hash_is_sha256_of_the_previous_hash_and_the_sorted_key_json(books_district):
    receipt = Receipt.objects.get(number=2)
    first, second = (ChainLink.objects.get(series="receipt LAJ 2026-2027", position=n) for n in (1, 2))
    assert first.previous_hash == "0" * 64 and second.previous_hash == first.hash
    document = IssuedDocument.objects.get(receipt=receipt)
    payment = receipt.payment
    content = {  # what the receipt froze, read back by hand
        "kind": "receipt", "office": "LAJ", "fiscal_year": "2026-2027", "number": 2, "payment": payment.pk,
        "parcel": payment.parcel_id, "paid_on": "2026-10-15", "amount": "7000.21", "method": "cash", "reference": "",
        "collector": payment.collector_id, "snapshot": receipt.snapshot, "pdf_sha256": document.sha256,
    }
    assert document.sha256 == hashlib.sha256(bytes(document.pdf)).hexdigest()
    assert second.content_hash == hashlib.sha256(
        json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
    assert second.hash == hand_hash(first.hash, content)


@pytest.mark.django_db
def test_a_day_close_records_the_head_of_every_series(books_district, staff):
    close = DayClose.objects.get()
    link = chain.link_of("day_close", close.pk)
    heads = {series: ChainLink.objects.filter(series=series).order_by("-position").values_list("position", "hash").first()
             for series in ChainLink.objects.exclude(series="day_close LAJ").values_list("series", flat=True).distinct()}
    assert link.heads == {series: list(head) for series, head in heads.items()}
    assert link.heads["receipt LAJ 2026-2027"][0] == 5
    # A later receipt does not change what the close recorded.
    with on_day(date(2026, 7, 3)):
        counter.payment_record(acting_user=staff["collector"], parcel=Receipt.objects.get(number=1).payment.parcel,
                                amount=Decimal("1.00"), paid_on=date(2026, 7, 3))
    link.refresh_from_db()
    assert link.heads["receipt LAJ 2026-2027"][0] == 5
    assert ChainLink.objects.filter(series="receipt LAJ 2026-2027").count() == 6
    assert books.verify() == []


@pytest.mark.django_db
def test_the_final_roll_hash_is_on_its_bills(books_district):
    roll = chain.link_of("roll", Levy.objects.get(status="final").pk)
    assert roll.series == "roll" and roll.position == 1
    bill = Bill.objects.get()
    assert bill.snapshot["roll_hash"] == roll.hash
    from pypdf import PdfReader

    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(bytes(bill.document.pdf))).pages)
    assert roll.hash[:32] in text.replace("\n", "")


@pytest.mark.django_db
def test_existing_records_are_chained_in_number_order(books_district):
    """The data migration's backfill: the chain rebuilt from the records alone is the one issued."""
    before = list(ChainLink.objects.order_by("series", "position").values_list("series", "position", "kind", "record_id",
                                                                                 "hash"))
    behind_the_triggers("DELETE FROM levy_chainlink")
    assert chain.backfill() == len(before)
    after = list(ChainLink.objects.order_by("series", "position").values_list("series", "position", "kind", "record_id",
                                                                                "hash"))
    assert [row[:4] for row in after] == [row[:4] for row in before]
    assert books.verify() == []


@pytest.mark.django_db
def test_the_verification_page_shows_the_documents_place_in_its_chain(books_district, client):
    receipt = Receipt.objects.get(number=3)
    link = chain.link_of("receipt", receipt.pk)
    response = client.get(f"/verificar/{receipt.document.verification_code}/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "Recibos de la colecturía LAJ, 2026-2027" in page and "3 de 5" in page
    assert "receipt LAJ" not in page  # the series' internal name stays inside (issue 18)
    assert link.hash in page and link.previous_hash in page and "Cadena íntegra" in page


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_the_verification_page_says_where_the_chain_breaks(books_district, client):
    receipt = Receipt.objects.get(number=3)
    behind_the_triggers("UPDATE billing_receipt SET snapshot = jsonb_set(snapshot, '{amount}', '\"1.00\"') WHERE id = %s",
                        [receipt.pk])
    page = client.get(f"/verificar/{receipt.document.verification_code}/").content.decode()
    assert "La cadena se rompe en el eslabón 3" in page and "Cadena íntegra" not in page


# --- verify_books finds each kind of tampering ----------------------------------------------------


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_truncate_by_a_superuser_behind_the_triggers_is_found(books_district):
    assert verify_books()[0] == 0
    first = Receipt.objects.get(number=1)
    behind_the_triggers("TRUNCATE billing_receipt CASCADE")  # takes the stored documents with it
    code, lines = verify_books()
    assert code == 1
    assert "numbering: series receipt LAJ 2026-2027: last number issued 5, 0 records, 5 links in its chain" in lines
    assert (f"chain: series receipt LAJ 2026-2027 link 1 (receipt #{first.pk}): the receipt it chains is missing") in lines
    assert "chain: series bill 2026 link 1 (aviso AV-2026-000001): the record differs from what was chained" in (
        line.split(" (content hash")[0] for line in lines)


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_deleted_receipt_is_found(books_district):
    receipt = Receipt.objects.get(number=4)
    behind_the_triggers("DELETE FROM billing_issueddocument WHERE receipt_id = %s", [receipt.pk])
    behind_the_triggers("DELETE FROM billing_receipt WHERE id = %s", [receipt.pk])
    code, lines = verify_books()
    assert code == 1
    assert "receipts: series LAJ 2026-2027: missing numbers 4" in lines
    assert f"receipts: payment P{receipt.payment_id} (parcel P5) has no receipt" in lines
    assert "numbering: series receipt LAJ 2026-2027: last number issued 5, 4 records, 5 links in its chain" in lines
    assert f"chain: series receipt LAJ 2026-2027 link 4 (receipt #{receipt.pk}): the receipt it chains is missing" in lines


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_deleted_receipt_with_its_series_row_and_its_links_is_found_by_the_checkpoint(books_district, monkeypatch):
    """The thorough forger also lowers the series' last number and drops the chain's last link:
    the last checkpoint still holds the chain's length and head, and the receipts' totals."""
    monkeypatch.setattr(chain, "CHECKPOINT_SETTLE", timedelta(0))
    check = books_checks.books_check_run(acting_user=None, trigger=BooksCheck.Trigger.COMMAND)
    assert check.passed and BooksCheckpoint.objects.get().books_check == check
    receipt = Receipt.objects.get(number=5)
    link = chain.link_of("receipt", receipt.pk)
    behind_the_triggers("DELETE FROM billing_issueddocument WHERE receipt_id = %s", [receipt.pk])
    behind_the_triggers("DELETE FROM billing_receipt WHERE id = %s", [receipt.pk])
    behind_the_triggers("DELETE FROM levy_chainlink WHERE id = %s", [link.pk])
    behind_the_triggers("UPDATE billing_receiptseries SET last_number = 4")
    lines = findings()
    assert f"checkpoint: checkpoint {check.checkpoint.pk} of {check.started_at:%Y-%m-%d %H:%M}: series receipt LAJ " \
           f"2026-2027 had link 5 with hash {link.hash[:16]}…, it is now missing" in lines
    assert any(line.startswith(f"checkpoint: checkpoint {check.checkpoint.pk} of ") and ": receipts up to #" in line
               and ": was 5 (" in line and ", now 4 (" in line for line in lines), lines
    # a failing run leaves no checkpoint: the last good one stays the reference
    failed = books_checks.books_check_run(acting_user=None, trigger=BooksCheck.Trigger.COMMAND)
    assert not failed.passed and BooksCheckpoint.objects.count() == 1


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_an_edited_ledger_amount_is_found(books_district, monkeypatch):
    monkeypatch.setattr(chain, "CHECKPOINT_SETTLE", timedelta(0))
    check = books_checks.books_check_run(acting_user=None, trigger=BooksCheck.Trigger.COMMAND)
    entry = LedgerEntry.objects.get(kind="payment", payment__parcel__parcel_id="P1")
    behind_the_triggers("UPDATE billing_ledgerentry SET credit = 9179.00 WHERE id = %s", [entry.pk])
    code, lines = verify_books()
    assert code == 1
    assert f"ledger: payment P{entry.payment_id} (parcel P1, 9180.00), receipt surcharge 0.00: ledger has payment " \
           "1×9179.00, void 0×0, surcharge 0×0, surcharge reversal 0×0" in lines
    mark = check.checkpoint.marks["billing_ledgerentry"]
    # credits: payments 45130.21 + the voided payment's surcharge reversed 11.25 + the correction credits 25.00 + 25.00;
    # 26 entries: the correction of P1 raises both halves (two charges), that of P3 lowers both (two credits)
    assert f"checkpoint: checkpoint {check.checkpoint.pk} of {check.started_at:%Y-%m-%d %H:%M}: ledger entries up to #{mark}: " \
           f"was 26 (debits 116073.05, credits 45191.46), now 26 (debits 116073.05, credits 45190.46)" in lines


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_an_edited_stored_pdf_is_found_even_with_its_hash_rewritten(document_store, books_district):
    receipt = Receipt.objects.get(number=1)
    forged = b"%PDF-1.7 forged"
    forge_file(IssuedDocument.objects.get(receipt=receipt).pdf.name, forged)  # the file in the document store (issue 20)
    code, lines = verify_books()
    assert code == 1 and any(line.startswith(f"documents: receipt {receipt.display_number}: stored bytes hash to ")
                             for line in lines)
    behind_the_triggers("UPDATE billing_issueddocument SET sha256 = %s WHERE receipt_id = %s",
                        [hashlib.sha256(forged).hexdigest(), receipt.pk])
    code, lines = verify_books()
    assert code == 1
    assert [line.split(" (content hash")[0] for line in lines if line.startswith("chain:")] == [
        "chain: series receipt LAJ 2026-2027 link 1 (recibo LAJ-2026-2027-000001): the record differs from what was chained"
    ]


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_broken_chain_link_is_found_and_named(books_district):
    third = ChainLink.objects.get(series="receipt LAJ 2026-2027", position=3)
    behind_the_triggers("UPDATE levy_chainlink SET hash = %s WHERE id = %s", ["f" * 64, third.pk])
    code, lines = verify_books()
    assert code == 1
    assert lines == ["chain: series receipt LAJ 2026-2027 link 3 (recibo LAJ-2026-2027-000003): its hash ffffffffffffffff… "
                     "does not follow from the previous hash and its content"]
    # Recomputed to match, the link hides itself, but the next one no longer points at it.
    content = next(chain.records(connection.cursor(), "receipt", [third.record_id])).content
    behind_the_triggers("UPDATE levy_chainlink SET hash = %s WHERE id = %s",
                        [chain.link_hash(third.previous_hash, content), third.pk])
    assert verify_books() == (0, verify_books()[1])  # an unchanged record re-hashes to its own link: nothing broken
    behind_the_triggers("UPDATE levy_chainlink SET previous_hash = %s, hash = %s WHERE id = %s",
                        ["e" * 64, chain.link_hash("e" * 64, content), third.pk])
    code, lines = verify_books()
    assert lines == [f"chain: series receipt LAJ 2026-2027 link 3 (recibo LAJ-2026-2027-000003): its previous hash "
                     f"eeeeeeeeeeeeeeee… is not link 2's hash {third.previous_hash[:16]}…"]
    behind_the_triggers("DELETE FROM levy_chainlink WHERE id = %s", [third.pk])
    code, lines = verify_books()
    assert code == 1 and "chain: series receipt LAJ 2026-2027: link 3 is missing (the next link is 4)" in lines


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_chain_rewritten_after_a_day_close_is_found(books_district):
    """Re-hashing a whole series after an edit fixes the series itself, not the day close that
    recorded its head."""
    receipt = Receipt.objects.get(number=1)
    behind_the_triggers("UPDATE billing_receipt SET snapshot = jsonb_set(snapshot, '{amount}', '\"1.00\"') WHERE id = %s",
                        [receipt.pk])
    previous = chain.GENESIS
    with connection.cursor() as cursor:
        for link in ChainLink.objects.filter(series="receipt LAJ 2026-2027").order_by("position"):
            content = next(chain.records(cursor, "receipt", [link.record_id])).content
            new_hash = chain.link_hash(previous, content)
            behind_the_triggers("UPDATE levy_chainlink SET previous_hash = %s, content_hash = %s, hash = %s WHERE id = %s",
                                [previous, chain.content_hash(content), new_hash, link.pk])
            previous = new_hash
    close = chain.link_of("day_close", DayClose.objects.get().pk)
    recorded = close.heads["receipt LAJ 2026-2027"]
    assert [line for line in findings() if line.startswith("chain:")] == [
        f"chain: series day_close LAJ link 1: the day close recorded receipt LAJ 2026-2027 at link 5 with hash "
        f"{recorded[1][:16]}…, that link is now {previous[:16]}…"
    ]


@pytest.mark.django_db
def test_clean_books_pass_and_record_a_checkpoint_the_next_run_matches(books_district, monkeypatch):
    monkeypatch.setattr(chain, "CHECKPOINT_SETTLE", timedelta(0))
    code, out, err = run_command("verify_books")
    assert code == 0 and out.startswith("books balance"), out + err
    checkpoint = BooksCheckpoint.objects.get()
    totals = dict(checkpoint.totals)
    assert totals[f"payments up to #{checkpoint.marks['billing_payment']}"] == "5 (45130.21)"
    assert checkpoint.marks["chain"]["receipt LAJ 2026-2027"][0] == 5
    code, out, err = run_command("verify_books")
    assert code == 0, out + err
    assert BooksCheckpoint.objects.count() == 2


@pytest.mark.books_unchecked
@pytest.mark.django_db
def test_a_receipt_that_applies_more_than_its_payment_is_found(books_district):
    receipt = Receipt.objects.get(number=1)  # P1 paid 9180.00, all of it to its July installment
    assert receipt.snapshot["applications"][0]["principal_paid"] == "9180.00"
    behind_the_triggers("UPDATE billing_receipt SET snapshot = jsonb_set(snapshot, '{applications,0,principal_paid}', "
                        "'\"9280.00\"') WHERE id = %s", [receipt.pk])
    lines = findings()
    assert "receipts: receipt LAJ-2026-2027-000001: its applications add to 9280.00, more than the payment 9180.00" in lines
    assert [line.split(" (content hash")[0] for line in lines if line.startswith("chain:")] == [
        "chain: series receipt LAJ 2026-2027 link 1 (recibo LAJ-2026-2027-000001): the record differs from what was chained"
    ]


@pytest.mark.django_db
def test_the_worksheet_prints_the_final_rolls_hash(books_district, staff, client):
    roll = chain.link_of("roll", Levy.objects.get(status="final").pk)
    client.force_login(staff["hacienda"])
    page = client.get("/contribucion/2026-2027/hoja/").content.decode()
    assert f'<code class="hash">{roll.hash}</code>' in page
    assert "eslabón 1 de la cadena «roll»; impresa en cada aviso" in page


@pytest.mark.books_unchecked
@pytest.mark.django_db(transaction=True)
def test_two_issues_of_one_series_at_once_do_not_fork_the_chain():
    """The second issue waits for the first one's lock on the series, then links to its hash."""
    import threading
    import time

    from django.db import connections, transaction

    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def record(pk: int) -> chain.Record:
        return chain.Record(kind="refund", id=pk, series="test series", number=None, label=f"refund {pk}",
                            content={"kind": "refund", "id": pk}, issued=None)

    def first() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                chain._append(cursor, record(10**9 + 1))
                barrier.wait()
                time.sleep(1.0)  # the second one is at the lock meanwhile
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    def second() -> None:
        try:
            barrier.wait()
            with transaction.atomic(), connection.cursor() as cursor:
                chain._append(cursor, record(10**9 + 2))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    one, two = ChainLink.objects.filter(series="test series").order_by("position")
    assert (one.position, one.record_id, two.position, two.record_id) == (1, 10**9 + 1, 2, 10**9 + 2)
    assert two.previous_hash == one.hash and one.previous_hash == chain.GENESIS
