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
- Credentials stated in words ("my password is hunter2", "我的密码是 abc12345",
  "パスワードはabc12345です", "비밀번호는 qwerty123이야", "the verification code is 482913",
  "mein Passwort ist …", "le mot de passe : …", "mi contraseña es …") lose their value. A plain
  word after "password is" counts unless it is one of the words prose puts there ("wrong",
  "stored", "falsch", "incorrect", …); PINs and codes need digits; keys and tokens must look
  machine-made. A user name with a password ("login alice / pass hunter2") hides the password;
  a passphrase of three or more words without a function word is hidden whole.
- Numbers are redacted only when their own check says they are what they look like:
  payment cards (a card network's prefix and length, then Luhn; spaces, dashes or dots between
  groups), Chinese resident ids (birth date and ISO 7064 check character; named as one
  ("身份证号 …"), the birth date is enough), Japanese My Numbers (check digit, next to the
  word), IBANs (country length and mod 97); US SSNs and Korean resident registration
  numbers by their dashed shape and valid fields. Other long numbers (orders, ISBNs,
  phones) stay.
- Output is idempotent: redacting already-redacted text changes nothing.

`secret_kinds` names what was found ("password", "payment card number", …): the memory
write filters (M7) say why they refused a fact with it.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass

from .patterns import lazy

# Every pattern is compiled when its rule first runs (patterns.lazy): a rule only runs when one
# of its hints occurs, so most processes compile a few of them, not all.
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
    kind: str | Callable[[re.Match[str]], str] = "credential"  # what was found (secret_kinds)
    # "digit": only for text with a digit (every checked number has one); "token": only for
    # text with a digit and a chunk of 14+ characters between spaces (every key has both);
    # "nonascii": only for text with a non-ASCII character (the CJK wordings).
    gate: str = ""
    # Head scan: instead of trying the pattern at every position, find these lowercase literals
    # and try it at each one's word start and up to `back_words` words before (for
    # "wifi password", "secret access key"); the match must cover the head with its `kw` group.
    heads: tuple[str, ...] = ()
    back_words: int = 0
    head_group: str = "kw"
    modifiers: frozenset[str] = frozenset()  # the words a match may start with before its head


def _keep_prefix(m: re.Match[str]) -> str:
    return f"{m.group('prefix')}…{REDACTED}"


def _whole(_m: re.Match[str]) -> str:
    return REDACTED


def _token_rule(
    name: str, hints: tuple[str, ...], prefix: str, body: str, min_len: int, kind: str = "API key or token"
) -> _Rule:
    """A key made of a literal type prefix and a random body containing a digit."""
    pattern = lazy(
        # The lookahead demands a digit inside the body (see module docstring).
        rf"{_NOT_AFTER_WORD}(?P<prefix>{prefix})(?={body}*[0-9]){body}{{{min_len},}}"
        rf"{_NOT_BEFORE_WORD}"
    )
    return _Rule(name, hints, pattern, _keep_prefix, kind, gate="token")


# --- PEM private keys: keep the armour lines, drop the body (unclosed: to end of text).
_PEM = lazy(
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
_URL_CREDENTIALS = lazy(
    r"(?P<head>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s:/@?#]+:)"
    r"(?P<secret>[^\s/@?#]+)@"
)


def _url_credentials(m: re.Match[str]) -> str:
    if m.group("secret") == REDACTED:
        return m.group(0)
    return f"{m.group('head')}{REDACTED}@"


# --- Authorization schemes followed by an opaque token.
_AUTH_SCHEME = lazy(
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
    r"|private[_-]?key|secret[_-]?key|credentials?|account[_-]?key|shared[_-]?access[_-]?key"
)
_ASSIGNMENT = lazy(
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
_PLACEHOLDER = lazy(
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


# --- credentials stated in words --------------------------------------------------------------
# What a value may look like: printable ASCII without quotes, brackets or separators.
_VALUE = r"(?P<value>[A-Za-z0-9!#$%&*+\-./=?@^_|~]{1,128}+)"
_TRAILING = ".!?"
# Words English prose puts after "password is" that are not the password.
_PROSE_WORDS = frozenset("""
    a an the my your his her our their its this that these those it there here not no never still now also
    just only very really too so being been be in on at for to of from with by as same different wrong
    incorrect invalid correct right expired expiring weak strong secure insecure safe unsafe long short
    simple complicated complex hard easy required needed mandatory optional missing empty blank reset
    changed saved stored set written case sensitive case-sensitive secret private confidential unknown
    forgotten lost compromised leaked stolen shared old new fine ok okay good bad great terrible useless
    temporary random generated printed attached below above included locked blocked sent hidden encrypted
    hashed something nothing what which where somewhere anything everything password passwords passcode
    pin code token key none null nil empty redacted too-short different-now on-file
""".split())
_PROSE_SUFFIXES = ("ing", "ed", "ly", "able", "ible", "ful", "less", "ive")

_EN_PW = (r"(?:(?:wi-?fi|login|account|admin|root|e-?mail|bank|router|master|app|user|computer|laptop|phone|"
          r"network|vpn|database|db|server)\s+)?(?:pass(?:word|phrase|code)s?|passwd|pwd)")
_EN_CODE = (r"pin(?:\s+(?:code|number))?"
            r"|(?:verification|confirmation|security|authentication|auth|login|sign-?in|access|door|gate|alarm|entry|"
            r"garage|sms|text|2fa|mfa|otp|one[-\s]time|backup|recovery|unlock|lock|pickup)\s+codes?"
            r"|otp|one[-\s]time\s+pass(?:word|code)|cvv2?|cvc2?|(?:lock|safe)\s+combination")
_EN_KEY = (r"(?:api|access|secret|private|signing|encryption|license|licence|product|master|secret\s+access)"
           r"[\s_-]?keys?"
           r"|(?:client|app|api|webhook|consumer)\s+secret"
           r"|(?:auth|access|refresh|bearer|api|bot|session|personal\s+access|github|gitlab|slack|discord|"
           r"telegram)\s+tokens?|tokens?")
_EN_SSN = r"ssn|social\s+security\s+(?:number|no\.?|#)"
_STATED_EN = lazy(
    rf"(?<![A-Za-z0-9_])(?P<kw>(?P<pw>{_EN_PW})|(?P<code>{_EN_CODE})|(?P<key>{_EN_KEY})|(?P<ssn>{_EN_SSN}))"
    r"(?P<link>(?:\s+(?:for|to|of|on|at)\s+(?:the\s+|my\s+|our\s+|this\s+|that\s+)?[A-Za-z0-9'-]+)?"
    r"(?:\s+(?P<verb>is|was|are|were|is\s+now|is\s+still|will\s+be|has\s+been|has\s+changed\s+to|changed\s+to|"
    r"became)\s+|(?P<verb2>'s)\s+|\s*(?P<colon>[:=\uff1a])\s*|(?P<bare>\s+)))"
    + _VALUE,
    re.IGNORECASE,
)
# "I changed my password to hunter2", "set the wifi password to …"
_CHANGED_EN = lazy(
    rf"(?<![A-Za-z0-9_])(?P<head>(?P<verb>chang|set|reset|updat|switch)\w*\s+(?:my|the|our|his|her|their)\s+"
    rf"(?P<kw>(?P<pw>{_EN_PW})|(?P<code>{_EN_CODE}))\s+to\s+)" + _VALUE,
    re.IGNORECASE,
)
_CJK_PW = r"密码|密碼|口令|パスワード|暗証番号|暗証|비밀번호|비번|암호|패스워드"
_CJK_CODE = (r"验证码|驗證碼|校验码|校驗碼|动态码|動態碼|动态密码|動態密碼|安全码|安全碼|"
             r"取件码|提货码|认证码|認証コード|確認コード|認証番号|確認番号|"
             r"セキュリティコード|ワンタイムパスワード|ピン番号|"
             r"인증\s?번호|인증\s?코드|확인\s?코드|보안\s?코드|핀\s?번호|PIN|OTP|CVV|CVC")
_CJK_KEY = (r"密钥|秘钥|金鑰|密鑰|令牌|APIキー|秘密鍵|アクセスキー|シークレットキー|トークン|"
            r"API\s?키|비밀\s?키|액세스\s?키|토큰|AccessKey(?:\s?Secret)?|API\s?[Kk]ey|[Tt]oken|[Ss]ecret")
_STATED_CJK = lazy(
    rf"(?P<kw>(?P<pw>{_CJK_PW})|(?P<code>{_CJK_CODE})|(?P<key>{_CJK_KEY}))"
    r"(?P<link>\s*(?:번호|号码|號碼|号|號|码|碼|コード)?\s*(?:是|为|為|は|が|を|는|은|이|가|를|을|：|:|=)?\s*"
    r"(?:(?:已经|已經|已)?(?:改成|改为|改為|换成|換成|设为|設為|设成|設成|设置为|設置為|设置成|变成|變成)了?\s*)?)"
    + _VALUE,
    re.IGNORECASE,
)
_SEED_PHRASE = lazy(
    r"(?P<head>(?<![A-Za-z])(?:seed|recovery|mnemonic|secret|backup)\s+(?:phrase|words)\s*(?:is|are|:|=)?\s*"
    r"|(?:助记词|助記詞|シードフレーズ|복구\s?문구|시드\s?문구)\s*(?:是|为|は|는|:|：)?\s*)"
    r"(?P<words>[a-z]{3,8}(?:\s+[a-z]{3,8}){11,23}+)",
    re.IGNORECASE,
)


_MACHINE_CHAR = lazy(r"[0-9!#$%&*+./=?@^|~]")
_INNER_CASES = lazy(r".[a-z].*[A-Z]|.[A-Z].*[a-z]", re.DOTALL)


def _machine_value(value: str) -> bool:
    """Digits, inner capitals or symbols: not an English word."""
    return _MACHINE_CHAR.search(value) is not None or _INNER_CASES.match(value) is not None


def _split_value(m: re.Match[str]) -> tuple[str, str]:
    """(value, trailing sentence punctuation) — "hunter2." is "hunter2" then ".": one stop only,
    and a value that is all punctuation keeps it."""
    value = m.group("value")
    if len(value) > 1 and value[-1] in _TRAILING and value[-2] not in _TRAILING:
        return value[:-1], value[-1]
    return value, ""


def _stated_value_ok(m: re.Match[str], value: str, cjk: bool) -> bool:
    groups = m.groupdict()
    if groups.get("key"):
        if len(value) < 8 or not _machine_value(value) or value.lower() == m.group("kw").lower():
            return False
    elif groups.get("code"):
        if len(value) > 24 or sum(c.isdigit() for c in value) < 4:
            return False
    elif groups.get("ssn"):
        digits = "".join(c for c in value if c.isdigit())
        if len(value) > 11 or len(digits) != 9 or not _ssn_fields_valid(digits[:3], digits[3:5], digits[5:]):
            return False
    elif cjk:  # a password after a CJK wording
        if not ((len(value) >= 4 and _machine_value(value)) or len(value) >= 6):
            return False
    elif _machine_value(value):
        if len(value) < 4 and not (groups.get("verb") or groups.get("verb2")):
            return False
    elif not (groups.get("verb") or groups.get("verb2")):
        return False  # "password manager", "password: see the vault": prose
    else:
        word = value.lower()
        if len(word) < 3 or word in _PROSE_WORDS or word.endswith(_PROSE_SUFFIXES):
            return False
    if "REDACTED" in value or _PLACEHOLDER.match(value):
        return False
    # the tail of a key an earlier rule already redacted
    return not m.string.startswith(("…", REDACTED), m.end())


def _stated(cjk: bool) -> Callable[[re.Match[str]], str]:
    def replace(m: re.Match[str]) -> str:
        if cjk and m.group("kw").isascii() and m.group("link").isascii():
            return m.group(0)  # an English word ("token", "PIN") with an English link: the English rule's call
        value, tail = _split_value(m)
        if not _stated_value_ok(m, value, cjk):
            return m.group(0)
        return m.group(0)[: m.start("value") - m.start()] + REDACTED + tail

    return replace


_STATED_PLAIN = _stated(cjk=False)


def _changed(m: re.Match[str]) -> str:
    value, tail = _split_value(m)
    if not value or "REDACTED" in value or _PLACEHOLDER.match(value):
        return m.group(0)
    if m.group("code") and sum(c.isdigit() for c in value) < 4:
        return m.group(0)
    if m.group("pw") and not _machine_value(value) and (value.lower() in _PROSE_WORDS
                                                        or value.lower().endswith(_PROSE_SUFFIXES)):
        return m.group(0)
    return f"{m.group('head')}{REDACTED}{tail}"


def _seed_phrase(m: re.Match[str]) -> str:
    return f"{m.group('head')}{REDACTED}"


# --- European wordings: "mein Passwort ist …", "das Kennwort lautet …", "mon mot de passe est …",
# "le mot de passe : …", "mi contraseña es …", "la mia password è …", "minha senha é …".
_EU_PW = (r"(?:wlan-|wifi-|wi-fi-|router-|e-mail-|email-|admin-|root-)?(?:passwort|passwörter|kennwort|zugangscode)"
          r"|mot\s+de\s+passe|mdp|contraseña|contrasena|clave\s+de\s+acceso|senha|password")
_EU_CODE = r"pin(?:-code|-nummer)?|code\s+pin|code\s+secret|geheimzahl|código\s+pin|codice\s+pin"
_EU_VERB = (r"ist|lautet|lautete|war|heißt|heisst|est|était|etait|es|era|è|é|sera|wird|bleibt|"
            r"(?:ist|lautet|est|es|è|é)\s+(?:jetzt|nun|noch|immer\s+noch|maintenant|toujours|désormais|ahora|ora|agora)|"
            r"c'est|ce\s+sera")
_STATED_EU = lazy(
    rf"(?<![\w-])(?P<kw>(?P<pw>{_EU_PW})|(?P<code>{_EU_CODE}))"
    r"(?P<link>(?:\s+(?:für|fürs|zum|zur|vom|von|pour|du|de\s+la|de|d'|para|del|per|do|da)\s*"
    r"(?:das\s+|den\s+|die\s+|dem\s+|le\s+|la\s+|l'|el\s+|il\s+|o\s+|a\s+|mon\s+|mein\s+|meinen\s+)?[\w'-]+)?"
    rf"(?:\s+(?P<verb>{_EU_VERB})\s+|\s*(?P<colon>[:=\uff1a])\s*))"
    + _VALUE,
    re.IGNORECASE,
)
# Words these languages put after "Passwort ist", "mot de passe est" that are not the password.
_EU_PROSE_WORDS = frozenset("""
    falsch richtig korrekt ungültig abgelaufen geändert gespeichert vergessen verloren geheim sicher unsicher
    stark schwach lang kurz neu alt leer gesperrt zu sehr nicht kein keine ein eine einer der die das dem den mein
    meine dein deine unser sein ihr hier dort noch immer jetzt nun gleich dasselbe derselbe anders unbekannt
    irgendwo irgendwas nichts etwas auf im in bei mit ohne gut schlecht okay ok
    incorrect incorrecte faux fausse correct correcte valide invalide expiré expirée changé changée modifié
    enregistré enregistrée oublié oubliée perdu perdue secret secrète sûr sûre fort forte faible long longue
    court courte nouveau nouvelle ancien ancienne vide bloqué bloquée trop très pas plus le la les un une des
    mon ma mes ton ta son sa notre votre leur ici là toujours encore maintenant même différent différente
    inconnu inconnue quelque rien dans sur avec sans bon bonne mauvais mauvaise
    incorrecta correcta válida inválida caducada cambiada guardada olvidada segura débil larga corta nueva
    vieja vacía muy demasiado no el los las una mi tu su aquí igual otra
    sbagliata giusta corretta scaduta cambiata salvata dimenticata sicura debole lunga corta nuova vecchia vuota
    troppo molto non il lo gli una mia tua sua qui uguale diversa
    errada certa correta expirada alterada salva esquecida fraca comprida curta velha vazia
    muito demais não os as um uma minha sua aqui diferente
""".split())


def _stated_eu(m: re.Match[str]) -> str:
    value, _ = _split_value(m)
    if not _machine_value(value) and value.lower() in _EU_PROSE_WORDS:
        return m.group(0)
    return _STATED_PLAIN(m)


# --- a user name and its password together: "login alice / pass hunter2", "user: bob pass: x",
# "username alice password hunter2", "Benutzer: anna Passwort: …". The pair is the evidence, so
# even a short value counts; the user name stays.
_CRED_PAIR = lazy(
    r"(?<![\w-])(?P<head>(?:log-?in|user(?:\s?name)?|account|benutzer(?:name)?|nutzer(?:name)?|utilisateur|"
    r"identifiant|usuario|usuário|utente)"
    r"\s*(?P<ucolon>[:=])?\s*[^\s/,;|:=]{1,64}\s*(?P<sep>[/,;|&]|\band\b|\bund\b|\bet\b|\by\b|\be\b)?\s*"
    r"(?P<kw>pass(?:word|wort)?|passwd|pwd|pw|kennwort|mdp|mot\s+de\s+passe|contraseña|senha)"
    r"(?:\s*(?P<op>[:=])\s*|\s+(?:(?:is|ist|est|es|è|é)\s+)?))"
    + _VALUE,
    re.IGNORECASE,
)


def _cred_pair(m: re.Match[str]) -> str:
    value, tail = _split_value(m)
    if not value or "REDACTED" in value or _PLACEHOLDER.match(value) or (
            not _machine_value(value) and (value.lower() in _PROSE_WORDS or value.lower() in _EU_PROSE_WORDS)):
        return m.group(0)
    if m.string.startswith(("…", REDACTED), m.end()):
        return m.group(0)
    # "user guide password policy": without a colon or a separator only a machine-made value counts
    if not (m.group("ucolon") or m.group("sep") or m.group("op") or _machine_value(value)):
        return m.group(0)
    return f"{m.group('head')}{REDACTED}{tail}"


# --- a passphrase of several words: "the passphrase is correct horse battery staple". Its words
# are prose words, so the one-word rule cannot judge them: three or more words with no function
# word among them ("stored in the vault" has some) are taken whole, up to the end of the clause.
_PASSPHRASE = lazy(
    r"(?<![\w-])(?P<head>(?:pass\s?phrase|passphrase|phrase\s+secrète|phrase\s+de\s+passe|mnemonic\s+passphrase)"
    r"(?:\s+(?:is|was|is\s+now|ist|lautet|est)\s+|\s*[:=]\s*)(?P<quote>[\"'“«„]?))"
    r"(?P<words>[\w!#$%&*+./=?@^|~-]+(?:[ \t]+[\w!#$%&*+./=?@^|~-]+){1,9}+)",
    re.IGNORECASE,
)
_FUNCTION_WORDS = frozenset("""
    a an the in on at of to for from with by as is are was were be been being not no never my your his her our
    their its this that these those it and or but if so then than too very stored saved kept written set changed
    somewhere here there which what where when who please same different
    der die das den dem ein eine ist im in auf mit und oder nicht le la les un une des est dans sur avec et ou pas
""".split())


def _passphrase(m: re.Match[str]) -> str:
    words = m.group("words")
    cut = re.search(r"[,;:!?)\]]|\.(?:\s|$)", words)
    body = words[:cut.start()] if cut else words
    parts = body.split()
    if m.group("quote"):
        closing = {"\"": "\"", "'": "'", "“": "”", "«": "»", "„": "“"}[m.group("quote")]
        end = words.find(closing)
        if end > 0:
            body = words[:end]
            parts = body.split()
    if len(parts) < (2 if m.group("quote") else 3) or any(w.lower().strip(".") in _FUNCTION_WORDS for w in parts) \
            or "REDACTED" in body:
        return m.group(0)
    return f"{m.group('head')}{REDACTED}{words[len(body):]}"


# --- a Chinese resident id named as one: "身份证号 110101199003071234". The word says what the
# number is, so a plausible birth date is enough (a mistyped check character is still an id);
# without the word the check character decides (`_cn_id`).
_CN_ID_NAMED = lazy(
    r"(?P<head>(?:(?:公民|居民)?(?:身份证|身份證|身分證)(?:号码|号|號碼|號|字號)?(?:码|碼)?|ID\s?card(?:\s?(?:number|no\.?|#))?"
    r"|resident\s+id(?:entity)?(?:\s+(?:card\s+)?(?:number|no\.?))?)"
    r"\s*(?:是|为|為|:|：|=|is|was|号是|号码是)?\s*)"
    r"(?P<num>[1-9]\d{5}(?:18|19|20)\d{2}\d{4}\d{3}[\dXx])(?![A-Za-z0-9])",
    re.IGNORECASE,
)


def _cn_id_named(m: re.Match[str]) -> str:
    num = m.group("num")
    if not _valid_date(int(num[6:10]), int(num[10:12]), int(num[12:14])):
        return m.group(0)
    return f"{m.group('head')}{REDACTED}"


# --- an AWS secret access key: 40 characters of base64 with no mark of its own, so only next to
# its access key id or named as one ("aws secret …: …"); detect-secrets and gitleaks ask the same.
_AWS_SECRET = lazy(
    r"(?P<head>(?:(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}[\s,;:/|\"'=]{1,6}"
    r"|(?i:aws)[\w .-]{0,24}?(?i:secret)[\w .-]{0,20}?(?:\s+(?i:is|was)\s+|[\s\"']*[:=][\s\"']*)))"
    r"(?P<secret>(?=[A-Za-z0-9/+]{0,39}[0-9/+])[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
)


def _aws_secret(m: re.Match[str]) -> str:
    return f"{m.group('head')}{REDACTED}"


# --- numbers with their own check: cards, national ids, IBANs ----------------------------------
_ASCII_DIGIT = re.compile("[0-9]")
# A run of digit groups joined by single spaces or dashes, taken whole (possessive, and never
# started inside a run), so a long run costs one pass.
_DIGIT_RUN = lazy(r"\d(?<![A-Za-z0-9.,/]\d)(?<!\d[ .-]\d)(?=[\d .-]{12})\d*+(?:[ .-]\d++)*+"
                        r"(?![A-Za-z0-9]|[.,]\d)")


def _luhn(digits: str) -> bool:
    total = 0
    for index, ch in enumerate(reversed(digits)):
        n = ord(ch) - 48
        if index % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _card_network(digits: str) -> bool:
    """A prefix and length some card network issues (Visa, Mastercard, Amex, Discover, JCB,
    UnionPay, Diners, Maestro, Mir)."""
    n = len(digits)
    two, four = int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return n == 16
    if two in (34, 37):
        return n == 15
    if digits.startswith("6011") or 644 <= int(digits[:3]) <= 649 or two == 65 or 3528 <= four <= 3589 \
            or two == 62 or 2200 <= four <= 2204:
        return 16 <= n <= 19
    if 300 <= int(digits[:3]) <= 305 or two in (36, 38, 39):
        return 14 <= n <= 19
    if two in (50, 56, 57, 58, 67):
        return 13 <= n <= 19
    return False


def _card_shape(lengths: list[int]) -> bool:
    if len(lengths) == 1:
        return True
    if lengths in ([4, 6, 5], [4, 6, 4]):
        return True
    return len(lengths) >= 3 and all(g == 4 for g in lengths[:-1]) and 1 <= lengths[-1] <= 4


def _cards(m: re.Match[str]) -> str:
    run = m.group(0)
    parts = re.split(r"([ .-])", run)  # groups at even indexes, separators at odd ones
    groups, seps = parts[0::2], parts[1::2]
    starts, pos = [], 0
    for index, group in enumerate(groups):
        starts.append(pos)
        pos += len(group) + (1 if index < len(seps) else 0)
    out, last, i = [], 0, 0
    while i < len(groups):
        found = None
        total = 0
        for j in range(i, min(i + 6, len(groups))):
            if j > i and seps[j - 1] != seps[i]:
                break  # one separator per number
            total += len(groups[j])
            if total > 19:
                break
            digits = "".join(groups[i:j + 1])
            if total >= 13 and _card_shape([len(g) for g in groups[i:j + 1]]) and _card_network(digits) \
                    and _luhn(digits):
                found = j
        if found is None:
            i += 1
            continue
        out.append(run[last:starts[i]])
        out.append(REDACTED)
        last = starts[found] + len(groups[found])
        i = found + 1
    if not out:
        return run
    out.append(run[last:])
    return "".join(out)


_CN_ID = lazy(r"[1-9](?<![A-Za-z0-9][1-9])\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}"
                    r"[\dXx](?![A-Za-z0-9])")
_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def _valid_date(year: int, month: int, day: int) -> bool:
    try:
        datetime.date(year, month, day)
    except ValueError:
        return False
    return True


def _cn_id(m: re.Match[str]) -> str:
    value = m.group(0)
    check = "10X98765432"[sum(int(c) * w for c, w in zip(value[:17], _CN_WEIGHTS, strict=True)) % 11]
    if value[17].upper() != check or not _valid_date(int(value[6:10]), int(value[10:12]), int(value[12:14])):
        return value
    return REDACTED


_SSN = lazy(r"\d(?<![A-Za-z0-9-]\d)\d{2}-\d{2}-\d{4}(?![A-Za-z0-9-])")


def _ssn_fields_valid(area: str, group: str, serial: str) -> bool:
    """The SSA's rules: no area 000, 666 or 9xx, no group 00, no serial 0000."""
    return not (area in ("000", "666") or area.startswith("9") or group == "00" or serial == "0000")


def _ssn(m: re.Match[str]) -> str:
    return REDACTED if _ssn_fields_valid(*m.group(0).split("-")) else m.group(0)


_KR_RRN = lazy(r"\d(?<![A-Za-z0-9-]\d)\d(\d{2})(\d{2})-[1-8]\d{6}(?![A-Za-z0-9-])")


def _kr_rrn(m: re.Match[str]) -> str:
    month, day = int(m.group(1)), int(m.group(2))
    return REDACTED if _valid_date(2000, month, day) else m.group(0)  # 2000: a leap year, any day of Feb


_MY_NUMBER = lazy(r"(?P<head>(?:マイナンバー|個人番号)(?:カード)?(?:の番号)?\s*(?:は|が|：|:|=)?\s*)"
                        r"(?P<num>\d{4}[ -]?\d{4}[ -]?\d{4})(?![0-9])")


def _my_number(m: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", m.group("num"))
    total = sum(int(digits[11 - n]) * (n + 1 if n <= 6 else n - 5) for n in range(1, 12))
    remainder = total % 11
    check = 0 if remainder <= 1 else 11 - remainder
    return f"{m.group('head')}{REDACTED}" if int(digits[11]) == check else m.group(0)


_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29, "BY": 28,
    "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
    "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
    "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
    "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15,
    "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19,
    "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}
_IBAN = lazy(r"[A-Z](?<![A-Za-z0-9][A-Z])[A-Z]\d{2}(?: ?[A-Z0-9]){11,30}+")


def _iban(m: re.Match[str]) -> str:
    text = m.group(0)
    length = _IBAN_LENGTHS.get(text[:2])
    if length is None:
        return text
    taken, end = 0, 0
    for end, ch in enumerate(text, start=1):  # noqa: B007 - `end` is used after the loop
        if ch != " ":
            taken += 1
            if taken == length:
                break
    compact = text[:end].replace(" ", "")
    if len(compact) != length or (end < len(text) and text[end] != " "):
        return text  # too short, or the IBAN would end inside a longer word
    rearranged = compact[4:] + compact[:4]
    if int("".join(str(int(c, 36)) for c in rearranged)) % 97 != 1:
        return text
    return REDACTED + text[end:]


_EN_MODIFIERS = frozenset("""
    wifi wi-fi login account admin root email e-mail bank router master app user computer laptop phone network vpn
    database db server verification confirmation security authentication auth sign-in signin access door gate alarm
    entry garage sms text 2fa mfa otp one-time one time backup recovery unlock lock pickup safe api secret private
    signing encryption license licence product client webhook consumer refresh bearer bot session personal github
    gitlab slack discord telegram social
""".split())
_STATED_HINTS = ("pass", "pwd", "pin", "code", "otp", "cvv", "cvc", "key", "token", "secret", "ssn",
                 "social security", "combination")
_CJK_HINTS = ("密码", "密碼", "口令", "码", "碼", "パスワード", "暗証", "コード", "番号", "キー", "鍵", "トークン",
              "비밀번호", "비번", "암호", "패스워드", "번호", "코드", "키", "토큰", "pin", "otp", "cvv", "cvc", "token",
              "secret", "key")

# Where a CJK wording can start: every keyword's first characters (lowercase, as searched).
_CJK_HEADS = (
    "密码", "密碼", "口令", "パスワード", "暗証", "비밀번호", "비번", "암호", "패스워드", "验证码", "驗證碼",
    "校验码", "校驗碼", "动态", "動態", "安全码", "安全碼", "取件码", "提货码", "认证码", "認証", "確認",
    "セキュリティ", "ワンタイム", "ピン", "인증", "확인", "보안", "핀", "pin", "otp", "cvv", "cvc",
    "密钥", "秘钥", "金鑰", "密鑰", "令牌", "apiキー", "api キー", "秘密鍵", "アクセスキー", "シークレット",
    "トークン", "api키", "api 키", "비밀", "액세스", "토큰", "accesskey", "api", "token", "secret",
)


# Where a European wording or a credential pair can start (lowercase, as searched).
_EU_HEADS = ("passw", "kennw", "zugangscode", "mot de passe", "mdp", "contrase", "clave de acceso", "senha", "pin",
             "code pin", "code secret", "geheimzahl", "código pin", "codice pin")
_PAIR_HEADS = ("log", "user", "account", "benutzer", "nutzer", "utilisateur", "identifiant", "usuario", "usuário",
               "utente")


def _stated_kind(m: re.Match[str]) -> str:
    if m.group("code"):
        return "PIN or one-time code"
    if m.groupdict().get("key"):
        return "API key or token"
    if m.groupdict().get("ssn"):
        return "national ID number"
    return "password"


_RULES: tuple[_Rule, ...] = (
    # Multi-line and URL forms first so later token rules do not split them up.
    _Rule("pem", ("-----begin",), _PEM, _pem, "private key"),
    _Rule("url", ("://",), _URL_CREDENTIALS, _url_credentials, "password in a URL"),
    _Rule("slack_webhook", ("hooks.slack.com",),
          lazy(r"(?P<prefix>https?://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_-]{8,}"),
          _keep_prefix, "webhook URL"),
    _Rule("discord_webhook", ("/api/webhooks/",),
          lazy(r"(?P<prefix>https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/)\d+/[A-Za-z0-9_-]+"),
          _keep_prefix, "webhook URL"),
    # sk-ant- before sk- so the longer prefix wins.
    _token_rule("anthropic", ("sk-ant-",), "sk-ant-", "[A-Za-z0-9_-]", 20),
    _token_rule("openai", ("sk-",), "sk-", "[A-Za-z0-9_-]", 20),
    _token_rule("stripe", ("_live_", "_test_"), "[sr]k_(?:live|test)_", "[A-Za-z0-9]", 16),
    _token_rule(
        "github", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), "gh[pousr]_", "[A-Za-z0-9]", 30
    ),
    _token_rule("github_pat", ("github_pat_",), "github_pat_", "[A-Za-z0-9_]", 22),
    _token_rule("gitlab", ("glpat-", "glptt-", "gldt-", "glrt-", "glsoat-", "glcbt-", "glimt-", "glft-", "gloas-"),
                "gl(?:pat|ptt|dt|rt|soat|cbt|imt|ft|oas)-", "[A-Za-z0-9_-]", 20),
    # Slack: a long body with a digit, or the documented digit groups (`xoxb-<team>-<bot>-<secret>`)
    # however short, as detect-secrets reads them: a 12-character token has no 14-character chunk.
    _Rule("slack", ("xox", "xapp-"),
          lazy(r"(?<![A-Za-z0-9_-])(?P<prefix>xox[abeoprs]-|xapp-)"
               r"(?:(?=[A-Za-z0-9-]*[0-9])[A-Za-z0-9-]{10,}+|(?:[0-9]+-)+[A-Za-z0-9]+)(?![A-Za-z0-9_-])"),
          _keep_prefix, "API key or token", gate="digit"),
    _token_rule("huggingface", ("hf_",), "hf_", "[A-Za-z0-9]", 30),
    _token_rule("npm", ("npm_",), "npm_", "[A-Za-z0-9]", 36),
    _token_rule("groq", ("gsk_",), "gsk_", "[A-Za-z0-9]", 40),
    _token_rule("xai", ("xai-",), "xai-", "[A-Za-z0-9]", 40),
    _token_rule("replicate", ("r8_",), "r8_", "[A-Za-z0-9]", 30),
    _token_rule("perplexity", ("pplx-",), "pplx-", "[A-Za-z0-9]", 40),
    _token_rule("shopify", ("shpat_", "shpss_", "shpca_", "shppa_"), "shp(?:at|ss|ca|pa)_", "[a-fA-F0-9]", 32),
    _token_rule("digitalocean", ("_v1_",), "do[por]_v1_", "[a-f0-9]", 64),
    _token_rule("pypi", ("pypi-",), "pypi-", "[A-Za-z0-9_-]", 50),
    _token_rule("docker", ("dckr_pat_",), "dckr_pat_", "[A-Za-z0-9_-]", 20),
    _token_rule("vault", ("hvs.", "hvb."), r"hv[sb]\.", "[A-Za-z0-9_-]", 24),
    _token_rule("linear", ("lin_api_",), "lin_api_", "[A-Za-z0-9]", 30),
    _token_rule("notion", ("ntn_", "secret_"), "ntn_|secret_", "[A-Za-z0-9]", 40),
    _token_rule("google_oauth", ("ya29.",), r"ya29\.", "[A-Za-z0-9_-]", 20),
    _token_rule("google_client_secret", ("gocspx-",), "GOCSPX-", "[A-Za-z0-9_-]", 20),
    _token_rule("square", ("sq0atp-", "sq0csp-"), "sq0(?:atp|csp)-", "[A-Za-z0-9_-]", 22),
    _token_rule("postman", ("pmak-",), "PMAK-", "[a-f0-9-]", 50),
    _token_rule("databricks", ("dapi",), "dapi", "[a-f0-9]", 32),
    _token_rule("atlassian", ("atatt3",), "ATATT3", "[A-Za-z0-9_=-]", 150),
    _token_rule("doppler", ("dp.pt.",), r"dp\.pt\.", "[A-Za-z0-9]", 40),
    _token_rule("mailgun", ("key-",), "key-", "[0-9a-zA-Z]", 32),
    _token_rule("twilio", ("sk",), "SK", "[0-9a-f]", 32),
    _token_rule("alibaba", ("ltai",), "LTAI", "[A-Za-z0-9]", 12, "cloud access key"),
    _token_rule("tencent", ("akid",), "AKID", "[A-Za-z0-9]", 32, "cloud access key"),
    _Rule(
        "age",
        ("age-secret-key-",),
        lazy(r"(?<![A-Za-z0-9])(?P<prefix>AGE-SECRET-KEY-)1[0-9A-Z]{58}(?![A-Za-z0-9])"),
        _keep_prefix,
        "private key",
        gate="token",
    ),
    _Rule(
        "sendgrid",
        ("sg.",),
        lazy(r"(?<![A-Za-z0-9_-])(?P<prefix>SG\.)[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"),
        _keep_prefix,
        "API key or token",
        gate="token",
    ),
    _Rule(
        "discord_bot",
        (".",),
        lazy(r"(?<![A-Za-z0-9_.-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.(?=[A-Za-z0-9_-]*[0-9])"
                   r"[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_.-])"),
        _whole,
        "API key or token",
        gate="token",
    ),
    _Rule("aws_secret_access_key", ("akia", "asia", "aws"), _AWS_SECRET, _aws_secret, "cloud secret key",
          gate="token"),
    _Rule(
        "aws_access_key_id",
        ("akia", "asia"),
        lazy(r"(?<![A-Za-z0-9])(?P<prefix>AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        _keep_prefix,
        "cloud access key",
        gate="token",
    ),
    _Rule(
        "google",
        ("aiza",),
        lazy(rf"{_NOT_AFTER_WORD}(?P<prefix>AIza)[A-Za-z0-9_-]{{35}}{_NOT_BEFORE_WORD}"),
        _keep_prefix,
        "API key or token",
        gate="token",
    ),
    _Rule(
        "telegram_bot",
        (":aa",),
        lazy(r"(?<![A-Za-z0-9])(?P<prefix>[0-9]{8,10}:)AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])"),
        _keep_prefix,
        "API key or token",
        gate="token",
    ),
    # JWT: base64url header and payload both start with `{"` -> "eyJ".
    _Rule(
        "jwt",
        ("eyj",),
        lazy(
            r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
            r"(?![A-Za-z0-9_-])"
        ),
        _whole,
        "API key or token",
        gate="token",
    ),
    _Rule("auth_scheme", ("bearer", "basic"), _AUTH_SCHEME, _auth_scheme, "authorization token"),
    _Rule("assignment", ("pass", "secret", "token", "key", "credential"), _ASSIGNMENT, _assignment),
    # Stated in words: after the key = value forms, so a value already redacted is left alone.
    _Rule("seed_phrase", ("phrase", "words", "助记词", "助記詞", "シードフレーズ", "문구"), _SEED_PHRASE, _seed_phrase,
          "recovery phrase"),
    _Rule("passphrase", ("phrase",), _PASSPHRASE, _passphrase, "password"),
    _Rule("credential_pair", ("pass", "pw", "kennwort", "mdp", "mot de passe", "contraseña", "senha"), _CRED_PAIR,
          _cred_pair, "password", heads=_PAIR_HEADS, head_group="head"),
    _Rule("changed_to", (" to ",), _CHANGED_EN, _changed, _stated_kind,
          heads=("chang", "set", "updat", "switch"), head_group="verb"),
    _Rule("stated", _STATED_HINTS, _STATED_EN, _stated(cjk=False), _stated_kind, heads=_STATED_HINTS, back_words=2,
          modifiers=_EN_MODIFIERS),
    _Rule("stated_cjk", (), _STATED_CJK, _stated(cjk=True), _stated_kind, gate="nonascii", heads=_CJK_HEADS),
    _Rule("stated_eu", _EU_HEADS, _STATED_EU, _stated_eu, _stated_kind, heads=_EU_HEADS),
    # Numbers with a check of their own; IBANs and ids before cards so their digits are not read as one.
    _Rule("iban", (), _IBAN, _iban, "bank account number (IBAN)", gate="digit"),
    _Rule("cn_resident_id_named", ("身份证", "身份證", "身分證", "id card", "idcard", "resident id"), _CN_ID_NAMED,
          _cn_id_named, "national ID number", gate="digit"),
    _Rule("cn_resident_id", (), _CN_ID, _cn_id, "national ID number", gate="digit"),
    _Rule("jp_my_number", ("マイナンバー", "個人番号"), _MY_NUMBER, _my_number, "national ID number", gate="digit"),
    _Rule("kr_resident_number", (), _KR_RRN, _kr_rrn, "national ID number", gate="digit"),
    _Rule("us_ssn", (), _SSN, _ssn, "national ID number", gate="digit"),
    _Rule("payment_card", (), _DIGIT_RUN, _cards, "payment card number", gate="digit"),
)

_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def _find_all(haystack: str, needle: str) -> list[int]:
    found, at = [], haystack.find(needle)
    while at >= 0:
        found.append(at)
        at = haystack.find(needle, at + 1)
    return found


def _candidate_starts(text: str, at: int, back_words: int, modifiers: frozenset[str]) -> list[int]:
    """Earliest first: the start of the word holding `at`, up to `back_words` words before it
    that are `modifiers`, and `at`."""
    starts = [at]
    pos = at
    while pos > 0 and text[pos - 1] in _WORD_CHARS:
        pos -= 1
    if pos != at:
        starts.insert(0, pos)
    for _ in range(back_words):
        gap = pos
        while gap > 0 and pos - gap < 3 and text[gap - 1] in " \t":
            gap -= 1
        if gap == pos or gap == 0 or text[gap - 1] not in _WORD_CHARS:
            break
        word_end = gap
        pos = gap
        while pos > 0 and text[pos - 1] in _WORD_CHARS:
            pos -= 1
        if text[pos:word_end].lower() not in modifiers:
            break
        starts.insert(0, pos)
    return starts


def _head_scan(rule: _Rule, text: str, lowered: str, replace: Callable[[re.Match[str]], str]) -> str:
    if len(lowered) != len(text):  # lowering changed lengths (e.g. "İ"): positions would not line up
        return rule.pattern.sub(replace, text)
    heads = sorted({at for head in rule.heads if head in lowered for at in _find_all(lowered, head)})
    out: list[str] = []
    last = 0
    for at in heads:
        if at < last:
            continue
        for start in _candidate_starts(text, at, rule.back_words, rule.modifiers):
            if start < last:
                continue
            m = rule.pattern.match(text, start)
            if m is not None and m.start(rule.head_group) <= at < m.end(rule.head_group):
                break
        else:
            continue
        out.append(text[last:m.start()])
        out.append(replace(m))
        last = m.end()
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def _gate_state(rule: _Rule, has_digit: bool, has_token: bool, has_nonascii: bool) -> bool:
    return not ((rule.gate == "digit" and not has_digit) or (rule.gate == "token" and not has_token)
                or (rule.gate == "nonascii" and not has_nonascii))


@dataclass(frozen=True, slots=True)
class _Gated:
    """The rules one kind of text passes the gates for (in order), their distinct hints, the
    positions of the rules without hints and, per hint, of the rules it lets run."""

    rules: tuple[_Rule, ...]
    hints: tuple[str, ...]
    unhinted: tuple[int, ...]
    by_hint: dict[str, tuple[int, ...]]

    @classmethod
    def of(cls, rules: tuple[_Rule, ...]) -> _Gated:
        by_hint: dict[str, list[int]] = {}
        for i, rule in enumerate(rules):
            for hint in rule.hints:
                by_hint.setdefault(hint, []).append(i)
        return cls(rules, tuple(by_hint), tuple(i for i, rule in enumerate(rules) if not rule.hints),
                   {hint: tuple(at) for hint, at in by_hint.items()})

    def running(self, lowered: str) -> list[_Rule]:
        """The rules to run on a text, in order: each hint is looked up once, and only the rules
        of the hints found are visited (this bookkeeping, once per rule, was most of the cost of
        redacting a short clean text such as a search snippet)."""
        present = [hint for hint in self.hints if hint in lowered]
        if not present:
            return [self.rules[i] for i in self.unhinted]
        at = set(self.unhinted)
        for hint in present:
            at.update(self.by_hint[hint])
        return [self.rules[i] for i in sorted(at)]


_GATED = {state: _Gated.of(tuple(rule for rule in _RULES if _gate_state(rule, *state)))
          for state in ((d, t, n) for d in (False, True) for t in (False, True) for n in (False, True) if d or not t)}


# The CJK rule changes text only when its keyword or link holds a non-ASCII character, and none of
# these can be one (no case variants, not whitespace, not in a value): English text whose only
# non-ASCII characters are these (a search snippet's cut marks, typographic quotes) skips it.
_WORDING_CHARACTER = re.compile("[^\x00-\x7f\u2026\u2018\u2019\u201c\u201d]")


def _redact(text: str) -> tuple[str, list[str]]:
    found: list[str] = []
    if not text:
        return text, found
    lowered = text.lower()
    has_digit = _ASCII_DIGIT.search(text) is not None
    has_nonascii = not text.isascii()
    has_token = has_digit and any(len(chunk) >= 14 for chunk in (text.encode("ascii", "ignore").split()
                                                                  if has_nonascii else text.split()))
    gated = _GATED[(has_digit, has_token, has_nonascii and _WORDING_CHARACTER.search(text) is not None)]
    # Gates and hints are tested on the original text; earlier rules only ever shorten
    # secrets into markers, which cannot create a new hint for a later rule.
    out = text
    for rule in gated.running(lowered):

        def replace(m: re.Match[str], rule: _Rule = rule) -> str:
            replaced = rule.replace(m)
            if replaced != m.group(0):
                found.append(rule.kind(m) if callable(rule.kind) else rule.kind)
            return replaced

        if rule.heads:
            out = _head_scan(rule, out, out.lower() if out is not text else lowered, replace)
        else:
            out = rule.pattern.sub(replace, out)
    return out, found


def redact_secrets(text: str) -> tuple[str, bool]:
    """Replace credential-like substrings with a redaction marker.

    Returns the redacted text and whether anything was replaced.
    """
    out, _ = _redact(text)
    return out, out != text


def secret_kinds(text: str) -> tuple[str, ...]:
    """What kinds of secret `redact_secrets` would remove from `text` ("password", "payment card
    number", …), each once, in the order the rules found them; () for clean text."""
    return tuple(dict.fromkeys(_redact(text)[1]))


PREVIEW_WINDOW = 4096  # characters redacted before a preview is cut (a credential is far shorter)


def redacted_preview(text: str, chars: int) -> str:
    """The first `chars` characters of `text`, credentials redacted. Redacted before the cut:
    a key cut in half (`AKIAIOSFODN`) no longer looks like one and would show as it is."""
    return redact_secrets(text[: max(chars, PREVIEW_WINDOW)])[0][:chars]
