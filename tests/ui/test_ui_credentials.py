"""The Control UI signed in with a scoped token (issue 28 item 1): Chromium against a real
`clawkeep gateway` subprocess. The page shows only what the token may see and signs out."""

from __future__ import annotations

import json
import urllib.parse

from playwright.sync_api import expect

from clawkeep import Engine
from tests.helpers.browser import UI
from tests.helpers.cli import run_cli
from tests.helpers.gateway_process import GatewayProcess

CONFIG = {"session": {"dmScope": "per-channel-peer"}, "agents": {"defaults": {"memorySearch": {"provider": "none"}}}}
ALICE = "agent:main:telegram:direct:alice"
BOB = "agent:main:telegram:direct:bob"
BOB_MARKER = "Kestrelwood8813"


def test_a_peer_token_sees_only_its_own_conversation_and_signs_out(browser, home):
    (home / "clawkeep.json5").write_text(json.dumps(CONFIG))
    with Engine.open(home=home) as engine:
        engine.message("alice says hello", channel="telegram", sender="alice")
        engine.message(f"bob's boat is called {BOB_MARKER}", channel="telegram", sender="bob")
    secret = run_cli(home, "tokens", "create", "alice", "--scope", "peer:telegram:alice", "--json").json()["token"]
    running = GatewayProcess(home, config=CONFIG)
    try:
        ui = UI(browser, running)
        page = ui.page
        page.goto(running.url + "/")
        expect(page.locator("#token-dialog")).to_be_visible()  # a token exists: loopback is no longer open
        page.fill("#token-input", secret)
        page.press("#token-input", "Enter")
        expect(page.locator("body")).to_have_attribute("data-ready", "true")
        expect(page.locator("#signed-in-as")).to_have_text("alice · peer:telegram:alice")
        expect(page.locator("#session-groups a[data-key]")).to_have_count(1)
        assert page.locator("#session-groups a[data-key]").get_attribute("data-key") == ALICE
        expect(page.get_by_role("link", name="Open Home")).to_have_count(0)  # Home is not this token's to open
        for view in ("memory", "dreams", "status"):
            expect(page.locator(f'nav.views a[data-view="{view}"]')).to_be_hidden()
        expect(page.locator("#new-thread")).to_be_hidden()
        page.fill("#search-q", "boat")  # a word of bob's message (the page echoes the query itself)
        page.press("#search-q", "Enter")
        expect(page.locator("#search-summary")).to_contain_text("0 messages")
        page.goto(running.url + "/#/chat/" + urllib.parse.quote(BOB, safe=""))
        expect(page.locator("body")).to_have_attribute("data-ready", "true")
        page.goto(running.url + "/#/status")  # an operator view by address: the chat is shown instead
        expect(page.locator("#view-status")).to_be_hidden()
        assert BOB_MARKER not in page.content()
        ui.shot("scoped-token")
        page.click("#sign-out")
        expect(page.locator("#token-dialog")).to_be_visible()
        assert page.evaluate("localStorage.getItem('clawkeep.token')") is None
        ui.errors.clear()  # the page reloads into the sign-in dialog; what matters is checked above
        ui.close()
    finally:
        running.stop()
