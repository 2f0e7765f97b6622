"""How well an embedding model alone finds LoCoMo evidence turns (docs/embeddings.md).

Every turn of a conversation (`Speaker: text`) is embedded as a document, every category 1-4
question as a query; turns are ranked by cosine. r@k = the share of a question's evidence turns
among the first k, averaged per category and overall. No chunking, no keyword side, no budget:
this isolates the model from the hybrid search that `bench.memory_locomo` measures.

    python -m bench.embedding_turns [--conversations conv-26,conv-30] \\
        [--provider '{"provider": "onnx", "onnx": {"localShare": 0.5}}']  # repeatable
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # `python bench/embedding_turns.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "bench"

import numpy as np  # noqa: E402

from clawkeep.models.embeddings import create_embedding_provider  # noqa: E402

from .corpus import load_locomo  # noqa: E402

KS = (5, 10, 25)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def measure(settings: dict, conversation_ids: set[str]) -> dict:
    provider = create_embedding_provider(settings, env={})
    recalls: dict[str, dict[int, list[float]]] = {}
    texts, seconds = 0, 0.0
    for conv in load_locomo():
        if conversation_ids and conv.conv_id not in conversation_ids:
            continue
        turns = [(t.dia_id, f"{t.speaker}: {t.text}") for s in conv.sessions for t in s.turns]
        start = time.perf_counter()
        docs = provider.embed_documents([text for _, text in turns])
        seconds += time.perf_counter() - start
        texts += len(turns)
        for q in (q for q in conv.questions if q.category in CATEGORIES and q.evidence):
            order = np.argsort(-(docs @ provider.embed_query(q.question)))
            for key in (conv.conv_id, CATEGORIES[q.category], "overall"):
                for k in KS:
                    top = {turns[i][0] for i in order[:k]}
                    recalls.setdefault(key, {}).setdefault(k, []).append(
                        sum(e in top for e in q.evidence) / len(q.evidence))
    return {"recall": {key: {k: statistics.mean(v) for k, v in per.items()} for key, per in recalls.items()},
            "texts_per_s": texts / seconds if seconds else 0.0}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--conversations", default="", help="comma-separated ids (default: all 7)")
    p.add_argument("--provider", action="append", default=[], help="memorySearch settings as JSON (repeatable; "
                   "default: the local model)")
    args = p.parse_args(argv)
    wanted = {c.strip() for c in args.conversations.split(",") if c.strip()}
    for raw in args.provider or ['{"provider": "local"}']:
        result = measure(json.loads(raw), wanted)
        print(f"{raw}: {result['texts_per_s']:.1f} texts/s (documents)")
        for key, per in result["recall"].items():
            print(f"  {key:12} " + "  ".join(f"r@{k} {per[k]:.3f}" for k in KS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
