"""Import from OpenClaw and export to (and re-import from) clawkeep's JSONL format (SPEC G4).

A service over sessions, memory and storage: the CLI's `import` and `export` commands and the
Engine's `import_openclaw`, `import_jsonl` and `export_sessions` call it.
"""
