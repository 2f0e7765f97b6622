"""Model providers: embeddings (SPEC M5); chat models live beside them."""

from .embeddings import EmbeddingError, EmbeddingProvider, create_embedding_provider

__all__ = ["EmbeddingError", "EmbeddingProvider", "create_embedding_provider"]
