"""What an issued document froze, as one typed, frozen schema: the receipt (¶9, ¶13), the bill
(¶9, ¶12) and the debt certificate (¶11). Services build these and store ``to_json()`` in the
document's ``snapshot`` field; documents and pages read them back with ``from_json()``.

The stored JSON keeps the keys and formats it always had (amounts as strings of dollars, dates
ISO), so rows issued before this schema read the same; keys that old rows lack read as empty."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from .accounts import Statement
from .wording import basis_text, line_label, name_from_json, name_to_json


def _dec(value: Any) -> Decimal | None:
    return None if value is None or value == "" else Decimal(str(value))


def _day(value: Any) -> date | None:
    return date.fromisoformat(value) if value else None


def _str(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def _iso(value: date | None) -> str | None:
    return None if value is None else value.isoformat()


# --- Receipt -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReceiptApplication:
    """¶9: what one payment paid on one charge, with the roll's figures of that charge's year."""

    description: str
    fiscal_year: str
    number: int | None
    kind: str
    om_charge: Decimal | None  # the parcel's O&M charge for the whole fiscal year (¶6, ¶9)
    credit_percent: Decimal | None  # ¶7
    credit: Decimal | None  # the year's credit for ceded water rights (¶7, ¶9)
    net: Decimal | None  # the year's net charge, split in two installments (¶12)
    principal: Decimal  # this charge (the installment)
    due_date: date | None
    last_day_to_pay: date | None
    surcharge: Decimal  # surcharge paid by this payment (¶12)
    surcharge_basis: str
    principal_paid: Decimal
    balance_after: Decimal
    surcharge_runs: tuple = ()  # ¶12: the basis as structured runs (wording.surcharge_runs); none on older receipts
    corrections: tuple[int, ...] = ()  # ¶9: the numbers of the roll corrections in om_charge/credit/net
    # The stored facts of its name (billing.models.charge_names; none on receipts frozen before them).
    correction: int | None = None
    reason: str = ""
    water_month: str = ""
    acre_feet: Decimal | None = None

    @property
    def paid(self) -> Decimal:
        return self.surcharge + self.principal_paid

    @property
    def label(self) -> str:
        """The charge's name in the reader's language, from the frozen fields (``wording.charge_label``)."""
        return line_label(self)

    @property
    def basis(self) -> str:
        """How the surcharge was counted, in the reader's language (``wording.basis_text``)."""
        return basis_text(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "fiscal_year": self.fiscal_year,
            "number": self.number,
            "kind": self.kind,
            "om_charge": _str(self.om_charge),
            "credit_percent": _str(self.credit_percent),
            "credit": _str(self.credit),
            "net": _str(self.net),
            "principal": str(self.principal),
            "due_date": _iso(self.due_date),
            "last_day_to_pay": _iso(self.last_day_to_pay),
            "surcharge": str(self.surcharge),
            "surcharge_basis": self.surcharge_basis,
            "surcharge_runs": [list(run) for run in self.surcharge_runs],
            "corrections": list(self.corrections),
            "principal_paid": str(self.principal_paid),
            "balance_after": str(self.balance_after),
            **name_to_json(self),
        }

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> ReceiptApplication:
        return cls(
            description=item["description"], fiscal_year=item["fiscal_year"], number=item.get("number"), kind=item.get("kind", ""),
            om_charge=_dec(item.get("om_charge")), credit_percent=_dec(item.get("credit_percent")), credit=_dec(item.get("credit")),
            net=_dec(item.get("net")), principal=Decimal(item["principal"]), due_date=_day(item.get("due_date")),
            last_day_to_pay=_day(item.get("last_day_to_pay")), surcharge=Decimal(item["surcharge"]),
            surcharge_basis=item.get("surcharge_basis", ""), principal_paid=Decimal(item["principal_paid"]),
            balance_after=Decimal(item["balance_after"]),
            surcharge_runs=tuple(tuple(run) for run in item.get("surcharge_runs", ())),
            corrections=tuple(item.get("corrections", ())),
            **name_from_json(item),
        )


@dataclass(frozen=True)
class ReceiptSnapshot:
    """¶9, ¶13: the receipt as issued: the parcel and payer, the office, the payment, what it paid
    on each charge and the account right after it."""

    parcel_id: str
    owner_name: str
    owner_key: str
    gravity_acres: Decimal
    pumped_acres: Decimal
    equivalent_acres: Decimal
    office_code: str
    office_name: str
    collector: str
    paid_on: date
    amount: Decimal
    method: str
    reference: str
    applications: tuple[ReceiptApplication, ...]
    credit_balance: Decimal
    total_due_after: Decimal
    total_balance_after: Decimal
    tendered: Decimal | None = None  # cash handed over (cash payments only), and the change given
    change: Decimal | None = None
    # "Recibido por": the collector's full name as it was at issue (receipts issued before it was
    # frozen have only the username, ``collector``, and print that).
    collector_name: str = ""
    # A back-dated payment (issue 11, finding 7): the supervisor's reason and the day it was
    # recorded; empty on every other receipt and on receipts issued before the rule.
    backdate_reason: str = ""
    recorded_on: date | None = None
    # The owner's document language at issue (``Owner.preferred_language``, "es"/"en"): the PDF
    # is written in it; receipts issued before it was frozen have none and were written in Spanish.
    language: str = ""

    @property
    def received_by(self) -> str:
        return self.collector_name or self.collector

    @property
    def backdated(self) -> bool:
        return self.recorded_on is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "parcel_id": self.parcel_id,
            "owner_name": self.owner_name,
            "owner_key": self.owner_key,
            "gravity_acres": str(self.gravity_acres),
            "pumped_acres": str(self.pumped_acres),
            "equivalent_acres": str(self.equivalent_acres),
            "office": {"code": self.office_code, "name": self.office_name},
            "collector": self.collector,
            "collector_name": self.collector_name,
            "paid_on": self.paid_on.isoformat(),
            "amount": str(self.amount),
            "method": self.method,
            "reference": self.reference,
            "tendered": None if self.tendered is None else str(self.tendered),
            "change": None if self.change is None else str(self.change),
            "applications": [application.to_json() for application in self.applications],
            "credit_balance": str(self.credit_balance),
            "total_due_after": str(self.total_due_after),
            "total_balance_after": str(self.total_balance_after),
            "backdate_reason": self.backdate_reason,
            "recorded_on": _iso(self.recorded_on),
            "language": self.language,
        }

    @classmethod
    def from_json(cls, snap: dict[str, Any]) -> ReceiptSnapshot:
        return cls(
            parcel_id=snap["parcel_id"], owner_name=snap["owner_name"], owner_key=snap.get("owner_key", ""),
            gravity_acres=Decimal(snap["gravity_acres"]), pumped_acres=Decimal(snap["pumped_acres"]),
            equivalent_acres=Decimal(snap["equivalent_acres"]), office_code=snap["office"]["code"],
            office_name=snap["office"]["name"], collector=snap.get("collector", ""), paid_on=date.fromisoformat(snap["paid_on"]),
            amount=Decimal(snap["amount"]), method=snap["method"], reference=snap.get("reference", ""),
            applications=tuple(ReceiptApplication.from_json(item) for item in snap.get("applications", [])),
            credit_balance=Decimal(snap["credit_balance"]), total_due_after=Decimal(snap["total_due_after"]),
            total_balance_after=Decimal(snap["total_balance_after"]),
            tendered=None if snap.get("tendered") is None else Decimal(snap["tendered"]),
            change=None if snap.get("change") is None else Decimal(snap["change"]),
            collector_name=snap.get("collector_name", ""),
            backdate_reason=snap.get("backdate_reason", ""), recorded_on=_day(snap.get("recorded_on")),
            language=snap.get("language", ""),
        )


# --- Bill --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BillOwedLine:
    """¶12, ¶13: one charge that the bill's *total a pagar* pays, as of the bill's date: an
    installment overdue with its surcharge so far, or the billed installment itself (``billed``)."""

    fiscal_year: str
    number: int | None
    kind: str
    description: str
    due_date: date
    last_day_to_pay: date
    principal_due: Decimal
    surcharge_due: Decimal
    periods: int  # ¶12: surcharge periods begun by the bill's date
    balance: Decimal
    billed: bool = False
    surcharge_groups: tuple[tuple[int, str], ...] = ()  # ¶12: runs of (months, unpaid principal)
    # The stored facts of its name (billing.models.charge_names; none on bills frozen before them).
    correction: int | None = None
    reason: str = ""
    water_month: str = ""
    acre_feet: Decimal | None = None

    @property
    def label(self) -> str:
        """The charge's name in the reader's language, from the frozen fields (``wording.charge_label``)."""
        return line_label(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "surcharge_groups": [[months, unpaid] for months, unpaid in self.surcharge_groups],
            "fiscal_year": self.fiscal_year, "number": self.number, "kind": self.kind, "description": self.description,
            "due_date": self.due_date.isoformat(), "last_day_to_pay": self.last_day_to_pay.isoformat(),
            "principal_due": str(self.principal_due), "surcharge_due": str(self.surcharge_due), "periods": self.periods,
            "balance": str(self.balance), "billed": self.billed, **name_to_json(self),
        }

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> BillOwedLine:
        return cls(
            fiscal_year=item["fiscal_year"], number=item.get("number"), kind=item.get("kind", ""),
            description=item.get("description", ""), due_date=date.fromisoformat(item["due_date"]),
            last_day_to_pay=date.fromisoformat(item["last_day_to_pay"]), principal_due=Decimal(item["principal_due"]),
            surcharge_due=Decimal(item["surcharge_due"]), periods=int(item.get("periods", 0)), balance=Decimal(item["balance"]),
            billed=bool(item.get("billed")),
            surcharge_groups=tuple((int(months), str(unpaid)) for months, unpaid in item.get("surcharge_groups", [])),
            **name_from_json(item),
        )


@dataclass(frozen=True)
class BillDelivery:
    """Issue 19: how a bill was to reach its owner, chosen when it was issued (``Owner.delivery``):
    ``paper`` to the postal address (its parts, for the mailing list and the print order),
    ``email`` to the confirmed address, or ``none`` when paper was chosen but the owner had no
    postal address. Bills issued before this was frozen have none (``BillSnapshot.delivery``)."""

    method: str  # "paper" | "email" | "none"
    name: str = ""
    care_of: str = ""
    line1: str = ""
    line2: str = ""
    town: str = ""
    state: str = ""
    zip_code: str = ""
    email: str = ""

    def to_json(self) -> dict[str, str]:
        return {"method": self.method, "name": self.name, "care_of": self.care_of, "line1": self.line1, "line2": self.line2,
                "town": self.town, "state": self.state, "zip": self.zip_code, "email": self.email}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BillDelivery:
        return cls(method=str(data.get("method") or "none"), name=data.get("name", ""), care_of=data.get("care_of", ""),
                   line1=data.get("line1", ""), line2=data.get("line2", ""), town=data.get("town", ""),
                   state=data.get("state", ""), zip_code=data.get("zip", ""), email=data.get("email", ""))


@dataclass(frozen=True)
class BillOffice:
    """¶13: the Collector's office printed on a bill (where to pay), as its record read when the
    bill was issued: the return address block (USPS capitals), phone, hours and ways to pay in
    both languages (the bill prints the one it is issued in)."""

    code: str
    name: str
    address_block: tuple[str, ...]
    phone: str = ""
    hours_es: str = ""
    hours_en: str = ""
    ways_to_pay_es: str = ""
    ways_to_pay_en: str = ""

    def hours(self, lang: str) -> str:
        return (self.hours_en or self.hours_es) if lang == "en" else (self.hours_es or self.hours_en)

    def ways_to_pay(self, lang: str) -> str:
        return (self.ways_to_pay_en or self.ways_to_pay_es) if lang == "en" else (self.ways_to_pay_es or self.ways_to_pay_en)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code, "name": self.name, "address_block": list(self.address_block), "phone": self.phone,
            "hours_es": self.hours_es, "hours_en": self.hours_en, "ways_to_pay_es": self.ways_to_pay_es,
            "ways_to_pay_en": self.ways_to_pay_en,
        }

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> BillOffice:
        return cls(
            code=item.get("code", ""), name=item.get("name", ""), address_block=tuple(item.get("address_block", [])),
            phone=item.get("phone", ""), hours_es=item.get("hours_es", ""), hours_en=item.get("hours_en", ""),
            ways_to_pay_es=item.get("ways_to_pay_es", ""), ways_to_pay_en=item.get("ways_to_pay_en", ""),
        )


@dataclass(frozen=True)
class BillSnapshot:
    """¶9, ¶12: what a bill prints, frozen as of its issue date: the roll's figures of the parcel,
    the installment and its account as of that day."""

    parcel_id: str
    owner_name: str
    owner_key: str
    gravity_acres: Decimal
    pumped_acres: Decimal
    equivalent_acres: Decimal
    fiscal_year: str
    number: int | None
    description: str
    om_charge: Decimal
    credit_percent: Decimal
    credit: Decimal
    net: Decimal
    first_installment: Decimal
    second_installment: Decimal
    principal: Decimal
    due_date: date
    last_day_to_pay: date
    as_of: date
    surcharge: Decimal
    surcharge_groups: tuple[tuple[int, str], ...]  # ¶12: runs of (months, unpaid principal)
    surcharge_rate: Decimal
    grace_days: int
    paid: Decimal
    balance: Decimal
    total_due: Decimal
    # ¶11, ¶12: the installments' actual due dates (a late roll's differ from July 1 and January 1);
    # bills frozen before they were recorded have none and print "1 de julio y 1 de enero".
    first_due: date | None = None
    second_due: date | None = None
    roll_hash: str = ""  # the final roll's hash in its chain (billing.chain), printed on the bill
    # ¶12, ¶13: the one amount to pay, the last day it holds (rules.amount_to_pay), and the
    # charges it pays. Bills frozen before these were recorded have none and print as before.
    # Bills issued before 2026-12 (issue 18) froze the account's total due plus this installment;
    # later ones every charge up to and including this installment in payment order, and
    # ``later_due`` (None on the earlier ones) what charges after it already owed that day.
    amount_to_pay: Decimal | None = None
    pay_by: date | None = None
    owed: tuple[BillOwedLine, ...] = ()
    # The owner's mailing block (parcels.Owner.mailing_block) when billed, for the envelope window;
    # the language the bill was issued in; the Collector's office it names.
    mailing_block: tuple[str, ...] = ()
    language: str = ""
    office: BillOffice | None = None
    corrections: tuple[int, ...] = ()  # ¶9: the numbers of the roll corrections in om_charge … second_installment
    later_due: Decimal | None = None
    # Issue 19, ¶13: the charge's RF payment reference (billing.references) and the bank details a
    # transfer goes to ({bank, account, routing}); bills frozen before them have neither.
    payment_reference: str = ""
    transfer: dict[str, str] | None = None
    delivery: BillDelivery | None = None  # issue 19: paper or e-mail, as chosen at issue; none on older bills

    @property
    def late(self) -> bool:
        """¶12: issued after the installment's last day to pay: it is delinquent on the bill's date."""
        return self.as_of > self.last_day_to_pay

    @property
    def delinquent_from(self) -> date:
        """¶12: the installment's first delinquent day, the day after its last day to pay."""
        return date.fromordinal(self.last_day_to_pay.toordinal() + 1)

    def to_json(self) -> dict[str, Any]:
        return {
            "corrections": list(self.corrections),
            **({"later_due": str(self.later_due)} if self.later_due is not None else {}),
            **({"payment_reference": self.payment_reference, "transfer": self.transfer} if self.payment_reference else {}),
            **({"delivery": self.delivery.to_json()} if self.delivery is not None else {}),
            "amount_to_pay": _str(self.amount_to_pay),
            "pay_by": _iso(self.pay_by),
            "owed": [line.to_json() for line in self.owed],
            "mailing_block": list(self.mailing_block),
            "language": self.language,
            "office": self.office.to_json() if self.office else None,
            "parcel_id": self.parcel_id,
            "owner_name": self.owner_name,
            "owner_key": self.owner_key,
            "gravity_acres": str(self.gravity_acres),
            "pumped_acres": str(self.pumped_acres),
            "equivalent_acres": str(self.equivalent_acres),
            "fiscal_year": self.fiscal_year,
            "number": self.number,
            "description": self.description,
            "om_charge": str(self.om_charge),
            "credit_percent": str(self.credit_percent),
            "credit": str(self.credit),
            "net": str(self.net),
            "first_installment": str(self.first_installment),
            "second_installment": str(self.second_installment),
            "first_due": self.first_due.isoformat() if self.first_due else None,
            "second_due": self.second_due.isoformat() if self.second_due else None,
            "roll_hash": self.roll_hash,
            "principal": str(self.principal),
            "due_date": self.due_date.isoformat(),
            "last_day_to_pay": self.last_day_to_pay.isoformat(),
            "as_of": self.as_of.isoformat(),
            "surcharge": str(self.surcharge),
            "surcharge_groups": [[months, unpaid] for months, unpaid in self.surcharge_groups],
            "surcharge_rate": str(self.surcharge_rate),
            "grace_days": self.grace_days,
            "paid": str(self.paid),
            "balance": str(self.balance),
            "total_due": str(self.total_due),
        }

    @classmethod
    def from_json(cls, snap: dict[str, Any]) -> BillSnapshot:
        return cls(
            parcel_id=snap["parcel_id"], owner_name=snap["owner_name"], owner_key=snap.get("owner_key", ""),
            gravity_acres=Decimal(snap["gravity_acres"]), pumped_acres=Decimal(snap["pumped_acres"]),
            equivalent_acres=Decimal(snap["equivalent_acres"]), fiscal_year=snap["fiscal_year"], number=snap.get("number"),
            description=snap.get("description", ""), om_charge=Decimal(snap["om_charge"]),
            credit_percent=Decimal(snap["credit_percent"]), credit=Decimal(snap["credit"]), net=Decimal(snap["net"]),
            first_installment=Decimal(snap["first_installment"]), second_installment=Decimal(snap["second_installment"]),
            principal=Decimal(snap["principal"]), due_date=date.fromisoformat(snap["due_date"]),
            last_day_to_pay=date.fromisoformat(snap["last_day_to_pay"]), as_of=date.fromisoformat(snap["as_of"]),
            surcharge=Decimal(snap["surcharge"]),
            surcharge_groups=tuple((int(months), str(unpaid)) for months, unpaid in snap.get("surcharge_groups", [])),
            surcharge_rate=Decimal(snap["surcharge_rate"]), grace_days=int(snap.get("grace_days", 0)), paid=Decimal(snap["paid"]),
            balance=Decimal(snap["balance"]), total_due=Decimal(snap["total_due"]),
            first_due=date.fromisoformat(snap["first_due"]) if snap.get("first_due") else None,
            second_due=date.fromisoformat(snap["second_due"]) if snap.get("second_due") else None,
            roll_hash=snap.get("roll_hash", ""),
            amount_to_pay=_dec(snap.get("amount_to_pay")), pay_by=_day(snap.get("pay_by")),
            owed=tuple(BillOwedLine.from_json(item) for item in snap.get("owed", [])),
            mailing_block=tuple(snap.get("mailing_block", [])), language=snap.get("language", ""),
            office=BillOffice.from_json(snap["office"]) if snap.get("office") else None,
            corrections=tuple(snap.get("corrections", ())),
            later_due=_dec(snap.get("later_due")),
            payment_reference=snap.get("payment_reference", ""), transfer=snap.get("transfer"),
            delivery=BillDelivery.from_json(snap["delivery"]) if snap.get("delivery") else None,
        )


# --- Debt certificate ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CertificateSnapshot:
    """¶11: a debt certificate froze the statement as of its date (``Statement.to_json()``), the
    owner's name and key at issue, and who signed it: the officer's full name and title
    (``parcels.officers.officer_signature``; empty on certificates issued before they were frozen),
    and the owner's document language at issue (``Owner.preferred_language``; none on certificates
    issued before it was frozen, which were written in Spanish)."""

    statement: Statement
    owner_name: str
    owner_key: str
    officer_name: str = ""
    officer_title: str = ""
    language: str = ""

    def to_json(self) -> dict[str, Any]:
        return {**self.statement.to_json(), "owner_name": self.owner_name, "owner_key": self.owner_key,
                "officer_name": self.officer_name, "officer_title": self.officer_title, "language": self.language}

    @classmethod
    def from_json(cls, snap: dict[str, Any]) -> CertificateSnapshot:
        return cls(statement=Statement.from_json(snap), owner_name=snap.get("owner_name", ""), owner_key=snap.get("owner_key", ""),
                   officer_name=snap.get("officer_name", ""), officer_title=snap.get("officer_title", ""),
                   language=snap.get("language", ""))
