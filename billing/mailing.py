"""Issue 19, mailing (¶13 does not require a bill; people still expect one): how each bill was to
reach its owner, the print shop's mailing list and the order bulk printing puts the paper bills in.
Reads only; the writes (e-mails sent, returned mail) are ``billing.services.mailing``.

- ``delivery_of(owner)``: what a bill issued now freezes (``snapshots.BillDelivery``): paper to
  the postal address, e-mail to a confirmed address when the owner chose it, or ``none``.
- ``bill_delivery(snapshot)``: what a bill froze; a bill issued before delivery was frozen reads
  as paper, its address parsed from the mailing block it printed (so its place in the print
  order never changes either).
- The mailing list: one row per paper bill, sorted by ZIP, then the address (line 1, line 2,
  town), then the name and the cadastre number; bills with no postal address last. The counts
  per ZIP are a second CSV (``write_zip_counts``), so the list itself stays one table the print
  shop's or the post office's software can read. Bulk printing merges the paper bills in the same
  order (``print_order``), so the stack of envelopes and the list match line by line.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

from django.utils.translation import gettext as _

from levy.exports import safe_cell
from parcels.addresses import ZIP_PATTERN
from parcels.models import Owner

from .snapshots import BillDelivery

PAPER, EMAIL, NONE = "paper", "email", "none"
MAILING_COLUMNS = ("bill_number", "parcel_id", "name", "care_of", "address_line1", "address_line2", "town", "state", "zip")
ZIP_COUNT_COLUMNS = ("zip", "bills")
_LAST_LINE = re.compile(r"^(?P<town>.+?)\s+(?P<state>[A-Z]{2})\s+(?P<zip>\d{5}(?:-\d{4})?)$")


def delivery_of(owner: Owner) -> BillDelivery:
    """How a bill issued now reaches ``owner``: by e-mail when chosen (the database allows it only
    with a confirmed address), else on paper to the postal address, or ``none`` without one."""
    if owner.delivery == Owner.Delivery.EMAIL and owner.email and owner.email_confirmed_at is not None:
        return BillDelivery(method=EMAIL, name=owner.name, email=owner.email)
    if not owner.has_mailing_address:
        return BillDelivery(method=NONE, name=owner.name)
    return BillDelivery(method=PAPER, name=owner.name, care_of=owner.care_of, line1=owner.address_line1,
                        line2=owner.address_line2, town=owner.address_town, state=owner.address_state,
                        zip_code=owner.address_zip)


def _from_mailing_block(snapshot: dict[str, Any]) -> BillDelivery:
    """An older bill's address, read back from the USPS block it printed: name, [C/O …], line 1,
    [line 2], "TOWN ST 00000"."""
    block = [str(line) for line in snapshot.get("mailing_block") or []]
    name = block[0] if block else str(snapshot.get("owner_name", ""))
    match = _LAST_LINE.match(block[-1]) if len(block) >= 3 else None
    if match is None or not re.fullmatch(ZIP_PATTERN, match["zip"]):
        return BillDelivery(method=NONE, name=name)
    middle = block[1:-1]
    care_of = middle.pop(0)[4:].strip() if middle and middle[0].upper().startswith("C/O ") else ""
    return BillDelivery(method=PAPER, name=name, care_of=care_of, line1=middle[0] if middle else "",
                        line2=" ".join(middle[1:]), town=match["town"], state=match["state"], zip_code=match["zip"])


def bill_delivery(snapshot: dict[str, Any]) -> BillDelivery:
    """What the bill froze about its delivery (see the module's docstring for older bills)."""
    if snapshot.get("delivery"):
        return BillDelivery.from_json(snapshot["delivery"])
    return _from_mailing_block(snapshot)


def mask_email(email: str) -> str:
    """``carmen@example.pr`` → ``c•••n@e•••.pr``: enough for the owner to recognize, not to copy."""
    local, _at, domain = email.partition("@")
    host, _dot, tld = domain.rpartition(".")

    def mask(part: str) -> str:
        return part[:1] + "•••" + (part[-1:] if len(part) > 2 else "")

    return f"{mask(local)}@{mask(host)}.{tld}" if host else mask(local)


def where_sent(snapshot: dict[str, Any]) -> str | None:
    """The verification page's line (in the reader's language): where the bill was sent, with
    only the town and ZIP (public page) or the masked e-mail; ``None`` for a bill issued before
    delivery was frozen."""
    if not snapshot.get("delivery"):
        return None
    delivery = BillDelivery.from_json(snapshot["delivery"])
    if delivery.method == EMAIL:
        return _("Por correo electrónico a %(email)s") % {"email": mask_email(delivery.email)}
    if delivery.method == PAPER:
        return _("Por correo postal a %(town)s %(state)s %(zip)s") % {
            "town": delivery.town, "state": delivery.state, "zip": delivery.zip_code}
    return _("No se envió: el dueño no tenía dirección postal registrada")


@dataclass(frozen=True)
class MailingRow:
    """One paper bill of the mailing list, as it was addressed when issued."""

    bill_number: str
    parcel_id: str
    delivery: BillDelivery
    charge_id: int | None = None

    def sort_key(self) -> tuple:
        d = self.delivery
        return (d.method != PAPER, d.zip_code, d.line1.casefold(), d.line2.casefold(), d.town.casefold(), d.name.casefold(),
                self.parcel_id, self.bill_number)

    def as_csv(self) -> list[str]:
        d = self.delivery
        # names and addresses are typed by people: a leading "=" must not become a spreadsheet formula
        return [self.bill_number, self.parcel_id, *(safe_cell(text) for text in (d.name, d.care_of, d.line1, d.line2, d.town)),
                d.state, d.zip_code]


def mailing_rows(bills: Iterable[Any]) -> list[MailingRow]:
    """The paper bills among ``bills`` (``Bill`` rows with ``parcel`` loaded), in mailing order:
    ZIP, then address, then name and cadastre number; bills with no postal address last.
    Bills sent by e-mail are left out (they are not printed)."""
    rows = []
    for bill in bills:
        delivery = bill_delivery(bill.snapshot)
        if delivery.method != EMAIL:
            rows.append(MailingRow(bill_number=bill.number, parcel_id=bill.parcel.parcel_id, delivery=delivery,
                                   charge_id=bill.charge_id))
    return sorted(rows, key=MailingRow.sort_key)


def zip_counts(rows: Iterable[MailingRow]) -> list[tuple[str, int]]:
    """Bills per ZIP, in the list's order (presorted mail is counted by ZIP); ``""`` for no address."""
    counts = Counter(row.delivery.zip_code if row.delivery.method == PAPER else "" for row in rows)
    return sorted(counts.items(), key=lambda item: (item[0] == "", item[0]))


def write_mailing_list(rows: Iterable[MailingRow], handle: IO[str]) -> int:
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(MAILING_COLUMNS)
    count = 0
    for row in rows:
        writer.writerow(row.as_csv())
        count += 1
    return count


def write_zip_counts(rows: Iterable[MailingRow], handle: IO[str]) -> None:
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(ZIP_COUNT_COLUMNS)
    counted = zip_counts(rows)
    for zip_code, count in counted:
        writer.writerow([zip_code, count])
    writer.writerow(["total", sum(count for _zip, count in counted)])


def semester_rows(*, fiscal_year: str, number: int) -> list[MailingRow]:
    """The mailing list of installment ``number`` of ``fiscal_year``: every bill issued for it
    (bulk printing, or on demand before it), its paper ones in mailing order. With one bulk print
    of the whole semester it is that batch's list, and its parts hold the bills in this order."""
    from levy.models import FiscalYear

    from .errors import BillingError
    from .models import Bill

    if not FiscalYear.objects.filter(label=fiscal_year).exists():
        raise BillingError(_("Año fiscal desconocido «%(y)s».") % {"y": fiscal_year})
    if number not in (1, 2):
        raise BillingError(_("El plazo es 1 (julio) o 2 (enero)."))
    bills = Bill.objects.filter(charge__fiscal_year__label=fiscal_year, charge__number=number,
                                charge__kind="installment").select_related("parcel")
    return mailing_rows(bills.iterator(chunk_size=500))

