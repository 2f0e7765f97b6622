"""Model providers: embeddings (SPEC M5); chat models live beside them.

Nothing is imported here: `clawkeep.models.embeddings` (numpy, the HTTP client) loads only
when an embedding provider is created, `clawkeep.models.chat` when a chat model is."""
