"""What OpenClaw's own memory-search keys mean here, for `memory status` (issue 33 item 4).

A config copied from OpenClaw keeps its meaning: each key below is implemented by clawkeep,
mapped onto clawkeep's equivalent, or ignored for a stated reason. Only keys the file sets are
listed, each as {key, value, handling: implemented | mapped | ignored, detail}.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Config, MemorySearchConfig

PREFIX = "agents.defaults.memorySearch"
LOCAL_PROVIDERS = ("local", "local-e5", "local-use")


def _row(key: str, value: Any, handling: str, detail: str) -> dict[str, Any]:
    return {"key": key, "value": value, "handling": handling, "detail": detail}


def _fallback(search: "MemorySearchConfig") -> dict[str, Any]:
    if search.fallback == "none":
        return _row(f"{PREFIX}.fallback", "none", "implemented", "no second provider: when the provider cannot be "
                    "created, memory_search answers from the keyword index alone")
    return _row(f"{PREFIX}.fallback", search.fallback, "implemented",
                f"used when provider {search.provider!r} cannot be created (no API key, local package missing); "
                "`memory status --deep` shows it in selectedBy")


def _model_path(search: "MemorySearchConfig") -> dict[str, Any]:
    return _row(f"{PREFIX}.local.modelPath", search.local.model_path, "ignored",
                "clawkeep cannot load GGUF files (node-llama-cpp is OpenClaw's); provider local uses its bundled "
                "model (use-multilingual-v3, or multilingual-e5-small via memorySearch.model)")


def _input_type(search: "MemorySearchConfig", key: str, value: str) -> dict[str, Any]:
    if search.provider == "openai":
        return _row(f"{PREFIX}.{key}", value, "implemented", "sent as input_type to the OpenAI-compatible endpoint")
    if search.provider == "auto":
        return _row(f"{PREFIX}.{key}", value, "implemented", "sent as input_type when auto picks openai; the "
                    "bundled local model uses its own convention")
    reason = "no embeddings (provider none)" if search.provider == "none" else \
        f"provider {search.provider!r} is a bundled model with its own query/document convention"
    return _row(f"{PREFIX}.{key}", value, "ignored", reason)


def _batch_timeout(search: "MemorySearchConfig") -> dict[str, Any]:
    seconds = search.sync.embedding_batch_timeout_seconds
    key = f"{PREFIX}.sync.embeddingBatchTimeoutSeconds"
    if search.provider == "none":
        return _row(key, seconds, "ignored", "no embeddings (provider none)")
    if search.timeout_ms is not None:
        return _row(key, seconds, "ignored", f"{PREFIX}.timeoutMs = {search.timeout_ms} is set and wins")
    return _row(key, seconds, "mapped", f"{PREFIX}.timeoutMs = {round(seconds * 1000)} (the deadline of one "
                "embedding batch)")


def openclaw_memory_keys(config: "Config") -> list[dict[str, Any]]:
    """The OpenClaw memory-search keys the config sets, with what each does in clawkeep."""
    search = config.agents.defaults.memory_search
    rows = []
    if "fallback" in search.model_fields_set:
        rows.append(_fallback(search))
    if search.local.model_path is not None:
        rows.append(_model_path(search))
    for key, value in (("queryInputType", search.query_input_type), ("documentInputType", search.document_input_type)):
        if value:
            rows.append(_input_type(search, key, value))
    if search.sync.embedding_batch_timeout_seconds is not None:
        rows.append(_batch_timeout(search))
    across = config.memory.search.remember_across_conversations
    if across is not None:
        rows.append(_row("memory.search.rememberAcrossConversations", across, "mapped",
                         "plugins.entries.active-memory.config.rememberAcrossConversations (Active Memory searches "
                         "the agent's other direct-message transcripts)"))
    return rows
