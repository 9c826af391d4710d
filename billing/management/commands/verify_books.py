"""``manage.py verify_books``: the books' invariants (``billing.books``) and their control totals,
recorded as a ``BooksCheck`` (shown on ``/auditoria/libros/``) unless ``--no-record``; a passing
recorded run also stores a ``BooksCheckpoint`` that every later run must match."""

from __future__ import annotations

import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing import books
from billing.models import BooksCheck
from billing.services import books_checks


class Command(BaseCommand):
    help = ("Checks the books: each final roll adds up to its levy, installments to each line's net, ledgers to their "
            "charges, surcharges and payments, receipt numbers have no gaps, stored documents are unchanged, the chain of "
            "issued records holds, each series' last number matches its records and its chain, and the records of the last "
            "checkpoint keep its totals, and issued estados, certificates and bills still equal the statement of their day "
            "recomputed now (a sample; --full for all). Exit 1 with "
            "one line per finding; when clean, prints the control totals (compare them between two databases).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=["text", "json"], default="text",
                            help="json: {ok, findings, totals}, e.g. to save the totals and compare later")
        parser.add_argument("--compare", metavar="FILE",
                            help="control totals to match: the .totals.json a backup wrote, or verify_books --format json output")
        parser.add_argument("--limit", type=int, default=books.DEFAULT_LIMIT, help="findings listed per check")
        parser.add_argument("--user", help="username recorded as who ran the check (default: nobody)")
        parser.add_argument("--sample", type=int, default=None, metavar="N",
                            help="issued estados, debt certificates and bills read again, N of each kind (default 20): "
                                 "the statement of each one's date recomputed now must equal what it stored")
        parser.add_argument("--full", action="store_true", help="read again every issued estado, certificate and bill")
        parser.add_argument("--no-record", action="store_true",
                            help="write nothing: e.g. a restored copy checked against its backup stays as restored")

    def handle(self, *args, format: str, compare: str | None, limit: int, user: str | None, no_record: bool,
               sample: int | None, full: bool, **options) -> None:
        expected = self.expected_totals(compare) if compare else None
        if sample is not None and sample < 0:
            raise CommandError("--sample must be 0 or more")
        issued_sample = books.ISSUED_ALL if full else sample
        acting_user = None
        if user:
            acting_user = get_user_model().objects.filter(username=user).first()
            if acting_user is None:
                raise CommandError(f"unknown user {user!r}")
        if no_record:
            findings, totals = books.check(limit=limit, expected_totals=expected, issued_sample=issued_sample)
        else:
            check = books_checks.books_check_run(acting_user=acting_user, trigger=BooksCheck.Trigger.COMMAND,
                                             expected_totals=expected, compared_with=compare or "", limit=limit,
                                             issued_sample=issued_sample)
            findings = [books.Finding(finding["check"], finding["message"]) for finding in check.findings]
            totals = dict(check.totals)
        if format == "json":
            self.stdout.write(json.dumps({"ok": not findings, "findings": [str(f) for f in findings], "totals": totals},
                                         indent=2, ensure_ascii=False))
        elif findings:
            for finding in findings:
                self.stdout.write(str(finding))
        else:
            matched = " and match the saved control totals" if expected is not None else ""
            self.stdout.write(f"books balance{matched}; control totals:")
            width = max((len(name) for name in totals), default=0)
            for name, value in totals.items():
                self.stdout.write(f"  {name:<{width}}  {value}")
        if findings:
            self.stderr.write(f"verify_books: {len(findings)} finding(s)")
            raise SystemExit(1)

    @staticmethod
    def expected_totals(path: str) -> dict[str, str]:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read control totals from {path}: {exc}") from None
        totals = data.get("totals", data) if isinstance(data, dict) else None
        if not isinstance(totals, dict):
            raise CommandError(f"{path} holds no control totals")
        return {str(name): str(value) for name, value in totals.items()}
