"""Every SQL statement lives in a backend package (storage/sqlite/, storage/postgres/): services, the text analyser
and the CLI speak the typed storage interfaces only."""

import re
from pathlib import Path

import clawkeep

SRC = Path(clawkeep.__file__).resolve().parent
BACKENDS = (SRC / "storage" / "sqlite", SRC / "storage" / "postgres")
# a statement keyword followed by what makes it SQL, in code or in a string
SQL = re.compile(r"\b(SELECT\s+[\w*(]|INSERT\s+(OR\s+\w+\s+)?INTO\b"
                 r"|CREATE\s+(UNIQUE\s+|VIRTUAL\s+)?(TABLE|INDEX|VIEW)\b"
                 r"|UPDATE\s+\w+\s+SET\b|DELETE\s+FROM\b|DROP\s+(TABLE|INDEX)\b|ALTER\s+TABLE\b|PRAGMA\s+\w+)")


def test_no_sql_outside_the_backend_packages():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if any(backend in path.parents for backend in BACKENDS):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SQL.search(line):
                offenders.append(f"{path.relative_to(SRC)}:{number}: {line.strip()}")
    assert offenders == [], "SQL outside storage/sqlite/ and storage/postgres/:\n" + "\n".join(offenders)


def test_the_check_sees_sql():
    assert SQL.search('rows = conn.execute("SELECT term, doc FROM v")')
    assert SQL.search("INSERT OR REPLACE INTO meta(key) VALUES (?)")
    assert SQL.search("CREATE VIRTUAL TABLE x USING fts5(tokens)")
    assert not SQL.search("select the rarest terms; insert a note into MEMORY.md")
