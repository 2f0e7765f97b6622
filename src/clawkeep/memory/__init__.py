"""Memory: Markdown files as the source of truth, indexed for hybrid search (M1-M9)."""
