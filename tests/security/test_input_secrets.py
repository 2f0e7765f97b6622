"""Issue 28 item 4: control characters in memory text are refused on every surface, the memory
indexer keeps a file with a bad line, and the secret filter knows identity numbers (by their
checks), the missed password wordings and the common token formats — and a secret never
reaches MEMORY.md in clear.

Surfaces are the real ones: the CLI as a subprocess, the gateway over loopback HTTP, the MCP
server through the official client, the tool loop against a scripted model server."""

from __future__ import annotations

import json
import os
import sys

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from clawkeep.redact import REDACTED, redact_secrets, secret_kinds
from tests.helpers.cli import run_cli
from tests.helpers.engine import open_engine
from tests.helpers.gateway_process import GatewayThread
from tests.helpers.model_replies import completion, config_for, last_message
from tests.helpers.scripted_server import ScriptedServer

NO_VECTORS = {"agents": {"defaults": {"memorySearch": {"provider": "none"}}}}


def memory_file(home) -> str:
    path = home / "workspace" / "MEMORY.md"
    return path.read_text(encoding="utf-8") if path.exists() else ""


# --- 1. control characters in memory text -------------------------------------------------------
def test_cli_remember_refuses_a_control_character_naming_it_and_its_position(home):
    result = run_cli(home, "memory", "remember", "I like\x01 tea")
    assert result.code == 2, (result.stdout, result.stderr)
    message = " ".join(result.stderr.split())
    assert "memory text" in message and "U+0001 (SOH)" in message and "position 7" in message
    assert "Traceback" not in result.stderr
    assert "tea" not in memory_file(home)
    escape = run_cli(home, "memory", "remember", "colour \x1b[31mred")
    assert escape.code == 2 and "U+001B (ESC)" in " ".join(escape.stderr.split())
    tab = run_cli(home, "memory", "remember", "I like\tgreen tea")  # tab is allowed
    assert tab.code == 0, tab.stderr
    assert "green tea" in memory_file(home)


def test_http_remember_and_edit_refuse_nul_and_memory_stays_searchable(home):
    running = GatewayThread(home, NO_VECTORS)
    try:
        with running.client() as http:
            stored = http.post("/v1/memory/remember", json={"text": "The spare key is under the blue pot"})
            assert stored.status_code == 200 and stored.json()["status"] == "stored"
            nul = http.post("/v1/memory/remember", json={"text": "a\u0000b"})
            assert nul.status_code == 400, nul.text
            error = nul.json()["error"]
            assert error["code"] == "invalid_input"
            assert "memory text" in error["message"] and "U+0000 (NUL)" in error["message"]
            assert "position 2" in error["message"]
            separator = http.post("/v1/memory/remember", json={"text": "one\u2028two"})
            assert separator.status_code == 400 and "U+2028 (LINE SEPARATOR)" in separator.json()["error"]["message"]
            item_id = stored.json()["item"]["id"]
            edit = http.put(f"/v1/memory/items/{item_id}", json={"text": "The key is\u0007 gone"})
            assert edit.status_code == 400 and "U+0007 (BEL) at position 11" in edit.json()["error"]["message"]
            carriage = http.put(f"/v1/memory/items/{item_id}", json={"text": "The key\ris gone"})
            assert carriage.status_code == 400
            hits = http.get("/v1/memory/search", params={"q": "spare key", "mode": "keyword"}).json()["results"]
            assert hits and hits[0]["path"] == "MEMORY.md" and "blue pot" in hits[0]["snippet"]
    finally:
        running.stop()
    text = memory_file(home)
    assert "\x00" not in text and "\x07" not in text and "blue pot" in text


def test_mcp_remember_refuses_nul(home):
    env = {k: v for k, v in os.environ.items() if k not in ("CLAWKEEP_HOME", "CLAWKEEP_DEBUG")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "clawkeep", "--home", str(home), "mcp"], env=env)

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("memory_remember", {"text": "tea\u0000time"})

    result = anyio.run(main)
    assert result.is_error
    text = result.content[0].text
    assert "U+0000 (NUL)" in text and "position 4" in text
    assert "\x00" not in memory_file(home)


def test_model_tool_call_with_a_control_character_is_refused_and_the_turn_goes_on(home):
    with ScriptedServer() as server:
        server.add(completion("", [("memory_remember", {"text": "my cat is\u0000 Tom"})]),
                   lambda req: completion("could not: " + last_message(req)["content"]))
        eng = open_engine(home, config_for(server))
        try:
            result = eng.message("remember my cat")
        finally:
            eng.close()
    assert result.tool_calls == [{"name": "memory_remember", "isError": True}]
    assert "U+0000 (NUL)" in result.reply
    assert "Tom" not in memory_file(home)


def test_chat_remember_in_record_mode_with_a_control_character_writes_nothing(home):
    with open_engine(home) as eng:
        eng.message("remember that my locker is\x1b number 12")
        assert "locker" not in memory_file(home)
        eng.message("remember that my locker is number 12")
    assert "locker is number 12" in memory_file(home)


def test_import_refuses_a_memory_file_with_a_nul_naming_file_and_line(home, tmp_path):
    source = tmp_path / "openclaw"
    (source / "workspace").mkdir(parents=True)
    (source / "openclaw.json").write_text("{}")
    (source / "workspace" / "MEMORY.md").write_text("# Memory\n\n- I like tea\n- bad\x00 line\n", encoding="utf-8")
    result = run_cli(home, "import", "openclaw", str(source), "--json")
    output = result.stdout + result.stderr
    assert "MEMORY.md:4" in output and "U+0000 (NUL)" in output, output
    assert "\x00" not in memory_file(home)


# --- 2. the indexer keeps a file with a bad line -----------------------------------------------
def test_index_keeps_a_file_with_a_nul_a_control_character_and_bad_bytes(home):
    workspace = home / "workspace"
    workspace.mkdir()
    (workspace / "MEMORY.md").write_bytes(
        b"# Memory\n\n- I drink green tea\n- broken a\x00b line\n- \xff\xfe not utf-8\n- stray \x1b escape\n"
        b"- The wifi router is in the hallway\n")
    config = home / "clawkeep.json5"
    config.write_text(json.dumps(NO_VECTORS))
    index = run_cli(home, "memory", "index", "--json", config=config)
    assert index.code == 0, index.stderr
    report = index.json()
    assert report["skipped"] == {} and "MEMORY.md" in report["indexed"]
    assert "line 4" in report["repaired"]["MEMORY.md"] and "U+0000 (NUL)" in report["repaired"]["MEMORY.md"]
    assert "line 5" in report["repaired"]["MEMORY.md"] and "line 6" in report["repaired"]["MEMORY.md"]
    hits = run_cli(home, "memory", "search", "hallway", "--json", config=config).json()
    assert hits["results"][0]["startLine"] == 7  # line numbers still match the file
    assert "green tea" in run_cli(home, "memory", "search", "green tea", "--json", config=config).stdout
    status = run_cli(home, "memory", "status", "--json", config=config).json()
    assert "MEMORY.md" in status["index"]["repairedFiles"]
    # fixed by hand: indexed whole, nothing reported any more
    (workspace / "MEMORY.md").write_text("# Memory\n\n- I drink green tea\n- The wifi router is in the hallway\n")
    run_cli(home, "memory", "index", "--json", config=config)
    status = run_cli(home, "memory", "status", "--json", config=config).json()
    assert "repairedFiles" not in status["index"]


# --- 3. the secret filter ------------------------------------------------------------------------
PASSWORD_PHRASINGS = [
    ("my password is hunter2", "hunter2"),
    ("the wifi password is Sunflower99", "Sunflower99"),
    ("I changed my password to Tr0ub4dor", "Tr0ub4dor"),
    ("the passphrase is correct horse battery staple", "correct horse battery staple"),
    ('the passphrase is "purple monkey dishwasher"', "purple monkey dishwasher"),
    ("login alice / pass hunter2", "hunter2"),
    ("user: bob pass: s3cr3t", "s3cr3t"),
    ("username carol password Kitten42", "Kitten42"),
    ("mein Passwort ist Sonnenblume", "Sonnenblume"),
    ("mein Passwort ist Sonne123", "Sonne123"),
    ("das Kennwort lautet Geheim!42", "Geheim!42"),
    ("Das WLAN-Passwort lautet Katze2024", "Katze2024"),
    ("Das Passwort für das WLAN ist Blume99", "Blume99"),
    ("Benutzer: anna Passwort: Fr3ude", "Fr3ude"),
    ("mon mot de passe est soleil42", "soleil42"),
    ("mon mot de passe est soleil", "soleil"),
    ("le mot de passe : chocolat77", "chocolat77"),
    ("mi contraseña es gato1234", "gato1234"),
    ("la mia password è girasole9", "girasole9"),
    ("minha senha é banana77", "banana77"),
    ("我的密码是abc12345", "abc12345"),
    ("パスワードはabc12345です", "abc12345"),
    ("비밀번호는 qwerty123이야", "qwerty123"),
]


@pytest.mark.parametrize(("text", "secret"), PASSWORD_PHRASINGS)
def test_password_phrasings_in_several_languages_are_redacted(text, secret):
    out, changed = redact_secrets(text)
    assert changed and secret not in out and REDACTED in out, out
    assert "password" in secret_kinds(text)


@pytest.mark.parametrize("text", [
    "mein Passwort ist falsch",
    "das Passwort ist zu kurz",
    "mon mot de passe est incorrect",
    "le mot de passe est trop court",
    "the passphrase is stored in the vault",
    "the passphrase is required for every login",
    "the user alice passed the test",
    "user alice pass the salt",
    "user guide password policy",
    "login bob pass sunshine",  # no separator and a plain word: not enough to call it a password
    "Passwort: siehe Tresor",
])
def test_password_prose_is_kept(text):
    assert redact_secrets(text) == (text, False)


@pytest.mark.parametrize(("text", "number"), [
    ("身份证号 110101199003071234", "110101199003071234"),  # named: the wrong check character does not matter
    ("我的身份证号码是11010119900307123X", "11010119900307123X"),
    ("ID card number: 110101199003071234", "110101199003071234"),
    ("id 11010519491231002X here", "11010519491231002X"),  # unnamed, valid check character
    ("SSN 078-05-1120", "078-05-1120"),
    ("my ssn is 078051120", "078051120"),
    ("IBAN DE89 3704 0044 0532 0130 00", "DE89 3704 0044 0532 0130 00"),
    ("card 5555.5555.5555.4444", "5555.5555.5555.4444"),
    ("card 5555 5555 5555 4444", "5555 5555 5555 4444"),
    ("card 4111-1111-1111-1111", "4111-1111-1111-1111"),
])
def test_identity_numbers_with_valid_checks_are_redacted(text, number):
    out = redact_secrets(text)[0]
    assert number not in out and REDACTED in out, out


@pytest.mark.parametrize("text", [
    "id 110101199003071234 without its word",  # wrong check character, not named
    "身份证号 110101199013071234",  # named, but month 13 is no birth date
    "SSN 000-12-3456",
    "SSN 666-12-3456 and 912-34-5678",
    "my ssn is 000051120",
    "IBAN DE89 3704 0044 0532 0130 01",
    "card 5555.5555.5555.4445",  # fails Luhn
    "order 2024.1207.0001.2345",
    "version 1.2.3.4 at 192.168.100.200",
    "ISBN 978-7-115-42802-8",
    "call +1 415 555 0132 or 010-8888-6666",
    "meeting on 2026-12-07 at 14:30",
    "tracking number 9400111899223197428490",
])
def test_ordinary_and_failing_numbers_are_kept(text):
    assert redact_secrets(text) == (text, False)


@pytest.mark.parametrize(("text", "secret", "kind"), [
    ("slack xoxb-123-abc", "123-abc", "API key or token"),
    ("xoxp-1234567890-1234567890-abcdefABCDEF1234", "1234567890-abcdef", "API key or token"),
    ("ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "A1b2C3d4", "API key or token"),
    ("gho_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "A1b2C3d4", "API key or token"),
    ("github_pat_11AAAAAAA0abcdefghij_klmnopqrstuvwxyz0123456789ABCDEF", "11AAAAAAA0", "API key or token"),
    ("AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", "cloud secret key"),
    ("my aws secret access key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", "cloud secret key"),
    ("ASIAY34FZKBOKMUTVV7A", "Y34FZKBOKMUTVV7A", "cloud access key"),
    ("AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "SyA1b2C3", "API key or token"),
    ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc", "API key or token"),
    ("sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "Ab3dEf6hIj9k", "API key or token"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "dozjgNryP4J3", "API key or token"),
])
def test_common_token_formats_are_redacted(text, secret, kind):
    out = redact_secrets(text)[0]
    assert secret not in out, out
    assert kind in secret_kinds(text)


@pytest.mark.parametrize("text", [
    "xoxb- alone", "the AWS secret is in the vault", "sha 3168d7fb1acf221122ae4c26ed36816c56405747",
    "aws region eu-central-1 and bucket my-bucket-2024",
])
def test_token_near_misses_are_kept(text):
    assert redact_secrets(text) == (text, False)


@pytest.mark.parametrize("text", [entry[0] for entry in PASSWORD_PHRASINGS] + [
    "身份证号 110101199003071234", "card 5555.5555.5555.4444",
    "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "slack xoxb-123-abc"])
def test_new_rules_are_idempotent(text):
    once = redact_secrets(text)[0]
    assert redact_secrets(once) == (once, False)


# --- a secret never reaches MEMORY.md in clear ----------------------------------------------------
@pytest.mark.parametrize(("text", "secret", "kind"), [
    ("身份证号 110101199003071234", "110101199003071234", "national ID number"),
    ("the slack bot token xoxb-123-abc", "xoxb-123-abc", "API key or token"),
    ("mein Passwort ist Sonnenblume", "Sonnenblume", "password"),
    ("login alice / pass hunter2", "hunter2", "password"),
])
def test_remember_refuses_a_secret_and_says_which_kind(home, text, secret, kind):
    result = run_cli(home, "memory", "remember", text, "--json")
    assert result.code == 0, result.stderr
    data = result.json()
    assert data["status"] == "refused" and kind in data["reason"]
    assert secret not in memory_file(home)
    refusals = run_cli(home, "memory", "refusals", "--json")
    assert secret not in refusals.stdout


def test_remember_with_allow_secrets_stores_it_redacted(home):
    config = home / "clawkeep.json5"
    config.write_text(json.dumps({"agents": {"defaults": {"memorySearch": {
        "provider": "none", "writeFilters": {"allowSecrets": True}}}}}))
    result = run_cli(home, "memory", "remember", "身份证号 110101199003071234", "--json", config=config)
    assert result.code == 0 and result.json()["status"] == "stored", result.stdout
    text = memory_file(home)
    assert "110101199003071234" not in text and f"身份证号 {REDACTED}" in text


def test_history_and_search_hide_the_new_kinds(home):
    said = ["mein Passwort ist Sonnenblume7", "card 5555.5555.5555.4444 please", "login alice / pass hunter2x",
            "the passphrase is correct horse battery staple"]
    with open_engine(home) as eng:
        for text in said:
            eng.message(text)
    history = run_cli(home, "sessions", "history", "agent:main:main", "--json")
    assert history.code == 0, history.stderr
    for secret in ("Sonnenblume7", "5555.5555", "hunter2x", "horse battery"):
        assert secret not in history.stdout
    for term in ("Sonnenblume7", "hunter2x", "staple"):
        found = run_cli(home, "sessions", "search", term, "--json").json()
        assert found["hits"] == [], (term, found)
    snippet = run_cli(home, "sessions", "search", "Passwort", "--json").json()["hits"][0]["snippet"]
    assert snippet == f"mein Passwort ist {REDACTED}"


def test_active_memory_reads_a_memory_file_with_a_bad_line(home):
    (home / "workspace").mkdir()
    (home / "workspace" / "MEMORY.md").write_bytes(
        b"# Memory\n\n- \xff\xfe stray bytes from an old editor\n- My dog is called Rex\n- a\x00b\n")
    with open_engine(home, NO_VECTORS) as eng:
        thread = eng.sessions_create()
        result = eng.recall("what did I say my dog is called?", session=thread["key"])
    assert result["status"] == "ok" and result["lane"] == 1 and "Rex" in result["summary"], result
