"""Tests for clawkeep.redact.redact_secrets."""

from __future__ import annotations

import pytest

from clawkeep.redact import REDACTED, redact_secrets

# Fake credentials shaped like the real formats; none of them is live.
OPENAI = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
ANTHROPIC = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"
GITHUB = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GITHUB_PAT = "github_pat_11AAAAAAA0abcdefghij_klmnopqrstuvwxyz0123456789ABCDEF"
SLACK_BOT = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
GOOGLE = "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)


def redacted(text: str) -> str:
    out, changed = redact_secrets(text)
    assert changed, f"expected a redaction in {text!r}"
    return out


def unchanged(text: str) -> None:
    out, changed = redact_secrets(text)
    assert (out, changed) == (text, False)


# --- known key formats keep their type prefix --------------------------------------------


@pytest.mark.parametrize(
    ("secret", "kept_prefix"),
    [
        (OPENAI, "sk-"),
        ("sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4", "sk-"),
        (ANTHROPIC, "sk-ant-"),
        (GITHUB, "ghp_"),
        ("gho_" + GITHUB[4:], "gho_"),
        ("ghs_" + GITHUB[4:], "ghs_"),
        (GITHUB_PAT, "github_pat_"),
        (SLACK_BOT, "xoxb-"),
        ("xoxp-1234567890-abcdefghij", "xoxp-"),
        ("xoxa-2-1234567890-abcdefghij", "xoxa-"),
        ("xoxs-1234567890-abcdefghij", "xoxs-"),
        (AWS_KEY_ID, "AKIA"),
        ("ASIAY34FZKBOKMUTVV7A", "ASIA"),
        (GOOGLE, "AIza"),
        ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_"),
        ("glpat-xYz12345AbCdEfGhIjKl", "glpat-"),
        ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456", "hf_"),
        ("123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1", "123456789:"),
    ],
)
def test_known_key_formats_are_redacted_keeping_prefix(secret: str, kept_prefix: str) -> None:
    out = redacted(f"use {secret} please")
    assert out == f"use {kept_prefix}…{REDACTED} please"
    assert secret not in out


def test_anthropic_prefix_wins_over_openai_prefix() -> None:
    assert redacted(ANTHROPIC) == f"sk-ant-…{REDACTED}"


def test_jwt_is_redacted_whole() -> None:
    assert redacted(f"token {JWT}.") == f"token {REDACTED}."


def test_several_secrets_in_one_text() -> None:
    out = redacted(f"a {OPENAI} b {GITHUB} c {AWS_KEY_ID}")
    assert out == f"a sk-…{REDACTED} b ghp_…{REDACTED} c AKIA…{REDACTED}"


def test_secret_inside_punctuation_and_quotes() -> None:
    assert redacted(f'key="{OPENAI}";') == f'key="sk-…{REDACTED}";'
    assert redacted(f"({GITHUB})") == f"(ghp_…{REDACTED})"


# --- Authorization schemes -----------------------------------------------------------------


def test_bearer_token() -> None:
    out = redacted("Authorization: Bearer abcDEF123456ghiJKL789mno")
    assert out == f"Authorization: Bearer {REDACTED}"


def test_bearer_lowercase_and_jwt() -> None:
    assert redacted(f"authorization: bearer {JWT}") == f"authorization: bearer {REDACTED}"
    assert redacted("bearer 0a1b2c3d4e5f6a7b8c9d") == f"bearer {REDACTED}"


def test_basic_auth_credentials() -> None:
    assert redacted("Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==") == (
        f"Authorization: Basic {REDACTED}"
    )


@pytest.mark.parametrize(
    "text",
    [
        "Bearer bonds are old-fashioned.",
        "Basic information about the bearer of this letter.",
        "The Bearer internationalisation effort",  # long word, but plain prose
    ],
)
def test_auth_words_in_prose_are_kept(text: str) -> None:
    unchanged(text)


# --- PEM private keys -------------------------------------------------------------------------


def test_pem_private_key_block_body_is_removed() -> None:
    pem = (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        "MIIEowIBAAKCAQEA7bq98s7H\nq9D2jK3lL5mN8pQ1rS4tU7vW0xY3z\n"
        "-----END RSA PRIVATE KEY-----"
    )
    out = redacted(f"here:\n{pem}\nthanks")
    assert out == (
        f"here:\n-----BEGIN RSA PRIVATE KEY-----\n{REDACTED}\n"
        "-----END RSA PRIVATE KEY-----\nthanks"
    )
    assert "MIIE" not in out


@pytest.mark.parametrize(
    "kind", ["PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "PGP PRIVATE KEY BLOCK"]
)
def test_pem_kinds(kind: str) -> None:
    out = redacted(f"-----BEGIN {kind}-----\nabc123\n-----END {kind}-----")
    assert "abc123" not in out
    assert out.startswith(f"-----BEGIN {kind}-----")


def test_unclosed_pem_is_redacted_to_end() -> None:
    out = redacted("key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt\nAAAA")
    assert "b3Blbn" not in out
    assert "AAAA" not in out
    assert out.endswith("-----END OPENSSH PRIVATE KEY-----")


def test_public_key_and_certificate_are_kept() -> None:
    unchanged("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZI\n-----END PUBLIC KEY-----")
    unchanged("-----BEGIN CERTIFICATE-----\nMIIBszCCAVmg\n-----END CERTIFICATE-----")


# --- URL credentials --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "postgres://admin:s3cr3t@db.internal:5432/app",
            f"postgres://admin:{REDACTED}@db.internal:5432/app",
        ),
        ("https://bob:hunter2@example.com/x", f"https://bob:{REDACTED}@example.com/x"),
        ("redis://default:pa55w0rd@cache:6379", f"redis://default:{REDACTED}@cache:6379"),
    ],
)
def test_url_password_is_redacted(url: str, expected: str) -> None:
    assert redacted(f"connect to {url} now") == f"connect to {expected} now"


@pytest.mark.parametrize(
    "text",
    [
        "see http://localhost:8080/path",
        "https://example.com/a?b=c#d",
        "mailto:someone@example.com",
        "ssh git@github.com:owner/repo.git",
    ],
)
def test_urls_without_password_are_kept(text: str) -> None:
    unchanged(text)


# --- key = value assignments -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2", f"password={REDACTED}"),
        ("PASSWORD = hunter2", f"PASSWORD = {REDACTED}"),
        ("passwd=letmein", f"passwd={REDACTED}"),
        ("api_key: abcd1234efgh", f"api_key: {REDACTED}"),
        ("api-key=abc", f"api-key={REDACTED}"),
        ("apikey=abc", f"apikey={REDACTED}"),
        ("token=abc", f"token={REDACTED}"),
        ("secret=abc", f"secret={REDACTED}"),
        ("client_secret=abc", f"client_secret={REDACTED}"),
        ("OPENAI_API_KEY=foo123", f"OPENAI_API_KEY={REDACTED}"),
        ("GITHUB_TOKEN=abc", f"GITHUB_TOKEN={REDACTED}"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            f"aws_secret_access_key = {REDACTED}",
        ),
        ("X-Api-Key: a1b2c3", f"X-Api-Key: {REDACTED}"),
        ('{"password": "hunter2"}', f'{{"password": "{REDACTED}"}}'),
        ("{'api_key': 'correct horse'}", f"{{'api_key': '{REDACTED}'}}"),
        ('password: "plainword"', f'password: "{REDACTED}"'),
        ("GET /cb?access_token=abc123&state=xyz", f"GET /cb?access_token={REDACTED}&state=xyz"),
        ("auth_token=abc;next=1", f"auth_token={REDACTED};next=1"),
        ("Set password=hunter2.", f"Set password={REDACTED}."),
        ("credentials: user1:pa55", f"credentials: {REDACTED}"),
    ],
)
def test_assignments_are_redacted(text: str, expected: str) -> None:
    assert redacted(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Password: see the vault",  # colon + plain word reads as prose
        "Token: expired.",
        "the token: none",
        "max_tokens=100",
        "token_count: 3",
        "tokens=5",
        "f(api_key=api_key)",  # code passing a variable along
        "password=${DB_PASSWORD}",
        "password=$DB_PASSWORD",
        "password=***",
        "api_key=<your-key-here>",
        'password=""',
        "token=null",
        "author: Alice",
        "keyboard=us",
        "monkey=banana",
        "passport=AB123",
    ],
)
def test_non_secret_assignments_are_kept(text: str) -> None:
    unchanged(text)


def test_assignment_of_known_key_keeps_prefix_marker() -> None:
    assert redacted(f"OPENAI_API_KEY={OPENAI}") == f"OPENAI_API_KEY=sk-…{REDACTED}"


def test_private_key_assignment_leaves_pem_to_pem_rule() -> None:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----"
    out = redacted(f"private_key: {pem}")
    assert out == (
        f"private_key: -----BEGIN RSA PRIVATE KEY-----\n{REDACTED}\n-----END RSA PRIVATE KEY-----"
    )


# --- negatives: ordinary text survives ----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Let's meet on Tuesday to discuss the roadmap.",
        "Invoice INV-2024-0042 is overdue; PO-2023-9912 too.",
        "request id 550e8400-e29b-41d4-a716-446655440000",
        "commit 3168d7fb1acf221122ae4c26ed36816c56405747",
        "short sha 3168d7f",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "risk-assessment-framework-2024-version-two",
        "task-12345678901234567890123",
        "desk-ABCDEFGHIJ0123456789abc",
        "sk-learn is not a thing, scikit-learn is",
        "sk-short1",
        "Asia and AKIA are just letters here; AKIAshort",
        "the ghp_ prefix alone",
        "xoxb- alone",
        "eyJ alone is not a JWT; eyJhbGciOi.notjwt",
        "-----BEGIN-----",
        "我的密码是很长的一句话，但没有真正的凭据。",
        "use snake_case_identifiers_like_this_one_2024",
        "The secret of success is hard work.",
        "I forgot my password again!",
        "C:\\Users\\me\\token.txt",
        "The key: ideas are below",
    ],
)
def test_ordinary_text_is_not_redacted(text: str) -> None:
    unchanged(text)


# --- contract ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f"{OPENAI} {ANTHROPIC} {GITHUB} {SLACK_BOT} {AWS_KEY_ID} {GOOGLE} {JWT}",
        "password=hunter2 and postgres://a:b1@h/x and Bearer abcDEF123456ghiJKL789",
        "-----BEGIN PRIVATE KEY-----\nabc\n",
        f'{{"api_key": "{OPENAI}", "token": "t0k3n"}}',
    ],
)
def test_redaction_is_idempotent(text: str) -> None:
    once = redacted(text)
    assert redact_secrets(once) == (once, False)


def test_returns_changed_flag_false_for_clean_text() -> None:
    assert redact_secrets("hello world") == ("hello world", False)


def test_large_clean_text_is_unchanged() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 20000
    assert redact_secrets(text) == (text, False)


def test_secret_at_end_of_large_text_is_found() -> None:
    text = "plain prose line\n" * 10000 + OPENAI
    out, changed = redact_secrets(text)
    assert changed
    assert out.endswith(f"sk-…{REDACTED}")


@pytest.mark.parametrize(
    "text",
    [
        "a." * 100_000 + " http://x",  # once made the URL rule rescan from every dot
        "a-" * 100_000 + " token=",
        "sk-" * 100_000,
        "token:" * 100_000,
        'password: "' * 50_000,
        "-----BEGIN PRIVATE KEY-----" * 10_000,
        "Bearer " + "a/" * 100_000,
    ],
)
def test_adversarial_inputs_are_handled(text: str) -> None:
    # These inputs once took quadratic time; now they must finish, and redaction is stable.
    # (Speed itself is measured in bench/, not asserted here.)
    once, _ = redact_secrets(text)
    assert redact_secrets(once) == (once, False)


# --- credentials stated in words, payment cards, national ids, IBANs (M7) --------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("my password is hunter2", "hunter2"),
        ("My password is swordfish", "swordfish"),
        ("The wifi password is Tr0ub4dor&3", "Tr0ub4dor&3"),
        ("Save my login: username alice, password s3cretPass!", "s3cretPass"),
        ("I changed my password to Qwer!2024 yesterday", "Qwer!2024"),
        ("my PIN is 4821", "4821"),
        ("The verification code is 482913", "482913"),
        ("the door code for the building is 7391", "7391"),
        ("the AWS secret access key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
        ("my api key is 8f14e45fceea167a5a36dedd4bea2543", "8f14e45fceea167a"),
        ("My SSN is 078051120", "078051120"),
        ("我的密码是 abc12345", "abc12345"),
        ("WiFi密码是Tr0ub4dor&3", "Tr0ub4dor&3"),
        ("验证码是482913", "482913"),
        ("支付密码：886521", "886521"),
        ("邮箱的登录密码改成了 Qwer!2024", "Qwer!2024"),
        ("阿里云 AccessKey Secret 是 Xk9Lm2Np4Qr6St8Uv0Wx2Yz4Ab6Cd8", "Xk9Lm2Np4Qr6St8"),
        ("パスワードはabc12345です", "abc12345"),
        ("暗証番号は4821", "4821"),
        ("認証コードは 482913 です", "482913"),
        ("ログインパスワードをSakura#77に変えた", "Sakura#77"),
        ("비밀번호는 qwerty123이야", "qwerty123"),
        ("와이파이 비번은 Tr0ub4dor&3", "Tr0ub4dor&3"),
        ("인증번호는 482913이에요", "482913"),
        ("OTP 번호 550912 입력해", "550912"),
        ("my seed phrase is abandon ability able about above absent absorb abstract absurd abuse access accident",
         "absorb abstract"),
    ],
)
def test_credentials_stated_in_words_are_redacted(text: str, secret: str) -> None:
    out = redacted(text)
    assert secret not in out and REDACTED in out


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("my card number is 4111 1111 1111 1111", "4111 1111 1111 1111"),
        ("Visa 4242-4242-4242-4242, exp 08/27", "4242-4242-4242-4242"),
        ("Amex 3782 822463 10005", "3782 822463 10005"),
        ("卡号6217000012345670", "6217000012345670"),
        ("カード番号は5500005555555559です", "5500005555555559"),
        ("UnionPay 6222 0212 3456 7890 128", "6222 0212 3456 7890 128"),
    ],
)
def test_payment_cards_are_redacted(text: str, number: str) -> None:
    out = redacted(text)
    assert number not in out and REDACTED in out


@pytest.mark.parametrize(
    "text",
    [
        "my order number was 1234567890123456",  # fails Luhn
        "invoice 4111 1111 1111 1112",  # a card prefix, but fails Luhn
        "ISBN 978-7-115-42802-8",
        "call +1 415 555 0132",
        "the build took 1234567 ms over 4000000000000 bytes",
        "pi is 3.1415926535897932384",
        "ticket 2024000123456789",
    ],
)
def test_ordinary_long_numbers_are_kept(text: str) -> None:
    unchanged(text)


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("我的身份证号是11010519491231002X", "11010519491231002X"),
        ("身份证 440304198506171238 帮我记一下", "440304198506171238"),
        ("My SSN is 078-05-1120", "078-05-1120"),
        ("주민등록번호는 900101-1234567이에요", "900101-1234567"),
        ("マイナンバーは123456789018です", "123456789018"),
        ("IBAN DE89 3704 0044 0532 0130 00 please", "DE89 3704 0044 0532 0130 00"),
        ("GB82 WEST 1234 5698 7654 32 is the account", "GB82 WEST 1234 5698 7654 32"),
        ("IBANはFR1420041010050500013M02606です", "FR1420041010050500013M02606"),
    ],
)
def test_national_ids_and_ibans_are_redacted(text: str, number: str) -> None:
    out = redacted(text)
    assert number not in out and REDACTED in out


@pytest.mark.parametrize(
    "text",
    [
        "id 110105194912310021 with a wrong check digit",
        "SSN-shaped but invalid: 000-12-3456 and 666-12-3456",
        "IBAN DE89 3704 0044 0532 0130 01 (wrong checksum)",
        "my number is 123456789012",  # 12 digits without a My Number keyword
        "I forgot my password again!",
        "my password is wrong",
        "The password policy requires 12 characters",
        "my password is stored in 1Password",
        "I use the same password manager at home",
        "my PIN is the same as my old one",
        "the code is on GitHub",
        "the verification code never arrived",
        "我昨天改了密码，旧的不能用了",
        "パスワードは忘れました",
        "비밀번호를 바꿨어요",
        "my passport number is E12345678",
    ],
)
def test_near_misses_are_kept(text: str) -> None:
    unchanged(text)


@pytest.mark.parametrize(
    ("secret", "kept_prefix"),
    [
        ("gsk_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6", "gsk_"),
        ("xai-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4", "xai-"),
        ("shpat_" + "0123456789abcdef0123456789abcdef", "shpat_"),
        ("dop_v1_" + "0123456789abcdef" * 4, "dop_v1_"),
        ("pypi-AgEIcHlwaS5vcmc" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4Y5z6", "pypi-"),
        ("glptt-" + "0123456789abcdefABCD", "glptt-"),
        ("dckr_pat_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n", "dckr_pat_"),
        ("hvs." + "CAESIJ1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6", "hvs."),
        ("lin_api_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0", "lin_api_"),
        ("ya29." + "a0AfH6SMB1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R7", "ya29."),
        ("GOCSPX-" + "1a2B3c4D5e6F7g8H9i0J1k2L3m4N", "GOCSPX-"),
        ("LTAI" + "5tQ9xY2kP8mN3vR7wZ1a", "LTAI"),
        ("AKID" + "z8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE1", "AKID"),
        ("SK" + "0123456789abcdef0123456789abcdef", "SK"),
        ("AGE-SECRET-KEY-1" + "QQQ2Z3Y4X5W6V7U8T9S0R1Q2P3N4M5L6K7J8H9G0F1E2D3C4B5A6Z7Y8X9", "AGE-SECRET-KEY-"),
    ],
)
def test_more_key_formats_are_redacted(secret: str, kept_prefix: str) -> None:
    out = redacted(f"use {secret} please")
    assert secret not in out and out.startswith(f"use {kept_prefix}")


@pytest.mark.parametrize(
    "text",
    [
        "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",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "https://discord.com/api/webhooks/123456789012345678/abcDEF-ghiJKL_mno",
        "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq==",
    ],
)
def test_more_secret_shapes_are_redacted(text: str) -> None:
    out = redacted(f"x {text} y")
    assert REDACTED in out and text not in out


@pytest.mark.parametrize(
    "text",
    [
        "my password is hunter2, card 4111 1111 1111 1111, 身份证11010519491231002X",
        "パスワードはabc12345です",
        "IBAN DE89 3704 0044 0532 0130 00",
    ],
)
def test_new_rules_are_idempotent(text: str) -> None:
    once = redacted(text)
    assert redact_secrets(once) == (once, False)


@pytest.mark.parametrize(
    "text",
    ["1 " * 100_000, "4111 " * 50_000, "password is " * 50_000, "密码是" * 50_000, "GB82 " * 50_000,
     "1-" * 100_000, "my password to " * 50_000],
)
def test_new_rules_handle_adversarial_inputs(text: str) -> None:
    once, _ = redact_secrets(text)
    assert redact_secrets(once) == (once, False)


def test_secret_kinds_name_what_was_found() -> None:
    from clawkeep.redact import secret_kinds

    found = secret_kinds("card 4111 1111 1111 1111 and my password is hunter2")
    assert set(found) == {"payment card number", "password"}
    assert secret_kinds("hello") == ()


# --- session previews (QA: sessions list --preview showed credentials as they were) -------------
SECRETS_SAID = ("my aws key AKIAIOSFODNN7EXAMPLE ok", "password: hunter2secret")


def test_session_previews_and_recent_messages_are_redacted(tmp_path) -> None:
    from tests.helpers.cli import run_cli  # noqa: PLC0415
    from tests.helpers.engine import open_engine  # noqa: PLC0415

    home = tmp_path / "home"
    with open_engine(home) as engine:
        for text in SECRETS_SAID:
            engine.message(text)
        # a key that the 120-character cut would split is still redacted (redacted before the cut)
        engine.message("x" * 110 + " AKIAIOSFODNN7EXAMPLE", channel="telegram", sender="bob")
        rows = engine.sessions_list(preview=True, recent_messages=2)
    shown = str([row.to_json() for row in rows])
    for secret in ("hunter2secret", "AKIAIOSFODN"):
        assert secret not in shown, shown
    assert REDACTED in shown
    cli = run_cli(home, "sessions", "list", "--preview", "--json")
    assert cli.code == 0 and "hunter2secret" not in cli.stdout and "AKIAIOSFODN" not in cli.stdout
    assert REDACTED in cli.stdout
