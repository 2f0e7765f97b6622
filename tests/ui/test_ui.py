"""The Control UI end to end (SPEC G2): Debian's Chromium, headless, driven by Playwright against a
real `clawkeep gateway` subprocess on loopback. Nothing is mocked: the page talks to the gateway
over HTTP, the gateway to a scripted model server over HTTP, and the checks read the home's files.

Screenshots go to build/ui-screenshots/ (git-ignored); the README's pictures in docs/ are copies.
`make test` installs /usr/bin/chromium (apt) when it is missing; no browser is ever downloaded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import expect

from tests.helpers.browser import UI  # the `browser` and `record_gateway` fixtures: a plugin
from tests.helpers.dreamed_home import (
    ALICE,
    BACKUP,
    EDITOR,
    INCOGNITO_WORD,
    INITIAL_MEMORY,
    SEATS,
    dream_home,
    dreaming_config,
)
from tests.helpers.gateway_process import GatewayProcess
from tests.helpers.model_replies import model_config, stream_chunks
from tests.helpers.scripted_server import ScriptedServer

JSON_TYPE = {"Content-Type": "application/json"}  # state changes say JSON, even without a body

NO_VECTORS = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}
TOKEN = "ui-test-token-0123456789abcdef"


def files_containing(root: Path, needle: str) -> list[str]:
    """Every file under `root` (databases, WAL, logs, notes) whose bytes contain `needle`."""
    probes = {needle.encode(), needle.lower().encode()}
    return [str(p) for p in root.rglob("*") if p.is_file() and any(probe in p.read_bytes() for probe in probes)]


# --- the whole journey in record mode -----------------------------------------------------------
def test_record_mode_journey_threads_reset_search_memory_incognito(browser, record_gateway, home):
    ui = UI(browser, record_gateway)
    page = ui.open()
    expect(page.locator("#record-banner")).to_be_visible()  # no model configured: record mode says so

    # a new dashboard thread, listed under Threads with its count
    page.click("#new-thread")
    expect(page.locator("#chat-badges")).to_contain_text("dashboard")
    ui.send("Our launch codename is Bluefinch 4471")
    expect(page.locator("#transcript .msg.user .text")).to_have_text(["Our launch codename is Bluefinch 4471"])
    expect(page.locator(".turn-note")).to_contain_text("record mode")
    threads = page.locator(".group-threads")
    expect(threads.locator(".session-meta")).to_contain_text("1 message")
    page.select_option("#message-role", "assistant")  # record mode: the operator supplies the reply
    ui.send("Bluefinch noted, launch on Friday. " + " ".join(
        f"Step {n}: check the release notes, the pricing page and the onboarding emails." for n in range(1, 9)))
    page.select_option("#message-role", "user")
    ui.send("what did we say about the launch codename last time?")
    page.click("#trace-toggle")  # the /verbose-style toggle: Active Memory's trace per turn
    expect(page.locator("#trace-toggle")).to_have_attribute("aria-pressed", "true")
    expect(page.locator(".trace").last).to_be_visible()
    expect(page.locator(".trace-line").last).to_contain_text("Active Memory:")
    expect(page.locator(".trace-line").last).to_contain_text("past question")
    ui.shot("chat-record-mode")

    # /compact: a divider marks where the summarised part ends and the kept messages start
    ui.send("/compact")
    expect(page.locator(".turn-note").last).to_contain_text("Compacted 2 earlier messages")
    divider = page.locator(".interval.open .compaction-divider")
    expect(divider).to_have_count(1)
    expect(divider).to_contain_text("Compacted 2 earlier messages (manual)")
    expect(page.locator(".interval.open .compaction-divider + .msg .text")).to_have_text(
        "what did we say about the launch codename last time?")
    divider.locator("summary").click()
    expect(divider.locator(".summary")).to_contain_text("Summary of 2 earlier messages")

    # reset: the interval closes into a divider, the new one starts empty
    page.click("#reset-session")
    closed = page.locator(".interval.closed")
    expect(closed).to_have_count(1)
    expect(closed.locator(".interval-toggle")).to_contain_text("3 messages")
    expect(closed.locator(".reset-divider")).to_contain_text("Reset (manual)")
    expect(closed.locator(".interval-body")).to_be_hidden()
    ui.send("After the reset we talk about invoices")
    expect(page.locator(".interval.open .msg .text")).to_have_text(["After the reset we talk about invoices"])

    # the closed interval opens on click (here: from the keyboard), and closes again
    toggle = closed.locator(".interval-toggle")
    toggle.focus()
    page.keyboard.press("Enter")
    expect(page.locator(".interval.closed .interval-toggle")).to_have_attribute("aria-expanded", "true")
    expect(page.locator(".interval.closed .interval-body .msg .text")).to_have_count(3)
    expect(page.locator(".interval.closed .interval-body .compaction-divider")).to_have_count(1)
    ui.shot("chat-interval-open")
    page.locator(".interval.closed .interval-toggle").click()
    expect(page.locator(".interval.closed .interval-body")).to_be_hidden()

    # session search, then jump into the closed interval with the message highlighted
    page.fill("#search-q", "Bluefinch")
    page.press("#search-q", "Enter")
    hits = page.locator("#search-hits .hit-link")
    expect(hits).to_have_count(2)
    ui.shot("search")
    hits.filter(has=page.locator(".snippet", has_text="codename is Bluefinch")).click()
    target = page.locator(".msg.highlight")
    expect(target).to_have_count(1)
    expect(target).to_contain_text("Our launch codename is Bluefinch 4471")
    expect(target).to_be_focused()
    expect(page.locator(".interval.closed .interval-toggle")).to_have_attribute("aria-expanded", "true")
    assert target.locator("xpath=ancestor::section[contains(@class,'closed')]").count() == 1

    # a fork: a new thread that continues from this one
    page.click("#fork-session")
    expect(page.locator("#chat-title")).to_contain_text("fork of")
    expect(page.locator(".interval.open .msg .text")).to_have_text(["After the reset we talk about invoices"])
    expect(page.locator(".group-threads .session")).to_have_count(2)

    # memory written from chat (record mode's "remember …"), one fact superseding another, one refused
    page.goto(record_gateway.url + "/#/chat")
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    ui.send("Remember that my favourite colour is blue")
    ui.send("Remember that actually my favourite colour is green")
    ui.send("Remember that my password is Hunter2-quokka-77")
    expect(page.locator(".turn-note").last).to_contain_text("refused")

    page.click("nav.views >> text=Memory")
    items = page.locator("#memory-items .item")
    expect(items).to_have_count(2)
    old = page.locator(".item.status-superseded")
    expect(old.locator(".badge")).to_have_text("superseded")
    expect(old.locator(".successor")).to_contain_text("green")
    old.locator(".successor").click()  # superseded → linked to its successor
    successor = page.locator(".item.status-active", has_text="green")
    expect(successor).to_be_focused()
    refusal = page.locator("#memory-refusals tbody tr")
    expect(refusal).to_have_count(1)
    expect(refusal).to_contain_text("secret")
    expect(refusal).to_contain_text("[REDACTED]")
    assert "quokka-77" not in page.content()  # the refused secret is not shown in the log…
    refusal_log = home / "agents" / "main" / "memory-refusals.jsonl"
    assert "[REDACTED]" in refusal_log.read_text()  # …nor kept in it or in a memory file in clear
    assert not files_containing(home / "workspace", "quokka-77") and "quokka-77" not in refusal_log.read_text()

    # hybrid search with scores and citations
    page.fill("#memory-q", "favourite colour")
    page.press("#memory-q", "Enter")
    first = page.locator("#memory-hits .memory-hit").first
    expect(first.locator(".cite")).to_contain_text("MEMORY.md#L")
    assert re.fullmatch(r"[01]\.\d\d", first.locator(".score").inner_text())
    ui.shot("memory")

    # edit lands in MEMORY.md and is re-indexed; delete removes the line
    successor.locator("button", has_text="Edit").click()
    field = page.locator(".item-edit textarea")
    expect(field).to_be_focused()
    field.fill("My favourite colour is teal")
    page.locator(".item-edit button", has_text="Save").click()
    expect(page.locator(".item.status-active .item-text")).to_have_text("My favourite colour is teal")
    memory_md = (home / "workspace" / "MEMORY.md").read_text()
    assert "teal" in memory_md and "is green" not in memory_md
    page.fill("#memory-q", "teal")
    page.press("#memory-q", "Enter")
    expect(page.locator("#memory-hits .snippet").first).to_contain_text("teal")
    page.locator(".item.status-active button", has_text="Delete").click()
    page.locator(".item.status-active button", has_text="Yes, delete").click()
    expect(page.locator(".item.status-active")).to_have_count(0)
    assert "teal" not in (home / "workspace" / "MEMORY.md").read_text()

    # incognito: marked, usable, and nothing of it reaches the disk
    page.click("#new-incognito")
    expect(page.locator("#chat-badges .incognito-badge")).to_be_visible()
    expect(page.locator("#incognito-note")).to_be_visible()
    ui.send("quokkazanzibar 9917 is my incognito secret plan")
    said = "quokkazanzibar 9917 is my incognito secret plan"
    expect(page.locator("#transcript .msg.user .text")).to_have_text([said])
    expect(page.locator(".group-threads .session.incognito")).to_have_count(1)
    ui.shot("chat-incognito")
    assert not files_containing(home, "quokkazanzibar")

    # status: health, counts and the G5 metrics as charts
    page.click("nav.views >> text=Status")
    expect(page.locator("#status-cards .card")).to_have_count(4)
    expect(page.locator("#status-cards")).to_contain_text("none — record mode")
    expect(page.locator("#status-rates svg[role=img]")).to_have_count(3)
    expect(page.locator("#status-requests svg[role=img]")).to_have_count(2)
    assert "turns" in page.locator("#status-rates").inner_text()
    page.set_viewport_size({"width": 1280, "height": 1400})  # the whole page in one picture
    ui.shot("status")
    ui.close()
    record_gateway.stop()
    assert not files_containing(home, "quokkazanzibar")  # not after shutdown either


# --- keyboard and narrow windows -----------------------------------------------------------------
def test_keyboard_focus_order_and_a_narrow_window(browser, record_gateway):
    ui = UI(browser, record_gateway)
    page = ui.open()
    page.keyboard.press("Tab")
    expect(page.locator(".skip")).to_be_focused()
    order = []
    for _ in range(7):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id || document.activeElement.textContent.trim()"))
    # the menu button is hidden here
    assert order == ["Chat", "Memory", "Dreams", "Status", "search-q", "Search", "new-thread"]
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("", "none")  # visible focus
    page.keyboard.press("Enter")  # a new thread, from the keyboard
    expect(page.locator("#chat-badges")).to_contain_text("dashboard")
    expect(page.locator("#message-text")).to_be_focused()
    page.keyboard.type("typed and sent with Enter")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("second line")
    page.keyboard.press("Enter")
    expect(page.locator("#transcript .msg.user .text")).to_have_text(["typed and sent with Enter\nsecond line"])

    page.set_viewport_size({"width": 380, "height": 780})
    expect(page.locator("#sidebar")).to_be_hidden()
    expect(page.locator("#menu")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 380  # nothing runs off the side
    page.click("#menu")
    expect(page.locator("#sidebar")).to_be_visible()
    expect(page.locator("#menu")).to_have_attribute("aria-expanded", "true")
    ui.shot("narrow-sidebar")
    page.locator(".group-threads .session").first.click()
    expect(page.locator("#sidebar")).to_be_hidden()
    assert page.evaluate("document.documentElement.scrollWidth") <= 380
    ui.shot("narrow-chat")
    ui.close()


# --- a real model streaming its reply ---------------------------------------------------------------
def test_reply_streams_in_with_its_tool_call(browser, home):
    call = [{"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "memory_search", "arguments": '{"query": "tea"}'}}]
    with ScriptedServer() as model:
        slow = stream_chunks("You drink ", "green tea ", "every ", "morning.")
        slow.stream_delay = 0.4  # slow enough to watch the reply arrive piece by piece
        model.add(stream_chunks(calls=call), slow)
        running = GatewayProcess(home, config=model_config(model))
        try:
            ui = UI(browser, running)
            page = ui.open()
            expect(page.locator("#record-banner")).to_be_hidden()
            page.click(".group-home >> text=Open Home")  # Home before the main session exists
            expect(page.locator("#chat-title")).to_have_text("Home")
            page.locator("#message-text").fill("what do I drink in the morning?")
            page.locator("#message-text").press("Enter")
            streaming = page.locator(".msg.assistant.streaming")
            expect(streaming.locator(".tool-chip")).to_have_text("tool: memory_search")
            expect(streaming.locator(".text")).to_contain_text("You drink")  # part of the reply, still streaming
            assert "morning." not in streaming.locator(".text").inner_text()
            ui.shot("chat-streaming")
            settled = page.locator(".msg.assistant:not(.streaming) .text")
            expect(settled).to_have_text("You drink green tea every morning.")
            expect(page.locator(".group-home .session")).to_contain_text("Main session")  # the message started it
            expect(page.locator("#chat-key")).to_have_text("agent:main:main")
            page.click("#trace-toggle")
            expect(page.locator(".msg.user .trace")).to_be_visible()
            assert len(model.requests) == 2 and model.requests[1].json()["stream"] is True
            ui.close()
        finally:
            running.stop()


# --- a gateway with a token --------------------------------------------------------------------------
def test_the_page_asks_for_the_token_once_and_keeps_it(browser, home):
    running = GatewayProcess(home, config=NO_VECTORS, env={"CLAWKEEP_GATEWAY_TOKEN": TOKEN})
    try:
        ui = UI(browser, running)
        page = ui.page
        page.goto(running.url + "/")
        dialog = page.locator("#token-dialog")
        expect(dialog).to_be_visible()
        expect(page.locator("#token-input")).to_be_focused()
        page.fill("#token-input", "not-the-token-at-all")
        page.press("#token-input", "Enter")
        expect(dialog.locator(".wrong")).to_be_visible()  # refused: asked again
        page.fill("#token-input", TOKEN)
        page.press("#token-input", "Enter")
        expect(page.locator("body")).to_have_attribute("data-ready", "true")
        expect(dialog).to_be_hidden()
        assert page.evaluate("localStorage.getItem('clawkeep.token')") == TOKEN
        page.reload()
        expect(page.locator("body")).to_have_attribute("data-ready", "true")
        expect(dialog).to_be_hidden()  # kept: not asked again
        ui.close()
    finally:
        running.stop()


# --- the Dreams tab ------------------------------------------------------------------------------------
def test_dreams_tab_shows_a_real_sweep_and_undo_removes_the_line_from_memory(browser, home):
    dreamed = dream_home(home)  # notes + searches through the engine, the sweep by `clawkeep memory dream`
    running = GatewayProcess(home, config=dreaming_config())
    try:
        ui = UI(browser, running)
        page = ui.open()
        page.click("nav.views >> text=Dreams")
        expect(page.locator("#dreams-title")).to_be_focused()
        expect(page.locator("nav.views a[data-view=dreams]")).to_have_attribute("aria-current", "page")
        expect(page.locator("#dreams-toggle")).to_have_attribute("aria-checked", "true")
        expect(page.locator("#dreams-off")).to_be_hidden()
        expect(page.locator("#dreams-state .card h2")).to_have_text("Dreaming is on")
        expect(page.locator("#dreams-state")).to_contain_text(dreamed.run_id)  # the last sweep

        # what the sweep promoted, each line with where it came from and an undo
        items = page.locator("#dreams-runs .promoted-item")
        expect(items).to_have_count(2)
        expect(page.locator("#dreams-runs .run-head h3")).to_contain_text(dreamed.run_id)
        seats = items.filter(has_text=SEATS)
        expect(seats.locator(".item-meta")).to_contain_text(ALICE)  # stated in alice's DM, kept hers
        editor = items.filter(has_text=EDITOR)
        expect(editor.locator(".badge")).to_have_text("in MEMORY.md")
        expect(editor.locator(".item-meta")).to_contain_text(dreamed.promoted[EDITOR])

        # the phase blocks of DREAMS.md and the diary
        expect(page.locator("#dreams-blocks .phase")).to_have_count(3)
        expect(page.locator(".phase-light")).to_contain_text(EDITOR)
        expect(page.locator(".phase-rem .phase-summary")).to_contain_text("theme(s)")
        expect(page.locator(".phase-deep")).to_contain_text(f"promoted “{SEATS}”")
        expect(page.locator(".phase-deep code").first).to_contain_text("clawkeep memory promote-undo")
        diary = page.locator("#dreams-diary .diary-entry")
        expect(diary).to_have_count(1)
        expect(diary.locator("h3")).to_contain_text(dreamed.run_id)
        expect(diary).to_contain_text("I kept 2 thing(s) for the long run")
        text = page.locator("#view-dreams").inner_text()
        assert BACKUP not in text and INCOGNITO_WORD not in text  # a cron job's line, an incognito search: never
        page.set_viewport_size({"width": 1280, "height": 1500})
        ui.shot("dreams")
        page.set_viewport_size({"width": 380, "height": 780})
        assert page.evaluate("document.documentElement.scrollWidth") <= 380  # nothing runs off the side
        page.set_viewport_size({"width": 1280, "height": 860})

        # undo one line with the mouse: asked first, then gone from MEMORY.md, the rest kept
        editor.get_by_role("button", name=f"Undo: {EDITOR}").click()
        keep = editor.get_by_role("button", name="Keep it")
        expect(keep).to_be_focused()
        editor.get_by_role("button", name="Yes, undo").click()
        expect(editor.locator(".badge")).to_have_text("undone")
        expect(editor).to_be_focused()
        expect(editor.get_by_role("button")).to_have_count(0)
        memory_md = dreamed.memory_md.read_text()
        assert EDITOR not in memory_md and SEATS in memory_md and "I live in Berlin" in memory_md
        expect(page.locator("#announce")).to_contain_text("removed from MEMORY.md")

        # the other one from the keyboard; then MEMORY.md is what it was before the sweep
        seats.get_by_role("button", name=f"Undo: {SEATS}").focus()
        page.keyboard.press("Enter")
        expect(seats.get_by_role("button", name="Keep it")).to_be_focused()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Enter")
        expect(seats.locator(".badge")).to_have_text("undone")
        assert SEATS not in dreamed.memory_md.read_text()
        assert dreamed.memory_md.read_text().rstrip("\n") == INITIAL_MEMORY.rstrip("\n")

        # sweep now: a second diary entry, and an undone claim is not promoted again
        page.click("#dreams-sweep")
        expect(diary).to_have_count(2)
        expect(page.locator("#dreams-runs .promoted-item")).to_have_count(2)
        assert EDITOR not in dreamed.memory_md.read_text()

        # switched off from the tab: it says so and how to switch it back on
        page.click("#dreams-toggle")
        expect(page.locator("#dreams-toggle")).to_have_attribute("aria-checked", "false")
        expect(page.locator("#dreams-off")).to_be_visible()
        expect(page.locator("#dreams-off")).to_contain_text("clawkeep memory dreaming on")
        overrides = json.loads((home / "clawkeep.overrides.json").read_text())
        assert overrides["plugins"]["entries"]["memory-core"]["config"]["dreaming"]["enabled"] is False
        ui.close()
    finally:
        running.stop()


def test_undo_run_restores_memory_byte_for_byte(browser, home):
    dreamed = dream_home(home)
    running = GatewayProcess(home, config=dreaming_config())
    try:
        ui = UI(browser, running)
        page = ui.open("#/dreams")
        page.get_by_role("button", name=f"Undo all of run {dreamed.run_id}").click()
        expect(page.locator(".run-head .confirm")).to_contain_text("Remove the 2 lines of this run")
        page.locator(".run-head").get_by_role("button", name="Yes, undo").click()
        expect(page.locator("#dreams-runs .promoted-item .badge")).to_have_text(["undone", "undone"])
        expect(page.locator(".run-head h3")).to_be_focused()
        expect(page.locator("#announce")).to_contain_text("byte-identical")
        assert dreamed.memory_md.read_bytes() == INITIAL_MEMORY.encode()
        ui.close()
    finally:
        running.stop()


def test_dreams_tab_with_dreaming_off_says_how_to_turn_it_on(browser, home):
    running = GatewayProcess(home, config=dreaming_config(enabled=False))
    try:
        ui = UI(browser, running)
        page = ui.open("#/dreams")
        banner = page.locator("#dreams-off")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("Dreaming is off")
        ways = ("clawkeep memory dreaming on", "/dreaming on", "plugins.entries.memory-core.config.dreaming.enabled")
        for way in ways:
            expect(banner).to_contain_text(way)
        expect(page.locator("#dreams-state .card h2")).to_have_text("Dreaming is off")
        expect(page.locator("#dreams-state")).to_contain_text("none — Dreaming is off")  # no next sweep
        expect(page.locator("#dreams-runs")).to_have_text("Nothing promoted yet.")
        expect(page.locator("#dreams-blocks .phase .muted")).to_have_text(["Not run yet."] * 3)
        expect(page.locator("#dreams-diary")).to_contain_text("No diary entry yet")
        ui.shot("dreams-off")
        switch = page.locator("#dreams-toggle")
        switch.focus()
        page.keyboard.press("Space")  # a switch from the keyboard
        expect(switch).to_have_attribute("aria-checked", "true")
        expect(banner).to_be_hidden()
        with running.client() as http:
            assert http.get("/v1/dreaming").json()["enabled"] is True
        ui.close()
    finally:
        running.stop()


# --- QA regressions: what the page shows when a session, a write or an address goes wrong ----------
SHORT_MESSAGES = {"session": {"maxMessageChars": 40}, **NO_VECTORS}  # a real refusal to provoke


def test_a_missing_session_clears_the_view_and_a_refused_message_is_never_shown_as_sent(browser, home):
    running = GatewayProcess(home, config=SHORT_MESSAGES)
    try:
        ui = UI(browser, running)
        page = ui.open()
        page.click("#new-thread")
        expect(page.locator("#chat-badges")).to_contain_text("dashboard")
        ui.send("first words")
        expect(page.locator("#transcript .msg.user .text")).to_have_text(["first words"])

        # refused by the gateway (too long): no "You" bubble, the error shown, the text kept
        too_long = "this message is much longer than forty characters"
        ui.send(too_long)
        expect(page.locator("#toast")).to_contain_text("40")
        expect(page.locator("#transcript .msg .text")).to_have_text(["first words"])
        expect(page.locator("#message-text")).to_have_value(too_long)

        # a missing session: the previous one's transcript, title and composer are gone
        page.evaluate("location.hash = '#/chat/agent%3Amain%3Anope'")
        expect(page.locator("#chat-title")).to_have_text("Session not found")
        expect(page.locator("#transcript")).to_contain_text("agent:main:nope")
        expect(page.locator("#transcript .msg")).to_have_count(0)
        expect(page.locator("#chat-badges .badge")).to_have_count(0)
        for control in ("#message-text", "#send", "#reset-session", "#fork-session"):
            expect(page.locator(control)).to_be_disabled()

        # back to a real session: usable again
        page.locator(".group-threads .session").first.click()
        expect(page.locator("#transcript .msg.user .text")).to_have_text(["first words"])
        expect(page.locator("#message-text")).to_be_enabled()
        expect(page.locator("#message-text")).to_have_value(too_long)  # still not lost
        ui.close()
    finally:
        running.stop()


def test_the_role_picker_goes_back_to_user_so_a_command_runs(browser, record_gateway):
    ui = UI(browser, record_gateway)
    page = ui.open()
    page.click("#new-thread")
    expect(page.locator("#chat-badges")).to_contain_text("dashboard")
    ui.send("what is the plan?")
    page.select_option("#message-role", "assistant")
    ui.send("The plan is to ship on Friday.")
    expect(page.locator("#transcript .msg.assistant .text")).to_have_text(["The plan is to ship on Friday."])
    expect(page.locator("#message-role")).to_have_value("user")
    ui.send("/status")
    status = page.locator(".turn-note.status-table").last  # run, not stored; shown as a table
    expect(status.locator("tr", has_text="key")).to_contain_text("agent:main:dashboard:")
    expect(page.locator("#transcript .msg .text")).to_have_text(["what is the plan?", "The plan is to ship on Friday."])
    ui.close()


def test_a_message_from_another_session_is_labelled_with_its_sender(browser, record_gateway):
    sender, target = "agent:main:main", "agent:main:telegram:group:team"
    with record_gateway.client() as http:
        opened = {"text": "Team channel opened.", "role": "assistant", "channel": "telegram",
                  "chatType": "group", "group": "team"}
        assert http.post("/v1/messages", json=opened).status_code == 200
        assert http.post("/v1/messages", json={"text": "hello from home"}).status_code == 200
        sent = http.post(f"/v1/sessions/{target}/send", json={"message": "When is the deadline?"},
                         headers={"X-Clawkeep-Session": sender})
        assert sent.status_code == 200, sent.text
    ui = UI(browser, record_gateway)
    page = ui.open("#/chat/" + target.replace(":", "%3A"))
    delivered = page.locator("#transcript .msg", has_text="When is the deadline?")
    expect(delivered.locator(".role")).to_have_text(f"from {sender}")
    expect(delivered).to_have_class(re.compile(r"\binter-session\b"))
    expect(page.locator("#transcript .msg .role")).to_have_text(["Assistant", f"from {sender}"])
    ui.close()


def test_deleting_an_item_another_writer_removed_says_so_and_reloads(browser, record_gateway, home):
    with record_gateway.client() as http:
        for text in ("I drink oolong tea", "My bike is blue"):
            assert http.post("/v1/memory/remember", json={"text": text}).status_code == 200, text
    ui = UI(browser, record_gateway)
    page = ui.open("#/memory")
    expect(page.locator("#memory-items .item")).to_have_count(2)
    stale = page.locator("#memory-items .item", has_text="oolong")
    item_id = stale.get_attribute("id").removeprefix("item-")
    stale.locator("button", has_text="Delete").click()
    with record_gateway.client() as http:  # another writer gets there first
        assert http.delete(f"/v1/memory/items/{item_id}", headers=JSON_TYPE).status_code == 200
    stale.locator("button", has_text="Yes, delete").click()
    expect(page.locator("#toast")).to_contain_text("not found")
    expect(page.locator("#memory-items .item")).to_have_count(1)
    expect(page.locator("#memory-items .item-text")).to_have_text("My bike is blue")
    ui.close()  # no uncaught error either


def test_a_malformed_address_and_an_empty_search_are_shown_not_thrown(browser, record_gateway):
    ui = UI(browser, record_gateway)
    page = ui.open()
    page.click("#new-thread")
    ui.send("Kestrel is the project name")
    # stored (no longer pending) before the address changes and the search runs
    expect(page.locator("#transcript .msg:not(.pending)", has_text="Kestrel is the project name")).to_have_count(1)
    page.evaluate("location.hash = '#/chat/%E0%A4%A'")
    expect(page.locator("#chat-title")).to_have_text("Bad address")
    expect(page.locator("#transcript .msg")).to_have_count(0)
    expect(page.locator("#message-text")).to_be_disabled()

    page.fill("#search-q", "Kestrel")
    page.press("#search-q", "Enter")
    expect(page.locator("#search-hits .hit")).to_have_count(1)
    page.evaluate("location.hash = '#/search?q='")
    expect(page.locator("#search-hits .hit")).to_have_count(0)
    expect(page.locator("#search-summary")).not_to_contain_text("Kestrel")
    expect(page.locator("#search-q")).to_have_value("")
    ui.close()
