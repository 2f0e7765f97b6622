"""Benchmarks for clawkeep: `python -m bench [--quick] [--only NAME]`.

- `append`: durable message append throughput (Engine.message vs raw sqlite3), 1 and 2 processes.
- `search`: sessions_search latency p50/p95 at 100k and 1M stored messages vs raw FTS5.
- `locomo`: LoCoMo retrieval recall of sessions_search through the real Engine.

Results go to `bench/results/latest.md` (+ `latest.json`); seeded stores are cached under
`.bench-data/` at the repository root (git-ignored).
"""
