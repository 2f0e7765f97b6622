"""The `plugins` section: `plugins.entries.<name>` = {enabled, config}, one typed model per plugin.

Known plugins: `active-memory` (Active Memory, A1–A5; see `active_memory`) and `memory-core`
(whose only setting today is `config.dreaming.enabled`, which must stay false: Dreaming is not
built yet, and a config that switches it on is refused at load rather than silently ignored).
Any other plugin name is an unknown key: a warning, not an error.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from .active_memory import ActiveMemoryConfig
from .base import _Model

DREAMING_UNAVAILABLE = ("Dreaming is not available in this version of clawkeep (no consolidation sweep runs); "
                        "remove the key or set it to false")


class DreamingConfig(_Model):
    """`plugins.entries.memory-core.config.dreaming` (SPEC Dr1, not built yet)."""

    enabled: bool = False

    @field_validator("enabled")
    @classmethod
    def _not_available(cls, value: bool) -> bool:
        if value:
            raise ValueError(DREAMING_UNAVAILABLE)
        return value


class MemoryCoreOptions(_Model):
    dreaming: DreamingConfig = Field(default_factory=DreamingConfig)


class MemoryCoreConfig(_Model):
    enabled: bool = True
    config: MemoryCoreOptions = Field(default_factory=MemoryCoreOptions)


class PluginEntries(_Model):
    active_memory: ActiveMemoryConfig = Field(default_factory=ActiveMemoryConfig, alias="active-memory")
    memory_core: MemoryCoreConfig = Field(default_factory=MemoryCoreConfig, alias="memory-core")

    @field_validator("active_memory", "memory_core", mode="before")
    @classmethod
    def _null_is_defaults(cls, value: Any) -> Any:
        return {} if value is None else value


class PluginsConfig(_Model):
    entries: PluginEntries = Field(default_factory=PluginEntries)

    @field_validator("entries", mode="before")
    @classmethod
    def _null_is_defaults(cls, value: Any) -> Any:
        return {} if value is None else value
