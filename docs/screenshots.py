"""Regenerates the screenshots in docs/screenshots/ (embedded in README.md) from the demo district.

It drives Debian's chromium through Playwright's sync API, signs in as the users `seed_demo`
creates (staff give the code of their demo authenticator app, from `manage.py demo_totp`) and
saves 1280-pixel-wide PNGs of the pages each role uses, in Spanish.

Run it from the repository root, against a database of its own (it adds a payment, a small parcel
import and a batch of bills to the demo data):

    createdb -h 127.0.0.1 -U postgres lajas_docs          # once; any empty database will do
    export DEBUG=true SECRET_KEY=any-long-random-string \
           DATABASE_URL=postgres://postgres@127.0.0.1:5432/lajas_docs
    .venv/bin/python docs/screenshots.py

By default the script prepares and serves the app itself, as

    .venv/bin/python manage.py migrate --no-input
    .venv/bin/python manage.py seed_demo
    .venv/bin/python manage.py runserver 127.0.0.1:8765 --noreload

and stops the server at the end. With `--base-url URL` it uses a server you started that way
instead (same environment). Either way the background jobs it causes (the import preview, the
bills) are run by `manage.py run_worker --once`, so DATABASE_URL and SECRET_KEY must be set.

Needs: the dev requirements (playwright), `/usr/bin/chromium` (`apt-get install -y chromium`;
add `chromium-l10n` for date boxes in the Spanish format), `pdftoppm` (poppler-utils). The demo's dates are fixed (the 2026-2027 levy), "today" is the
machine's date. Each PNG is kept under 250 KB (palette PNG when needed).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
WIDTH = 1280
MAX_BYTES = 250 * 1024

# The users and passwords seed_demo creates (billing/management/commands/seed_demo.py).
PASSWORDS = {
    "autoridad": "Lajas-2026-authority",
    "hacienda": "Lajas-2026-hacienda",
    "colector": "Lajas-2026-collector",
    "supervisor": "Lajas-2026-supervisor",
    "auditor": "Lajas-2026-auditor",
    "terrateniente": "Lajas-2026-landowner",
}
YEAR = "2026-2027"
BUSY_DAY = "2026-08-03"  # the demo day with the most counter payments (11, every form of payment)


def manage(*args: str, quiet: bool = True) -> None:
    """Run a management command in the same environment (the worker, migrate, seed_demo)."""
    result = subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, capture_output=quiet, text=True)
    if result.returncode != 0:
        sys.exit(f"manage.py {' '.join(args)} failed:\n{result.stderr if quiet else ''}")


def wait_for(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            if time.monotonic() > deadline:
                sys.exit(f"no server at {url}")
            time.sleep(0.5)


def save_png(data: bytes, name: str) -> None:
    """Write the PNG; over MAX_BYTES it becomes a 256-colour palette PNG (fine for page shots)."""
    path = OUT / name
    if len(data) > MAX_BYTES:
        from PIL import Image  # Pillow comes with WeasyPrint

        image = Image.open(io.BytesIO(data)).convert("RGB")
        buffer = io.BytesIO()
        image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(buffer, "PNG", optimize=True)
        data = buffer.getvalue()
    path.write_bytes(data)
    print(f"  {path.relative_to(ROOT)}  {len(data) // 1024} KB")
    if len(data) > MAX_BYTES:
        print(f"  warning: {name} is over {MAX_BYTES // 1024} KB")


def shot(page: Page, name: str, *, top: str | None = None, height: int = 900) -> None:
    """A viewport screenshot; with ``top`` (a selector) the page is scrolled so it starts there."""
    page.set_viewport_size({"width": WIDTH, "height": height})
    if top:
        page.locator(top).first.evaluate("el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 12)")
    else:
        page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(150)
    save_png(page.screenshot(full_page=False), name)


def pdf_png(pdf: bytes, name: str) -> None:
    """First page of a PDF as a PNG (pdftoppm at 60 dpi)."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "document.pdf"
        source.write_bytes(pdf)
        subprocess.run(["pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "1", "-singlefile", str(source), str(Path(tmp) / "page")],
                       check=True)
        save_png((Path(tmp) / "page.png").read_bytes(), name)


def sign_in(browser, base: str, username: str) -> Page:
    context = browser.new_context(base_url=base, locale="es-PR", viewport={"width": WIDTH, "height": 900},
                                  timezone_id="America/Puerto_Rico", accept_downloads=True)
    page = context.new_page()
    page.goto("/cuenta/entrar/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORDS[username])
    page.click("main form button[type=submit]")
    page.wait_for_load_state()
    if "/cuenta/entrar/" in page.url:
        sys.exit(f"could not sign in as {username}; was the database seeded with seed_demo?")
    if "/cuenta/verificar/" in page.url:  # staff: the code of the demo user's authenticator app
        page.fill("#id_code", demo_code(username))
        page.click("main form button[type=submit]")
        page.wait_for_load_state()
        if "/cuenta/verificar/" in page.url:
            sys.exit(f"the code of {username} was refused (used already in these 30 seconds?)")
    return page


def demo_code(username: str) -> str:
    """The current code of a demo user's app (``manage.py demo_totp``, which seed_demo's fixed secrets feed)."""
    result = subprocess.run([PYTHON, "manage.py", "demo_totp", username], cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"manage.py demo_totp {username} failed:\n{result.stderr}")
    return result.stdout.split()[0]


def check(page: Page) -> None:
    """Stop on an error page rather than save a picture of it."""
    title = page.title()
    if re.search(r"Server Error|Page not found|Forbidden|Error|Prohibido|no encontrada", title):
        sys.exit(f"{page.url}: error page ({title})")


def download(page: Page, link: str) -> bytes:
    with page.expect_download() as info:
        page.click(link)
    return Path(info.value.path()).read_bytes()


def import_csv() -> str:
    """A small parcel CSV for the import preview: one row as registered, one corrected, two new.
    The registered rows come from the demo generator itself (seed_demo with its default size)."""
    sys.path.insert(0, str(ROOT))
    from parcels.demo import demo_csv

    lines = demo_csv()[0].splitlines()
    header, rows = lines[0], {line.split(",", 1)[0]: line for line in lines[1:]}
    unchanged = rows["LAJ-000001"]
    corrected = rows["LAJ-000030"]  # no date of water yet: the Authority records it
    parts = corrected.rsplit(",", 2)
    corrected = f"{parts[0]},2026-09-15,{parts[2]}"
    new = [
        # LAJ-001501 and LAJ-001502 are the two parcels seed_demo's Authority registers by hand.
        'LAJ-001601,DEMO-NEW-001,"Agrícola Palmarejo LLC",palmarejo@example.pr,private,"HC 1 Box 4410, Lajas, PR 00667",'
        "35.5000,0.0000,trial,2026-10-01,0.00",
        'LAJ-001602,DEMO-NEW-001,"Agrícola Palmarejo LLC",palmarejo@example.pr,private,"HC 1 Box 4410, Lajas, PR 00667",'
        "0.0000,12.7500,trial,2026-10-01,0.00",
    ]
    return "\n".join([header, unchanged, corrected, *new]) + "\n"


def authority(browser, base: str) -> None:
    page = sign_in(browser, base, "autoridad")
    page.goto(f"/contribucion/{YEAR}/estimados/")
    check(page)
    shot(page, "authority-estimates.png")

    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "predios-octubre.csv"
        csv_path.write_text(import_csv(), encoding="utf-8")
        page.goto("/importar/")
        page.set_input_files("input[type=file]", str(csv_path))
        page.click("main form button[type=submit]")
        page.wait_for_load_state()
    manage("run_worker", "--once")  # parses the upload and prepares the preview
    page.reload()
    check(page)
    shot(page, "authority-import.png", height=640)
    confirm = page.locator("main form button[type=submit]", has_text="Confirmar e importar")
    if confirm.count():
        confirm.click()
        page.wait_for_load_state()
        manage("run_worker", "--once")  # a queued apply, if the confirmation is a job
    page.context.close()


def hacienda(browser, base: str) -> str:
    """Hacienda's pages; returns a delinquent parcel (not the demo landowner's) for the counter."""
    page = sign_in(browser, base, "hacienda")
    page.goto(f"/contribucion/{YEAR}/hoja/")
    check(page)
    shot(page, "hacienda-worksheet.png", top="main h2:has-text('Hoja de cómputo del padrón')", height=1000)
    page.goto(f"/contribucion/{YEAR}/padron/")
    check(page)
    shot(page, "hacienda-roll.png")
    page.goto("/cobros/morosos/")
    check(page)
    shot(page, "hacienda-delinquent.png")
    parcels = page.locator("main table tbody tr th, main table tbody tr td:first-child").all_inner_texts()
    candidates = [p.strip() for p in parcels if p.strip().startswith("LAJ-") and p.strip() not in ("LAJ-000001", "LAJ-000002")]

    # The July bills of a few parcels (the demo landowner's among them), printed by the worker.
    page.goto("/cobros/avisos/")
    page.check("input[name=number][value='1']")
    page.fill("#parcel_prefix", "LAJ-00000")
    page.click("main form button[type=submit]")
    page.wait_for_load_state()
    manage("run_worker", "--once")
    page.reload()
    check(page)
    if "avisos listos" not in page.inner_text("main") and "aviso listo" not in page.inner_text("main"):
        print("  warning: the batch of bills did not finish:", page.inner_text("main .alert").strip())
    page.context.close()
    return candidates[0] if candidates else "LAJ-000003"


def collector(browser, base: str, parcel_id: str) -> None:
    page = sign_in(browser, base, "colector")
    page.goto(f"/colecturia/?q={parcel_id}")
    page.click("main table a:has-text('Cobrar')")
    page.wait_for_load_state()
    check(page)
    shot(page, "collector-counter.png", height=1000)
    amount = page.input_value("input[name=amount]")
    if amount:  # something is due: take it in cash and print the receipt
        page.check("input[name=method][value=cash]")
        page.click("main form button:has-text('Cobrar y emitir recibo')")
        page.wait_for_load_state()
        check(page)
    else:  # already paid on an earlier run: take the parcel's last receipt
        page.goto(page.url + "estado/")
        page.locator("main a:has-text('LAJ-2026')").last.click()
        page.wait_for_load_state()
    pdf_png(download(page, "main a:has-text('Descargar el recibo (PDF)')"), "receipt-pdf.png")
    page.context.close()


def supervisor(browser, base: str) -> None:
    page = sign_in(browser, base, "supervisor")
    page.goto(f"/colecturia/cuadre/?day={BUSY_DAY}")
    check(page)
    # Count the box as the receipts say, so the day squares (Cuadra) and can be closed.
    rows = {}
    for row in page.locator("main table").first.locator("tbody tr").all():  # Totales por forma de pago
        rows[row.locator("th").inner_text().strip()] = row.locator("td").last.inner_text().strip()
    cash = rows.get("Efectivo", "$0.00").replace("$", "").replace(",", "")
    checks = rows.get("Cheque", "$0.00").replace("$", "").replace(",", "")
    page.goto(f"/colecturia/cuadre/?day={BUSY_DAY}&counted_cash={cash}&counted_checks={checks}")
    check(page)
    shot(page, "supervisor-day-close.png", height=1100)
    page.context.close()


def landowner(browser, base: str) -> None:
    page = sign_in(browser, base, "terrateniente")
    check(page)
    shot(page, "landowner-portal.png", height=800)
    page.click("main table a:has-text('Estado de cuenta') >> nth=1")  # LAJ-000002, unpaid since July
    page.wait_for_load_state()
    check(page)
    bill = page.locator("main a:has-text('(PDF)')")
    if bill.count():
        pdf_png(download(page, "main a:has-text('(PDF)') >> nth=0"), "bill-pdf.png")
    page.context.close()


def auditor(browser, base: str) -> None:
    page = sign_in(browser, base, "auditor")
    page.goto("/auditoria/")
    check(page)
    shot(page, "auditor-audit.png")
    page.context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", help="use a server already running there (default: start one on 127.0.0.1:8765)")
    options = parser.parse_args()
    for name in ("DATABASE_URL", "SECRET_KEY"):
        if not os.environ.get(name):
            sys.exit(f"set {name} (see the top of {Path(__file__).name})")
    os.environ.setdefault("DEBUG", "true")
    OUT.mkdir(parents=True, exist_ok=True)

    server = None
    base = options.base_url
    if not base:
        manage("migrate", "--no-input")
        print("seed_demo (a minute the first time) …")
        manage("seed_demo")
        base = "http://127.0.0.1:8765"
        server = subprocess.Popen([PYTHON, "manage.py", "runserver", "127.0.0.1:8765", "--noreload"], cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(base + "/cuenta/entrar/")
        with sync_playwright() as playwright:
            # --lang and LANGUAGE only give Spanish date boxes (dd/mm/aaaa) with chromium-l10n installed.
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                                 args=["--no-sandbox", "--disable-gpu", "--lang=es-419"],
                                                 env={**os.environ, "LANGUAGE": "es_419:es"})
            authority(browser, base)
            parcel_id = hacienda(browser, base)
            collector(browser, base, parcel_id)
            supervisor(browser, base)
            landowner(browser, base)
            auditor(browser, base)
            browser.close()
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
