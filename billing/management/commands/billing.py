"""``manage.py billing …``: the counter and statements from the shell, through the same services."""

from __future__ import annotations

import json
import time
from datetime import date
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from billing import accounts, delinquency, documents, mailing, registers, wording
from billing.errors import BillingError
from billing.models import Payment, ReprintLog
from billing.services import bank as bank_services
from billing.services import bills, collection, counter, reminders, reprints, voids
from billing.services import journal as journal_services
from billing.services import water as water_services
from parcels import jobs as background
from parcels.models import Job
from parcels.money import money_text


class Command(BaseCommand):
    help = ("Billing and collection: pay, statement, delinquent, water-import, water-rate, water-bill; documents: receipt, bill, "
            "certificate, bulk-bills, mailing-list; reminders, payments-import, journal, register.")

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        pay = sub.add_parser("pay", help="record a payment as a collector does at the counter")
        pay.add_argument("--parcel", required=True)
        pay.add_argument("--amount", required=True)
        pay.add_argument("--date", help="YYYY-MM-DD (default today); a day before today is back-dating: a supervisor, with --reason")
        pay.add_argument("--reason", default="", help="why a back-dated payment carries that date (printed on its receipt)")
        pay.add_argument("--user", required=True)
        pay.add_argument("--office")
        pay.add_argument("--method", default="cash", choices=Payment.Method.values)
        pay.add_argument("--reference", default="", help="the check or transfer number (a check number is taken once per parcel)")
        pay.add_argument("--second-payment-of", metavar="RECEIPT",
                         help="confirm a second payment: the same parcel, amount and method as this receipt, recorded minutes ago")
        statement = sub.add_parser("statement", help="the statement (estado de cuenta) as of a date")
        statement.add_argument("--parcel", required=True)
        statement.add_argument("--as-of", required=True, help="YYYY-MM-DD")
        statement.add_argument("--format", choices=["json", "text"], default="text")
        delinquent = sub.add_parser("delinquent", help="the delinquent list (¶12) as CSV")
        delinquent.add_argument("--as-of", required=True, help="YYYY-MM-DD")
        delinquent.add_argument("--fiscal-year", default="")
        delinquent.add_argument("--semester", type=int, choices=[1, 2])
        delinquent.add_argument("--format", choices=["csv"], default="csv")
        water = sub.add_parser("water-import", help="record water deliveries from a CSV (parcel_id, delivered_on, acre_feet[, land])")
        water.add_argument("file")
        water.add_argument("--user", required=True)
        rate = sub.add_parser("water-rate", help="record the Authority's rate per acre-foot from a date (sec. 374a, at most the cap)")
        rate.add_argument("--effective-from", required=True, help="YYYY-MM-DD")
        rate.add_argument("--rate", required=True)
        rate.add_argument("--user", required=True)
        bill = sub.add_parser("water-bill", help="turn a month's water deliveries into charges (sec. 374a)")
        bill.add_argument("--month", required=True, help="YYYY-MM")
        bill.add_argument("--user", required=True)
        receipt = sub.add_parser("receipt", help="write a receipt's stored PDF (or its COPIA reprint)")
        receipt.add_argument("number", help="the receipt number as printed, e.g. LAJ-2026-2027-000001")
        receipt.add_argument("--out", required=True, help="the PDF file to write")
        receipt.add_argument("--copy", action="store_true", help="a reprint stamped COPIA with today's date (logged: needs --user)")
        receipt.add_argument("--user", help="who prints the COPIA (every reprint is logged, issue 19)")
        notice = sub.add_parser("bill", help="issue an installment's bill (aviso de contribución) or write the stored one")
        notice.add_argument("--parcel", required=True)
        notice.add_argument("--fiscal-year", required=True, help="e.g. 2026-2027")
        notice.add_argument("--installment", required=True, type=int, choices=[1, 2])
        notice.add_argument("--out", required=True, help="the PDF file to write")
        notice.add_argument("--user", help="who issues the bill when it has none yet")
        notice.add_argument("--lang", choices=["es", "en"], default="es", help="language of a new bill (Spanish by default)")
        notice.add_argument("--copy", action="store_true", help="a reprint stamped COPIA with today's date (logged as --user's)")
        certificate = sub.add_parser("certificate", help="issue a debt certificate (certificación de deuda) and write it")
        certificate.add_argument("--parcel", required=True)
        certificate.add_argument("--as-of", required=True, help="YYYY-MM-DD")
        certificate.add_argument("--out", required=True, help="the PDF file to write")
        certificate.add_argument("--user", required=True)
        bulk = sub.add_parser("bulk-bills", help="print a semester's bills as merged PDFs of at most 250 pages (runs inline)")
        bulk.add_argument("--fiscal-year", required=True, help="e.g. 2026-2027")
        bulk.add_argument("--installment", required=True, type=int, choices=[1, 2])
        bulk.add_argument("--user", required=True)
        bulk.add_argument("--parcel-prefix", default="", help="only parcels whose cadastre number starts with this")
        bulk.add_argument("--processes", type=int, help="render here in this many processes (default: one task per part, for this command and every worker)")

        mailing_list = sub.add_parser(
            "mailing-list", help="the semester's mailing list of paper bills (CSV sorted by ZIP, then address) and its counts per ZIP")
        mailing_list.add_argument("--fiscal-year", required=True, help="e.g. 2026-2027")
        mailing_list.add_argument("--installment", required=True, type=int, choices=[1, 2])
        mailing_list.add_argument("--out", required=True,
                                  help="the CSV to write; the counts per ZIP go beside it, in <name>-por-zip.csv")

        void = sub.add_parser("void", help="void a payment by its receipt number (a bounced check; supervisor)")
        void.add_argument("number", help="the receipt number as printed, e.g. LAJ-2026-2027-000001")
        void.add_argument("--reason", required=True)
        void.add_argument("--user", required=True)
        void.add_argument("--date", help="the void's date, YYYY-MM-DD (default today)")
        void.add_argument("--dry-run", action="store_true",
                          help="list every entry the void would post, with amounts, and write nothing")
        refund = sub.add_parser("refund", help="ask to pay back credit on the account (supervisor; not more than the credit "
                                               "less pending requests); prints the request's id for another supervisor to approve")
        refund.add_argument("--parcel", required=True)
        refund.add_argument("--amount", required=True)
        refund.add_argument("--user", required=True)
        refund.add_argument("--reason", default="Reembolso de crédito")
        refund.add_argument("--date", help="YYYY-MM-DD (default today)")
        refund.add_argument("--method", choices=["cash", "check", "transfer"], default="cash",
                            help="cash from the office's drawer (its day report subtracts it), a check or a bank transfer")
        refund.add_argument("--office", help="office code (default: the user's)")
        bank_import = sub.add_parser("payments-import", help="import a collecting bank's payment file (docs/payment-files.md; supervisor)")
        bank_import.add_argument("file")
        bank_import.add_argument("--bank", required=True, help="the bank's office code, e.g. BPPR")
        bank_import.add_argument("--user", required=True)
        bank_import.add_argument("--dry-run", action="store_true", help="say what each line would do and write nothing")
        remind = sub.add_parser("reminders", help="send the landowners' e-mail reminders timely on a date (issue 19; what the "
                                "periodic task runs)")
        remind.add_argument("--as-of", required=True, help="YYYY-MM-DD")
        remind.add_argument("--dry-run", action="store_true", help="say what would be sent; send and write nothing")
        approve = sub.add_parser("refund-approve", help="approve a pending refund request (a supervisor other than the one who "
                                                        "asked); posts the numbered refund")
        approve.add_argument("id", type=int, help="the request's id, as `billing refund` printed it")
        approve.add_argument("--user", required=True)
        way = approve.add_mutually_exclusive_group()
        way.add_argument("--check-number", default="", help="the check's number (a check refund)")
        way.add_argument("--transfer-reference", default="", help="the bank transfer's reference (a transfer refund)")
        approve.add_argument("--date", help="the refund's date, YYYY-MM-DD (default today)")
        reject = sub.add_parser("refund-reject", help="reject a pending refund request (a supervisor other than the one who asked)")
        reject.add_argument("id", type=int, help="the request's id")
        reject.add_argument("--user", required=True)
        reject.add_argument("--reason", required=True)
        closure = sub.add_parser("closure", help="record a day the offices were closed (past days allowed; ¶12)")
        closure.add_argument("--date", required=True, help="YYYY-MM-DD")
        closure.add_argument("--reason", required=True)
        closure.add_argument("--user", required=True)
        journal = sub.add_parser("journal", help="the fund journal lines posted on a date, for Hacienda's accounting (issue 19)")
        journal.add_argument("--date", required=True, help="YYYY-MM-DD: the journals posted that day")
        journal.add_argument("--format", choices=["csv"], default="csv",
                             help="csv: journal, posted_on, account, fund, debit, credit, receipts")

        register = sub.add_parser("register", help="a register for auditors over a period (issue 19): CSV to stdout or PDF to --out")
        register.add_argument("kind", help="receipts, voids, refunds, corrections, bills, reprints, day-closes, late-finalizations")
        register.add_argument("--from", dest="start", required=True, help="YYYY-MM-DD (included)")
        register.add_argument("--to", dest="end", required=True, help="YYYY-MM-DD (included)")
        register.add_argument("--format", choices=["csv", "pdf"], default="csv")
        register.add_argument("--out", help="the file to write (required with --format pdf)")
        register.add_argument("--lang", choices=["es", "en"], default="es", help="language of the PDF")

    def handle(self, *args, action: str, **options) -> None:
        try:
            getattr(self, f"do_{action.replace('-', '_')}")(options)
        except BillingError as exc:
            self.stderr.write(f"error: {exc}")
            raise SystemExit(1) from None

    @staticmethod
    def date(value: str) -> date:
        try:
            if len(value) != 10:
                raise ValueError
            return date.fromisoformat(value)
        except ValueError:
            raise BillingError(f"malformed date {value!r} (use YYYY-MM-DD)") from None

    @staticmethod
    def user(username: str):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise BillingError(f"unknown user {username!r}")
        return user

    def do_journal(self, options: dict) -> None:
        """¶1(2), ¶2: every line of the journals posted on ``--date``, as the documented CSV."""
        self.stdout.write(journal_services.journal_csv(journal_services.journals_on(self.date(options["date"]))), ending="")

    def do_delinquent(self, options: dict) -> None:
        """¶12: every late charge as CSV, computed in SQL (``billing.delinquency``, issue 20)."""
        rows = delinquency.lines(delinquency.Filters(as_of=self.date(options["as_of"]), fiscal_year=options["fiscal_year"],
                                                     number=options["semester"]), basis=False)
        self.stdout.write(delinquency.csv_text(rows), ending="")

    def do_water_import(self, options: dict) -> None:
        path = Path(options["file"])
        if not path.is_file():
            raise BillingError(f"no such file: {path}")
        count, errors = water_services.water_deliveries_import(acting_user=self.user(options["user"]), data=path.read_bytes())
        if errors:
            for error in errors:
                self.stderr.write(str(error))
            raise BillingError(f"rejected: {len(errors)} error(s); nothing was recorded")
        self.stdout.write(f"{count} deliveries recorded")

    def do_water_rate(self, options: dict) -> None:
        row = water_services.water_authority_rate_set(acting_user=self.user(options["user"]), effective_from=self.date(options["effective_from"]),
                                                rate=counter.parse_amount(options["rate"]))
        self.stdout.write(f"Authority water rate {row.rate} per acre-foot from {row.effective_from.isoformat()}")

    def do_water_bill(self, options: dict) -> None:
        try:
            year, month = (int(part) for part in options["month"].split("-"))
            date(year, month, 1)
        except ValueError:
            raise BillingError(f"malformed month {options['month']!r} (use YYYY-MM)") from None
        count = water_services.water_charges_issue(acting_user=self.user(options["user"]), year=year, month=month)
        self.stdout.write(f"{count} water charges issued for {year}-{month:02d}")

    def do_pay(self, options: dict) -> None:
        parcel = accounts.parcel_by_code(options["parcel"])
        amount = counter.parse_amount(options["amount"])
        paid_on = self.date(options["date"]) if options["date"] else None
        user = self.user(options["user"])
        second_of = documents.receipt_by_number(options["second_payment_of"]).payment_id if options["second_payment_of"] else None
        try:
            receipt = counter.payment_record(
                acting_user=user, parcel=parcel, amount=amount, paid_on=paid_on, method=options["method"],
                reference=options["reference"], office_code=options["office"], backdate_reason=options["reason"],
                second_of=second_of, ask_if_second=True,
            )
        except counter.SecondPaymentQuestion as question:  # issue 17: nothing recorded; say how to confirm
            raise BillingError(f"{question} (nothing recorded; if it is a second payment, run again with "
                               f"--second-payment-of {question.earlier.receipt.display_number})") from None
        snapshot = receipt.snapshot
        notes = " (back-dated)" if receipt.payment.backdated else ""
        if receipt.payment.second_of_id:
            notes += f" (a second payment after receipt {options['second_payment_of']})"
        self.stdout.write(
            f"paid {money_text(amount)} on {receipt.payment.paid_on.isoformat()}{notes} for {parcel.parcel_id}; "
            f"due now {money_text(snapshot['total_due_after'])}; credit {money_text(snapshot['credit_balance'])}; "
            f"receipt {receipt.display_number}"
        )

    def do_void(self, options: dict) -> None:
        receipt = documents.receipt_by_number(options["number"])
        on = self.date(options["date"]) if options["date"] else None
        user = self.user(options["user"])
        preview = voids.void_preview(acting_user=user, payment=receipt.payment, reason=options["reason"], voided_on=on)
        if options["dry_run"]:
            self.stdout.write(f"dry run: voiding the payment of receipt {receipt.display_number} "
                              f"({money_text(preview.amount)} of {receipt.payment.paid_on.isoformat()}) on {preview.on.isoformat()} "
                              f"would post {len(preview.entries)} entries; nothing recorded")
            for number, entry in enumerate(preview.entries, 1):
                self.stdout.write(f"  {number}. {entry.text}: {money_text(entry.amount)}")
            return
        void = voids.payment_void(acting_user=user, payment=receipt.payment, reason=options["reason"], voided_on=on)
        self.stdout.write(f"payment of receipt {receipt.display_number} voided on {void.voided_on.isoformat()}"
                          f" ({len(preview.entries)} entries posted)")

    def do_refund(self, options: dict) -> None:
        parcel = accounts.parcel_by_code(options["parcel"])
        on = self.date(options["date"]) if options["date"] else None
        request = counter.refund_request(acting_user=self.user(options["user"]), parcel=parcel,
                                         amount=counter.parse_amount(options["amount"]), reason=options["reason"], on=on,
                                         method=options["method"], office_code=options["office"])
        self.stdout.write(f"refund request {request.pk}: {money_text(request.amount.amount)} to {parcel.parcel_id} ({request.method}),"
                          f" awaiting another supervisor: billing refund-approve {request.pk} --user U")

    def do_refund_approve(self, options: dict) -> None:
        on = self.date(options["date"]) if options["date"] else None
        refund = counter.refund_approve(acting_user=self.user(options["user"]), request=options["id"],
                                        check_number=options["check_number"], transfer_reference=options["transfer_reference"],
                                        refunded_on=on)
        how = refund.check_number or refund.transfer_reference
        self.stdout.write(f"refund request {options['id']} approved: refunded {money_text(refund.amount.amount)} to "
                          f"{refund.parcel.parcel_id} on {refund.refunded_on.isoformat()} ({refund.method}{' ' + how if how else ''})"
                          f" {refund.number}")

    def do_refund_reject(self, options: dict) -> None:
        request = counter.refund_reject(acting_user=self.user(options["user"]), request=options["id"], reason=options["reason"])
        self.stdout.write(f"refund request {request.pk} rejected: nothing paid")

    def do_payments_import(self, options: dict) -> None:
        """Issue 19: one line per line of the file that is not applied, then the summary; a
        malformed file exits 1 with its first error (every error on stderr before it)."""
        path = Path(options["file"])
        if not path.is_file():
            raise BillingError(f"no such file: {path}")
        office = bank_services.bank_office(options["bank"])
        user = self.user(options["user"])
        data = path.read_bytes()
        try:
            if options["dry_run"]:
                plan = bank_services.bank_file_preview(acting_user=user, bank=office, name=path.name, data=data)
                lines = [(item.line.line_number, item.line.trace_number, item.outcome, item.reason) for item in plan.lines]
                summary = "dry run, nothing recorded: " + plan.summary
                last = plan.summary
            else:
                bank_file = bank_services.bank_file_import(acting_user=user, bank=office, name=path.name, data=data)
                lines = [(line.line_number, line.trace_number, line.outcome, line.exception_reason)
                         for line in bank_file.lines.order_by("line_number")]
                summary = f"file {bank_file.pk} imported from {office.code}"
                last = (f"applied {bank_file.applied_count}, exceptions {bank_file.exception_count}, "
                        f"already applied {bank_file.already_count}")
        except bank_services.MalformedFile as refused:
            for error in refused.errors[1:]:
                self.stderr.write(error)
            raise BillingError(f"file refused, nothing recorded ({len(refused.errors)} error(s)): {refused.errors[0]}") from None
        for number, trace, outcome, reason in lines:
            if outcome != "applied":
                self.stdout.write(f"line {number} ({trace}): {outcome}" + (f": {reason}" if reason else ""))
        self.stdout.write(summary)
        self.stdout.write(last)
    def do_reminders(self, options: dict) -> None:
        run = reminders.reminders_send(as_of=self.date(options["as_of"]), dry_run=options["dry_run"])
        for outcome in run.outcomes:
            error = f": {outcome.error}" if outcome.error else ""
            self.stdout.write(f"{outcome.status:<10} {outcome.due.describe()}{error}")
        if run.dry_run:
            self.stdout.write(f"would send {run.count('would_send')}, already sent {run.count('already')}, "
                              f"given up {run.count('given_up')}")
        else:
            self.stdout.write(f"sent {run.count('sent')}, failed {run.count('failed')}, already sent {run.count('already')}, "
                              f"given up {run.count('given_up')}")

    def do_closure(self, options: dict) -> None:
        closure, moved = collection.office_closure_record(
            acting_user=self.user(options["user"]), day=self.date(options["date"]), reason=options["reason"],
        )
        from django.db.models import Sum

        from billing.models import GiveBack

        # issue 18: what the closure gave back, read from the rows it posted
        back = GiveBack.objects.filter(closure=closure).aggregate(s=Sum("surcharge"))["s"] or 0
        self.stdout.write(f"offices closed on {closure.day.isoformat()}: {moved} last day(s) to pay moved, "
                          f"{money_text(getattr(back, 'amount', back))} of surcharge given back")

    def do_statement(self, options: dict) -> None:
        parcel = accounts.parcel_by_code(options["parcel"])
        data = accounts.statement(parcel=parcel, as_of=self.date(options["as_of"])).to_json()
        if options["format"] == "json":
            self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False))
            return
        self.stdout.write(f"estado de cuenta {data['parcel_id']} al {data['as_of']}")
        for item in data["installments"] + data["other_charges"]:
            self.stdout.write(
                f"  {wording.line_label(item):<30} vence {item['due_date']} último día {item['last_day_to_pay']} "
                f"principal {item['principal']:>12} recargo {item['surcharge']:>10} pagado {item['paid']:>12} saldo {item['balance']:>12}"
                + (f"  ({item['surcharge_basis']})" if item["surcharge_basis"] else "")
            )
            for event in item.get("events", ()):  # the dated entries that changed it (issue 11)
                self.stdout.write(f"      {accounts.StatementEvent.from_json(event).text}")
        self.stdout.write(f"  total adeudado hoy {data['total_due']}")

    def do_register(self, options: dict) -> None:
        """Issue 19: the register ``kind`` of the period, with its control totals (``billing.registers``)."""
        if options["format"] == "pdf" and not options["out"]:
            raise BillingError("--format pdf writes a file: give --out")
        register = registers.register_build(options["kind"], self.date(options["start"]), self.date(options["end"]))
        if options["format"] == "pdf":
            self.write_pdf(options["out"], registers.register_pdf(register, lang=options["lang"]), f"register {register.kind}")
        elif options["out"]:
            target = Path(options["out"])
            if not target.parent.is_dir():
                raise BillingError(f"no such directory: {target.parent}")
            target.write_text(registers.register_csv(register), encoding="utf-8")
            self.stdout.write(f"register {register.kind} written to {target} ({len(register.rows)} rows)")
        else:
            self.stdout.write(registers.register_csv(register), ending="")

    # --- documents ----------------------------------------------------------------------------

    def write_pdf(self, path: str, data: bytes, what: str) -> None:
        target = Path(path)
        if not target.parent.is_dir():
            raise BillingError(f"no such directory: {target.parent}")
        target.write_bytes(data)
        self.stdout.write(f"{what} written to {target} ({len(data):,} bytes)")

    def do_receipt(self, options: dict) -> None:
        receipt = documents.receipt_by_number(options["number"])
        document = documents.receipt_document(receipt)
        if options["copy"]:
            data = self.reprint(document, options["user"])
        else:
            data = documents.document_download(document)  # ANULADO when its payment was voided
        self.write_pdf(options["out"], data, f"receipt {document.number}" + (" (COPIA)" if options["copy"] else ""))

    def reprint(self, document, username: str | None) -> bytes:
        """A COPIA of ``document``, logged as ``username``'s (issue 19: the register of reprints)."""
        if not username:
            raise BillingError("a COPIA reprint is logged with who printed it: give --user")
        return reprints.reprint_issue(acting_user=self.user(username), document=document, channel=ReprintLog.Channel.COMMAND)

    def do_bill(self, options: dict) -> None:
        if options["copy"] and not options["user"]:
            raise BillingError("a COPIA reprint is logged with who printed it: give --user")
        user = self.user(options["user"]) if options["user"] else None
        charge = bills.bill_for_installment(parcel_code=options["parcel"], fiscal_year=options["fiscal_year"],
                                                number=options["installment"])
        bill, created = bills.bill_get_or_issue(acting_user=user, charge=charge, lang=options["lang"])
        document = bill.document
        data = self.reprint(document, options["user"]) if options["copy"] else documents.document_pdf(document)
        state = "issued" if created else "stored"
        self.write_pdf(options["out"], data, f"bill {bill.number} ({state})" + (" (COPIA)" if options["copy"] else ""))

    def do_certificate(self, options: dict) -> None:
        parcel = accounts.parcel_by_code(options["parcel"])
        as_of = self.date(options["as_of"])
        certificate = collection.certificate_issue(acting_user=self.user(options["user"]), parcel=parcel, as_of=as_of)
        self.write_pdf(options["out"], documents.document_pdf(certificate.document), f"certificate {certificate.number}")

    def do_mailing_list(self, options: dict) -> None:
        """Issue 19: one row per paper bill (bill_number, parcel_id, name, care_of, address_line1,
        address_line2, town, state, zip), sorted by ZIP then address, the order bulk printing merges
        the bills in; ``<out>-por-zip.csv`` has the bills per ZIP and the total."""
        rows = mailing.semester_rows(fiscal_year=options["fiscal_year"], number=options["installment"])
        out = Path(options["out"])
        if not out.parent.is_dir():
            raise BillingError(f"no such directory: {out.parent}")
        counts = out.with_name(f"{out.stem}-por-zip{out.suffix or '.csv'}")
        with out.open("w", encoding="utf-8", newline="") as handle:
            written = mailing.write_mailing_list(rows, handle)
        with counts.open("w", encoding="utf-8", newline="") as handle:
            mailing.write_zip_counts(rows, handle)
        self.stdout.write(f"{written} paper bills in {len(mailing.zip_counts(rows))} ZIP code(s): {out}; counts per ZIP: {counts}")

    def do_bulk_bills(self, options: dict) -> None:
        """Defer the batch on a queue of its own and be a worker for that queue until it is done
        (a service worker may take it first: then wait for it)."""


        filters = {"parcel_prefix": options["parcel_prefix"]} if options["parcel_prefix"] else None
        batch = bills.bill_batch_start(self.user(options["user"]), options["fiscal_year"], options["installment"], filters,
                                           processes=options["processes"], queue="bulk-bills-command")
        jobs = Job.objects.filter(pk=batch.job_id)
        if jobs.filter(status=Job.Status.QUEUED).exists():
            background.worker_run(once=True, queues=["bulk-bills-command"])
        while (job := jobs.get()).status in Job.ACTIVE:
            time.sleep(2)
        if job.status != Job.Status.DONE:
            raise BillingError(f"bulk printing of batch {batch.pk} failed: {job.error.splitlines()[0] if job.error else '?'}")
        total = job.result.get("bills", 0)
        # issue 20: the parts were deferred as tasks (this command ran them, or other workers do)
        while not type(batch).objects.filter(pk=batch.pk, finished_at__isnull=False).exists():
            time.sleep(2)
        self.stdout.write(f"batch {batch.pk}: {total} bills in {batch.parts.count()} part(s)")
        for part in batch.parts.order_by("index"):
            self.stdout.write(f"{part.pdf.path}\t{part.pages} pages")
