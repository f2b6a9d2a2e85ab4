"""Playwright against Debian's Chromium (the Debian package: no `playwright install` needed), headless."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from tests.browser.screens import SCREENS, Screen

# pytest-django's live_server runs the app in a thread while Playwright's sync API holds an event loop
# in the test thread; Django's async-safety check would refuse the database calls made from the test.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/lib/chromium/chromium"

# An assertion waits up to 15 s for the page to say what it should (Playwright's default is 5 s): on 2 shared
# cores under other test suites, a chart or the API docs' large schema can take longer to draw. A page that never
# says it still fails.
expect.set_options(timeout=15_000)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y --no-install-recommends chromium")
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "headless": True,
        "args": [
            "--disable-gpu",
            "--no-sandbox",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1360, "height": 900}}


@pytest.fixture(autouse=True)
def no_csp_violations(request):
    """Pages work under the Content-Security-Policy: any violation the browser reports fails the test."""
    if "page" not in request.fixturenames:
        yield
        return
    page = request.getfixturevalue("page")
    violations: list[str] = []
    page.on("console", lambda message: "Content Security Policy" in message.text and violations.append(message.text))
    yield
    assert not violations, violations


@pytest.fixture(params=SCREENS, ids=[s.name for s in SCREENS])
def screen(request, page) -> Screen:
    """The test runs once on a laptop's screen and once on a phone's (tests/browser/screens.py)."""
    page.set_viewport_size({"width": request.param.width, "height": request.param.height})
    return request.param
