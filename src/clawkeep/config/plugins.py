"""The `plugins` section: `plugins.entries.<name>` = {enabled, config}, one typed model per plugin.

Known plugins: `active-memory` (Active Memory, A1–A5; see `active_memory`) and `memory-core`
(`config.dreaming`: the Dreaming sweep, Dr1–Dr2; see `clawkeep.dreaming`).
Any other plugin name is an unknown key: a warning, not an error.
"""

from typing import Any

from pydantic import Field, field_validator

from ..deferred import deferred_import
from .active_memory import ActiveMemoryConfig
from .base import _Model, known_zone

cron = deferred_import("croniter")  # deferred: croniter and dateutil, only when the key is set


class LightPhaseConfig(_Model):
    """Light: what is staged. Daily notes are ingested once each (a checkpoint per file)."""

    lookback_days: int = Field(2, alias="lookbackDays", ge=1, le=365)  # what the Light block shows
    ingest_lookback_days: int = Field(14, alias="ingestLookbackDays", ge=1, le=3650)  # notes/transcripts read
    limit: int = Field(100, ge=1, le=10_000)  # candidates listed (and reinforced) per run
    dedupe_similarity: float = Field(0.9, alias="dedupeSimilarity", ge=0.5, le=1)  # Jaccard of the words


class RemPhaseConfig(_Model):
    lookback_days: int = Field(7, alias="lookbackDays", ge=1, le=365)
    min_pattern_strength: float = Field(0.75, alias="minPatternStrength", ge=0, le=1)  # reinforced themes


class DeepPhaseConfig(_Model):
    """Deep: the promotion gates (OpenClaw's deep-phase defaults; `memory promote` uses them too)."""

    min_score: float = Field(0.8, alias="minScore", ge=0, le=1)
    min_recall_count: int = Field(3, alias="minRecallCount", ge=0, le=1_000_000)
    min_unique_queries: int = Field(3, alias="minUniqueQueries", ge=0, le=32)
    limit: int = Field(10, ge=1, le=1000)
    recency_half_life_days: float = Field(14, alias="recencyHalfLifeDays", gt=0, le=3650)
    max_age_days: int = Field(30, alias="maxAgeDays", ge=0, le=36_500)
    max_prior_entry_loss_fraction: float = Field(0.25, alias="maxPriorEntryLossFraction", ge=0, le=1)


class DreamingConfig(_Model):
    """`plugins.entries.memory-core.config.dreaming` (SPEC Dr1–Dr2): the consolidation sweep."""

    enabled: bool = False
    frequency: str = "0 3 * * *"  # cron, in `timezone`
    timezone: str | None = None  # IANA name; None = session.reset.timezone, else the host's local time
    model: str | None = None  # "<provider>/<model>" for REM themes and the diary; None = the agent's primary
    light: LightPhaseConfig = Field(default_factory=LightPhaseConfig)
    rem: RemPhaseConfig = Field(default_factory=RemPhaseConfig)
    deep: DeepPhaseConfig = Field(default_factory=DeepPhaseConfig)

    @field_validator("frequency")
    @classmethod
    def _cron(cls, value: str) -> str:
        text = " ".join(str(value).split())
        if len(text.split()) != 5 or not cron.croniter.is_valid(text):
            raise ValueError(f"{value!r} is not a cron expression; give five fields (minute hour day month "
                             "weekday), e.g. \"0 3 * * *\" (03:00 every day) or \"0 */6 * * *\"")
        return text

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        return known_zone(value)


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
