"""``manage.py verify_books``: the books' invariants (``billing.books``) and their control totals,
recorded as a ``BooksCheck`` (shown on ``/auditoria/libros/``) unless ``--no-record``; a passing
recorded run also stores a ``BooksCheckpoint`` that every later run must match.

By default the books are also compared with the newest signed anchors kept outside the database
(``billing.anchors``): from the anchor store (``STORAGES["anchors"]``) or ``--anchors DIR``,
checked with the configured public key or ``--public-key FILE``. With no key or no anchor it
warns (on stderr) that the books were checked against the database alone."""

from __future__ import annotations

import json
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing import anchors, books
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
                                 "the statement of each one's date recomputed now must equal what it stored; and N random "
                                 "stored PDF files of each kind re-hashed (default: every file)")
        parser.add_argument("--full", action="store_true", help="read again every issued estado, certificate and bill")
        parser.add_argument("--no-record", action="store_true",
                            help="write nothing: e.g. a restored copy checked against its backup stays as restored")
        parser.add_argument("--anchors", metavar="DIR",
                            help="a folder of signed anchors (a copy of the store, the auditors' mail); default: the anchor store")
        parser.add_argument("--public-key", metavar="FILE",
                            help="the published public key (PEM); default: ANCHOR_PUBLIC_KEY_FILE or the signing key's")
        parser.add_argument("--anchor-count", type=int, default=anchors.NEWEST,
                            help="how many of the newest anchors have their signatures checked")
        parser.add_argument("--no-anchors", action="store_true", help="compare with no signed anchor")

    def handle(self, *args, format: str, compare: str | None, limit: int, user: str | None, no_record: bool,
               sample: int | None, full: bool, **options) -> None:
        expected = self.expected_totals(compare) if compare else None
        if sample is not None and sample < 0:
            raise CommandError("--sample must be 0 or more")
        issued_sample = books.ISSUED_ALL if full else sample
        anchored = self.anchor_check(options, limit)
        acting_user = None
        if user:
            acting_user = get_user_model().objects.filter(username=user).first()
            if acting_user is None:
                raise CommandError(f"unknown user {user!r}")
        if no_record:
            findings, totals = books.check(limit=limit, expected_totals=expected, issued_sample=issued_sample)
            findings += anchored.findings
        else:
            check = books_checks.books_check_run(acting_user=acting_user, trigger=BooksCheck.Trigger.COMMAND,
                                             expected_totals=expected, compared_with=compare or "", limit=limit,
                                             issued_sample=issued_sample, extra_findings=anchored.findings)
            findings = [books.Finding(finding["check"], finding["message"]) for finding in check.findings]
            totals = dict(check.totals)
        for warning in anchored.warnings:
            self.stderr.write(f"warning: {warning}")
        if format == "json":
            self.stdout.write(json.dumps({"ok": not findings, "findings": [str(f) for f in findings], "totals": totals,
                                          "anchor": anchored.compared_with, "warnings": anchored.warnings},
                                         indent=2, ensure_ascii=False))
        elif findings:
            for finding in findings:
                self.stdout.write(str(finding))
        else:
            matched = " and match the saved control totals" if expected is not None else ""
            if anchored.compared_with:
                matched += f" and the signed anchor {anchored.compared_with}"
            self.stdout.write(f"books balance{matched}; control totals:")
            width = max((len(name) for name in totals), default=0)
            for name, value in totals.items():
                self.stdout.write(f"  {name:<{width}}  {value}")
        if findings:
            self.stderr.write(f"verify_books: {len(findings)} finding(s)")
            raise SystemExit(1)

    @staticmethod
    def anchor_check(options: dict, limit: int) -> anchors.AnchorCheck:
        if options["no_anchors"]:
            return anchors.AnchorCheck([], ["--no-anchors: the books were checked against the database alone"], None)
        key = None
        if options["public_key"]:
            try:
                key = anchors.public_key(options["public_key"])
            except anchors.AnchorKeyError as exc:
                raise CommandError(str(exc)) from None
        if options["anchors"] and not Path(options["anchors"]).is_dir():
            raise CommandError(f"--anchors {options['anchors']}: not a folder")
        storage = anchors.folder_storage(options["anchors"]) if options["anchors"] else None
        return anchors.anchor_check(storage=storage, key=key, newest=options["anchor_count"], limit=limit)

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
