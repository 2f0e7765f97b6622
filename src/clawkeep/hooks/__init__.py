"""Post-event hooks (session-memory on reset, …)."""
