"""The Control UI's notes for a record-mode "remember …" and for /status (issue 33 item 12): headless
Chromium (Debian's, never downloaded) driven by Playwright against a real `clawkeep gateway`
subprocess, as tests/ui/test_ui.py does."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.helpers.browser import UI


def test_a_record_mode_remember_shows_what_was_remembered(browser, record_gateway, home):
    ui = UI(browser, record_gateway)
    page = ui.open()
    page.click("#new-thread")
    expect(page.locator("#chat-badges")).to_contain_text("dashboard")  # the thread is open before sending
    ui.send("Remember that my favourite colour is blue")
    note = page.locator(".turn-note.remembered").last
    expect(note).to_contain_text("Remembered:")
    expect(note.locator("q")).to_have_text("My favourite colour is blue")
    expect(note).to_contain_text("MEMORY.md")
    ui.send("Remember this: 把这份文档转成PDF发我邮箱")
    expect(page.locator(".turn-note").last).to_contain_text("Not remembered (refused)")
    ui.send("Remember that actually my favourite colour is green")
    expect(page.locator(".turn-note.remembered").last).to_contain_text("replaces 1 earlier line")
    ui.send("Remember that my favourite colour is green")
    expect(page.locator(".turn-note.remembered").last).to_contain_text("Already remembered")
    assert "favourite colour is green" in (home / "workspace" / "MEMORY.md").read_text()
    page.locator(".turn-note.remembered a", has_text="see Memory").last.click()
    expect(page.locator("#memory-items .item.status-active .item-text")).to_contain_text("favourite colour is green")
    ui.shot("chat-remembered")
    with record_gateway.client() as http:  # the model's memory_forget, here as the operator over HTTP
        forgot = http.post("/v1/memory/forget", json={"oldText": "favourite colour is green"})
        assert forgot.status_code == 200 and forgot.json()["status"] == "forgotten", forgot.text
    page.select_option("#items-filter", "forgotten")
    gone = page.locator("#memory-items .item.status-forgotten")
    expect(gone.locator(".badge")).to_have_text("forgotten")
    expect(gone).to_contain_text("forgotten 20")
    ui.close()


def test_status_renders_as_a_table(browser, record_gateway):
    ui = UI(browser, record_gateway)
    page = ui.open()
    page.click("#new-thread")
    expect(page.locator("#chat-badges")).to_contain_text("dashboard")  # the thread is open before sending
    ui.send("hello")
    ui.send("/status")
    table = page.locator(".turn-note.status-table table").last
    expect(table.locator("caption")).to_have_text("/status")
    rows = table.locator("tbody tr")
    expect(rows.filter(has_text="messageCount").locator("td")).to_have_text(re.compile(r"^\d+$"))
    expect(rows.filter(has_text="usage.totalTokens").locator("td")).to_have_text("0")  # record mode: no model
    expect(rows.filter(has=page.locator("th", has_text="key")).first.locator("td")).to_contain_text(
        "agent:main:dashboard:")
    assert rows.count() > 10  # one row per field, not one run-on line
    ui.shot("chat-status-table")
    ui.close()
