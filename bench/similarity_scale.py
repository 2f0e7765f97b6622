"""Similarity scale: the map scale·cos + offset that puts an embedding model's cosines on the
default `local` model's (USE) scale, the scale memory_search's minScore and ranking constants
were set on (models/embeddings/base.py SimilarityScale; embeddings.md).

Both models embed the same unlabeled texts, queries on the query side (bge: with its retrieval
instruction) and documents on the document side; every query × document pair gives one cosine
per model. The map matches the two distributions at the median and at the 99th percentile (the
background and the strong matches minScore sits between); the 99.9th percentile is the check.
No answer or label is read: only which texts exist.

Samples (`--sample`), deterministic for a seed:
  questions  queries: the questions people ask inside the benchmark corpus's English messages
             (bench/corpus.py: conversation turns, speaker names swapped); documents: its messages.
             Question-shaped queries as memory_search gets them; the bundled constants come from it
  corpus     queries and documents: the corpus's English messages
  docs       queries and documents: prose sentences of this repository's docs/*.md

    python -m bench.similarity_scale                      # the bundled model vs local, questions
    python -m bench.similarity_scale --sample docs
    python -m bench.similarity_scale --onnx '{"modelDir": "/models/e5", "pooling": "mean"}'
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path
from typing import Any

import numpy as np

from clawkeep.config.model import BUNDLED_ONNX_EMBEDDER
from clawkeep.models.embeddings import create_embedding_provider

from .common import load_average, md_table
from .corpus import CorpusGenerator

QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99, 0.999)
MATCHED = (0.50, 0.99)  # where the two distributions are made to agree
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_QUESTION = re.compile(r"[^.!?]*\?")
_MARKUP = re.compile(r"[`*_#>|\[\]]|\(http[^)]*\)")


def corpus_texts(count: int, seed: int) -> list[str]:
    """`count` distinct English messages of the benchmark corpus (no CJK: the map is about the
    English model's own scale; a CJK query is scored by `local` alone)."""
    generator, rng = CorpusGenerator(seed), random.Random(seed)
    texts: dict[str, None] = {}
    while len(texts) < count:
        text = generator.english(rng)
        if 20 <= len(text) <= 400:
            texts[text] = None
    return list(texts)


def corpus_questions(count: int, seed: int) -> list[str]:
    """`count` distinct questions of 4+ words asked in the corpus's English messages."""
    generator, rng = CorpusGenerator(seed + 1), random.Random(seed + 1)
    questions: dict[str, None] = {}
    while len(questions) < count:
        for question in _QUESTION.findall(generator.english(rng)):
            if len(question.split()) >= 4:
                questions[question.strip()] = None
    return list(questions)[:count]


def docs_texts(count: int, seed: int) -> list[str]:
    """`count` prose sentences of docs/*.md (no code, tables or headings), sampled with `seed`."""
    sentences: dict[str, None] = {}
    for path in sorted(Path(__file__).resolve().parent.parent.joinpath("docs").glob("*.md")):
        fenced = False
        for line in path.read_text(encoding="utf-8").splitlines():
            fenced ^= line.lstrip().startswith("```")
            if fenced or line.lstrip().startswith(("|", "#", "    ", "-", "```")) or _CJK.search(line):
                continue
            for sentence in re.split(r"(?<=[.;:])\s+", _MARKUP.sub("", line).strip()):
                if 6 <= len(sentence.split()) <= 60:
                    sentences[sentence] = None
    pool = list(sentences)
    random.Random(seed).shuffle(pool)
    return pool[:count]


def cosines(provider: Any, queries: list[str], documents: list[str]) -> np.ndarray:
    """Every query × document cosine, a text's pair with itself left out."""
    sims = provider.embed_documents(documents) @ np.vstack([provider.embed_query(q) for q in queries]).T
    same = np.array([[q == d for q in queries] for d in documents])
    return sims[~same].astype(np.float64)


def fit(reference: np.ndarray, other: np.ndarray) -> tuple[float, float]:
    """(scale, offset) with scale·q(other) + offset = q(reference) at both MATCHED quantiles."""
    (ref_lo, ref_hi), (own_lo, own_hi) = np.quantile(reference, MATCHED), np.quantile(other, MATCHED)
    scale = (ref_hi - ref_lo) / (own_hi - own_lo)
    return float(scale), float(ref_lo - scale * own_lo)


def measure(sample: str, queries: int, documents: int, seed: int, onnx: dict[str, Any]) -> dict[str, Any]:
    if sample == "questions":
        query_texts, document_texts = corpus_questions(queries, seed), corpus_texts(documents, seed)
    else:
        texts = (corpus_texts if sample == "corpus" else docs_texts)(queries + documents, seed)
        query_texts, document_texts = texts[:queries], texts[queries:]
    reference = cosines(create_embedding_provider({"provider": "local"}, env={}), query_texts, document_texts)
    model = create_embedding_provider({"provider": "onnx", "onnx": onnx}, env={})
    own = cosines(model, query_texts, document_texts)
    scale, offset = fit(reference, own)
    return {"sample": sample, "pairs": int(own.size), "model": model.model, "scale": scale, "offset": offset,
            "reference": np.quantile(reference, QUANTILES).tolist(), "own": np.quantile(own, QUANTILES).tolist(),
            "mapped": np.quantile(scale * own + offset, QUANTILES).tolist()}


def report(result: dict[str, Any]) -> str:
    header = ["cosines", *(f"{q:.1%}".replace(".0%", "%") for q in QUANTILES)]
    rows = [["local (USE, the reference)", *(f"{v:.3f}" for v in result["reference"])],
            [result["model"], *(f"{v:.3f}" for v in result["own"])],
            [f"{result['model']} mapped", *(f"{v:.3f}" for v in result["mapped"])]]
    bundled = BUNDLED_ONNX_EMBEDDER["similarity"]
    return (f"Sample {result['sample']}: {result['pairs']} query × document pairs (load {load_average()}).\n\n"
            + md_table(header, rows)
            + f"\n\nMap: scale {result['scale']:.3f}, offset {result['offset']:.3f} "
            f"(bundled: scale {bundled['scale']}, offset {bundled['offset']}).\n"
            f"Config: \"onnx\": {{\"similarity\": {{\"scale\": {result['scale']:.3f}, "
            f"\"offset\": {result['offset']:.3f}}}}}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sample", choices=("questions", "corpus", "docs"), default="questions")
    p.add_argument("--queries", type=int, default=600)
    p.add_argument("--documents", type=int, default=2000)
    p.add_argument("--seed", type=int, default=34)
    p.add_argument("--onnx", default="{}", help="memorySearch.onnx settings of the model measured (JSON)")
    args = p.parse_args(argv)
    print(report(measure(args.sample, args.queries, args.documents, args.seed, json.loads(args.onnx))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
