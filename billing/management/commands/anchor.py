"""``manage.py anchor``: the signed anchors of the books (``billing.anchors``).

- ``anchor keygen --out PATH``: a new Ed25519 key pair, the private key at PATH (mode 0600, never
  overwritten), the public key at PATH.pub; prints the public key and its fingerprint to publish.
- ``anchor now``: take, sign and store an anchor at once (and e-mail it to ANCHOR_EMAIL).
- ``anchor public-key``: the configured public key and its fingerprint.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing import anchors


class Command(BaseCommand):
    help = "Signed anchors of the books outside the database: keygen, now, public-key."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        keygen = sub.add_parser("keygen", help="write a new signing key pair (private key 0600, public key PATH.pub)")
        keygen.add_argument("--out", required=True, help="where to write the private key (PEM); refused if it exists")
        sub.add_parser("now", help="write a signed anchor now")
        sub.add_parser("public-key", help="print the public key verify_books checks anchors with")

    def handle(self, *args, action: str, **options) -> None:
        if action == "keygen":
            try:
                key = anchors.keygen(options["out"])
            except FileExistsError:
                raise CommandError(f"{options['out']} exists: a signing key is never overwritten") from None
            except OSError as exc:
                raise CommandError(f"cannot write {options['out']}: {exc}") from None
            self.stdout.write(f"private key: {options['out']} (mode 0600; mount it into the app and workers only)")
            self.stdout.write(f"public key: {options['out']}.pub (publish it: README, verification page)")
            self.stdout.write(anchors.public_pem(key).rstrip())
            self.stdout.write(f"fingerprint: {anchors.fingerprint(key)}")
        elif action == "now":
            try:
                name = anchors.anchor_write(reason="manage.py anchor now")
            except anchors.AnchorKeyError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(f"anchor written: {name}")
        else:
            published = anchors.published_key()
            if published is None:
                raise CommandError("no anchor key configured (ANCHOR_SIGNING_KEY_FILE or ANCHOR_PUBLIC_KEY_FILE)")
            self.stdout.write(published.pem.rstrip())
            self.stdout.write(f"fingerprint: {published.fingerprint}")
