"""``manage.py verify_books``: the books' invariants (``billing.books``) and their control totals."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing import books


class Command(BaseCommand):
    help = ("Checks the books: each final roll adds up to its levy, installments to each line's net, ledgers to their "
            "charges, surcharges and payments, receipt numbers have no gaps, stored documents are unchanged. Exit 1 with "
            "one line per finding; when clean, prints the control totals (compare them between two databases).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=["text", "json"], default="text",
                            help="json: {ok, findings, totals}, e.g. to save the totals and compare later")
        parser.add_argument("--compare", metavar="FILE",
                            help="control totals to match: the .totals.json a backup wrote, or verify_books --format json output")
        parser.add_argument("--limit", type=int, default=books.DEFAULT_LIMIT, help="findings listed per check")

    def handle(self, *args, format: str, compare: str | None, limit: int, **options) -> None:
        expected = self.expected_totals(compare) if compare else None
        findings = books.verify(limit=limit)
        totals = books.control_totals()
        if expected is not None:
            findings += books.totals_differences(expected, totals)
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
