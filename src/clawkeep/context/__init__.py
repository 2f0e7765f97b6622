"""Context for one turn: assembly, pruning (S9), compaction and the pre-compaction flush (C1, C2)."""
