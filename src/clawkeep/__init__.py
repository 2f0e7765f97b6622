"""clawkeep: sessions and memory for AI agents."""
