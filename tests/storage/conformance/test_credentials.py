"""Conformance: caller credentials are stored by digest, named uniquely, revoked for every reader at once."""

import hashlib

import pytest

from clawkeep.errors import ConflictError
from clawkeep.storage import CredentialRecord


def _record(name, secret, scope="session:agent:main:main", **extra):
    return CredentialRecord(name=name, digest=hashlib.sha256(secret.encode()).hexdigest(), scope=scope,
                            created_at=1_000, **extra)


def test_stored_by_digest_listed_and_unique_by_name(store):
    assert not store.has_credentials()
    store.insert_credential(_record("alice", "secret-a", expires_at=9_000, sandboxed=True))
    store.insert_credential(_record("bob", "secret-b", scope="peer:telegram:42"))
    assert store.has_credentials()
    found = store.credential_by_digest(hashlib.sha256(b"secret-a").hexdigest())
    assert (found.name, found.scope, found.expires_at, found.sandboxed) == ("alice", "session:agent:main:main",
                                                                           9_000, True)
    assert store.credential_by_digest(hashlib.sha256(b"secret-c").hexdigest()) is None
    assert [c.name for c in store.list_credentials()] == ["alice", "bob"]
    with pytest.raises(ConflictError, match="alice"):
        store.insert_credential(_record("alice", "other"))
    assert len(store.list_credentials()) == 2  # the refused duplicate left nothing behind


def test_revocation_is_seen_by_another_connection_at_once(store, backend):
    other = backend.agent_store()
    store.insert_credential(_record("carol", "secret-c"))
    digest = hashlib.sha256(b"secret-c").hexdigest()
    assert other.credential_by_digest(digest).revoked_at is None
    revoked = store.revoke_credential("carol", 5_000)
    assert revoked.revoked_at == 5_000
    assert other.credential_by_digest(digest).revoked_at == 5_000
    assert store.revoke_credential("carol", 7_000).revoked_at == 5_000  # the first revocation keeps its time
    assert store.revoke_credential("nobody", 7_000) is None
    other.note_credential_use("carol", 6_000)
    assert store.list_credentials()[0].last_used_at == 6_000
