"""Shared test helpers (imported as `helpers.<module>`; no test imports from conftest)."""
