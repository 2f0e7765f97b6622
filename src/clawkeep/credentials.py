"""Caller credentials: tokens with a scope, stored as the SHA-256 of their secret (issue 28).

    record, secret = create(rt, "alice", "peer:telegram:42", expires="30d")   # secret shown once
    grant = authenticate(rt, secret)        # None: unknown; CredentialRefused: revoked or expired
    caller = grant.caller(rt, named)        # the session the request runs as (None: operator-like)

Scopes: `operator` (everything, as the gateway token), `agent:ID` (only that agent's sessions),
`session:KEY` (runs as that session, S8), `peer:CHANNEL:SENDER` (runs as the session routing
gives that sender's direct messages). The tokens live in the agent store of the agent the
gateway serves: the one durable store every instance on a home or a PostgreSQL database
shares, so a revocation through one instance is refused by all of them on their next request.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

from .errors import ClawkeepError, ConflictError, InputError, NotFoundError
from .routing.keys import is_session_id, normalize_agent_id, normalize_segment, parse_key
from .routing.router import Inbound, route
from .runtime import Runtime
from .storage import CredentialRecord
from .timeutil import to_iso
from .visibility import Limit

SCOPE_FORMS = "operator, agent:ID, session:KEY or peer:CHANNEL:SENDER"
SECRET_PREFIX = "ck_"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_DURATION = re.compile(r"([1-9][0-9]{0,5})([smhdw])")
_UNIT_MS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}
MAX_DURATION_MS = 10 * 365 * 86_400_000
USE_NOTE_INTERVAL_MS = 60_000  # `last used` is written at most once a minute per token and process


class TokenNameTaken(InputError):
    """A token name already in use (the operator's input): exit 2, HTTP 409."""

    code = "conflict"
    http_status = 409


class CredentialRefused(ClawkeepError):
    """A known token that no longer admits anyone (revoked or expired): 401."""

    code = "unauthorized"
    http_status = 401


@dataclass(frozen=True)
class Grant:
    """What one credential lets its holder do. `name` None: the gateway's own operator token."""

    kind: str  # operator | agent | session | peer
    target: str = ""  # the agent id, the session key, or "CHANNEL:SENDER"
    name: str | None = None
    sandboxed: bool = False

    @property
    def is_operator(self) -> bool:
        return self.kind == "operator"

    def limit(self) -> Limit:
        return Limit(agent_id=self.target if self.kind == "agent" else None, sandboxed=self.sandboxed)

    def own_session(self, rt: Runtime) -> str | None:
        """The session a session or peer credential runs as (its key); None for the others."""
        if self.kind == "session":
            return self.target
        if self.kind == "peer":
            channel, _, sender = self.target.partition(":")
            return route(Inbound(channel=channel, sender=sender, chat_type="direct"), rt.agent_id,
                         rt.config.session).key
        return None

    def caller(self, rt: Runtime, named: str | None) -> str | None:
        """The calling session of a request that names `named` (X-Clawkeep-Session, may be None).
        A name may only narrow the credential: a session outside it is "not found", exactly as a
        missing calling session is."""
        if self.is_operator:
            return named
        own = self.own_session(rt)
        if named is None:
            return own
        if own is not None:
            if _same_session(rt, named, own):
                return own
        elif _agent_of(rt, named) == self.target:
            return named
        raise NotFoundError(f"calling session {named!r} not found")


def _same_session(rt: Runtime, named: str, own: str) -> bool:
    if is_session_id(named):
        session = rt.read_store_for_key(own).get_session_by_key(own)
        return session is not None and session.session_id == named
    try:
        return parse_key(named).key == parse_key(own).key
    except InputError:
        return False


def _agent_of(rt: Runtime, named: str) -> str | None:
    if is_session_id(named):
        session = rt.read_store().get_session(named)
        return session.agent_id if session is not None else None
    try:
        return parse_key(named).agent_id
    except InputError:
        return None


# --- parsing the operator's input --------------------------------------------------------
def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InputError(f"token name {name!r} is not allowed: use 1-64 letters, digits, '.', '_' or '-', "
                         "starting with a letter or digit")
    return name


def parse_scope(text: str) -> tuple[str, str]:
    """(kind, target) of a scope, checked; InputError naming the scope and the allowed forms."""
    kind, _, rest = (text or "").partition(":")
    if kind == "operator" and not rest:
        return "operator", ""
    if kind == "agent" and rest:
        return "agent", _checked(text, lambda: normalize_agent_id(rest))
    if kind == "session" and rest:
        key = _checked(text, lambda: parse_key(rest).key)
        if parse_key(key).incognito:
            raise InputError(f"--scope {text!r}: an incognito session is never stored, so no token can name it")
        return "session", key
    if kind == "peer" and rest.count(":") >= 1:
        channel, _, sender = rest.partition(":")
        _checked(text, lambda: (normalize_segment(channel, "channel"), normalize_segment(sender, "sender")))
        # kept as given (trimmed; ids match case-insensitively): routing normalises and escapes them itself
        return "peer", f"{channel.strip().lower()}:{sender.strip()}"
    raise InputError(f"--scope {text!r} is not a scope; allowed: {SCOPE_FORMS}")


def _checked(text: str, parse: Any) -> Any:
    try:
        return parse()
    except InputError as exc:
        raise InputError(f"--scope {text!r}: {exc}; allowed: {SCOPE_FORMS}") from None


def parse_duration(text: str) -> int:
    """Milliseconds of a duration such as 90s, 15m, 12h, 30d or 2w."""
    found = _DURATION.fullmatch((text or "").strip())
    if not found or int(found[1]) * _UNIT_MS[found[2]] > MAX_DURATION_MS:
        raise InputError(f"--expires {text!r} is not a duration: give a whole number and a unit "
                         "(s, m, h, d or w), e.g. 30d or 12h, at most 10 years")
    return int(found[1]) * _UNIT_MS[found[2]]


# --- the operations ------------------------------------------------------------------------
def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def create(rt: Runtime, name: str, scope: str, *, expires: str | None = None,
           sandboxed: bool = False) -> tuple[CredentialRecord, str]:
    """A new credential and its secret (the only time the secret exists outside its holder)."""
    check_name(name)
    kind, target = parse_scope(scope)
    lifetime = parse_duration(expires) if expires is not None else None
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    now = _now()
    record = CredentialRecord(name=name, digest=digest(secret), scope=f"{kind}:{target}" if target else kind,
                              created_at=now, expires_at=now + lifetime if lifetime else None,
                              sandboxed=bool(sandboxed))
    try:
        rt.store().insert_credential(record)
    except ConflictError:
        raise TokenNameTaken(f"a token named {name!r} already exists: choose another name, or revoke it with "
                             f"`clawkeep tokens revoke {name}` (names are never reused)") from None
    return record, secret


def listing(rt: Runtime) -> list[dict[str, Any]]:
    return [describe(r) for r in rt.read_store().list_credentials()]


def revoke(rt: Runtime, name: str) -> dict[str, Any]:
    check_name(name)
    record = rt.store().revoke_credential(name, _now())
    if record is None:
        raise NotFoundError(f"no token named {name!r}; `clawkeep tokens list` shows the tokens")
    return describe(record)


def describe(record: CredentialRecord) -> dict[str, Any]:
    """A credential as shown to the operator: everything but the secret (and its digest)."""
    return {"name": record.name, "scope": record.scope, "sandboxed": record.sandboxed, "state": _state(record),
            "createdAt": to_iso(record.created_at), "expiresAt": to_iso(record.expires_at),
            "revokedAt": to_iso(record.revoked_at), "lastUsedAt": to_iso(record.last_used_at)}


def _state(record: CredentialRecord, now: int | None = None) -> str:
    if record.revoked_at is not None:
        return "revoked"
    if record.expires_at is not None and record.expires_at <= (now or _now()):
        return "expired"
    return "active"


def required(rt: Runtime) -> bool:
    """Whether any token was ever created: then every request needs a credential."""
    return rt.read_store().has_credentials()


_last_noted: dict[str, int] = {}
_noting = threading.Lock()


def authenticate(rt: Runtime, secret: str) -> Grant | None:
    """The grant of `secret`: None when no token has it, CredentialRefused when it is revoked or
    expired. Read from the store on every call (no cache), so a revocation anywhere counts at once."""
    wanted = digest(secret)
    record = rt.read_store().credential_by_digest(wanted)
    if record is None or not hmac.compare_digest(record.digest, wanted):
        return None
    now = _now()
    state = _state(record, now)
    if state != "active":
        raise CredentialRefused(f"token {record.name!r} is {state}: ask the operator for a new one")
    _note_use(rt, record.name, now)
    kind, _, target = record.scope.partition(":")
    return Grant(kind=kind, target=target, name=record.name, sandboxed=record.sandboxed)


def _note_use(rt: Runtime, name: str, now: int) -> None:
    with _noting:
        if now - _last_noted.get(name, 0) < USE_NOTE_INTERVAL_MS:
            return
        _last_noted[name] = now
    try:
        rt.store().note_credential_use(name, now)
    except ClawkeepError as exc:  # a busy database must not refuse the request it admits
        rt.log_warning(f"could not record the use of token {name!r}: {exc}")


def _now() -> int:
    return int(time.time() * 1000)
