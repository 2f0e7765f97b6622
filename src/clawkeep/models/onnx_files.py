"""An ONNX model in a folder (`model.onnx` + `tokenizer.json`), as the local reranker and the
`onnx` embedding provider both run one: where an installed package keeps it (found without
importing the package, so none of its code runs) and how it is opened (onnxruntime on the CPU,
`tokenizers` for the vocabulary). Each caller keeps its own loaded copy and tokenizer settings."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

MODEL_FILES = ("model.onnx", "tokenizer.json")


def package_folder(package: str, subdir: tuple[str, ...]) -> Path | None:
    """`subdir` inside the installed `package`, if it holds both model files."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))).joinpath(*subdir)
    return folder if all((folder / name).is_file() for name in MODEL_FILES) else None


def open_model(folder: Path, threads: int, *, error: type[Exception], who: str,
               extra: str) -> tuple[Any, Any, set[str]]:
    """(onnx session, tokenizer, the graph's input names); `error` carries what went wrong, naming
    `who` (the provider) and the extra that installs the runtime."""
    try:
        # deferred: the optional extras (clawkeep[rerank] / clawkeep[onnx]), loaded by the first use
        import onnxruntime
        import tokenizers  # deferred: as onnxruntime
    except ImportError as exc:
        raise error(f"{who} needs onnxruntime and tokenizers ({exc.name} is not installed); "
                    f"install the extra: pip install 'clawkeep[{extra}]'") from None
    for name in MODEL_FILES:
        if not (folder / name).is_file():
            raise error(f"{who}: model directory {folder} has no {name}; it needs model.onnx and tokenizer.json")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    try:
        session = onnxruntime.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
        tokenizer = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    except Exception as exc:  # noqa: BLE001 - onnxruntime and tokenizers raise their own types for a bad file
        raise error(f"{who}: the model in {folder} could not be loaded: {exc}") from None
    return session, tokenizer, {i.name for i in session.get_inputs()}
