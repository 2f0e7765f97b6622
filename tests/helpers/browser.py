"""The Control UI in Debian's Chromium (never a downloaded browser), driven by Playwright: the
browser fixture, a page that records what it fetches, and a record-mode gateway to point it at."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from tests.helpers.gateway_process import GatewayProcess

SMALL_TAIL = {"agents": {"defaults": {"memorySearch": {"provider": "none"},
                                      "compaction": {"keepRecentTokens": 30}}}}  # /compact has something to do
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "ui-screenshots"
WAIT_MS = 15_000


@pytest.fixture(scope="module")
def browser():
    assert CHROMIUM.exists(), "Debian's chromium is missing: `make test` installs it (apt-get install chromium)"
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


class UI:
    """One browser page on one gateway, recording every request the page makes."""

    def __init__(self, browser, gateway: GatewayProcess, width: int = 1280, height: int = 860):
        self.gateway = gateway
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.page: Page = self.context.new_page()
        self.page.set_default_timeout(WAIT_MS)
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def open(self, hash_: str = "") -> Page:
        self.page.goto(self.gateway.url + "/" + hash_)
        expect(self.page.locator("body")).to_have_attribute("data-ready", "true")
        return self.page

    def shot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))

    def send(self, text: str) -> None:
        box = self.page.locator("#message-text")
        box.fill(text)
        box.press("Enter")
        expect(self.page.locator("#send")).to_be_enabled()

    def close(self) -> None:
        self.context.close()
        assert not self.errors, f"JavaScript errors on the page: {self.errors}"
        outside = [url for url in self.requests if not url.startswith((self.gateway.url, "data:"))]
        assert not outside, f"the page fetched something from elsewhere: {outside}"


@pytest.fixture
def record_gateway(home):
    running = GatewayProcess(home, config=SMALL_TAIL)
    yield running
    running.stop()
