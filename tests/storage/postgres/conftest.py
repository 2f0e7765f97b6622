"""Fixtures of the PostgreSQL-only storage tests."""

from __future__ import annotations

import uuid

import psycopg
import pytest


@pytest.fixture
def prefix(pg_url):
    """A schema prefix of this test's own, every schema under it dropped afterwards."""
    name = "b" + uuid.uuid4().hex[:10]
    yield name
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for (schema,) in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                                      (name + "%",)).fetchall():
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
