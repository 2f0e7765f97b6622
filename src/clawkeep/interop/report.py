"""What an import did: counts by kind, what could not be mapped (counted, by kind, with one
example each), what failed (naming the file and line), and what was decided."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EXAMPLE_CHARS = 240


def example(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= EXAMPLE_CHARS else text[: EXAMPLE_CHARS - 1] + "…"


@dataclass
class Tally:
    """Occurrences of one kind of thing, with the first one as an example."""

    count: int = 0
    example: str | None = None
    where: str | None = None  # file:line or database:session of the example

    def add(self, sample: Any, where: str | None, n: int = 1) -> None:
        if self.count == 0:
            self.example, self.where = example(sample), where
        self.count += n

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "example": self.example, "where": self.where}


@dataclass
class ImportReport:
    source: str
    dry_run: bool = False
    sessions: dict[str, int] = field(default_factory=lambda: {"imported": 0, "updated": 0, "unchanged": 0,
                                                              "failed": 0})
    entries: dict[str, int] = field(default_factory=dict)  # imported entries by our type (message, reset, …)
    skipped_entries: int = 0  # already imported before (idempotent re-runs)
    unmapped: dict[str, Tally] = field(default_factory=dict)
    errors: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    renamed_keys: dict[str, Tally] = field(default_factory=dict)
    memory: list[dict[str, Any]] = field(default_factory=list)
    config: dict[str, Any] | None = None
    model_overrides: list[dict[str, Any]] = field(default_factory=list)  # sessions' own model choices
    models: dict[str, Any] | None = None  # the model settings found, whether applied, how to apply them

    def count_entry(self, kind: str, n: int = 1) -> None:
        self.entries[kind] = self.entries.get(kind, 0) + n

    def unmapped_item(self, kind: str, sample: Any, where: str | None, n: int = 1) -> None:
        self.unmapped.setdefault(kind, Tally()).add(sample, where, n)

    def error(self, where: str, message: str) -> None:
        self.errors.append({"where": where, "message": message})

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "source": self.source,
            "dryRun": self.dry_run,
            "sessions": dict(self.sessions),
            "entries": dict(sorted(self.entries.items())),
            "alreadyImportedEntries": self.skipped_entries,
            "unmapped": {k: v.to_json() for k, v in sorted(self.unmapped.items())},
            "renamedKeys": {k: v.to_json() for k, v in sorted(self.renamed_keys.items())},
            "errors": list(self.errors),
            "notes": list(self.notes),
            "memory": list(self.memory),
        }
        if self.config is not None:
            data["config"] = self.config
        if self.models is not None:
            data["models"] = self.models
        return data
