"""How PostgreSQL should hold the analysed tokens (issue 12): a `simple`-style tsvector built
from the tokens (GIN) against pg_trgm over the token string (GIN trigram), on Debian's
PostgreSQL with the same analysed corpus, measured side by side.

    python -m bench.fts_choice [--messages 100000]

Both answer the same queries — one-token terms (English, CJK bigram), a phrase, a prefix — with
the same semantics (a token sequence delimited by spaces), counted exactly. Reported: build time,
index size, p50 per query kind (count of matches, so both do the whole job), and whether the
match sets are equal.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.helpers

from clawkeep.storage.postgres.fts import lexeme, tsvector_literal  # noqa: E402
from clawkeep.text.analyzer import analyze_document  # noqa: E402

from .common import percentile  # noqa: E402
from .corpus import CJK_KEYWORDS, EN_KEYWORDS, CorpusGenerator  # noqa: E402

QUERIES = {
    "English word": [analyze_document(w).split()[0] for w in EN_KEYWORDS[:15]],
    "CJK bigram": [analyze_document(w).split()[0] for w in CJK_KEYWORDS[:15]],
    "phrase (2 tokens)": [" ".join(analyze_document(w).split()[:2]) for w in EN_KEYWORDS if len(w.split()) > 1][:8],
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--messages", type=int, default=100_000)
    n = p.parse_args(argv).messages
    import psycopg

    from tests.helpers.pg_servers import DebianServer

    server = DebianServer()
    try:
        docs = [analyze_document(t) for t in CorpusGenerator().messages(n)]
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            conn.execute("CREATE TABLE tsv (id int, tsv tsvector)")
            conn.execute("CREATE TABLE trg (id int, tokens text)")
            with conn.cursor() as cur:
                with cur.copy("COPY tsv FROM STDIN") as copy:
                    for i, d in enumerate(docs):
                        copy.write_row((i, tsvector_literal(d)))
                with cur.copy("COPY trg FROM STDIN") as copy:
                    for i, d in enumerate(docs):
                        copy.write_row((i, f" {d} "))
            conn.execute("SET maintenance_work_mem = '512MB'")
            out = {}
            for name, sql in (("tsvector GIN", "CREATE INDEX tsv_gin ON tsv USING gin (tsv)"),
                              ("pg_trgm GIN", "CREATE INDEX trg_gin ON trg USING gin (tokens gin_trgm_ops)")):
                t0 = time.perf_counter()
                conn.execute(sql)
                out[name] = {"build_s": time.perf_counter() - t0}
            conn.execute("ANALYZE tsv")
            conn.execute("ANALYZE trg")
            out["tsvector GIN"]["index_mb"] = conn.execute("SELECT pg_relation_size('tsv_gin')").fetchone()[0] / 2**20
            out["pg_trgm GIN"]["index_mb"] = conn.execute("SELECT pg_relation_size('trg_gin')").fetchone()[0] / 2**20
            equal = True
            for kind, queries in QUERIES.items():
                times = {"tsvector GIN": [], "pg_trgm GIN": []}
                for q in queries:
                    tsq = " <-> ".join(lexeme(t) for t in q.split())
                    like = f"% {q} %"
                    for _ in range(3):
                        t0 = time.perf_counter()
                        a = conn.execute("SELECT count(*) FROM tsv WHERE tsv @@ %s::tsquery", (tsq,)).fetchone()[0]
                        times["tsvector GIN"].append(time.perf_counter() - t0)
                        t0 = time.perf_counter()
                        b = conn.execute("SELECT count(*) FROM trg WHERE tokens LIKE %s", (like,)).fetchone()[0]
                        times["pg_trgm GIN"].append(time.perf_counter() - t0)
                    equal &= a == b
                for name, values in times.items():
                    out[name][kind] = percentile(values, 50) * 1000
        print(f"{n:,} messages; identical match counts: {equal}")
        print("| | build s | index MB | " + " | ".join(f"{k} p50 ms" for k in QUERIES) + " |")
        print("|---|---|---|" + "---|" * len(QUERIES))
        for name, v in out.items():
            print(f"| {name} | {v['build_s']:.1f} | {v['index_mb']:.1f} | " +
                  " | ".join(f"{v[k]:.2f}" for k in QUERIES) + " |")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
