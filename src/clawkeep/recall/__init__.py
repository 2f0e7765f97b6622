"""Active Memory recall: deciding when and how to look back at earlier conversation (A)."""
