"""Credential redaction for text that leaves the transcript store.

`redact_secrets` is shared by sessions_history, transcript indexing and memory write
filters, so it must stay general (no knowledge of message shapes) and cheap on ordinary
prose: every rule carries literal hints and its regex only runs when a hint occurs in the
text.

Design choices:
- Known key formats keep their non-secret type prefix (`sk-ant-…[REDACTED]`) so a reader
  can still tell what kind of credential was there; everything else becomes `[REDACTED]`.
- Key bodies must contain a digit; real keys are random so they practically always do, and
  the check keeps slugs like `risk-assessment-framework` or `sk-learn-style-guide` intact.
- `key: value` (colon, unquoted) is common in prose ("Password: see the vault"), so there
  the value must look machine-made; `key=value` and quoted values are always redacted.
- Output is idempotent: redacting already-redacted text changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

REDACTED = "[REDACTED]"

# A token may not start or end inside a longer word, path slug or identifier.
_NOT_AFTER_WORD = r"(?<![A-Za-z0-9_-])"
_NOT_BEFORE_WORD = r"(?![A-Za-z0-9_-])"


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    hints: tuple[str, ...]  # lowercase literals; the rule is skipped unless one occurs
    pattern: re.Pattern[str]
    replace: Callable[[re.Match[str]], str]


def _keep_prefix(m: re.Match[str]) -> str:
    return f"{m.group('prefix')}…{REDACTED}"


def _whole(_m: re.Match[str]) -> str:
    return REDACTED


def _token_rule(
    name: str, hints: tuple[str, ...], prefix: str, body: str, min_len: int
) -> _Rule:
    """A key made of a literal type prefix and a random body containing a digit."""
    pattern = re.compile(
        # The lookahead demands a digit inside the body (see module docstring).
        rf"{_NOT_AFTER_WORD}(?P<prefix>{prefix})(?={body}*[0-9]){body}{{{min_len},}}"
        rf"{_NOT_BEFORE_WORD}"
    )
    return _Rule(name, hints, pattern, _keep_prefix)


# --- PEM private keys: keep the armour lines, drop the body (unclosed: to end of text).
_PEM = re.compile(
    r"(?P<begin>-----BEGIN (?P<kind>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----)"
    r"(?P<body>.*?)"
    r"(?P<end>-----END (?P=kind)-----|\Z)",
    re.DOTALL,
)


def _pem(m: re.Match[str]) -> str:
    if m.group("body").strip() == REDACTED:
        return m.group(0)
    end = m.group("end") or f"-----END {m.group('kind')}-----"
    return f"{m.group('begin')}\n{REDACTED}\n{end}"


# --- scheme://user:password@host: keep the user, hide the password.
# The scheme is bounded and may not start mid-run: `a.a.a.….a` must not rescan per dot.
_URL_CREDENTIALS = re.compile(
    r"(?P<head>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s:/@?#]+:)"
    r"(?P<secret>[^\s/@?#]+)@"
)


def _url_credentials(m: re.Match[str]) -> str:
    if m.group("secret") == REDACTED:
        return m.group(0)
    return f"{m.group('head')}{REDACTED}@"


# --- Authorization schemes followed by an opaque token.
_AUTH_SCHEME = re.compile(
    r"\b(?P<scheme>[Bb]earer|BEARER|[Bb]asic|BASIC)[ \t]+(?P<token>[A-Za-z0-9._~+/-]{16,}=*)"
)


def _looks_machine_made(value: str) -> bool:
    """True for values unlikely to be an English word: digits, symbols or inner capitals."""
    if any(c.isdigit() for c in value):
        return True
    if any(not c.isalnum() for c in value):
        return True
    inner = value[1:]
    return any(c.isupper() for c in inner) and any(c.islower() for c in inner)


def _auth_scheme(m: re.Match[str]) -> str:
    if not _looks_machine_made(m.group("token")):
        return m.group(0)
    return f"{m.group('scheme')} {REDACTED}"


# --- password=… / "api_key": "…" / OPENAI_API_KEY=… / ?access_token=…
# The key must END in a secret word, so `max_tokens=100` or `token_count: 3` stay.
_SECRET_WORDS = (
    r"password|passwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|secret[_-]?key|credentials?"
)
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.-])"
    rf"(?P<key>(?:[A-Za-z0-9]+[_.-])*(?:{_SECRET_WORDS}))"
    r"(?P<sep>[\"']?[ \t]*(?P<op>[:=])[ \t]*)"
    r"(?:(?P<quote>[\"'])(?P<quoted>[^\"'\n]+)(?P=quote)"
    # Bare values never start with an opening bracket (a nested object, or a marker)
    # and never end with a full stop (end of sentence).
    r"|(?P<bare>[^\s\"'`,;&)}\]>{\[(<]"
    r"(?:[^\s\"'`,;&)}\]>]*[^\s\"'`,;&)}\]>.])?))",
    re.IGNORECASE,
)
# Values that are references or placeholders, not secrets.
_PLACEHOLDER = re.compile(
    r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\*+|x+|<[^>]*>|\{\{.*\}\}|null|none|nil|true|false"
    r"|undefined|empty|redacted)$",
    re.IGNORECASE,
)


def _is_not_a_secret(key: str, value: str) -> bool:
    return (
        "REDACTED" in value  # already handled by an earlier rule or an earlier pass
        or value.startswith("-----")  # PEM armour; the PEM rule owns it
        or value.lower() == key.lower()  # code such as f(api_key=api_key)
        or _PLACEHOLDER.match(value) is not None
    )


def _assignment(m: re.Match[str]) -> str:
    value = m.group("quoted") if m.group("quoted") is not None else m.group("bare")
    if _is_not_a_secret(m.group("key"), value):
        return m.group(0)
    is_prose_colon = m.group("op") == ":" and m.group("bare") is not None
    if is_prose_colon and not (_looks_machine_made(value) or len(value) >= 16):
        return m.group(0)
    if m.group("quoted") is not None:
        q = m.group("quote")
        return f"{m.group('key')}{m.group('sep')}{q}{REDACTED}{q}"
    return f"{m.group('key')}{m.group('sep')}{REDACTED}"


_RULES: tuple[_Rule, ...] = (
    # Multi-line and URL forms first so later token rules do not split them up.
    _Rule("pem", ("-----begin",), _PEM, _pem),
    _Rule("url", ("://",), _URL_CREDENTIALS, _url_credentials),
    # sk-ant- before sk- so the longer prefix wins.
    _token_rule("anthropic", ("sk-ant-",), "sk-ant-", "[A-Za-z0-9_-]", 20),
    _token_rule("openai", ("sk-",), "sk-", "[A-Za-z0-9_-]", 20),
    _token_rule("stripe", ("_live_", "_test_"), "[sr]k_(?:live|test)_", "[A-Za-z0-9]", 16),
    _token_rule(
        "github", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), "gh[pousr]_", "[A-Za-z0-9]", 30
    ),
    _token_rule("github_pat", ("github_pat_",), "github_pat_", "[A-Za-z0-9_]", 22),
    _token_rule("gitlab", ("glpat-",), "glpat-", "[A-Za-z0-9_-]", 20),
    _token_rule("slack", ("xox", "xapp-"), "xox[abeoprs]-|xapp-", "[A-Za-z0-9-]", 10),
    _token_rule("huggingface", ("hf_",), "hf_", "[A-Za-z0-9]", 30),
    _token_rule("npm", ("npm_",), "npm_", "[A-Za-z0-9]", 36),
    _Rule(
        "aws_access_key_id",
        ("akia", "asia"),
        re.compile(r"(?<![A-Za-z0-9])(?P<prefix>AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        _keep_prefix,
    ),
    _Rule(
        "google",
        ("aiza",),
        re.compile(rf"{_NOT_AFTER_WORD}(?P<prefix>AIza)[A-Za-z0-9_-]{{35}}{_NOT_BEFORE_WORD}"),
        _keep_prefix,
    ),
    _Rule(
        "telegram_bot",
        (":aa",),
        re.compile(r"(?<![A-Za-z0-9])(?P<prefix>[0-9]{8,10}:)AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])"),
        _keep_prefix,
    ),
    # JWT: base64url header and payload both start with `{"` -> "eyJ".
    _Rule(
        "jwt",
        ("eyj",),
        re.compile(
            r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
            r"(?![A-Za-z0-9_-])"
        ),
        _whole,
    ),
    _Rule("auth_scheme", ("bearer", "basic"), _AUTH_SCHEME, _auth_scheme),
    _Rule("assignment", ("pass", "secret", "token", "key", "credential"), _ASSIGNMENT, _assignment),
)


def redact_secrets(text: str) -> tuple[str, bool]:
    """Replace credential-like substrings with a redaction marker.

    Returns the redacted text and whether anything was replaced.
    """
    if not text:
        return text, False
    lowered = text.lower()
    out = text
    for rule in _RULES:
        # Hints are tested on the original text; earlier rules only ever shorten secrets
        # into markers, which cannot create a new hint for a later rule.
        if any(h in lowered for h in rule.hints):
            out = rule.pattern.sub(rule.replace, out)
    return out, out != text
