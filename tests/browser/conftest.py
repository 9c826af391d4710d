"""Browser journeys: pytest-playwright driving Debian's chromium against pytest-django's live server.

Without chromium the journeys skip with a one-line reason; under CI (``CI=true``) that is a
failure instead, since ``.ci/run`` installs chromium first. Every page a journey visits is checked
with axe-core (no serious or critical violation) and every request must stay on the app's origin.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

# Playwright's sync API runs an event loop in the test thread; Django's ORM is used beside it.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]


def _no_chromium() -> str:
    return "" if os.path.exists(CHROMIUM) else f"no Chromium at {CHROMIUM} (apt-get install -y chromium)"


def pytest_collection_modifyitems(config, items):
    reason = _no_chromium()
    if reason and os.environ.get("CI") != "true":
        for item in items:
            if "tests/browser" in str(item.fspath):
                item.add_marker(pytest.mark.skip(reason=reason))


def pytest_runtest_setup(item):
    """Under CI (``CI=true``) a missing Chromium fails every browser test instead of skipping it:
    ``.ci/run`` installs it, so its absence is a broken CI machine, not an optional extra."""
    reason = _no_chromium()
    if reason and os.environ.get("CI") == "true" and "tests/browser" in str(item.fspath):
        pytest.fail(f"CI needs chromium: {reason}", pytrace=False)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    # axe-core is injected with page.evaluate; the app's CSP forbids inline scripts for real users.
    return {**browser_context_args, "bypass_csp": True, "locale": "es-PR", "viewport": {"width": 1280, "height": 900},
            "accept_downloads": True}


class Visit:
    """Wraps a page: records every request's origin and runs axe on each page visited."""

    def __init__(self, page, base_url: str) -> None:
        self.page = page
        self.base = base_url.rstrip("/")
        self.outside: list[str] = []
        self.axe_failures: list[str] = []
        page.on("request", self._record)

    def _record(self, request) -> None:
        url = request.url
        if url.startswith(("data:", "blob:", "about:")):
            return
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" != self.base:
            self.outside.append(url)

    def go(self, path: str) -> None:
        self.page.goto(self.base + path)
        self.check()

    def check(self) -> None:
        """axe-core on the current page: no serious or critical violation."""
        from axe_playwright_python.sync_playwright import Axe

        results = Axe().run(self.page)
        for violation in results.response.get("violations", []):
            if violation.get("impact") in ("serious", "critical"):
                nodes = ", ".join(node.get("target", ["?"])[0] for node in violation.get("nodes", [])[:3])
                self.axe_failures.append(f"{self.page.url}: {violation['id']} ({violation['impact']}) at {nodes}")

    def login_password_only(self, username: str, password: str) -> None:
        """The sign-in page alone: what follows is the code page or the enrolment page."""
        self.go("/cuenta/entrar/")
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", password)
        self.page.click("main form button[type=submit]")
        self.page.wait_for_load_state()
        self.check()

    def submit_code(self, code: str) -> None:
        self.page.fill("#id_code", code)
        self.page.click("main form button[type=submit]")
        self.page.wait_for_load_state()
        self.check()

    def login(self, username: str, password: str) -> None:
        """The sign-in page, then (staff, and landowners who enrolled) the code page with the
        code an authenticator app computes from the user's device key (``tests/otp.py``); a
        staff user who never enrolled gets an app first, as if enrolled earlier."""
        from django.contrib.auth import get_user_model

        from parcels.second_factor import second_factor_required
        from tests.otp import app_device, totp_code

        user = get_user_model().objects.get(username=username)
        device = app_device(user) if second_factor_required(user) else None
        self.login_password_only(username, password)
        if device is not None:
            assert "/cuenta/verificar/" in self.page.url, self.page.url
            self.submit_code(totp_code(device))
            assert "/cuenta/verificar/" not in self.page.url, "the code was refused"

    def logout(self) -> None:
        self.page.click("header form[action$='/cuenta/salir/'] button")
        self.page.wait_for_load_state()

    def assert_clean(self) -> None:
        assert not self.outside, f"requests left the app's origin: {self.outside[:5]}"
        assert not self.axe_failures, "accessibility (axe-core):\n" + "\n".join(self.axe_failures)


@pytest.fixture
def visit(page, live_server, seed_rows) -> Iterator[Visit]:
    journey = Visit(page, live_server.url)
    yield journey
    journey.assert_clean()
